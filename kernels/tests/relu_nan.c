/* A NaN activation must pass through relu_fwd as NaN, on every backend and
 * storage dtype (engine/ops.h: x < 0 ? 0 : x, as torch): written as
 * x > 0 ? x : 0 a ReLU would turn it into 0 and hide a non-finite value
 * (an fp16 overflow upstream) from the loss and the gradient norm that the
 * training loop checks. Negative values give 0, positive ones and +Inf
 * pass unchanged; out of place and in place (the form models use). The
 * shape-grid conformance test cannot see this: its inputs are finite.
 * Usage: test_kernels_relu_nan_* BACKEND (exit 77 when it is absent). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/tests/check.h"
#include "kernels/tests/testutil.h"
#include "kernels/tests/dtype_main.h"

enum { N = 11 };

static void run(gt_backend *be, gt_dtype dt) {
    /* NaN of both signs, at the first, a middle and the last element */
    const float h[N] = {NAN, -1.5f, 2.0f, 0.5f, -NAN, -3.0f, INFINITY, -INFINITY, 0.25f, -0.125f, NAN};
    gt_kctx k = {be, dt};
    const char *dn = gt_dtype_name(dt);
    void *inp = tu_upload(be, dt, h, N), *out = tu_upload(be, dt, h, N);
    void *inplace = tu_upload(be, dt, h, N);
    CHECK_OK(be->ops->relu_fwd(&k, out, inp, N));
    CHECK_OK(be->ops->relu_fwd(&k, inplace, inplace, N));
    CHECK_OK(be->synchronize(be));
    float got[2][N];
    tu_download(be, dt, out, N, got[0]);
    tu_download(be, dt, inplace, N, got[1]);
    for (int v = 0; v < 2; v++) {
        const char *vn = v ? "in place" : "out of place";
        for (int i = 0; i < N; i++) {
            float g = got[v][i];
            if (isnan(h[i]))
                CHECK(isnan(g), "%s %s %s: relu(NaN) [%d] = %g, want NaN", be->name, dn, vn, i, g);
            else if (h[i] < 0.0f)
                CHECK(g == 0.0f, "%s %s %s: relu(%g) [%d] = %g, want 0", be->name, dn, vn, h[i],
                      i, g);
            else
                CHECK(g == h[i], "%s %s %s: relu(%g) [%d] = %g", be->name, dn, vn, h[i], i, g);
        }
    }
    gt_backend_dealloc(be, inp);
    gt_backend_dealloc(be, out);
    gt_backend_dealloc(be, inplace);
}

/* relu_fwd on one value, in place: does the backend store dt? */
static gt_status probe(gt_backend *be, gt_dtype dt) {
    gt_kctx k = {be, dt};
    float one = 1.0f;
    void *p = tu_upload(be, dt, &one, 1);
    gt_status s = be->ops->relu_fwd(&k, p, p, 1);
    if (s == GT_OK) s = be->synchronize(be);
    gt_backend_dealloc(be, p);
    return s;
}

int main(int argc, char **argv) {
    return tu_main_each_dtype(argc, argv, "kernels.relu_nan", probe, run);
}
