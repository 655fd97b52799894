/* cuBLASLt opened on first use (kernels/cuda/cublaslt_load.h), on the host,
 * no GPU needed: the process starts without the library mapped (a build
 * that links it again fails here), a run's fingerprint on a host without a
 * device leaves its version unread; gt_cublaslt_load maps it, the forwarding
 * functions reach the library's own (status names, descriptors, which need
 * no device), and the fingerprint then reads the version of the library the
 * process has loaded. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <cublasLt.h>

#include "engine/env.h"
#include "engine/tests/check.h"
#include "kernels/cuda/cublaslt_load.h"

/* Whether /proc/self/maps shows libcublasLt mapped into this process. */
static int mapped(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, "libcublasLt") != NULL;
    fclose(f);
    return found;
}

/* Descriptors are host objects: creating, setting and destroying them
 * reaches the library without a device. */
static void check_descriptors(void) {
    cublasLtMatmulDesc_t desc = NULL;
    CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS,
          "cublasLtMatmulDescCreate failed");
    cublasOperation_t t = CUBLAS_OP_T;
    CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t) ==
              CUBLAS_STATUS_SUCCESS,
          "cublasLtMatmulDescSetAttribute failed");
    CHECK(cublasLtMatmulDescDestroy(desc) == CUBLAS_STATUS_SUCCESS,
          "cublasLtMatmulDescDestroy failed");
    cublasLtMatrixLayout_t layout = NULL;
    CHECK(cublasLtMatrixLayoutCreate(&layout, CUDA_R_32F, 64, 32, 64) == CUBLAS_STATUS_SUCCESS,
          "cublasLtMatrixLayoutCreate failed");
    CHECK(cublasLtMatrixLayoutDestroy(layout) == CUBLAS_STATUS_SUCCESS,
          "cublasLtMatrixLayoutDestroy failed");
    cublasLtMatmulPreference_t pref = NULL;
    size_t ws = 1 << 20;
    CHECK(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS,
          "cublasLtMatmulPreferenceCreate failed");
    CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                               sizeof ws) == CUBLAS_STATUS_SUCCESS,
          "cublasLtMatmulPreferenceSetAttribute failed");
    CHECK(cublasLtMatmulPreferenceDestroy(pref) == CUBLAS_STATUS_SUCCESS,
          "cublasLtMatmulPreferenceDestroy failed");
}

int main(void) {
    CHECK(mapped() == 0, "libcublasLt is mapped before anything asked for it: the build links it");
    gt_env e;
    CHECK_OK(gt_env_collect(&e));
    if (e.n_gpus == 0) {
        CHECK(strncmp(e.cublas, "not read: ", 10) == 0,
              "no device, nothing loaded, yet env.software.cublas = '%s'", e.cublas);
        CHECK(mapped() == 0, "the fingerprint mapped libcublasLt on a host without a device");
    }
    gt_env_release(&e);

    char why[512] = "";
    int rc = gt_cublaslt_load(why, sizeof why);
    CHECK(rc == 0, "gt_cublaslt_load: %s", why);
    if (rc != 0) return check_done("kernels.cublaslt_load.host");
    CHECK(mapped() == 1, "gt_cublaslt_load succeeded without mapping libcublasLt");
    CHECK(gt_cublaslt_load(NULL, 0) == 0, "a second load answers differently");
    const char *name = cublasLtGetStatusName(CUBLAS_STATUS_INVALID_VALUE);
    CHECK(name && strcmp(name, "CUBLAS_STATUS_INVALID_VALUE") == 0, "status name '%s'",
          name ? name : "(null)");
    const char *text = cublasLtGetStatusString(CUBLAS_STATUS_INVALID_VALUE);
    CHECK(text && text[0], "no status string");
    check_descriptors();

    /* loaded now: the fingerprint reads the version at no cost */
    CHECK_OK(gt_env_collect(&e));
    CHECK(e.cublas[0] >= '0' && e.cublas[0] <= '9' && strstr(e.cublas, "libcublasLt"),
          "libcublasLt loaded, yet env.software.cublas = '%s'", e.cublas);
    printf("cublas %s\n", e.cublas);
    gt_env_release(&e);
    return check_done("kernels.cublaslt_load.host");
}
