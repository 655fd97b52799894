/* kernels.cpu_expf.cpu: the cpu backend's vectorisable expf (kernels/cpu/cpu.h)
 * meets the accuracy its header states, within 2 ulp of exp over the range
 * its callers clamp to, [-87, 88], and gives NaN for NaN. The softmax of
 * attention and the classifier and GELU (forward and backward) all go
 * through it, but the shape-grid conformance test compares those ops with
 * an op-level tolerance (rtol ~1.3e-6, times 4 to 8: tens of ulp), which a
 * polynomial that lost a term would still meet. Every 97th fp32 pattern in
 * the range (~23 million values) plus the end points, the integers and 0,
 * against exp in fp64. Exit: 0 pass, 1 fail. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kernels/cpu/cpu.h"

#define MAX_ULP 2.0
#define STRIDE 97u

static double worst = 0.0, worst_x = 0.0;
static long checked = 0;

/* |got - exp(x)| in units of the fp32 ulp of exp(x) (normal over the range). */
static void one(float x) {
    double want = exp((double)x);
    int e;
    frexp(want, &e);
    double err = fabs((double)gt_cpu_expf(x) - want) / ldexp(1.0, e - 24);
    if (!(err <= worst)) { /* NaN counts as worst */
        worst = isnan(err) ? INFINITY : err;
        worst_x = x;
    }
    checked++;
}

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

int main(void) {
    const float lo = -87.0f, hi = 88.0f;
    uint32_t ulo, uhi;
    memcpy(&ulo, &lo, sizeof ulo);
    memcpy(&uhi, &hi, sizeof uhi);
    /* [0, 88] then [-87, -0]: sign-magnitude patterns increase with |x| */
    for (uint32_t u = 0; u <= uhi; u += STRIDE) one(from_bits(u));
    for (uint32_t u = 0x80000000u; u <= ulo; u += STRIDE) one(from_bits(u));
    for (int i = -87; i <= 88; i++) one((float)i);
    one(lo);
    one(hi);
    one(nextafterf(hi, 0.0f));
    one(nextafterf(lo, 0.0f));
    int fails = 0;
    printf("cpu expf: %ld values in [-87, 88], worst %.3f ulp at %.9g (limit %.1f)\n", checked,
           worst, worst_x, MAX_ULP);
    if (!(worst <= MAX_ULP)) {
        printf("FAIL: gt_cpu_expf is off by more than %.1f ulp\n", MAX_ULP);
        fails++;
    }
    float n = gt_cpu_expf(NAN);
    if (!isnan(n)) {
        printf("FAIL: gt_cpu_expf(NaN) = %g, want NaN\n", n);
        fails++;
    }
    printf("kernels.cpu_expf: %s\n", fails ? "FAILED" : "all checks passed");
    return fails ? 1 : 0;
}
