/* Small numeric helpers every layer needs: sorting and medians of samples,
 * and the FNV-1a digest used for weights, topologies and parameter hashes. */
#ifndef GT_STATS_H
#define GT_STATS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* qsort comparator for doubles, ascending. */
int gt_cmp_double(const void *a, const void *b);

/* Median of v[0..n) (v is not modified); NaN when n == 0 or out of memory. */
double gt_median(const double *v, size_t n);

/* The q-quantile of v[0..n) (0 <= q <= 1; linear between order statistics,
 * Hyndman and Fan's type 7: q = 0.5 is the median); v is not modified; NaN
 * when n == 0 or out of memory. */
double gt_quantile(const double *v, size_t n, double q);

/* FNV-1a, 64 bit: start from GT_FNV1A64_INIT, chain calls to hash pieces. */
#define GT_FNV1A64_INIT 1469598103934665603ull
uint64_t gt_fnv1a64(uint64_t h, const void *data, size_t n);

#ifdef __cplusplus
}
#endif
#endif
