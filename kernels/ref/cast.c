/* ref cast: dst(n) in dst_dt = src(n) in src_dt, between fp32, fp64, bf16
 * and fp16 in any direction, rounded once to nearest, ties to even.
 *
 * fp32, bf16 and fp16 values are exact in fp32: between those three the
 * element goes through fp32 with engine/dtype.h's converters (bit exact,
 * NaN kept a NaN). From fp64 the store rounds once: to fp32 by the C
 * conversion, to bf16 / fp16 through gt_ref_fp64_to_bf16 / _fp16
 * (round-to-odd into fp32, then dtype.h's round to nearest even: where
 * gt_convert rounds fp64 twice). To fp64 every value is exact. Integer
 * dtypes are refused. The cpu backend runs the same element loop in
 * parallel chunks (gt_ref_cast_range), so both give the same bits. */
#include "kernels/ref/ref.h"

int gt_ref_cast_dtype_ok(gt_dtype dt) {
    return dt == GT_DTYPE_FP32 || dt == GT_DTYPE_FP64 || dt == GT_DTYPE_BF16 ||
           dt == GT_DTYPE_FP16;
}

/* One loop per (source, destination) pair, the dtype tests outside it. */
#define CAST_LOOP(expr)                                                                \
    do {                                                                               \
        for (size_t i = lo; i < hi; i++) expr;                                         \
    } while (0)

void gt_ref_cast_range(void *dst, gt_dtype d, const void *src, gt_dtype s, size_t lo,
                       size_t hi) {
    if (d == s) {
        size_t es = gt_dtype_size(d);
        if (dst != src && hi > lo)
            memmove((char *)dst + lo * es, (const char *)src + lo * es, (hi - lo) * es);
        return;
    }
    const float *f32 = src;
    const double *f64 = src;
    const uint16_t *h16 = src;
    float *o32 = dst;
    double *o64 = dst;
    uint16_t *o16 = dst;
    switch (s) {
    case GT_DTYPE_FP64:
        if (d == GT_DTYPE_FP32) CAST_LOOP(o32[i] = (float)f64[i]);
        if (d == GT_DTYPE_BF16) CAST_LOOP(o16[i] = gt_ref_fp64_to_bf16(f64[i]));
        if (d == GT_DTYPE_FP16) CAST_LOOP(o16[i] = gt_ref_fp64_to_fp16(f64[i]));
        break;
    case GT_DTYPE_FP32:
        if (d == GT_DTYPE_FP64) CAST_LOOP(o64[i] = f32[i]);
        if (d == GT_DTYPE_BF16) CAST_LOOP(o16[i] = gt_fp32_to_bf16(f32[i]));
        if (d == GT_DTYPE_FP16) CAST_LOOP(o16[i] = gt_fp32_to_fp16(f32[i]));
        break;
    case GT_DTYPE_BF16:
        if (d == GT_DTYPE_FP64) CAST_LOOP(o64[i] = gt_bf16_to_fp32(h16[i]));
        if (d == GT_DTYPE_FP32) CAST_LOOP(o32[i] = gt_bf16_to_fp32(h16[i]));
        if (d == GT_DTYPE_FP16) CAST_LOOP(o16[i] = gt_fp32_to_fp16(gt_bf16_to_fp32(h16[i])));
        break;
    case GT_DTYPE_FP16:
        if (d == GT_DTYPE_FP64) CAST_LOOP(o64[i] = gt_fp16_to_fp32(h16[i]));
        if (d == GT_DTYPE_FP32) CAST_LOOP(o32[i] = gt_fp16_to_fp32(h16[i]));
        if (d == GT_DTYPE_BF16) CAST_LOOP(o16[i] = gt_fp32_to_bf16(gt_fp16_to_fp32(h16[i])));
        break;
    default: GT_ASSERT(!"gt_ref_cast_range: dtype not checked by the caller");
    }
}

gt_status gt_ref_cast(const gt_kctx *k, void *dst, gt_dtype dst_dt, const void *src,
                      gt_dtype src_dt, size_t n) {
    (void)k;
    if (!gt_ref_cast_dtype_ok(dst_dt) || !gt_ref_cast_dtype_ok(src_dt))
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "ref cast: %s -> %s not handled (floating-point dtypes only: fp32, fp64, "
                      "bf16, fp16)",
                      gt_dtype_name(src_dt), gt_dtype_name(dst_dt));
    if (n == 0) return GT_OK;
    if (!dst || !src) return GT_ERR(GT_ERR_INVALID, "ref cast: NULL buffer for %zu elements", n);
    gt_ref_cast_range(dst, dst_dt, src, src_dt, 0, n);
    return GT_OK;
}
