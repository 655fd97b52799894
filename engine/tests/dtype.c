/* engine.dtype.host: names, sizes, and the bf16 / fp16 conversions against
 * hand-picked edge cases and an independent brute-force rounding oracle. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "engine/dtype.h"
#include "engine/rng.h"

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static int f16_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x03ff); }
static int bf16_is_nan(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x007f); }

/* Value of a non-negative fp16 pattern in double; Inf counts as 65536, the
 * value IEEE rounding compares against when deciding overflow. */
static double f16_val(uint16_t h) {
    if (h == 0x7c00) return 65536.0;
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    return e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
}

/* Nearest fp16 by search over the ordered positive patterns, ties to even. */
static uint16_t f16_oracle(float x) {
    double a = fabs((double)x);
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (a >= 65536.0) return sign | 0x7c00;
    unsigned lo = 0, hi = 0x7c00; /* f16_val(lo) <= a < f16_val(hi) */
    while (hi - lo > 1) {
        unsigned mid = (lo + hi) / 2;
        if (f16_val((uint16_t)mid) <= a)
            lo = mid;
        else
            hi = mid;
    }
    double dl = a - f16_val((uint16_t)lo), dh = f16_val((uint16_t)hi) - a;
    unsigned r = dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
    return (uint16_t)(sign | r);
}

static uint16_t bf16_oracle(float x) {
    uint32_t u = bits(x);
    uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
    double a = x, vl = from_bits((uint32_t)lo << 16);
    /* The pattern after the largest finite bf16 is Inf: compare against 2^128. */
    double vh = (hi & 0x7fff) == 0x7f80 ? copysign(ldexp(1.0, 128), a)
                                        : (double)from_bits((uint32_t)hi << 16);
    double dl = fabs(a - vl), dh = fabs(vh - a);
    return dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
}

static void test_names(void) {
    CHECK(gt_dtype_size(GT_DTYPE_FP32) == 4 && gt_dtype_size(GT_DTYPE_FP64) == 8 &&
              gt_dtype_size(GT_DTYPE_BF16) == 2 && gt_dtype_size(GT_DTYPE_FP16) == 2,
          "sizes");
    for (int i = 0; i < GT_DTYPE_COUNT; i++) {
        gt_dtype d = GT_DTYPE_COUNT;
        CHECK_OK(gt_dtype_parse(gt_dtype_name((gt_dtype)i), &d));
        CHECK(d == (gt_dtype)i, "parse(name(%d)) = %d", i, (int)d);
    }
    CHECK(strcmp(gt_dtype_name(GT_DTYPE_BF16), "bf16") == 0, "name bf16");
    gt_dtype d;
    CHECK_STATUS(gt_dtype_parse("float32", &d), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "float32") != NULL, "message names the input: %s",
          gt_last_error());
    gt_tolerance t = gt_dtype_tolerance(GT_DTYPE_FP32);
    CHECK(t.rtol == 1.3e-6 && t.atol == 1e-5, "fp32 tolerance");
    t = gt_dtype_tolerance(GT_DTYPE_BF16);
    CHECK(t.rtol == 1.6e-2 && t.atol == 1e-5, "bf16 tolerance");
    t = gt_dtype_tolerance(GT_DTYPE_FP16);
    CHECK(t.rtol == 1e-3 && t.atol == 1e-5, "fp16 tolerance");
    t = gt_dtype_tolerance(GT_DTYPE_FP64);
    CHECK(t.rtol == 1e-12 && t.atol == 1e-12, "fp64 tolerance");
}

static void test_bf16_cases(void) {
    static const struct { uint32_t in; uint16_t out; } cases[] = {
        {0x3f800000, 0x3f80}, /* 1 */
        {0x3f808000, 0x3f80}, /* tie, even below */
        {0x3f818000, 0x3f82}, /* tie, odd below: up */
        {0x3f808001, 0x3f81}, /* just above the tie */
        {0x3f807fff, 0x3f80}, /* just below the tie */
        {0x7f7fffff, 0x7f80}, /* FLT_MAX overflows to Inf */
        {0x7f7f7fff, 0x7f7f}, /* largest value that stays finite */
        {0xff7fffff, 0xff80}, /* -FLT_MAX -> -Inf */
        {0x7f800000, 0x7f80}, /* Inf */
        {0x80000000, 0x8000}, /* -0 */
        {0x00010000, 0x0001}, /* subnormal, exact */
        {0x00018000, 0x0002}, /* subnormal tie, odd: up */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t h = gt_fp32_to_bf16(from_bits(cases[i].in));
        CHECK(h == cases[i].out, "bf16(%08x) = %04x, want %04x", cases[i].in, h, cases[i].out);
    }
    /* NaNs whose payload sits only in the dropped bits must stay NaN. */
    uint32_t nans[] = {0x7f800001, 0xff800001, 0x7fc00000, 0x7f80ffff, 0xffffffff};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint16_t h = gt_fp32_to_bf16(from_bits(nans[i]));
        CHECK(bf16_is_nan(h) && (h & 0x40), "bf16(NaN %08x) = %04x, want a quiet NaN", nans[i],
              h);
        CHECK((h >> 15) == (nans[i] >> 31), "NaN sign kept for %08x", nans[i]);
    }
    /* Every bf16 pattern survives the round trip (signalling NaNs turn quiet). */
    for (uint32_t h = 0; h < 0x10000; h++) {
        uint16_t back = gt_fp32_to_bf16(gt_bf16_to_fp32((uint16_t)h));
        if (bf16_is_nan((uint16_t)h))
            CHECK(back == (h | 0x40), "bf16 NaN %04x -> %04x", h, back);
        else
            CHECK(back == h, "bf16 round trip %04x -> %04x", h, back);
    }
    /* Random fp32 values across the whole range against the oracle. */
    for (uint64_t i = 0; i < 400000; i++) {
        float x = from_bits(gt_rng_u32(1, 7, i));
        if (isnan(x)) continue;
        uint16_t got = gt_fp32_to_bf16(x), want = bf16_oracle(x);
        if (got != want) {
            CHECK(got == want, "bf16(%08x) = %04x, oracle %04x", bits(x), got, want);
            break;
        }
    }
}

static void test_fp16_cases(void) {
    static const struct { float in; uint16_t out; } cases[] = {
        {1.0f, 0x3c00},
        {-2.0f, 0xc000},
        {65504.0f, 0x7bff},
        {65519.99f, 0x7bff},   /* below the overflow tie */
        {65520.0f, 0x7c00},    /* tie, rounds to even = Inf */
        {1e10f, 0x7c00},
        {-1e10f, 0xfc00},
        {0x1p-14f, 0x0400},    /* smallest normal */
        {0x1p-24f, 0x0001},    /* smallest subnormal */
        {0x1p-25f, 0x0000},    /* tie between 0 and 2^-24: even = 0 */
        {-0x1p-25f, 0x8000},
        {0x1.000002p-25f, 0x0001},
        {0x3p-25f, 0x0002},    /* 1.5 * 2^-24: tie, up to even 2 */
        {0x5p-25f, 0x0002},    /* 2.5 * 2^-24: tie, down to even 2 */
        {0x3ffp-24f, 0x03ff},  /* largest subnormal */
        {0x1.ffep-15f, 0x0400},/* rounds up from subnormal to the smallest normal */
        {0x1.002p0f, 0x3c00},  /* 1 + 2^-11: tie, even below */
        {0x1.006p0f, 0x3c02},  /* 1 + 3*2^-11: tie, odd below: up */
        {0x1.0021p0f, 0x3c01},
        {0.0f, 0x0000},
        {-0.0f, 0x8000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t h = gt_fp32_to_fp16(cases[i].in);
        CHECK(h == cases[i].out, "fp16(%a) = %04x, want %04x", (double)cases[i].in, h,
              cases[i].out);
    }
    CHECK(gt_fp32_to_fp16(from_bits(0x7f800000)) == 0x7c00, "fp16(Inf)");
    uint32_t nans[] = {0x7f800001, 0xff800001, 0x7fc00000, 0x7fffffff};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint16_t h = gt_fp32_to_fp16(from_bits(nans[i]));
        CHECK(f16_is_nan(h) && (h & 0x200), "fp16(NaN %08x) = %04x, want a quiet NaN", nans[i],
              h);
    }
    CHECK(gt_fp16_to_fp32(0x0001) == 0x1p-24f, "fp16 smallest subnormal reads exactly");
    CHECK(gt_fp16_to_fp32(0x83ff) == -0x3ffp-24f, "fp16 negative subnormal reads exactly");
    CHECK(gt_fp16_to_fp32(0x7bff) == 65504.0f, "fp16 max");
    CHECK(isinf(gt_fp16_to_fp32(0xfc00)) && gt_fp16_to_fp32(0xfc00) < 0, "fp16 -Inf");
    CHECK(isnan(gt_fp16_to_fp32(0x7c01)), "fp16 signalling NaN reads as NaN");
    for (uint32_t h = 0; h < 0x10000; h++) {
        uint16_t back = gt_fp32_to_fp16(gt_fp16_to_fp32((uint16_t)h));
        if (f16_is_nan((uint16_t)h))
            CHECK(back == (h | 0x200), "fp16 NaN %04x -> %04x", h, back);
        else
            CHECK(back == h, "fp16 round trip %04x -> %04x", h, back);
    }
    /* Random values concentrated on fp16's range (exponents 2^-30..2^17),
     * against the brute-force oracle. */
    int bad = 0;
    for (uint64_t i = 0; i < 400000 && !bad; i++) {
        uint32_t r = gt_rng_u32(2, 9, i);
        uint32_t e = 97 + (r >> 24) % 48;
        float x = from_bits((r & 0x807fffffu) | e << 23);
        uint16_t got = gt_fp32_to_fp16(x), want = f16_oracle(x);
        if (got != want) {
            CHECK(got == want, "fp16(%a) = %04x, oracle %04x", (double)x, got, want);
            bad = 1;
        }
    }
}

static void test_convert(void) {
    float src[6] = {1.0f, -0.5f, 0x1.002p0f, 65520.0f, 0x1p-24f, 3.14159265f};
    uint16_t h[6], b[6];
    double d[6];
    float back[6];
    gt_convert(h, GT_DTYPE_FP16, src, GT_DTYPE_FP32, 6);
    gt_convert(b, GT_DTYPE_BF16, src, GT_DTYPE_FP32, 6);
    for (int i = 0; i < 6; i++) {
        CHECK(h[i] == gt_fp32_to_fp16(src[i]), "convert fp32->fp16 [%d]", i);
        CHECK(b[i] == gt_fp32_to_bf16(src[i]), "convert fp32->bf16 [%d]", i);
    }
    gt_convert(d, GT_DTYPE_FP64, h, GT_DTYPE_FP16, 6);
    for (int i = 0; i < 6; i++)
        CHECK(d[i] == (double)gt_fp16_to_fp32(h[i]), "convert fp16->fp64 [%d]", i);
    double dd[2] = {1.0 + 1e-12, 0.1};
    float f[2];
    gt_convert(f, GT_DTYPE_FP32, dd, GT_DTYPE_FP64, 2);
    CHECK(f[0] == 1.0f && f[1] == 0.1f, "convert fp64->fp32 rounds to nearest");
    uint16_t hh[2];
    gt_convert(hh, GT_DTYPE_FP16, dd, GT_DTYPE_FP64, 2);
    CHECK(hh[0] == 0x3c00 && hh[1] == gt_fp32_to_fp16(0.1f), "convert fp64->fp16");
    double same[2];
    gt_convert(same, GT_DTYPE_FP64, dd, GT_DTYPE_FP64, 2);
    CHECK(same[0] == dd[0] && same[1] == dd[1], "fp64->fp64 is exact");
    gt_convert(back, GT_DTYPE_FP32, b, GT_DTYPE_BF16, 6);
    CHECK(back[0] == 1.0f && back[1] == -0.5f, "bf16->fp32");
}

int main(void) {
    test_names();
    test_bf16_cases();
    test_fp16_cases();
    test_convert();
    return check_done("engine.dtype.host");
}
