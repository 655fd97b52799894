/* Data types and the fp32 <-> bf16 / fp16 conversions.
 *
 * The conversions work on bit patterns rather than relying on the compiler's
 * _Float16 / __bf16 support, so that the result is the same with every
 * compiler and flag set and matches what the GPU's cvt.rn instructions do:
 * round to nearest, ties to even; NaN stays a (quiet) NaN; overflow goes to
 * Inf; fp16 subnormals are produced and read exactly.
 */
#include "engine/dtype.h"

#include <string.h>

static const size_t g_sizes[GT_DTYPE_COUNT] = {
    [GT_DTYPE_FP32] = 4,
    [GT_DTYPE_FP64] = 8,
    [GT_DTYPE_BF16] = 2,
    [GT_DTYPE_FP16] = 2,
    [GT_DTYPE_INT32] = 4,
    [GT_DTYPE_INT64] = 8,
};

static const char *const g_names[GT_DTYPE_COUNT] = {
    [GT_DTYPE_FP32] = "fp32",
    [GT_DTYPE_FP64] = "fp64",
    [GT_DTYPE_BF16] = "bf16",
    [GT_DTYPE_FP16] = "fp16",
    [GT_DTYPE_INT32] = "int32",
    [GT_DTYPE_INT64] = "int64",
};

static int dtype_ok(gt_dtype dt) { return (int)dt >= 0 && dt < GT_DTYPE_COUNT; }

size_t gt_dtype_size(gt_dtype dt) { return dtype_ok(dt) ? g_sizes[dt] : 0; }

const char *gt_dtype_name(gt_dtype dt) { return dtype_ok(dt) ? g_names[dt] : "unknown"; }

gt_status gt_dtype_parse(const char *name, gt_dtype *out) {
    if (!name || !out) return GT_ERR(GT_ERR_INVALID, "gt_dtype_parse: NULL argument");
    for (int i = 0; i < GT_DTYPE_COUNT; i++) {
        if (strcmp(name, g_names[i]) == 0) {
            *out = (gt_dtype)i;
            return GT_OK;
        }
    }
    return GT_ERR(GT_ERR_INVALID, "unknown dtype '%s': use one of fp32, fp64, bf16, fp16", name);
}

/* memcpy is the only type pun that is defined behaviour in C11; compilers turn
 * it into a register move. */
static uint32_t f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float f32_from_bits(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

uint16_t gt_fp32_to_bf16(float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        /* Truncating a NaN could clear every mantissa bit left and make it
         * Inf; setting the quiet bit keeps it a NaN. */
        return (uint16_t)((u >> 16) | 0x0040u);
    }
    /* Adding 0x7fff plus the lowest kept bit rounds to nearest with ties to
     * even; a carry out of the mantissa bumps the exponent, and one out of the
     * largest finite exponent lands exactly on Inf (0x7f80). */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float gt_bf16_to_fp32(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }

/* Shifts `m` right by `shift` bits, rounding to nearest with ties to even. */
static uint32_t shift_rne(uint32_t m, unsigned shift) {
    uint32_t kept = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (kept & 1u))) kept++;
    return kept;
}

uint16_t gt_fp32_to_fp16(float x) {
    uint32_t u = f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) {
        if (a == 0x7f800000u) return sign | 0x7c00u;
        /* Keep the top payload bits and force the quiet bit so that a payload
         * living only in the low bits does not turn into Inf. */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x03ffu));
    }
    /* 65520 = 65504 (largest fp16) + half an ulp: the tie rounds to the even
     * neighbour, which is 65536, i.e. Inf. */
    if (a >= 0x477ff000u) return sign | 0x7c00u;
    if (a < 0x38800000u) {
        /* Below 2^-14: an fp16 subnormal (unit 2^-24) or zero. Exactly 2^-25
         * is a tie between 0 and the smallest subnormal and goes to 0. */
        if (a <= 0x33000000u) return sign;
        uint32_t exp = a >> 23;
        uint32_t mant = (a & 0x007fffffu) | 0x00800000u;
        /* value = mant * 2^(exp-150) = (mant >> (126-exp)) * 2^-24 */
        return (uint16_t)(sign | shift_rne(mant, 126u - exp));
    }
    /* Normal: rebias the exponent (127 -> 15) and round the 23-bit mantissa
     * to 10 bits; a carry into the exponent field is the correct result. */
    uint32_t rebased = a - (112u << 23);
    return (uint16_t)(sign | shift_rne(rebased, 13));
}

float gt_fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x03ffu;
    if (exp == 0) {
        /* Subnormal: mant * 2^-24 is exact in fp32. */
        float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    if (exp == 31) {
        if (mant == 0) return f32_from_bits(sign | 0x7f800000u);
        return f32_from_bits(sign | 0x7fc00000u | (mant << 13));
    }
    return f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
}

static float load_f32(const void *src, gt_dtype s, size_t i) {
    switch (s) {
    case GT_DTYPE_FP32: return ((const float *)src)[i];
    case GT_DTYPE_FP64: return (float)((const double *)src)[i];
    case GT_DTYPE_BF16: return gt_bf16_to_fp32(((const uint16_t *)src)[i]);
    case GT_DTYPE_FP16: return gt_fp16_to_fp32(((const uint16_t *)src)[i]);
    default: GT_ASSERT(!"bad source dtype");
    }
    return 0.0f;
}

void gt_convert(void *dst, gt_dtype d, const void *src, gt_dtype s, size_t n) {
    GT_ASSERT(dtype_ok(d) && dtype_ok(s));
    if (n == 0) return;
    if (d == s) {
        if (dst != src) memmove(dst, src, n * g_sizes[d]);
        return;
    }
    /* fp32 -> fp64 and fp64 -> fp64 must not pass through fp32 (exactness of
     * the fp64 oracle); every other pair goes through fp32. */
    if (d == GT_DTYPE_FP64 && s == GT_DTYPE_FP32) {
        const float *x = src;
        double *y = dst;
        for (size_t i = 0; i < n; i++) y[i] = x[i];
        return;
    }
    for (size_t i = 0; i < n; i++) {
        float v = load_f32(src, s, i);
        switch (d) {
        case GT_DTYPE_FP32: ((float *)dst)[i] = v; break;
        case GT_DTYPE_FP64: ((double *)dst)[i] = v; break;
        case GT_DTYPE_BF16: ((uint16_t *)dst)[i] = gt_fp32_to_bf16(v); break;
        case GT_DTYPE_FP16: ((uint16_t *)dst)[i] = gt_fp32_to_fp16(v); break;
        default: break;
        }
    }
}

gt_tolerance gt_dtype_tolerance(gt_dtype dt) {
    switch (dt) {
    case GT_DTYPE_FP32: return (gt_tolerance){.rtol = 1.3e-6, .atol = 1e-5};
    case GT_DTYPE_FP64: return (gt_tolerance){.rtol = 1e-12, .atol = 1e-12};
    case GT_DTYPE_BF16: return (gt_tolerance){.rtol = 1.6e-2, .atol = 1e-5};
    case GT_DTYPE_FP16: return (gt_tolerance){.rtol = 1e-3, .atol = 1e-5};
    default: return (gt_tolerance){.rtol = 0.0, .atol = 0.0};
    }
}
