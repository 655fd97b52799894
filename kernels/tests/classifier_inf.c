/* Infinite logits through classifier_fwd and classifier_bwd as engine/ops.h
 * defines them, on every backend and storage dtype: a -Inf logit (a masked
 * class) has probability exactly 0, so its dlogit is exactly 0, or exactly
 * -dloss at the target, whose loss is then +Inf; a row of -Inf only, and a
 * row with a +Inf, give a NaN loss and NaN dlogits; whatever the padding
 * columns [V, Vp) hold (here NaN, +-Inf) changes nothing, and their dlogits
 * are 0. Each row is compared with the fp64 formula on the stored logits:
 * exactly where ops.h says exactly (NaN, Inf, the zeros of -Inf logits),
 * elsewhere within the conformance test's allowance for probabilities.
 *
 * V = 1100 columns: cuda's block (512 threads) gives each thread up to 3
 * columns (j, j + 512, j + 1024), so -Inf is the first value some threads
 * see, the first two of others, all three of some; cpu's 16 lanes likewise.
 * Forward; fused backward into another buffer; in place without and with
 * losses (the target's logit read before the row is overwritten).
 * Usage: test_kernels_classifier_inf_* BACKEND (exit 77 when it is absent). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/tests/check.h"
#include "kernels/tests/testutil.h"
#include "kernels/tests/dtype_main.h"

enum { N = 7, V = 1100, VP = 1104 };
static const float DLOSS = 0.5f;

static const char *const row_what[N] = {
    "-Inf first in many threads", "-Inf target",     "all -Inf",
    "-Inf with +-3e4",            "-Inf, 3e4 target", "a +Inf",
    "finite, non-finite padding"};

/* The rows (described by row_what) in fp32, and their targets. */
static void build(float *h, int32_t *tg) {
    gt_rng_fill_normal(h, (size_t)N * VP, 0.0f, 1.0f, TU_SEED, 70, 0);
    float *r;
    /* row 0: -Inf at the first column of threads 0..63 (cuda) and of every
     * cpu lane; the second of threads 0..8 (512..520), so threads 1..8 see
     * two -Inf, thread 0 a third finite one (1024); 1025..1030 the third
     * of threads 1..6, which thus see nothing else; the last column */
    r = h;
    for (int j = 0; j < 64; j++) r[j] = -INFINITY;
    for (int j = 512; j <= 520; j++) r[j] = -INFINITY;
    for (int j = 1025; j <= 1030; j++) r[j] = -INFINITY;
    r[V - 1] = -INFINITY;
    tg[0] = 700;
    /* row 1: the target's logit is -Inf, as are a first and a later one */
    r = h + VP;
    r[5] = r[3] = r[300] = -INFINITY;
    tg[1] = 5;
    /* row 2: every column < V is -Inf */
    r = h + 2 * VP;
    for (int j = 0; j < V; j++) r[j] = -INFINITY;
    tg[2] = 17;
    /* row 3: -Inf first (3) then a large finite logit (515: the same cuda
     * thread's second), a large negative one, more -Inf; a small target */
    r = h + 3 * VP;
    for (int j = 0; j < 11; j++) r[j] = -INFINITY;
    r[515] = 3e4f;
    r[601] = -3e4f;
    r[602] = -INFINITY;
    tg[3] = 20;
    /* row 4: the same with the large logit as the target: loss 0 */
    r = h + 4 * VP;
    r[3] = r[1027] = -INFINITY;
    r[515] = 3e4f;
    r[516] = -3e4f;
    tg[4] = 515;
    /* row 5: one +Inf (an overflow upstream) and a -Inf */
    r = h + 5 * VP;
    r[7] = INFINITY;
    r[8] = -INFINITY;
    tg[5] = 9;
    /* row 6: finite */
    tg[6] = V - 1;
    /* every row's padding: NaN, +Inf, -Inf, NaN: never read for the loss */
    for (int i = 0; i < N; i++) {
        h[(size_t)i * VP + V] = NAN;
        h[(size_t)i * VP + V + 1] = INFINITY;
        h[(size_t)i * VP + V + 2] = -INFINITY;
        h[(size_t)i * VP + V + 3] = NAN;
    }
}

/* The contract's values for row x (stored logits) in fp64: the formula of
 * ops.h evaluated as written (max, sum of exp(x - max), log), which gives
 * every case above its defined value. */
static double expect(const float *x, int tg, double *dl) {
    double mx = -INFINITY;
    for (int j = 0; j < V; j++)
        if (x[j] > mx) mx = x[j];
    double sum = 0.0;
    for (int j = 0; j < V; j++) sum += exp(x[j] - mx);
    double lse = mx + log(sum);
    for (int j = 0; j < V; j++) dl[j] = DLOSS * (exp(x[j] - lse) - (j == tg ? 1.0 : 0.0));
    for (int j = V; j < VP; j++) dl[j] = 0.0;
    return lse - x[tg];
}

/* got against want: NaN for NaN, Inf exactly, and `exact` values (the
 * dlogits of -Inf logits, padding) bit for bit up to the sign of zero;
 * otherwise |got - want| <= atol + rtol |want|. */
static int agrees(double got, double want, int exact, gt_tolerance tol) {
    if (isnan(want)) return isnan(got);
    if (isinf(want) || exact) return got == want;
    return fabs(got - want) <= tol.atol + tol.rtol * fabs(want);
}

static void run(gt_backend *be, gt_dtype dt) {
    static float h[N * VP], dh[N * VP];
    static double want[VP];
    int32_t tg[N];
    build(h, tg);
    tu_round(h, (size_t)N * VP, dt);
    gt_kctx k = {be, dt};
    const char *dn = gt_dtype_name(dt);
    void *logits = tu_upload(be, dt, h, N * VP), *dl = tu_upload(be, dt, h, N * VP);
    void *tgd = tu_upload_raw(be, tg, sizeof tg);
    float *losses = NULL, lh[N];
    gt_status s = gt_backend_alloc(be, N * sizeof(float), (void **)&losses);
    if (s != GT_OK) tu_die("alloc", s);
    /* losses are fp32 sums of up to ~V terms around a max up to 3e4;
     * probabilities as kernels.conformance's (8x the dtype's rtol) */
    gt_tolerance tl = {.rtol = 1e-5, .atol = 1e-5}, tp = gt_dtype_tolerance(dt);
    tp.rtol *= 8.0;
    for (int variant = 0; variant < 4; variant++) {
        /* 0: forward; 1: fused backward into another buffer; 2: in place,
         * no losses; 3: in place with losses */
        float *lo = variant == 2 ? NULL : losses;
        void *inplace = NULL;
        if (variant == 0) CHECK_OK(be->ops->classifier_fwd(&k, losses, logits, tgd, N, V, VP));
        if (variant == 1)
            CHECK_OK(be->ops->classifier_bwd(&k, dl, losses, logits, tgd, DLOSS, N, V, VP));
        if (variant >= 2) {
            inplace = tu_upload(be, dt, h, N * VP);
            CHECK_OK(be->ops->classifier_bwd(&k, inplace, lo, inplace, tgd, DLOSS, N, V, VP));
        }
        CHECK_OK(be->synchronize(be));
        if (variant > 0) tu_download(be, dt, variant == 1 ? dl : inplace, N * VP, dh);
        if (lo) CHECK_OK(be->copy_to_host(be, lh, losses, sizeof lh));
        gt_backend_dealloc(be, inplace);
        for (int i = 0; i < N; i++) {
            const float *x = h + (size_t)i * VP;
            double wl = expect(x, tg[i], want);
            if (lo)
                CHECK(agrees(lh[i], wl, 0, tl), "%s %s variant %d row %d (%s): loss %.9g, want %.9g",
                      be->name, dn, variant, i, row_what[i], lh[i], wl);
            if (variant == 0) continue;
            int bad = 0, first = -1;
            for (int j = 0; j < VP; j++) {
                /* what the dtype stores of the exact value */
                float w = (float)want[j];
                tu_round(&w, 1, dt);
                int exact = j >= V || x[j] == -INFINITY;
                if (!agrees(dh[(size_t)i * VP + j], exact ? w : want[j], exact, tp)) {
                    if (first < 0) first = j;
                    bad++;
                }
            }
            CHECK(bad == 0,
                  "%s %s variant %d row %d (%s): %d dlogits wrong, first [%d] (logit %g) got %.9g "
                  "want %.9g",
                  be->name, dn, variant, i, row_what[i], bad, first, first >= 0 ? x[first] : 0.0,
                  first >= 0 ? dh[(size_t)i * VP + first] : 0.0, first >= 0 ? want[first] : 0.0);
        }
    }
    gt_backend_dealloc(be, logits);
    gt_backend_dealloc(be, dl);
    gt_backend_dealloc(be, tgd);
    gt_backend_dealloc(be, losses);
}

int main(int argc, char **argv) {
    return tu_main_each_dtype(argc, argv, "kernels.classifier_inf", tu_probe_classifier, run);
}
