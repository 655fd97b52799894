/* bf16 and fp16 results are rounded to nearest even, once, on store (cuda:
 * kernels/cuda/common.cuh's gt_st; cpu and ref alike): residual_fwd's out =
 * a + b, with the sum exact or rounded once in fp32, must have the bits of
 * that fp32 sum rounded to nearest even (gt_convert), on every backend and
 * storage dtype. The conformance grid cannot see a store that truncates or
 * rounds ties away: the error stays within its bf16/fp16 tolerance. Cases:
 * ties that go down and up to even, values just above and below a tie, an
 * fp16 sum past 65504 that rounds to Inf (65520) and one that stays finite,
 * then random pairs of mixed magnitudes (an odd count: a partial block).
 * Usage: test_kernels_store_rounding_* BACKEND (exit 77 when it is absent). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/tests/check.h"
#include "kernels/tests/testutil.h"
#include "kernels/tests/dtype_main.h"

enum { NFIX = 10, NRAND = 1021, N = NFIX + NRAND };

static void run(gt_backend *be, gt_dtype dt) {
    float a[N], b[N];
    /* ulp of bf16 at 1 is 2^-7, of fp16 2^-10: ties and near-ties at 1 and
     * 1 + ulp, in the precision of dt (fp32: exact sums) */
    float u = dt == GT_DTYPE_BF16 ? 0x1p-7f : 0x1p-10f;
    const float fa[NFIX] = {1.0f, 1.0f + u, 1.0f, 1.0f, -1.0f, -(1.0f + u), 2.0f, 65504.0f,
                            65504.0f, 1.0f};
    const float fb[NFIX] = {u / 2, u / 2, 3 * u / 4, u / 4, -u / 2, -u / 2, 3 * u, 16.0f,
                            8.0f, u / 8};
    for (int i = 0; i < NFIX; i++) {
        a[i] = fa[i];
        b[i] = fb[i];
    }
    for (int i = 0; i < NRAND; i++) {
        /* magnitudes 2^-6 .. 2^6, either sign */
        float ea = ldexpf(1.0f, (int)(gt_rng_u32(TU_SEED, 7001, i) % 13) - 6);
        float eb = ldexpf(1.0f, (int)(gt_rng_u32(TU_SEED, 7002, i) % 13) - 6);
        a[NFIX + i] = ea * (2.0f * gt_rng_uniform(TU_SEED, 7003, i) - 1.0f);
        b[NFIX + i] = eb * (2.0f * gt_rng_uniform(TU_SEED, 7004, i) - 1.0f);
    }
    tu_round(a, N, dt);
    tu_round(b, N, dt);
    float sum[N];
    for (int i = 0; i < N; i++)
        sum[i] = a[i] + b[i]; /* fp32, rounded once to nearest even */
    size_t es = gt_dtype_size(dt);
    unsigned char want[N * 4], got[N * 4];
    gt_convert(want, dt, sum, GT_DTYPE_FP32, N);
    gt_kctx k = {be, dt};
    void *da = tu_upload(be, dt, a, N), *db = tu_upload(be, dt, b, N), *dout = NULL;
    CHECK_OK(gt_backend_alloc(be, N * es, &dout));
    CHECK_OK(be->ops->residual_fwd(&k, dout, da, db, N));
    CHECK_OK(be->copy_to_host(be, got, dout, N * es));
    int bad = 0;
    for (int i = 0; i < N; i++) {
        if (memcmp(want + i * es, got + i * es, es) == 0) continue;
        float g;
        gt_convert(&g, GT_DTYPE_FP32, got + i * es, dt, 1);
        float w;
        gt_convert(&w, GT_DTYPE_FP32, want + i * es, dt, 1);
        if (bad++ < 5)
            CHECK(0, "%s %s: residual_fwd [%d] %.9g + %.9g = %.9g stored as %.9g, want %.9g "
                  "(nearest even)", be->name, gt_dtype_name(dt), i, a[i], b[i], sum[i], g, w);
    }
    CHECK(bad == 0, "%s %s: %d of %d sums not rounded to nearest even once", be->name,
          gt_dtype_name(dt), bad, N);
    gt_backend_dealloc(be, da);
    gt_backend_dealloc(be, db);
    gt_backend_dealloc(be, dout);
}

/* residual_fwd on one value: does the backend store dt? */
static gt_status probe(gt_backend *be, gt_dtype dt) {
    gt_kctx k = {be, dt};
    float one = 1.0f;
    void *p = tu_upload(be, dt, &one, 1);
    gt_status s = be->ops->residual_fwd(&k, p, p, p, 1);
    if (s == GT_OK) s = be->synchronize(be);
    gt_backend_dealloc(be, p);
    return s;
}

int main(int argc, char **argv) {
    return tu_main_each_dtype(argc, argv, "kernels.store_rounding", probe, run);
}
