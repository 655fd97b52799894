/* The cpu backend's private helpers: the fp32 storage check, a vectorisable
 * expf, and the op declarations (the table is in backend.c).
 *
 * Determinism: every op parallelises over independent outputs, or reduces
 * in fixed chunks whose boundaries depend only on the shape, so results are
 * bitwise identical whatever the thread count. */
#ifndef GT_KERNELS_CPU_H
#define GT_KERNELS_CPU_H

#include <stdint.h>
#include <string.h>

#include "kernels/ops.h"

#define GT_CPU_CHECK_DT(k)                                                              \
    do {                                                                                \
        if ((k)->dt != GT_DTYPE_FP32)                                                   \
            return GT_ERR(GT_ERR_UNSUPPORTED, "cpu %s: storage dtype %s not handled "   \
                          "(the cpu backend stores fp32 only)",                         \
                          __func__, gt_dtype_name((k)->dt));                            \
    } while (0)

/* expf for x in [-87, 88] (callers clamp; NaN gives NaN), within ~2 ulp: Cody-Waite range
 * reduction x = n ln2 + r, |r| <= ln2/2, a degree-7 Taylor polynomial
 * (truncation 1.4e-9 relative) and 2^n built in the exponent bits. Written
 * without calls or branches so that loops calling it vectorise: glibc's
 * expf does not, and the classifier, softmax and GELU are dominated by it. */
static inline float gt_cpu_expf(float x) {
    /* Round to nearest by the 1.5 * 2^23 trick: exact for |x log2 e| < 2^22,
     * and unlike floorf it vectorises everywhere. n comes from a copy of x
     * that is never NaN (every comparison with NaN is false: -87), so that
     * the conversion to int below is defined; r keeps x, so NaN in gives
     * NaN out. For x in [-87, 88] the copy is x: the same bits as without. */
    float xn = x > -87.0f ? x : -87.0f;
    float n = (xn * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;
    float s;
    memcpy(&s, &bits, sizeof s);
    return p * s;
}

static inline float gt_cpu_clampf(float x, float lo, float hi) {
    return x < lo ? lo : (x > hi ? hi : x);
}

/* GELU (tanh approximation) as x * sigmoid(2u), u = sqrt(2/pi)(x + 0.044715
 * x^3): equal to 0.5 x (1 + tanh u) without the cancellation of 1 + tanh u
 * for negative x; and its derivative through sigmoid(2u)(1 - sigmoid(2u)) =
 * e s^2, e = exp(-2u), s = 1/(1+e). Shared by gelu_fwd/bwd and the fused
 * matmul_gelu_fwd/matmul_dgelu_bwd, which therefore give the same bits as
 * the unfused sequence. Branch-free: loops calling them vectorise. */
#define GT_CPU_GELU_K 0.7978845608028654f /* sqrt(2/pi) */
static inline float gt_cpu_gelu(float x) {
    float z = -2.0f * GT_CPU_GELU_K * (x + 0.044715f * x * x * x);
    float e = gt_cpu_expf(gt_cpu_clampf(z, -87.0f, 88.0f));
    return x / (1.0f + e);
}
static inline float gt_cpu_gelu_grad(float x) {
    float x2 = x * x;
    float z = -2.0f * GT_CPU_GELU_K * (x + 0.044715f * x2 * x);
    float e = gt_cpu_expf(gt_cpu_clampf(z, -87.0f, 88.0f));
    float s = 1.0f / (1.0f + e);
    float du = 2.0f * GT_CPU_GELU_K * (1.0f + 3.0f * 0.044715f * x2);
    return s + x * (e * s * s) * du;
}

gt_status gt_cpu_encoder_fwd(const gt_kctx *k, void *out, const int32_t *inp, const void *wte,
                             const void *wpe, int B, int T, int C);
gt_status gt_cpu_encoder_bwd(const gt_kctx *k, void *dwte, void *dwpe, const void *dout,
                             const int32_t *inp, int B, int T, int C);
gt_status gt_cpu_layernorm_fwd(const gt_kctx *k, void *out, float *mean, float *rstd,
                               const void *inp, const void *weight, const void *bias, int N,
                               int C, float eps);
gt_status gt_cpu_layernorm_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                               const void *dout, const void *inp, const void *weight,
                               const float *mean, const float *rstd, int N, int C);
gt_status gt_cpu_matmul_fwd(const gt_kctx *k, void *out, const void *inp, const void *weight,
                            const void *bias, int N, int C, int OC);
gt_status gt_cpu_matmul_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                            const void *dout, const void *inp, const void *weight, int N, int C,
                            int OC);
gt_status gt_cpu_attention_fwd(const gt_kctx *k, void *out, float *att, const void *qkv, int B,
                               int T, int C, int NH);
gt_status gt_cpu_attention_bwd(const gt_kctx *k, void *dqkv, const void *dout, const void *qkv,
                               const void *out, const float *att, int B, int T, int C, int NH);
gt_status gt_cpu_gelu_fwd(const gt_kctx *k, void *out, const void *inp, size_t n);
gt_status gt_cpu_gelu_bwd(const gt_kctx *k, void *dinp, const void *inp, const void *dout,
                          size_t n);
/* y(n) *= gelu'(pre) in place (the fused matmul_dgelu_bwd's second pass);
 * the same blocks and expression as gelu_bwd. */
void gt_cpu_gelu_grad_mul(float *y, const float *pre, size_t n);
gt_status gt_cpu_residual_fwd(const gt_kctx *k, void *out, const void *a, const void *b,
                              size_t n);
gt_status gt_cpu_residual_bwd(const gt_kctx *k, void *da, void *db, const void *dout, size_t n);
gt_status gt_cpu_classifier_fwd(const gt_kctx *k, float *losses, const void *logits,
                                const int32_t *targets, int N, int V, int Vp);
gt_status gt_cpu_classifier_bwd(const gt_kctx *k, void *dlogits, float *losses,
                                const void *logits, const int32_t *targets, float dloss, int N,
                                int V, int Vp);
gt_status gt_cpu_adamw(const gt_kctx *k, float *params, const void *grads, float *m, float *v,
                       size_t n, float lr, float beta1, float beta2, float eps,
                       float weight_decay, float grad_scale, int t);
gt_status gt_cpu_sumsq(const gt_kctx *k, const void *x, size_t n, double *out_host);
/* fp32 / fp64 / bf16 / fp16 in any direction (cast.c; any k->dt). */
gt_status gt_cpu_cast(const gt_kctx *k, void *dst, gt_dtype dst_dt, const void *src,
                      gt_dtype src_dt, size_t n);
/* linear + GELU (matmul.c) */
gt_status gt_cpu_matmul_gelu_fwd(const gt_kctx *k, void *out, void *pre, const void *inp,
                                 const void *weight, const void *bias, int N, int C, int OC);
gt_status gt_cpu_matmul_dgelu_bwd(const gt_kctx *k, void *dpre, void *dweight, void *dbias,
                                  const void *dout, const void *inp, const void *weight,
                                  const void *pre, int N, int C, int OC);
/* vision ops (conv.c, vision.c) */
gt_status gt_cpu_conv2d_fwd(const gt_kctx *k, void *out, const void *inp, const void *weight,
                            const void *bias, const gt_conv2d_shape *s);
gt_status gt_cpu_conv2d_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                            const void *dout, const void *inp, const void *weight,
                            const gt_conv2d_shape *s);
gt_status gt_cpu_batchnorm_fwd(const gt_kctx *k, void *out, float *mean, float *rstd,
                               float *running_mean, float *running_var, const void *inp,
                               const void *weight, const void *bias, int N, int C, int HW,
                               float eps, float momentum, int training);
gt_status gt_cpu_batchnorm_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                               const void *dout, const void *inp, const void *weight,
                               const float *mean, const float *rstd, int N, int C, int HW);
gt_status gt_cpu_relu_fwd(const gt_kctx *k, void *out, const void *inp, size_t n);
gt_status gt_cpu_relu_bwd(const gt_kctx *k, void *dinp, const void *out, const void *dout,
                          size_t n);
gt_status gt_cpu_avgpool_fwd(const gt_kctx *k, void *out, const void *inp, int N, int C, int HW);
gt_status gt_cpu_avgpool_bwd(const gt_kctx *k, void *dinp, const void *dout, int N, int C,
                             int HW);

#endif
