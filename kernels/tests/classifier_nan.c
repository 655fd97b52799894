/* A NaN logit must surface as a NaN loss, on every backend and storage
 * dtype: the training loop tells a non-finite loss (an error) from an fp16
 * overflow of the gradients (a skipped step) by it. Row 0 has a NaN among
 * its logits, row 1 is finite: row 0's loss and every dlogit of row 0 are
 * NaN (forward, fused backward with and without losses, in place), row 1's
 * loss and dlogits are finite.
 * Usage: test_kernels_classifier_nan_* BACKEND (exit 77 when it is absent). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/tests/check.h"
#include "kernels/tests/testutil.h"
#include "kernels/tests/dtype_main.h"

enum { N = 2, V = 10, VP = 16 };

static void run(gt_backend *be, gt_dtype dt) {
    float h[N * VP];
    for (int i = 0; i < N * VP; i++) h[i] = 0.25f * (float)(i % 7) - 0.5f;
    h[3] = NAN; /* row 0, column 3; the target of row 0 is column 0 */
    int32_t tg[N] = {0, 7};
    gt_kctx k = {be, dt};
    void *logits = tu_upload(be, dt, h, N * VP), *dl = tu_upload(be, dt, h, N * VP);
    void *tgd = tu_upload_raw(be, tg, sizeof tg);
    float *losses = NULL;
    gt_status s = gt_backend_alloc(be, N * sizeof(float), (void **)&losses);
    if (s != GT_OK) tu_die("alloc", s);
    float lh[N], dh[N * VP];
    const char *dn = gt_dtype_name(dt);
    for (int variant = 0; variant < 3; variant++) {
        /* 0: forward; 1: fused backward into another buffer; 2: in place, no losses */
        if (variant == 0) CHECK_OK(be->ops->classifier_fwd(&k, losses, logits, tgd, N, V, VP));
        if (variant == 1)
            CHECK_OK(be->ops->classifier_bwd(&k, dl, losses, logits, tgd, 0.5f, N, V, VP));
        if (variant == 2) {
            void *inplace = tu_upload(be, dt, h, N * VP);
            CHECK_OK(be->ops->classifier_bwd(&k, inplace, NULL, inplace, tgd, 0.5f, N, V, VP));
            tu_download(be, dt, inplace, N * VP, dh);
            gt_backend_dealloc(be, inplace);
        } else if (variant == 1) {
            tu_download(be, dt, dl, N * VP, dh);
        }
        CHECK_OK(be->synchronize(be));
        if (variant < 2) {
            CHECK_OK(be->copy_to_host(be, lh, losses, sizeof lh));
            CHECK(isnan(lh[0]), "%s %s variant %d: row 0's loss %g, want NaN", be->name, dn,
                  variant, lh[0]);
            CHECK(isfinite(lh[1]), "%s %s variant %d: row 1's loss %g", be->name, dn, variant,
                  lh[1]);
        }
        if (variant > 0)
            for (int j = 0; j < V; j++) {
                CHECK(isnan(dh[j]), "%s %s variant %d: dlogits[0][%d] = %g, want NaN", be->name,
                      dn, variant, j, dh[j]);
                CHECK(isfinite(dh[VP + j]), "%s %s variant %d: dlogits[1][%d] = %g", be->name,
                      dn, variant, j, dh[VP + j]);
            }
    }
    gt_backend_dealloc(be, logits);
    gt_backend_dealloc(be, dl);
    gt_backend_dealloc(be, tgd);
    gt_backend_dealloc(be, losses);
}

int main(int argc, char **argv) {
    return tu_main_each_dtype(argc, argv, "kernels.classifier_nan", tu_probe_classifier, run);
}
