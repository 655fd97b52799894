/* kernels.conv_no_cudnn.cuda (CUDA emulator builds only): conv2d on a cuda
 * backend that has no cuDNN handle. cudnnCreate may fail when the backend
 * is made (a cuDNN sub-library or nvrtc not found) and the rest of the
 * backend still works; conv.cu must then answer GT_ERR_UNSUPPORTED (the op
 * is reported skipped) saying that cuDNN is unavailable, for the forward
 * and the backward, at any batch size, without calling cuDNN or crashing.
 *
 * A unit test of the guard: it takes a working backend, sets its impl's
 * cuDNN handle to NULL (what a failed cudnnCreate leaves), calls the ops,
 * and puts the handle back (the same call then succeeds, so the refusal
 * was the guard's). It reads the backend's private struct
 * (kernels/cuda/common.cuh), hence C++ built with the emulator's
 * definitions; the emulator's stand-ins answer a NULL handle with
 * CUDNN_STATUS_BAD_PARAM, as cuDNN documents, which the old code turned
 * into GT_ERR_DEVICE (and returned GT_OK for N = 0).
 *
 * Exit: 0 pass, 1 a check failed, 77 no cuda backend or no conv2d on it
 * (built without cuDNN), 2 a setup error. */
#include <stdio.h>
#include <string.h>

#include <vector>

#include "gt_config.h"
#include "kernels/cuda/common.cuh"
#include "kernels/registry.h"

static int g_checks, g_fails;

static void expect(const char *what, gt_status st, gt_status want, const char *needle) {
    const char *msg = st == GT_OK ? "" : gt_last_error();
    int ok = st == want && (!needle || strstr(msg, needle));
    g_checks++;
    printf("  %-44s %s%s%s%s\n", what, gt_status_name(st), *msg ? ": " : "", msg,
           ok ? "  ok" : "  FAIL");
    if (!ok) g_fails++;
}

int main(void) {
#if !GT_HAVE_CUDNN
    printf("skipped: built without cuDNN: the cuda backend has no conv2d\n");
    return 77;
#else
    gt_backend_config cfg = {};
    cfg.device = -1;
    gt_backend *be = NULL;
    gt_status s = gt_backend_new("cuda", &cfg, &be);
    if (s == GT_ERR_UNSUPPORTED) {
        printf("skipped: backend cuda unavailable: %s\n", gt_last_error());
        return 77;
    }
    if (s != GT_OK) {
        fprintf(stderr, "gt_backend_new(cuda): %s: %s\n", gt_status_name(s), gt_last_error());
        return 2;
    }
    if (!be->ops->conv2d_fwd || !be->ops->conv2d_bwd) {
        printf("skipped: the cuda backend has no conv2d\n");
        gt_backend_free(be);
        return 77;
    }
    gt_cuda_impl *im = (gt_cuda_impl *)be->impl;
    gt_conv2d_shape sh = {};
    sh.N = 2, sh.C = 3, sh.H = 5, sh.W = 5, sh.OC = 4, sh.KH = 3, sh.KW = 3, sh.stride = 1,
    sh.pad = 1;
    gt_conv2d_shape empty = sh;
    empty.N = 0;
    size_t nx = 2 * 3 * 5 * 5, nw = 4 * 3 * 3 * 3, ny = 2 * 4 * 5 * 5;
    void *x = NULL, *w = NULL, *b = NULL, *y = NULL, *dx = NULL, *dw = NULL, *db = NULL;
    s = gt_backend_alloc(be, nx * 4, &x);
    if (s == GT_OK) s = gt_backend_alloc(be, nw * 4, &w);
    if (s == GT_OK) s = gt_backend_alloc(be, 4 * 4, &b);
    if (s == GT_OK) s = gt_backend_alloc(be, ny * 4, &y);
    if (s == GT_OK) s = gt_backend_alloc(be, nx * 4, &dx);
    if (s == GT_OK) s = gt_backend_alloc(be, nw * 4, &dw);
    if (s == GT_OK) s = gt_backend_alloc(be, 4 * 4, &db);
    if (s != GT_OK) {
        fprintf(stderr, "gt_backend_alloc: %s\n", gt_last_error());
        return 2;
    }
    std::vector<float> zx(nx, 0.5f), zw(nw, 0.25f), zy(ny, 1.0f), z4(4, 0.0f);
    s = be->copy_to_device(be, x, zx.data(), nx * 4);
    if (s == GT_OK) s = be->copy_to_device(be, dx, zx.data(), nx * 4);
    if (s == GT_OK) s = be->copy_to_device(be, w, zw.data(), nw * 4);
    if (s == GT_OK) s = be->copy_to_device(be, dw, zw.data(), nw * 4);
    if (s == GT_OK) s = be->copy_to_device(be, b, z4.data(), 4 * 4);
    if (s == GT_OK) s = be->copy_to_device(be, db, z4.data(), 4 * 4);
    if (s == GT_OK) s = be->copy_to_device(be, y, zy.data(), ny * 4);
    if (s != GT_OK) {
        fprintf(stderr, "copy_to_device: %s\n", gt_last_error());
        return 2;
    }
    printf("conv2d without a cuDNN handle on %s\n", be->describe(be));

    gt_kctx k = {};
    k.be = be;
    k.dt = GT_DTYPE_FP32;
    const char *why = "cuDNN is unavailable";
    cudnnHandle_t h = im->cudnn;
    im->cudnn = NULL; /* what a failed cudnnCreate leaves */
    expect("conv2d_fwd, no handle", be->ops->conv2d_fwd(&k, y, x, w, b, &sh), GT_ERR_UNSUPPORTED,
           why);
    expect("conv2d_bwd, no handle", be->ops->conv2d_bwd(&k, dx, dw, db, y, x, w, &sh),
           GT_ERR_UNSUPPORTED, why);
    expect("conv2d_bwd (dinp, dbias NULL), no handle",
           be->ops->conv2d_bwd(&k, NULL, dw, NULL, y, x, w, &sh), GT_ERR_UNSUPPORTED, why);
    expect("conv2d_fwd N=0, no handle", be->ops->conv2d_fwd(&k, y, x, w, b, &empty),
           GT_ERR_UNSUPPORTED, why);
    k.dt = GT_DTYPE_BF16;
    expect("conv2d_fwd bf16, no handle", be->ops->conv2d_fwd(&k, y, x, w, NULL, &sh),
           GT_ERR_UNSUPPORTED, why);
    /* the reason cudnnCreate gave (backend_cuda.cu keeps it) is quoted */
    snprintf(im->cudnn_reason, sizeof im->cudnn_reason, "cudnnCreate failed: TEST REASON 42");
    expect("conv2d_fwd bf16, no handle, reason quoted",
           be->ops->conv2d_fwd(&k, y, x, w, NULL, &sh), GT_ERR_UNSUPPORTED, "TEST REASON 42");
    im->cudnn_reason[0] = '\0';
    k.dt = GT_DTYPE_FP32;
    im->cudnn = h;
    /* the same calls with the handle back: the refusals were the guard's */
    expect("conv2d_fwd, handle back", be->ops->conv2d_fwd(&k, y, x, w, b, &sh), GT_OK, NULL);
    expect("conv2d_bwd, handle back", be->ops->conv2d_bwd(&k, dx, dw, db, y, x, w, &sh), GT_OK,
           NULL);
    void *bufs[] = {x, w, b, y, dx, dw, db};
    for (void *p : bufs)
        gt_backend_dealloc(be, p);
    gt_backend_free(be);
    printf("%d checks, %d failed\n", g_checks, g_fails);
    return g_fails ? 1 : 0;
#endif
}
