/* The ref backend's ops, one file per family; the table is in backend.c. */
#ifndef GT_KERNELS_REF_H
#define GT_KERNELS_REF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ops.h"

/* Every op that reads k->dt starts with this (all but cast, which ignores
 * it): storage fp32, bf16 or fp16. They load every element to fp64 with
 * gt_ref_ld, compute exactly as for fp32 storage, and round once on store
 * with gt_ref_st, so fp32 storage gives the same bits as before 16-bit
 * storage existed. LayerNorm and BatchNorm statistics (BatchNorm's
 * running ones too), the attention probabilities, losses and AdamW state
 * stay fp32 whatever k->dt is. */
#define GT_REF_CHECK_DT_ANY(k)                                                          \
    do {                                                                                \
        if ((k)->dt != GT_DTYPE_FP32 && (k)->dt != GT_DTYPE_BF16 &&                     \
            (k)->dt != GT_DTYPE_FP16)                                                   \
            return GT_ERR(GT_ERR_UNSUPPORTED, "ref %s: storage dtype %s not handled "   \
                          "(the oracle stores fp32, bf16 or fp16)",                     \
                          __func__, gt_dtype_name((k)->dt));                            \
    } while (0)

/* x rounded to fp32 with round-to-odd: truncated towards zero, the last
 * bit set when anything was cut off. Rounding that fp32 value to a format
 * with at least 2 fewer significand bits (bf16: 8, fp16: 11, against 24)
 * with round-to-nearest-even gives the correctly rounded result of x (one
 * rounding, not two; Boldo and Melquiond, "When double rounding is odd").
 * NaN and values already exact in fp32 pass unchanged; beyond the fp32
 * range the result is +-FLT_MAX (odd), which then rounds to +-Inf. */
static inline float gt_ref_fp64_to_fp32_odd(double x) {
    float f = (float)x;
    if (f == x || x != x) return f;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    /* (float)x rounded to nearest: one step back towards zero when it went
     * away from zero (including to Inf), then mark the lost bits. */
    if (fabs((double)f) > fabs(x)) u -= 1u;
    u |= 1u;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* fp64 -> bf16 / fp16 bit pattern, rounded once to nearest, ties to even. */
static inline uint16_t gt_ref_fp64_to_bf16(double x) {
    return gt_fp32_to_bf16(gt_ref_fp64_to_fp32_odd(x));
}
static inline uint16_t gt_ref_fp64_to_fp16(double x) {
    return gt_fp32_to_fp16(gt_ref_fp64_to_fp32_odd(x));
}

/* Element i of p, stored in dt (fp32, bf16 or fp16: callers checked with
 * GT_REF_CHECK_DT_ANY), as fp64: exact. */
static inline double gt_ref_ld(const void *p, gt_dtype dt, size_t i) {
    if (dt == GT_DTYPE_BF16) return gt_bf16_to_fp32(((const uint16_t *)p)[i]);
    if (dt == GT_DTYPE_FP16) return gt_fp16_to_fp32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

/* The rows x cols matrix p (stored in dt) in fp64, owned by the caller,
 * transposed when asked: each element converted once (exactly) instead of
 * once per use. NULL when out of memory. */
static inline double *gt_ref_staged(const void *p, gt_dtype dt, size_t rows, size_t cols,
                                    int transpose) {
    size_t n = rows * cols;
    double *d = (double *)malloc((n ? n : 1) * sizeof *d);
    if (!d) return NULL;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            d[transpose ? c * rows + r : r * cols + c] = gt_ref_ld(p, dt, r * cols + c);
    return d;
}

/* Stores v into element i of p in dt, rounded once to nearest even. */
static inline void gt_ref_st(void *p, gt_dtype dt, size_t i, double v) {
    if (dt == GT_DTYPE_BF16)
        ((uint16_t *)p)[i] = gt_ref_fp64_to_bf16(v);
    else if (dt == GT_DTYPE_FP16)
        ((uint16_t *)p)[i] = gt_ref_fp64_to_fp16(v);
    else
        ((float *)p)[i] = (float)v;
}

/* GELU, tanh approximation, and its derivative, in fp64 (gelu_fwd/bwd and
 * the fused matmul_gelu_fwd/matmul_dgelu_bwd share them). */
#define GT_REF_GELU_K 0.7978845608028654 /* sqrt(2/pi) */
static inline double gt_ref_gelu(double x) {
    return 0.5 * x * (1.0 + tanh(GT_REF_GELU_K * (x + 0.044715 * x * x * x)));
}
static inline double gt_ref_gelu_grad(double x) {
    double th = tanh(GT_REF_GELU_K * (x + 0.044715 * x * x * x));
    double sech2 = 1.0 - th * th;
    return 0.5 * (1.0 + th) + 0.5 * x * sech2 * GT_REF_GELU_K * (1.0 + 3.0 * 0.044715 * x * x);
}

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
                               const void *out, const float *att, int B, int T, int C, int NH);
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
/* vision ops (conv.c, vision.c) */
gt_status gt_ref_conv2d_fwd(const gt_kctx *k, void *out, const void *inp, const void *weight,
                            const void *bias, const gt_conv2d_shape *s);
gt_status gt_ref_conv2d_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                            const void *dout, const void *inp, const void *weight,
                            const gt_conv2d_shape *s);
gt_status gt_ref_batchnorm_fwd(const gt_kctx *k, void *out, float *mean, float *rstd,
                               float *running_mean, float *running_var, const void *inp,
                               const void *weight, const void *bias, int N, int C, int HW,
                               float eps, float momentum, int training);
gt_status gt_ref_batchnorm_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                               const void *dout, const void *inp, const void *weight,
                               const float *mean, const float *rstd, int N, int C, int HW);
gt_status gt_ref_relu_fwd(const gt_kctx *k, void *out, const void *inp, size_t n);
gt_status gt_ref_relu_bwd(const gt_kctx *k, void *dinp, const void *out, const void *dout,
                          size_t n);
gt_status gt_ref_avgpool_fwd(const gt_kctx *k, void *out, const void *inp, int N, int C, int HW);
gt_status gt_ref_avgpool_bwd(const gt_kctx *k, void *dinp, const void *dout, int N, int C,
                             int HW);
gt_status gt_ref_matmul_gelu_fwd(const gt_kctx *k, void *out, void *pre, const void *inp,
                                 const void *weight, const void *bias, int N, int C, int OC);
gt_status gt_ref_matmul_dgelu_bwd(const gt_kctx *k, void *dpre, void *dweight, void *dbias,
                                  const void *dout, const void *inp, const void *weight,
                                  const void *pre, int N, int C, int OC);
gt_status gt_ref_cast(const gt_kctx *k, void *dst, gt_dtype dst_dt, const void *src,
                      gt_dtype src_dt, size_t n);
/* cast's pieces, shared with the cpu backend so that both give the same
 * bits: 1 for fp32, fp64, bf16, fp16; and elements [lo, hi) of the cast
 * (dtypes already checked; d == s copies). */
int gt_ref_cast_dtype_ok(gt_dtype dt);
void gt_ref_cast_range(void *dst, gt_dtype d, const void *src, gt_dtype s, size_t lo,
                       size_t hi);

#endif
