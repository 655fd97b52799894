/* The cuda backend's op table and its entry points (engine/ops.h has the
 * specification of each). Exists only when CUDA is compiled in
 * (GT_HAVE_CUDA); everything here takes and returns device memory of a
 * backend made by gt_backend_cuda_new, and runs on that backend's stream:
 * ops return once the work is queued, except sumsq, which waits for its
 * result.
 *
 * Every op handles k->dt fp32, bf16 and fp16 (16-bit storage, fp32
 * arithmetic) and returns GT_ERR_UNSUPPORTED for any other dtype; cast
 * ignores k->dt and converts between fp32, fp64, bf16 and fp16.
 *
 * attention_fwd/bwd take cuDNN's fused flash attention (SDPA) for bf16 and
 * fp16 when cuDNN is compiled in and takes the shape, gauntlet's own
 * kernels otherwise; GT_CUDA_ATTENTION=own|cudnn|auto (read when the
 * backend is created) forces one (docs/cuda.md). The path taken is in the
 * backend's notes; attention_state_floats answers from the same decision
 * (B*NH*T floats of state on cuDNN's path, B*NH*T*T on the own one).
 */
#ifndef GT_OPS_CUDA_H
#define GT_OPS_CUDA_H

#include "kernels/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const gt_ops gt_ops_cuda;

gt_status gt_cuda_encoder_fwd(const gt_kctx *k, void *out, const int32_t *inp, const void *wte,
                              const void *wpe, int B, int T, int C);
gt_status gt_cuda_encoder_bwd(const gt_kctx *k, void *dwte, void *dwpe, const void *dout,
                              const int32_t *inp, int B, int T, int C);
gt_status gt_cuda_layernorm_fwd(const gt_kctx *k, void *out, float *mean, float *rstd,
                                const void *inp, const void *weight, const void *bias, int N, int C,
                                float eps);
gt_status gt_cuda_layernorm_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                                const void *dout, const void *inp, const void *weight,
                                const float *mean, const float *rstd, int N, int C);
/* Present only when cuBLASLt was found (GT_HAVE_CUBLAS). */
gt_status gt_cuda_matmul_fwd(const gt_kctx *k, void *out, const void *inp, const void *weight,
                             const void *bias, int N, int C, int OC);
gt_status gt_cuda_matmul_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                             const void *dout, const void *inp, const void *weight, int N, int C,
                             int OC);
/* cuBLASLt's own best for matmul_fwd's GEMM (engine/backend.h,
 * gemm_library_best; matmul.cu). */
gt_status gt_cuda_matmul_fwd_library_best(const gt_kctx *k, void *out, const void *inp,
                                          const void *weight, const void *bias, int N, int C,
                                          int OC, double *best_s, char *what, size_t what_len);
/* cuBLASLt's GELU_AUX(_BIAS) / DGELU epilogues for bf16 and fp16 where they
 * apply, the plain GEMM and an own GELU kernel otherwise (the path is in
 * the notes; docs/cuda.md). Also only with cuBLASLt. */
gt_status gt_cuda_matmul_gelu_fwd(const gt_kctx *k, void *out, void *pre, const void *inp,
                                  const void *weight, const void *bias, int N, int C, int OC);
gt_status gt_cuda_matmul_dgelu_bwd(const gt_kctx *k, void *dpre, void *dweight, void *dbias,
                                   const void *dout, const void *inp, const void *weight,
                                   const void *pre, int N, int C, int OC);
gt_status gt_cuda_attention_fwd(const gt_kctx *k, void *out, float *att, const void *qkv, int B,
                                int T, int C, int NH);
gt_status gt_cuda_attention_bwd(const gt_kctx *k, void *dqkv, const void *dout, const void *qkv,
                                const void *out, const float *att, int B, int T, int C, int NH);
size_t gt_cuda_attention_state_floats(const gt_kctx *k, int B, int T, int C, int NH);
gt_status gt_cuda_gelu_fwd(const gt_kctx *k, void *out, const void *inp, size_t n);
gt_status gt_cuda_gelu_bwd(const gt_kctx *k, void *dinp, const void *inp, const void *dout,
                           size_t n);
gt_status gt_cuda_residual_fwd(const gt_kctx *k, void *out, const void *a, const void *b, size_t n);
gt_status gt_cuda_residual_bwd(const gt_kctx *k, void *da, void *db, const void *dout, size_t n);
gt_status gt_cuda_classifier_fwd(const gt_kctx *k, float *losses, const void *logits,
                                 const int32_t *targets, int N, int V, int Vp);
gt_status gt_cuda_classifier_bwd(const gt_kctx *k, void *dlogits, float *losses, const void *logits,
                                 const int32_t *targets, float dloss, int N, int V, int Vp);
gt_status gt_cuda_adamw(const gt_kctx *k, float *params, const void *grads, float *m, float *v,
                        size_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
                        float grad_scale, int t);
gt_status gt_cuda_sumsq(const gt_kctx *k, const void *x, size_t n, double *out_host);
/* Ignores k->dt; any direction among fp32, fp64, bf16, fp16. */
gt_status gt_cuda_cast(const gt_kctx *k, void *dst, gt_dtype dst_dt, const void *src,
                       gt_dtype src_dt, size_t n);

#ifdef __cplusplus
}
#endif
#endif
