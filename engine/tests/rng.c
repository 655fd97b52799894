/* engine.rng.host: Philox4x32-10 against Random123's known-answer vectors,
 * the documented (seed, stream, index) layout, independence from how a
 * range is split, and the moments of the derived distributions. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/rng.h"
#include "gt_config.h"
#if GT_HAVE_OPENMP
#include <omp.h>
#endif

static void test_kat(void) {
    static const struct { uint32_t ctr[4], key[2], out[4]; } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
         {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
         {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        uint32_t out[4];
        gt_philox4x32_10(kat[i].ctr, kat[i].key, out);
        CHECK(memcmp(out, kat[i].out, sizeof out) == 0,
              "KAT %zu: %08x %08x %08x %08x, want %08x %08x %08x %08x", i, out[0], out[1], out[2],
              out[3], kat[i].out[0], kat[i].out[1], kat[i].out[2], kat[i].out[3]);
    }
}

static void test_layout(void) {
    const uint64_t seed = 0x0123456789abcdefull, stream = 0xfedcba9876543210ull;
    const uint64_t idx[] = {0, 1, 2, 3, 4, 7, 0x123456789ull, 0xfffffffffffffffeull};
    for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++) {
        uint64_t b = idx[i] / 4;
        uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32), (uint32_t)stream,
                           (uint32_t)(stream >> 32)};
        uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
        uint32_t out[4];
        gt_philox4x32_10(ctr, key, out);
        CHECK(gt_rng_u32(seed, stream, idx[i]) == out[idx[i] % 4], "u32 layout at %llu",
              (unsigned long long)idx[i]);

        b = idx[i] / 2;
        ctr[0] = (uint32_t)b;
        ctr[1] = (uint32_t)(b >> 32);
        gt_philox4x32_10(ctr, key, out);
        unsigned h = (unsigned)(idx[i] % 2) * 2;
        uint64_t want = out[h] | (uint64_t)out[h + 1] << 32;
        CHECK(gt_rng_u64(seed, stream, idx[i]) == want, "u64 layout at %llu",
              (unsigned long long)idx[i]);

        /* Box-Muller exactly as rng.c documents it. */
        uint64_t a = out[0] | (uint64_t)out[1] << 32, c = out[2] | (uint64_t)out[3] << 32;
        double u1 = (double)((a >> 11) + 1) * 0x1p-53, u2 = (double)(c >> 11) * 0x1p-53;
        double r = sqrt(-2.0 * log(u1)), th = 6.283185307179586476925286766559 * u2;
        float wantn = (float)(idx[i] % 2 ? r * sin(th) : r * cos(th));
        CHECK(gt_rng_normal(seed, stream, idx[i]) == wantn, "normal derivation at %llu",
              (unsigned long long)idx[i]);
    }
    CHECK(gt_rng_u32(1, 0, 0) != gt_rng_u32(1, 1, 0), "streams differ");
    CHECK(gt_rng_u32(1, 0, 0) != gt_rng_u32(2, 0, 0), "seeds differ");
    CHECK(gt_rng_u32((uint64_t)1 << 32, 0, 0) != gt_rng_u32(0, 0, 0), "seed high word is used");
    CHECK(gt_rng_u32(0, (uint64_t)1 << 32, 0) != gt_rng_u32(0, 0, 0), "stream high word is used");
}

static void test_split(void) {
    enum { N = 1001 };
    static float whole[N], parts[N], uw[N], up[N];
    gt_rng_fill_normal(whole, N, 0.5f, 0.02f, 1234, 17, 100);
    gt_rng_fill_uniform(uw, N, -0.1f, 0.1f, 1234, 17, 100);
    /* Pieces of odd sizes, filled back to front, as threads or ranks would. */
    const size_t cut[] = {0, 1, 2, 333, 334, 998, N};
    for (int k = 5; k >= 0; k--) {
        size_t o = cut[k], n = cut[k + 1] - cut[k];
        gt_rng_fill_normal(parts + o, n, 0.5f, 0.02f, 1234, 17, 100 + o);
        gt_rng_fill_uniform(up + o, n, -0.1f, 0.1f, 1234, 17, 100 + o);
    }
    CHECK(memcmp(whole, parts, sizeof whole) == 0, "normal fill independent of the split");
    CHECK(memcmp(uw, up, sizeof uw) == 0, "uniform fill independent of the split");
    for (int i = 0; i < N; i++) {
        if (whole[i] != gt_rng_normal(1234, 17, 100 + (uint64_t)i) * 0.02f + 0.5f) {
            CHECK(0, "fill_normal[%d] is normal(offset + i) * std + mean", i);
            break;
        }
    }
}

/* A fill large enough to be shared among threads (pieces of 2^16), at an
 * odd offset: element by element gt_rng_normal (glibc's log, sin and cos
 * apart, one Philox block per call), and the same bits on 1 and 3 threads.
 * Four million values: the fill's fast logarithm and sine fall back to
 * glibc for about one pair in two hundred, ten thousand times here. */
static void test_parallel_fill(void) {
    const size_t n = ((size_t)1 << 22) + 17;
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    CHECK(a && b, "allocating");
    if (!a || !b) return;
#if GT_HAVE_OPENMP
    int before = omp_get_max_threads();
    omp_set_num_threads(1);
#endif
    gt_rng_fill_normal(a, n, -0.25f, 0.02f, 99, 5, 12345);
#if GT_HAVE_OPENMP
    omp_set_num_threads(3);
#endif
    gt_rng_fill_normal(b, n, -0.25f, 0.02f, 99, 5, 12345);
#if GT_HAVE_OPENMP
    omp_set_num_threads(before);
#endif
    CHECK(memcmp(a, b, n * sizeof(float)) == 0, "a parallel fill gives the bits of one thread");
    for (size_t i = 0; i < n; i++)
        if (a[i] != gt_rng_normal(99, 5, 12345 + (uint64_t)i) * 0.02f - 0.25f) {
            CHECK(0, "parallel fill_normal[%zu] is normal(offset + i) * std + mean", i);
            break;
        }
    free(a);
    free(b);
}

static void test_moments(void) {
    enum { N = 200000 };
    double s = 0, s2 = 0, us = 0, ds = 0;
    float umin = 1, umax = 0;
    double dmin = 1, dmax = 0;
    int beyond3 = 0;
    for (uint64_t i = 0; i < N; i++) {
        double z = gt_rng_normal(9, 3, i);
        s += z;
        s2 += z * z;
        if (fabs(z) > 3) beyond3++;
        float u = gt_rng_uniform(9, 4, i);
        us += u;
        if (u < umin) umin = u;
        if (u > umax) umax = u;
        double d = gt_rng_uniform_f64(9, 5, i);
        ds += d;
        if (d < dmin) dmin = d;
        if (d > dmax) dmax = d;
    }
    double mean = s / N, var = s2 / N - mean * mean;
    /* 5 standard errors: a correct generator fails this about once in 10^6. */
    CHECK_NEAR(mean, 0.0, 5.0 / sqrt(N));
    CHECK_NEAR(var, 1.0, 5.0 * sqrt(2.0 / N));
    CHECK_NEAR(beyond3 / (double)N, 0.0027, 5.0 * sqrt(0.0027 / N));
    CHECK_NEAR(us / N, 0.5, 5.0 * sqrt(1.0 / 12 / N));
    CHECK_NEAR(ds / N, 0.5, 5.0 * sqrt(1.0 / 12 / N));
    CHECK(umin > 0.0f && umax < 1.0f, "uniform in (0, 1): [%g, %g]", umin, umax);
    CHECK(dmin >= 0.0 && dmax < 1.0, "uniform_f64 in [0, 1): [%g, %g]", dmin, dmax);
    float lohi[1000];
    gt_rng_fill_uniform(lohi, 1000, 2.0f, 3.0f, 5, 6, 0);
    int ok = 1;
    for (int i = 0; i < 1000; i++) ok &= lohi[i] >= 2.0f && lohi[i] < 3.0f;
    CHECK(ok, "fill_uniform stays in [lo, hi)");
}

int main(void) {
    test_kat();
    test_layout();
    test_split();
    test_parallel_fill();
    test_moments();
    return check_done("engine.rng.host");
}
