/* kernels.cast.cuda: the cast op of the cuda backend gives the ref
 * backend's bits for every pair of fp32, fp64, bf16, fp16 (both rounding
 * to nearest even once), on random bit patterns (NaN, Inf, subnormals
 * included) of an odd length; a NaN must stay a NaN (CUDA's conversions
 * may change a NaN's payload, so NaNs are compared as NaN only). Also: a
 * same-dtype cast with overlapping ranges copies like memmove, and integer
 * dtypes are refused with GT_ERR_UNSUPPORTED.
 * Exit 77: no GPU. */
#include "kernels/tests/testutil.h"

static const gt_dtype k_fdt[] = {GT_DTYPE_FP32, GT_DTYPE_FP64, GT_DTYPE_BF16, GT_DTYPE_FP16};

static int is_nan(const void *p, gt_dtype dt, size_t i) {
    switch (dt) {
    case GT_DTYPE_FP32:
        return isnan(((const float *)p)[i]);
    case GT_DTYPE_FP64:
        return isnan(((const double *)p)[i]);
    case GT_DTYPE_BF16:
        return (((const uint16_t *)p)[i] & 0x7fff) > 0x7f80;
    default:
        return (((const uint16_t *)p)[i] & 0x7fff) > 0x7c00;
    }
}

int main(void) {
    gt_backend_config cfg = {.threads = 0, .device = -1};
    gt_backend *be = NULL, *ref = NULL;
    gt_status s = gt_backend_new("cuda", &cfg, &be);
    if (s == GT_ERR_UNSUPPORTED) {
        printf("skipped: cuda backend unavailable: %s\n", gt_last_error());
        return 77;
    }
    if (s != GT_OK) tu_die("gt_backend_new(cuda)", s);
    if ((s = gt_backend_new("ref", &cfg, &ref)) != GT_OK) tu_die("gt_backend_new(ref)", s);
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
                    int wn = is_nan(want, to, i), gn = is_nan(got, to, i);
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
