/* kernels.cast.cpu: the cast op (ops.h) on the ref and cpu backends.
 *
 * - every bf16 and fp16 bit pattern widens exactly (to fp32 and fp64) and
 *   comes back unchanged; NaN stays NaN;
 * - fp64 and fp32 values round to bf16 / fp16 as an independent oracle says
 *   (the nearest of all 65536 patterns, ties to the even pattern, Inf past
 *   the largest finite value + half an ulp): random values over the whole
 *   exponent range, exact ties, and values one fp64 ulp off a tie, which
 *   rounding fp64 twice (through fp32's nearest) gets wrong;
 * - the cpu backend gives the ref's bits for every pair of dtypes on a
 *   million elements of random bit patterns (NaN, Inf, subnormals
 *   included), in several blocks;
 * - integer dtypes are refused with GT_ERR_UNSUPPORTED.
 * Exit: 0 pass, 1 a check failed. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "engine/rng.h"
#include "engine/tests/check.h"
#include "kernels/tests/testutil.h"

static const gt_dtype k_fdt[] = {GT_DTYPE_FP32, GT_DTYPE_FP64, GT_DTYPE_BF16, GT_DTYPE_FP16};

/* ---- the oracle: all non-negative finite patterns of a 16-bit format, in
 * increasing order (the patterns are monotonic), then Inf as the value
 * IEEE rounding compares against (2^16 for fp16, 2^128 for bf16). */
typedef struct fmt16 {
    int bf;
    uint16_t inf;
    double val[0x8000];
    int nval; /* finite patterns 0 .. inf - 1, then inf */
} fmt16;

static double val16(int bf, uint16_t h) {
    return bf ? (double)gt_bf16_to_fp32(h) : (double)gt_fp16_to_fp32(h);
}

static void fmt_init(fmt16 *f, int bf) {
    f->bf = bf;
    f->inf = bf ? 0x7f80 : 0x7c00;
    for (uint16_t h = 0; h < f->inf; h++) f->val[h] = val16(bf, h);
    f->val[f->inf] = bf ? ldexp(1.0, 128) : 65536.0;
    f->nval = f->inf + 1;
}

/* The correctly rounded pattern of a finite x. */
static uint16_t oracle(const fmt16 *f, double x) {
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs(x);
    if (a >= f->val[f->inf]) return sign | f->inf;
    int lo = 0, hi = f->inf; /* val[lo] <= a < val[hi] */
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (f->val[mid] <= a) lo = mid;
        else hi = mid;
    }
    double dl = a - f->val[lo], dh = f->val[hi] - a; /* exact: a is near both */
    uint16_t h;
    if (dl < dh) h = (uint16_t)lo;
    else if (dh < dl) h = (uint16_t)hi;
    else h = (uint16_t)((lo & 1) ? hi : lo);
    return sign | h;
}

static gt_backend *g_ref, *g_cpu;

static gt_status cast(gt_backend *be, void *dst, gt_dtype d, const void *src, gt_dtype s,
                      size_t n) {
    gt_kctx k = {.be = be, .dt = GT_DTYPE_FP32};
    return be->ops->cast(&k, dst, d, src, s, n);
}

static int is_nan16(int bf, uint16_t h) {
    uint16_t e = bf ? 0x7f80 : 0x7c00;
    return (h & e) == e && (h & (uint16_t)~(e | 0x8000));
}

/* Every pattern widens exactly and narrows back to itself. */
static void roundtrip(gt_backend *be, int bf) {
    gt_dtype dt = bf ? GT_DTYPE_BF16 : GT_DTYPE_FP16;
    uint16_t *h = tu_xmalloc(65536 * 2), *back = tu_xmalloc(65536 * 2);
    float *f = tu_xmalloc(65536 * 4);
    double *d = tu_xmalloc(65536 * 8);
    for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    CHECK_OK(cast(be, f, GT_DTYPE_FP32, h, dt, 65536));
    CHECK_OK(cast(be, d, GT_DTYPE_FP64, h, dt, 65536));
    size_t bad = 0;
    for (uint32_t i = 0; i < 65536; i++) {
        double want = val16(bf, h[i]);
        if (is_nan16(bf, h[i])) bad += !(isnan(f[i]) && isnan(d[i]));
        else bad += !((double)f[i] == want && d[i] == want && signbit(d[i]) == signbit(want));
    }
    CHECK(bad == 0, "%s %s -> fp32/fp64: %zu patterns widened wrongly", be->name,
          gt_dtype_name(dt), bad);
    for (int from = 0; from < 2; from++) {
        CHECK_OK(from ? cast(be, back, dt, d, GT_DTYPE_FP64, 65536)
                      : cast(be, back, dt, f, GT_DTYPE_FP32, 65536));
        bad = 0;
        for (uint32_t i = 0; i < 65536; i++)
            bad += is_nan16(bf, h[i]) ? !is_nan16(bf, back[i]) : back[i] != h[i];
        CHECK(bad == 0, "%s %s -> %s -> %s: %zu patterns changed", be->name, gt_dtype_name(dt),
              from ? "fp64" : "fp32", gt_dtype_name(dt), bad);
    }
    free(h);
    free(back);
    free(f);
    free(d);
}

/* Random values over the format's range, exact ties and near-ties, from
 * fp64 and from fp32, against the oracle. */
static void rounding(gt_backend *be, const fmt16 *f) {
    gt_dtype dt = f->bf ? GT_DTYPE_BF16 : GT_DTYPE_FP16;
    int emin = f->bf ? -140 : -28, emax = f->bf ? 130 : 18;
    enum { NR = 40000 };
    double *x = tu_xmalloc(NR * sizeof(double));
    size_t n = 0;
    for (uint64_t i = 0; n < NR / 2; i++) { /* random: 52-bit mantissa, uniform exponent */
        uint64_t r = gt_rng_u64(TU_SEED, 90 + (uint64_t)f->bf, i);
        double m = 1.0 + (double)(r >> 12) * 0x1p-52;
        int e = emin + (int)(gt_rng_u32(TU_SEED, 92 + (uint64_t)f->bf, i) % (uint32_t)(emax - emin));
        x[n++] = (r & 1 ? -1.0 : 1.0) * ldexp(m, e);
    }
    for (uint64_t i = 0; n + 3 <= NR; i++) { /* a tie between neighbours, and one ulp off it */
        int h = (int)(gt_rng_u32(TU_SEED, 94 + (uint64_t)f->bf, i) % (uint32_t)f->inf);
        double tie = (f->val[h] + f->val[h + 1]) / 2; /* exact in fp64 */
        x[n++] = tie;
        x[n++] = nextafter(tie, INFINITY);
        x[n++] = nextafter(tie, -INFINITY);
    }
    uint16_t *got = tu_xmalloc(n * 2);
    CHECK_OK(cast(be, got, dt, x, GT_DTYPE_FP64, n));
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != oracle(f, x[i]) && !bad++) first = i;
    CHECK(bad == 0, "%s fp64 -> %s: %zu of %zu wrong, first x = %.17g: got 0x%04x want 0x%04x",
          be->name, gt_dtype_name(dt), bad, n, x[first], got[first], oracle(f, x[first]));
    /* the same from fp32: values rounded to fp32 first (ties stay ties) */
    float *xf = tu_xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) xf[i] = (float)x[i];
    CHECK_OK(cast(be, got, dt, xf, GT_DTYPE_FP32, n));
    bad = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != oracle(f, (double)xf[i]) && !bad++) first = i;
    CHECK(bad == 0, "%s fp32 -> %s: %zu of %zu wrong, first x = %.9g: got 0x%04x want 0x%04x",
          be->name, gt_dtype_name(dt), bad, n, (double)xf[first], got[first],
          oracle(f, (double)xf[first]));
    /* fp64 -> fp32 is C's conversion (nearest even) */
    float *y = tu_xmalloc(n * sizeof(float));
    CHECK_OK(cast(be, y, GT_DTYPE_FP32, x, GT_DTYPE_FP64, n));
    CHECK(memcmp(y, xf, n * sizeof(float)) == 0, "%s fp64 -> fp32 differs from (float)",
          be->name);
    /* NaN and Inf from fp64 */
    double sp[3] = {NAN, INFINITY, -INFINITY};
    uint16_t o[3];
    CHECK_OK(cast(be, o, dt, sp, GT_DTYPE_FP64, 3));
    CHECK(is_nan16(f->bf, o[0]) && o[1] == f->inf && o[2] == (0x8000 | f->inf),
          "%s fp64 NaN/Inf -> %s: 0x%04x 0x%04x 0x%04x", be->name, gt_dtype_name(dt), o[0],
          o[1], o[2]);
    free(x);
    free(xf);
    free(y);
    free(got);
}

/* Random bit patterns of `dt`: every class of value shows up. */
static void fill_bits(void *p, gt_dtype dt, size_t n, uint64_t stream) {
    size_t es = gt_dtype_size(dt);
    unsigned char *b = p;
    for (size_t i = 0; i < n * es; i += 4) {
        uint32_t r = gt_rng_u32(TU_SEED, stream, i / 4);
        memcpy(b + i, &r, n * es - i < 4 ? n * es - i : 4);
    }
}

/* cpu == ref, bitwise, for every pair. */
static void cpu_vs_ref(void) {
    const size_t n = 1000003; /* not a multiple of the cpu's block */
    /* one guard element of room after n fp64 values */
    void *src = tu_xmalloc(n * 8 + 8), *a = tu_xmalloc(n * 8 + 8), *b = tu_xmalloc(n * 8 + 8);
    for (size_t i = 0; i < 4; i++) {
        for (size_t j = 0; j < 4; j++) {
            gt_dtype s = k_fdt[i], d = k_fdt[j];
            fill_bits(src, s, n, 100 + i);
            memset(a, 0xa5, n * 8 + 8);
            memset(b, 0x5a, n * 8 + 8);
            CHECK_OK(cast(g_ref, a, d, src, s, n));
            CHECK_OK(cast(g_cpu, b, d, src, s, n));
            CHECK(memcmp(a, b, n * gt_dtype_size(d)) == 0, "cpu %s -> %s differs from ref",
                  gt_dtype_name(s), gt_dtype_name(d));
            CHECK(((unsigned char *)b)[n * gt_dtype_size(d)] == 0x5a,
                  "cpu %s -> %s wrote past n elements", gt_dtype_name(s), gt_dtype_name(d));
        }
    }
    /* same dtype in place: a no-op */
    fill_bits(src, GT_DTYPE_BF16, n, 110);
    memcpy(a, src, n * 2);
    CHECK_OK(cast(g_cpu, a, GT_DTYPE_BF16, a, GT_DTYPE_BF16, n));
    CHECK(memcmp(a, src, n * 2) == 0, "cpu bf16 -> bf16 in place changed the data");
    free(src);
    free(a);
    free(b);
}

int main(void) {
    gt_backend_config cfg = {.threads = 0, .device = -1};
    CHECK_OK(gt_backend_new("ref", &cfg, &g_ref));
    CHECK_OK(gt_backend_new("cpu", &cfg, &g_cpu));
    if (!g_ref || !g_cpu) return check_done("kernels.cast");
    static fmt16 fb, fh;
    fmt_init(&fb, 1);
    fmt_init(&fh, 0);
    gt_backend *bes[2] = {g_ref, g_cpu};
    for (int i = 0; i < 2; i++) {
        CHECK(bes[i]->ops->cast != NULL, "%s has no cast op", bes[i]->name);
        if (!bes[i]->ops->cast) continue;
        roundtrip(bes[i], 1);
        roundtrip(bes[i], 0);
        rounding(bes[i], &fb);
        rounding(bes[i], &fh);
        float f = 1.0f;
        int32_t v = 0;
        CHECK_STATUS(cast(bes[i], &v, GT_DTYPE_INT32, &f, GT_DTYPE_FP32, 1), GT_ERR_UNSUPPORTED);
        CHECK_STATUS(cast(bes[i], &f, GT_DTYPE_FP32, &v, GT_DTYPE_INT32, 1), GT_ERR_UNSUPPORTED);
        CHECK_OK(cast(bes[i], NULL, GT_DTYPE_BF16, NULL, GT_DTYPE_FP32, 0));
    }
    if (g_ref->ops->cast && g_cpu->ops->cast) cpu_vs_ref();
    gt_backend_free(g_cpu);
    gt_backend_free(g_ref);
    return check_done("kernels.cast");
}
