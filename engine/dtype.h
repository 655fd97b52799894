/* Data types and conversions.
 *
 * bf16 and fp16 are stored as uint16_t bit patterns. Conversions from fp32
 * round to nearest, ties to even; NaN stays NaN (quiet), overflow goes to
 * +-Inf, fp16 subnormals are produced and read exactly.
 */
#ifndef GT_DTYPE_H
#define GT_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gt_dtype {
    GT_DTYPE_FP32 = 0,
    GT_DTYPE_FP64,
    GT_DTYPE_BF16,
    GT_DTYPE_FP16,
    GT_DTYPE_INT32, /* integers: communicators and token ids; no kernel math */
    GT_DTYPE_INT64,
    GT_DTYPE_COUNT
} gt_dtype;

/* Bytes per element: 4, 8, 2, 2, 4, 8. */
size_t gt_dtype_size(gt_dtype dt);
/* "fp32", "fp64", "bf16", "fp16", "int32", "int64". */
const char *gt_dtype_name(gt_dtype dt);
/* Parses a name as printed by gt_dtype_name. GT_ERR_INVALID when unknown. */
gt_status gt_dtype_parse(const char *name, gt_dtype *out);

uint16_t gt_fp32_to_bf16(float x);
float gt_bf16_to_fp32(uint16_t h);
uint16_t gt_fp32_to_fp16(float x);
float gt_fp16_to_fp32(uint16_t h);

/* Converts n elements from src (dtype s) to dst (dtype d), host memory.
 * Floating-point dtypes only; integer dtypes may only be copied (d == s).
 * Through fp32 except fp64<->fp64 and fp64->bf16/fp16, which round once from
 * the fp64 value's fp32 rounding (documented double rounding; the oracle
 * never needs more). dst and src must not overlap unless d == s. */
void gt_convert(void *dst, gt_dtype d, const void *src, gt_dtype s, size_t n);

/* Contract 1 of ARCHITECTURE.md: default tolerances |a - e| <= atol + rtol*|e|. */
typedef struct gt_tolerance {
    double rtol;
    double atol;
} gt_tolerance;
gt_tolerance gt_dtype_tolerance(gt_dtype dt);

#ifdef __cplusplus
}
#endif
#endif
