/* kernels.cast.cuda: the cast op of the cuda backend gives the ref
 * backend's bits for every pair of fp32, fp64, bf16, fp16 (both rounding
 * to nearest even once), on random bit patterns (NaN, Inf, subnormals
 * included) of an odd length; a NaN must stay a NaN (CUDA's conversions
 * may change a NaN's payload, so NaNs are compared as NaN only). Also: a
 * same-dtype cast with overlapping ranges copies like memmove, a cast
 * between dtypes whose ranges overlap (either one starting inside the
 * other) is refused with GT_ERR_INVALID, and integer dtypes are refused
 * with GT_ERR_UNSUPPORTED. fp64 -> fp32/bf16/fp16 rounds ONCE: fp64
 * values at and one fp64 ulp either side of a tie of the narrow type
 * (random bit patterns almost never land there), where rounding through
 * fp32 first goes the wrong way.
 * Exit 77: no GPU. */
#include "kernels/tests/testutil.h"

static const gt_dtype k_fdt[] = {GT_DTYPE_FP32, GT_DTYPE_FP64, GT_DTYPE_BF16, GT_DTYPE_FP16};

int main(void) {
    gt_backend *be = tu_backend_or_skip("cuda", 0), *ref = tu_backend_or_skip("ref", 0);
    gt_status s;
    if (!be->ops->cast || !ref->ops->cast) {
        printf("FAIL: the cast slot is empty (cuda %p, ref %p)\n", (void *)be->ops->cast,
               (void *)ref->ops->cast);
        return 1;
    }
    const size_t n = ((size_t)1 << 20) + 3;
    int fails = 0;
    for (int a = 0; a < 4; a++) {
        for (int b = 0; b < 4; b++) {
            gt_dtype from = k_fdt[a], to = k_fdt[b];
            size_t sb = n * gt_dtype_size(from), db = n * gt_dtype_size(to);
            uint32_t *src = tu_xmalloc(sb + 4);
            for (size_t i = 0; i < (sb + 3) / 4; i++)
                src[i] = gt_rng_u32(TU_SEED, 1000 + 4 * a + b, i);
            void *want = tu_xmalloc(db), *got = tu_xmalloc(db);
            gt_kctx kr = {ref, GT_DTYPE_FP32}, kc = {be, GT_DTYPE_BF16};
            s = ref->ops->cast(&kr, want, to, src, from, n);
            if (s != GT_OK) tu_die("ref cast", s);
            void *dsrc = tu_upload_raw(be, src, sb), *ddst = NULL;
            if ((s = gt_backend_alloc(be, db, &ddst)) != GT_OK) tu_die("alloc", s);
            s = be->ops->cast(&kc, ddst, to, dsrc, from, n);
            if (s == GT_OK) s = be->copy_to_host(be, got, ddst, db);
            size_t bad = 0, first = 0, es = gt_dtype_size(to);
            if (s == GT_OK) {
                for (size_t i = 0; i < n; i++) {
                    int wn = tu_is_nan(want, to, i), gn = tu_is_nan(got, to, i);
                    int same = wn || gn
                                   ? wn == gn
                                   : memcmp((char *)want + i * es, (char *)got + i * es, es) == 0;
                    if (!same && !bad++) first = i;
                }
            }
            printf("  cast %-4s -> %-4s %zu values: ", gt_dtype_name(from), gt_dtype_name(to), n);
            if (s != GT_OK) {
                printf("FAIL: %s: %s\n", gt_status_name(s), gt_last_error());
                fails++;
            } else if (bad) {
                printf("%zu differ from ref, first at [%zu]  FAIL\n", bad, first);
                fails++;
            } else {
                printf("bitwise equal to ref (NaN as NaN)  ok\n");
            }
            gt_backend_dealloc(be, ddst);
            gt_backend_dealloc(be, dsrc);
            free(src);
            free(want);
            free(got);
        }
    }
    /* same dtype, overlapping: dst = src + 3 elements, memmove semantics */
    {
        size_t m = 1000;
        float *h = tu_xmalloc((m + 3) * 4), *g = tu_xmalloc((m + 3) * 4);
        for (size_t i = 0; i < m + 3; i++)
            h[i] = (float)i;
        void *d = tu_upload_raw(be, h, (m + 3) * 4);
        gt_kctx kc = {be, GT_DTYPE_FP32};
        s = be->ops->cast(&kc, (float *)d + 3, GT_DTYPE_FP32, d, GT_DTYPE_FP32, m);
        if (s == GT_OK) s = be->copy_to_host(be, g, d, (m + 3) * 4);
        size_t bad = 0;
        for (size_t i = 0; s == GT_OK && i < m + 3; i++)
            bad += g[i] != (float)(i < 3 ? i : i - 3);
        printf("  overlapping fp32 copy: %s\n", s != GT_OK ? gt_last_error() : bad ? "FAIL" : "ok");
        fails += s != GT_OK || bad;
        gt_backend_dealloc(be, d);
        free(h);
        free(g);
    }
    /* fp64 near ties of fp32/bf16/fp16: mid = halfway between two adjacent
     * values of the narrow type, then mid and its fp64 neighbours; want:
     * the nearest (ties to even), which ref gives (kernels.cast.cpu) */
    for (int b = 0; b < 3; b++) {
        gt_dtype to = b == 0 ? GT_DTYPE_FP32 : b == 1 ? GT_DTYPE_BF16 : GT_DTYPE_FP16;
        enum { NT = 3 * 700 };
        double *x = tu_xmalloc(NT * sizeof(double));
        for (int i = 0; i < NT / 3; i++) {
            uint32_t r = gt_rng_u32(TU_SEED, 3000 + b, i);
            double lo, hi;
            if (to == GT_DTYPE_FP32) {
                float f = ldexpf(1.0f + (float)(r & 0xffff) * 0x1p-16f, (int)(r >> 16) % 64 - 32);
                lo = f;
                hi = nextafterf(f, INFINITY);
            } else if (to == GT_DTYPE_BF16) {
                uint16_t h = (uint16_t)(0x3000 + r % 0x1800); /* 2^-31 .. 2^17, positive */
                lo = gt_bf16_to_fp32(h);
                hi = gt_bf16_to_fp32((uint16_t)(h + 1));
            } else {
                uint16_t h = (uint16_t)(r % 0x7bff); /* subnormals .. 65504, positive */
                lo = gt_fp16_to_fp32(h);
                hi = gt_fp16_to_fp32((uint16_t)(h + 1));
            }
            double mid = lo + (hi - lo) / 2, sg = r & 0x80000000u ? -1.0 : 1.0;
            x[3 * i] = sg * mid;
            x[3 * i + 1] = sg * nextafter(mid, 0.0);
            x[3 * i + 2] = sg * nextafter(mid, INFINITY);
        }
        size_t db = NT * gt_dtype_size(to);
        void *want = tu_xmalloc(db), *got = tu_xmalloc(db);
        gt_kctx kr = {ref, GT_DTYPE_FP32}, kc = {be, GT_DTYPE_FP32};
        s = ref->ops->cast(&kr, want, to, x, GT_DTYPE_FP64, NT);
        if (s != GT_OK) tu_die("ref cast", s);
        void *dsrc = tu_upload_raw(be, x, NT * sizeof(double)), *ddst = NULL;
        if ((s = gt_backend_alloc(be, db, &ddst)) != GT_OK) tu_die("alloc", s);
        s = be->ops->cast(&kc, ddst, to, dsrc, GT_DTYPE_FP64, NT);
        if (s == GT_OK) s = be->copy_to_host(be, got, ddst, db);
        size_t bad = 0, first = 0;
        for (size_t i = 0; s == GT_OK && i < NT; i++)
            if (memcmp((char *)want + i * gt_dtype_size(to), (char *)got + i * gt_dtype_size(to),
                       gt_dtype_size(to)) != 0 && !bad++)
                first = i;
        printf("  cast fp64 -> %-4s %d values at and next to ties: ", gt_dtype_name(to), NT);
        if (s != GT_OK)
            printf("FAIL: %s: %s\n", gt_status_name(s), gt_last_error());
        else if (bad)
            printf("%zu differ from ref (rounded twice?), first at [%zu] x = %.17g  FAIL\n", bad,
                   first, x[first]);
        else
            printf("rounded once, bitwise equal to ref  ok\n");
        fails += s != GT_OK || bad;
        gt_backend_dealloc(be, ddst);
        gt_backend_dealloc(be, dsrc);
        free(x);
        free(want);
        free(got);
    }
    /* different dtypes, overlapping: refused whichever range starts first */
    {
        void *d = NULL;
        if ((s = gt_backend_alloc(be, 4096, &d)) != GT_OK) tu_die("alloc", s);
        gt_kctx kc = {be, GT_DTYPE_FP32};
        char *c = d;
        /* src inside dst, then dst inside src (fp32 <-> bf16, 100 values) */
        gt_status s1 = be->ops->cast(&kc, c, GT_DTYPE_FP32, c + 64, GT_DTYPE_BF16, 100);
        gt_status s2 = be->ops->cast(&kc, c + 64, GT_DTYPE_BF16, c, GT_DTYPE_FP32, 100);
        int ok = s1 == GT_ERR_INVALID && s2 == GT_ERR_INVALID;
        gt_error_clear();
        printf("  overlapping fp32 <-> bf16 cast refused: %s (%s, %s)\n", ok ? "ok" : "FAIL",
               gt_status_name(s1), gt_status_name(s2));
        fails += !ok;
        gt_backend_dealloc(be, d);
    }
    {
        gt_kctx kc = {be, GT_DTYPE_FP32};
        s = be->ops->cast(&kc, NULL, GT_DTYPE_INT32, NULL, GT_DTYPE_FP32, 4);
        printf("  int32 destination refused: %s (%s)\n", s == GT_ERR_UNSUPPORTED ? "ok" : "FAIL",
               gt_status_name(s));
        fails += s != GT_ERR_UNSUPPORTED;
    }
    gt_backend_free(ref);
    gt_backend_free(be);
    printf("cast cuda: %s\n", fails ? "FAILED" : "passed");
    return fails ? 1 : 0;
}
