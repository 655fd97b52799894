/* main() of a kernel test that runs one check per storage dtype a backend
 * keeps: `test BACKEND` (default cpu; exit 77 when the backend is absent),
 * fp32, bf16 and fp16 in turn. probe(be, dt) asks the op under test once:
 * GT_ERR_UNSUPPORTED skips the dtype (cpu stores fp32 only), any other
 * error fails; then run(be, dt) makes its CHECKs. The exit code is
 * check_done's. Include after engine/tests/check.h and testutil.h. */
#ifndef GT_KERNELS_DTYPE_MAIN_H
#define GT_KERNELS_DTYPE_MAIN_H

static int tu_main_each_dtype(int argc, char **argv, const char *test,
                              gt_status (*probe)(gt_backend *be, gt_dtype dt),
                              void (*run)(gt_backend *be, gt_dtype dt)) {
    const char *name = argc > 1 ? argv[1] : "cpu";
    gt_backend *be = NULL;
    gt_backend_config bc = {.threads = 1, .device = -1};
    gt_status s = gt_backend_new(name, &bc, &be);
    if (s == GT_ERR_UNSUPPORTED) {
        printf("skip: %s\n", gt_last_error());
        return 77;
    }
    if (s != GT_OK) tu_die("backend", s);
    static const gt_dtype dts[] = {GT_DTYPE_FP32, GT_DTYPE_BF16, GT_DTYPE_FP16};
    for (int d = 0; d < 3; d++) {
        gt_status ps = probe(be, dts[d]);
        if (ps == GT_ERR_UNSUPPORTED) {
            printf("%s %s: not stored here, skipped\n", name, gt_dtype_name(dts[d]));
            continue;
        }
        CHECK_OK(ps);
        run(be, dts[d]);
        printf("%s %s: checked\n", name, gt_dtype_name(dts[d]));
    }
    gt_backend_free(be);
    char what[64];
    snprintf(what, sizeof what, "%s.%s", test, name);
    return check_done(what);
}

#endif
