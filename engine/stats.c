#include "engine/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int gt_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double gt_median(const double *v, size_t n) {
    if (n == 0) return NAN;
    double *s = malloc(n * sizeof *s);
    if (!s) return NAN;
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, gt_cmp_double);
    double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return m;
}

double gt_quantile(const double *v, size_t n, double q) {
    if (n == 0 || !(q >= 0 && q <= 1)) return NAN;
    double *s = malloc(n * sizeof *s);
    if (!s) return NAN;
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, gt_cmp_double);
    double h = q * (double)(n - 1);
    size_t i = (size_t)h;
    double x = i + 1 < n ? s[i] + (h - (double)i) * (s[i + 1] - s[i]) : s[n - 1];
    free(s);
    return x;
}

uint64_t gt_fnv1a64(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}
