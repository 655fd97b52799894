#define _GNU_SOURCE /* sincos */
/* Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as
 * easy as 1, 2, 3", SC'11), bit-compatible with Random123's philox4x32_R(10)
 * and with cuRAND's Philox4_32_10 core.
 *
 * How values are derived from a block (these are part of the determinism
 * contract: a GPU kernel that initialises weights must do the same):
 *
 *   block(seed, stream, b) = philox(key = (seed_lo, seed_hi),
 *                                   ctr = (b_lo, b_hi, stream_lo, stream_hi))
 *   u32 i      word i % 4 of block(i / 4).
 *   u64 i      words 2*(i%2) (low half) and 2*(i%2)+1 (high half) of
 *              block(i / 2).
 *   uniform i  k = u32(i) >> 8 (the top 24 bits); k * 2^-24, except that
 *              k = 0 gives 2^-25 so the interval stays open (a later log()
 *              never sees 0, and lo + (hi-lo)*u never reaches hi).
 *   uniform_f64 i  (u64(i) >> 11) * 2^-53, in [0, 1).
 *   normal i   Box-Muller on block(i / 2) in fp64:
 *                u1 = ((w0 | w1 << 32) >> 11) + 1) * 2^-53   in (0, 1]
 *                u2 =  (w2 | w3 << 32) >> 11)      * 2^-53   in [0, 1)
 *                r = sqrt(-2 ln u1), theta = 2 pi u2
 *              even i: r cos(theta), odd i: r sin(theta), rounded to fp32.
 *              Both halves of the pair are used, and 53-bit uniforms keep
 *              the tail honest out to about 8.6 sigma.
 *
 * A value depends on nothing but (seed, stream, index): filling a range in
 * pieces, on any number of threads or ranks, gives the same bits.
 */
#include "engine/rng.h"

#include "gt_config.h"

#include <math.h>
#include <string.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void gt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

static void block(uint64_t seed, uint64_t stream, uint64_t b, uint32_t out[4]) {
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32), (uint32_t)stream,
                             (uint32_t)(stream >> 32)};
    gt_philox4x32_10(ctr, key, out);
}

uint32_t gt_rng_u32(uint64_t seed, uint64_t stream, uint64_t index) {
    uint32_t w[4];
    block(seed, stream, index / 4, w);
    return w[index % 4];
}

uint64_t gt_rng_u64(uint64_t seed, uint64_t stream, uint64_t index) {
    uint32_t w[4];
    block(seed, stream, index / 2, w);
    unsigned h = (unsigned)(index % 2) * 2;
    return (uint64_t)w[h] | (uint64_t)w[h + 1] << 32;
}

float gt_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
    uint32_t k = gt_rng_u32(seed, stream, index) >> 8;
    return k ? (float)k * 0x1p-24f : 0x1p-25f;
}

double gt_rng_uniform_f64(uint64_t seed, uint64_t stream, uint64_t index) {
    return (double)(gt_rng_u64(seed, stream, index) >> 11) * 0x1p-53;
}

/* Box-Muller on one Philox block: the radius and angle shared by the pair
 * of normals 2 pair and 2 pair + 1 (cos, then sin). */
static void normal_pair(uint64_t seed, uint64_t stream, uint64_t pair, double *r, double *theta) {
    uint32_t w[4];
    block(seed, stream, pair, w);
    uint64_t a = (uint64_t)w[0] | (uint64_t)w[1] << 32;
    uint64_t b = (uint64_t)w[2] | (uint64_t)w[3] << 32;
    double u1 = (double)((a >> 11) + 1) * 0x1p-53;
    double u2 = (double)(b >> 11) * 0x1p-53;
    *r = sqrt(-2.0 * log(u1));
    *theta = 6.283185307179586476925286766559 * u2;
}

float gt_rng_normal(uint64_t seed, uint64_t stream, uint64_t index) {
    double r, theta;
    normal_pair(seed, stream, index / 2, &r, &theta);
    return (float)(index % 2 ? r * sin(theta) : r * cos(theta));
}

/* PAIRS Philox blocks at once, lane by lane: the same words as block() for
 * each counter. The 32-bit words sit in 64-bit lanes, masked, so that the
 * compiler multiplies them with one 32 x 32 -> 64-bit vector multiply
 * (vpmuludq) instead of widening them for a full 64-bit one (several uops
 * each). */
#define PAIRS 32
#define LO32 0xffffffffu
static void blocks(uint64_t seed, uint64_t stream, uint64_t b0, uint32_t w[4][PAIRS]) {
    uint64_t c0[PAIRS], c1[PAIRS], c2[PAIRS], c3[PAIRS];
    for (int j = 0; j < PAIRS; j++) {
        uint64_t b = b0 + (uint64_t)j;
        c0[j] = b & LO32;
        c1[j] = b >> 32;
        c2[j] = stream & LO32;
        c3[j] = stream >> 32;
    }
    uint64_t k0 = seed & LO32, k1 = seed >> 32;
    for (int r = 0; r < 10; r++) {
        for (int j = 0; j < PAIRS; j++) {
            uint64_t p0 = (c0[j] & LO32) * (uint64_t)PHILOX_M0;
            uint64_t p1 = (c2[j] & LO32) * (uint64_t)PHILOX_M1;
            uint64_t n0 = ((p1 >> 32) ^ c1[j] ^ k0) & LO32, n2 = ((p0 >> 32) ^ c3[j] ^ k1) & LO32;
            c1[j] = p1 & LO32;
            c3[j] = p0 & LO32;
            c0[j] = n0;
            c2[j] = n2;
        }
        k0 = (k0 + PHILOX_W0) & LO32;
        k1 = (k1 + PHILOX_W1) & LO32;
    }
    for (int j = 0; j < PAIRS; j++)
        w[0][j] = (uint32_t)c0[j], w[1][j] = (uint32_t)c1[j], w[2][j] = (uint32_t)c2[j],
        w[3][j] = (uint32_t)c3[j];
}

/* Fast fp64 logarithm and sine/cosine for the bulk normal fill, exact to
 * the bit against glibc's log and sincos by construction (see
 * fill_normal_range): polynomials good to about 1e-15, vectorised over a
 * batch of pairs, and any value that a difference of 2^-36 could round to
 * another float is recomputed with glibc. */

/* x < 2^53 (up to 2^53 itself) as a double, exactly, with only the
 * operations AVX2 has in vector lanes (a 64-bit integer to double needs
 * AVX-512: without it GCC left the whole Box-Muller loop scalar): two
 * halves of at most 27 bits through the 2^52 exponent trick, each exact,
 * their sum exact. */
static inline double u53_to_double(uint64_t x) {
    uint64_t hb = 0x4330000000000000ULL | (x >> 26), lb = 0x4330000000000000ULL | (x & 0x3ffffffULL);
    double h, l;
    memcpy(&h, &hb, sizeof h);
    memcpy(&l, &lb, sizeof l);
    return (h - 0x1p52) * 0x1p26 + (l - 0x1p52);
}

/* ln(x) for x in (0, 1], normal: x = m 2^k with m in [sqrt(1/2), sqrt(2)),
 * ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716, by its series to
 * s^17 (the first term left out is below 1e-15 of the result). */
static inline double fast_log(double x) {
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    /* shift the exponent so that the mantissa range starts at sqrt(1/2) */
    uint64_t shifted = bits - 0x3fe6a09e667f3bcdULL;
    int64_t k = (int64_t)shifted >> 52;
    uint64_t mbits = (shifted & 0x000fffffffffffffULL) + 0x3fe6a09e667f3bcdULL;
    double m;
    memcpy(&m, &mbits, sizeof m);
    double f = m - 1.0, s = f / (2.0 + f), z = s * s;
    double p = 1.0 / 17;
    p = p * z + 1.0 / 15;
    p = p * z + 1.0 / 13;
    p = p * z + 1.0 / 11;
    p = p * z + 1.0 / 9;
    p = p * z + 1.0 / 7;
    p = p * z + 1.0 / 5;
    p = p * z + 1.0 / 3;
    double lnm = 2.0 * s + 2.0 * s * z * p;
    return (double)(int32_t)k * 0.693147180559945309417232121458 + lnm; /* |k| < 1100 */
}

/* sin and cos of theta in [0, 2 pi): theta = q pi/2 + r with |r| <= pi/4
 * (pi/2 in two parts, the first exact when multiplied by q <= 4), then
 * Taylor series to r^15 and r^16 (the terms left out are below 1e-16) and
 * the quadrant's swap and signs. */
static inline void fast_sincos(double theta, double *sn, double *cs) {
    const double pio2_hi = 1.57079632673412561417e+00; /* pi/2, first 33 bits */
    const double pio2_lo = 6.07710050650619224932e-11; /* pi/2 - pio2_hi */
    int q = (int)(theta * 0.636619772367581343075535053490 + 0.5);
    double r = (theta - (double)q * pio2_hi) - (double)q * pio2_lo, z = r * r;
    double ps = -1.0 / 1307674368000.0;
    ps = ps * z + 1.0 / 6227020800.0;
    ps = ps * z - 1.0 / 39916800.0;
    ps = ps * z + 1.0 / 362880.0;
    ps = ps * z - 1.0 / 5040.0;
    ps = ps * z + 1.0 / 120.0;
    ps = ps * z - 1.0 / 6.0;
    double s = r + r * z * ps;
    double pc = 1.0 / 20922789888000.0;
    pc = pc * z - 1.0 / 87178291200.0;
    pc = pc * z + 1.0 / 479001600.0;
    pc = pc * z - 1.0 / 3628800.0;
    pc = pc * z + 1.0 / 40320.0;
    pc = pc * z - 1.0 / 720.0;
    pc = pc * z + 1.0 / 24.0;
    pc = pc * z - 0.5;
    double c = 1.0 + z * pc;
    double a = q & 1 ? c : s, b = q & 1 ? s : c;
    *sn = q & 2 ? -a : a;
    *cs = (q + 1) & 2 ? -b : b;
}

/* The pair of normals of one Philox block through glibc, as normal_pair. */
static void glibc_pair(uint64_t a, uint64_t b, double *xc, double *xs) {
    double u1 = (double)((a >> 11) + 1) * 0x1p-53;
    double u2 = (double)(b >> 11) * 0x1p-53;
    double r = sqrt(-2.0 * log(u1)), theta = 6.283185307179586476925286766559 * u2;
    double sn, cs;
    /* glibc's sincos gives the bits of sin and cos (they share one
     * argument reduction); checked on 2e8 angles in [0, 2 pi) */
    sincos(theta, &sn, &cs);
    *xc = r * cs;
    *xs = r * sn;
}

/* A value computed with fast_log and fast_sincos is within 2^-36 (r + |x|)
 * of glibc's: both are within about 1e-15 of the true functions (measured
 * on 1e8 arguments each: 1.2e-15 relative for the logarithm, 1.2e-16
 * absolute for sine and cosine), so the bound holds with a margin of about
 * ten thousand. Where every double within the bound rounds to the same float,
 * glibc's value rounds to that float too; elsewhere (one pair in two
 * hundred, mostly values near zero) glibc computes the pair. On 1.7e7 pairs
 * not one of those recomputed floats came out different: the fallback is
 * what makes the equality certain, not what makes it likely. */
static inline int same_float_within(double x, double d) {
    return (float)(x - d) == (float)(x + d);
}

/* Box-Muller on PAIRS blocks with fast_log and fast_sincos, in vector lanes
 * (no calls, no branches); exact[j] says whether pair j's floats are
 * glibc's for certain. */
static void fast_pairs(const uint32_t w[4][PAIRS], double *restrict xc, double *restrict xs,
                       int *restrict exact) {
    for (int j = 0; j < PAIRS; j++) {
        uint64_t a = (uint64_t)w[0][j] | (uint64_t)w[1][j] << 32;
        uint64_t b = (uint64_t)w[2][j] | (uint64_t)w[3][j] << 32;
        double u1 = u53_to_double((a >> 11) + 1) * 0x1p-53; /* glibc_pair's u1 and u2 */
        double u2 = u53_to_double(b >> 11) * 0x1p-53;
        double r = sqrt(-2.0 * fast_log(u1)), sn, cs;
        fast_sincos(6.283185307179586476925286766559 * u2, &sn, &cs);
        xc[j] = r * cs;
        xs[j] = r * sn;
        /* & rather than &&: no branch in the loop, so it vectorises */
        exact[j] = (r > 0) & same_float_within(xc[j], 0x1p-36 * (r + fabs(xc[j]))) &
                   same_float_within(xs[j], 0x1p-36 * (r + fabs(xs[j])));
    }
}

/* Normals offset .. offset + n - 1 of (seed, stream) into dst: the same
 * values as gt_rng_normal element by element, with one Philox block,
 * logarithm and square root per pair instead of per element, PAIRS pairs per
 * batch (test inputs and model initialisation fill millions). */
static void fill_normal_range(float *dst, size_t n, float mean, float std, uint64_t seed,
                              uint64_t stream, uint64_t offset) {
    size_t i = 0;
    uint32_t w[4][PAIRS];
    double xc[PAIRS], xs[PAIRS];
    int exact[PAIRS];
    while (i < n) {
        uint64_t pair0 = (offset + i) / 2;
        blocks(seed, stream, pair0, w);
        fast_pairs(w, xc, xs, exact);
        for (int j = 0; j < PAIRS; j++)
            if (!exact[j])
                glibc_pair((uint64_t)w[0][j] | (uint64_t)w[1][j] << 32,
                           (uint64_t)w[2][j] | (uint64_t)w[3][j] << 32, &xc[j], &xs[j]);
        for (int j = 0; j < PAIRS && i < n; j++) {
            if ((offset + i) % 2 == 0) {
                dst[i++] = (float)xc[j] * std + mean;
                if (i == n) break;
            }
            dst[i++] = (float)xs[j] * std + mean;
        }
    }
}

/* Large fills are cut into pieces shared among the OpenMP threads: each
 * value depends on its index alone (Philox is counter-based), so the bits are
 * those of one thread (a model's initial weights stay the same on any thread
 * count), and the pages of a fresh buffer are first touched by all threads. */
#define FILL_PIECE ((size_t)1 << 16)
void gt_rng_fill_normal(float *dst, size_t n, float mean, float std, uint64_t seed,
                        uint64_t stream, uint64_t offset) {
    if (n <= FILL_PIECE) {
        fill_normal_range(dst, n, mean, std, seed, stream, offset);
        return;
    }
    long pieces = (long)((n + FILL_PIECE - 1) / FILL_PIECE);
#if GT_HAVE_OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (long p = 0; p < pieces; p++) {
        size_t i0 = (size_t)p * FILL_PIECE, len = n - i0 < FILL_PIECE ? n - i0 : FILL_PIECE;
        fill_normal_range(dst + i0, len, mean, std, seed, stream, offset + i0);
    }
}

void gt_rng_fill_uniform(float *dst, size_t n, float lo, float hi, uint64_t seed,
                         uint64_t stream, uint64_t offset) {
    for (size_t i = 0; i < n; i++)
        dst[i] = lo + (hi - lo) * gt_rng_uniform(seed, stream, offset + i);
}
