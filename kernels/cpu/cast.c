/* cpu cast: dst(n) in dst_dt = src(n) in src_dt between fp32, fp64, bf16 and
 * fp16, rounded once to nearest even (the ops.h contract).
 *
 * Variants: fp32 <-> bf16, the mixed-precision pair, is written here
 * branch-free so that the loops vectorise (a call per element to
 * engine/dtype.h's converters costs ~30x more); every other pair runs the
 * ref backend's element loops (gt_ref_cast_range: dtype.h's converters, the
 * oracle's single rounding from fp64). Both run over fixed blocks in
 * parallel: an elementwise op, so the bits are the ref's whatever the thread
 * count (kernels.cast.cpu compares every pair bitwise, NaN included).
 * Memory bound: 6 B/elem for fp32 <-> bf16/fp16. */
#include "kernels/cpu/cpu.h"
#include "kernels/ref/ref.h"

#define BLOCK 16384

/* gt_fp32_to_bf16 without the branch: NaN keeps its top bits with the quiet
 * bit set, everything else rounds to nearest even by adding 0x7fff plus the
 * lowest kept bit (a carry into Inf is the correct overflow). */
static void fp32_to_bf16(uint16_t *restrict o, const float *restrict f, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &f[i], sizeof u);
        uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        uint32_t quiet = (u >> 16) | 0x0040u;
        o[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
    }
}

/* gt_bf16_to_fp32: the 16 bits are the top of the fp32 pattern. */
static void bf16_to_fp32(float *restrict o, const uint16_t *restrict h, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)h[i] << 16;
        memcpy(&o[i], &u, sizeof u);
    }
}

static void cast_block(void *dst, gt_dtype d, const void *src, gt_dtype s, size_t lo,
                       size_t hi) {
    if (s == GT_DTYPE_FP32 && d == GT_DTYPE_BF16)
        fp32_to_bf16((uint16_t *)dst + lo, (const float *)src + lo, hi - lo);
    else if (s == GT_DTYPE_BF16 && d == GT_DTYPE_FP32)
        bf16_to_fp32((float *)dst + lo, (const uint16_t *)src + lo, hi - lo);
    else
        gt_ref_cast_range(dst, d, src, s, lo, hi);
}

gt_status gt_cpu_cast(const gt_kctx *k, void *dst, gt_dtype dst_dt, const void *src,
                      gt_dtype src_dt, size_t n) {
    (void)k;
    if (!gt_ref_cast_dtype_ok(dst_dt) || !gt_ref_cast_dtype_ok(src_dt))
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "cpu cast: %s -> %s not handled (floating-point dtypes only: fp32, fp64, "
                      "bf16, fp16)",
                      gt_dtype_name(src_dt), gt_dtype_name(dst_dt));
    if (n == 0) return GT_OK;
    if (!dst || !src) return GT_ERR(GT_ERR_INVALID, "cpu cast: NULL buffer for %zu elements", n);
    if (dst_dt == src_dt) { /* a copy; dst may equal src */
        if (dst != src) memmove(dst, src, n * gt_dtype_size(dst_dt));
        return GT_OK;
    }
    /* dtypes differ: dst and src do not overlap (contract), blocks are independent */
    long long nb = (long long)((n + BLOCK - 1) / BLOCK);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (nb > 1)
#endif
    for (long long b = 0; b < nb; b++) {
        size_t lo = (size_t)b * BLOCK, hi = lo + BLOCK < n ? lo + BLOCK : n;
        cast_block(dst, dst_dt, src, src_dt, lo, hi);
    }
    return GT_OK;
}
