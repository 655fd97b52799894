/* The ref backend's ops, one file per family; the table is in backend.c. */
#ifndef GT_KERNELS_REF_H
#define GT_KERNELS_REF_H

#include "kernels/ops.h"

/* Every ref op starts with this: fp32 storage only. */
#define GT_REF_CHECK_DT(k)                                                              \
    do {                                                                                \
        if ((k)->dt != GT_DTYPE_FP32)                                                   \
            return GT_ERR(GT_ERR_UNSUPPORTED, "ref %s: storage dtype %s not handled "   \
                          "(the oracle works on fp32; round inputs first)",             \
                          __func__, gt_dtype_name((k)->dt));                            \
    } while (0)

gt_status gt_ref_encoder_fwd(const gt_kctx *k, void *out, const int32_t *inp, const void *wte,
                             const void *wpe, int B, int T, int C);
gt_status gt_ref_encoder_bwd(const gt_kctx *k, void *dwte, void *dwpe, const void *dout,
                             const int32_t *inp, int B, int T, int C);
gt_status gt_ref_layernorm_fwd(const gt_kctx *k, void *out, float *mean, float *rstd,
                               const void *inp, const void *weight, const void *bias, int N,
                               int C, float eps);
gt_status gt_ref_layernorm_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                               const void *dout, const void *inp, const void *weight,
                               const float *mean, const float *rstd, int N, int C);
gt_status gt_ref_matmul_fwd(const gt_kctx *k, void *out, const void *inp, const void *weight,
                            const void *bias, int N, int C, int OC);
gt_status gt_ref_matmul_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                            const void *dout, const void *inp, const void *weight, int N, int C,
                            int OC);
gt_status gt_ref_attention_fwd(const gt_kctx *k, void *out, float *att, const void *qkv, int B,
                               int T, int C, int NH);
gt_status gt_ref_attention_bwd(const gt_kctx *k, void *dqkv, const void *dout, const void *qkv,
                               const float *att, int B, int T, int C, int NH);
gt_status gt_ref_gelu_fwd(const gt_kctx *k, void *out, const void *inp, size_t n);
gt_status gt_ref_gelu_bwd(const gt_kctx *k, void *dinp, const void *inp, const void *dout,
                          size_t n);
gt_status gt_ref_residual_fwd(const gt_kctx *k, void *out, const void *a, const void *b,
                              size_t n);
gt_status gt_ref_residual_bwd(const gt_kctx *k, void *da, void *db, const void *dout, size_t n);
gt_status gt_ref_classifier_fwd(const gt_kctx *k, float *losses, const void *logits,
                                const int32_t *targets, int N, int V, int Vp);
gt_status gt_ref_classifier_bwd(const gt_kctx *k, void *dlogits, float *losses,
                                const void *logits, const int32_t *targets, float dloss, int N,
                                int V, int Vp);
gt_status gt_ref_adamw(const gt_kctx *k, float *params, const void *grads, float *m, float *v,
                       size_t n, float lr, float beta1, float beta2, float eps,
                       float weight_decay, float grad_scale, int t);
gt_status gt_ref_sumsq(const gt_kctx *k, const void *x, size_t n, double *out_host);

#endif
