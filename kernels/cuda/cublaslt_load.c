/* The cublasLt* functions the cuda backend calls, forwarding to libcublasLt
 * opened with dlopen on first use (cublaslt_load.h says why). The names and
 * types are the header's own, so the backend's calls are unchanged, and a
 * call before the library loaded answers CUBLAS_STATUS_NOT_INITIALIZED. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <cublasLt.h>

#include "gt_config.h"
#include "kernels/cuda/cublaslt_load.h"

#define GT_STR2(x) #x
#define GT_STR(x) GT_STR2(x)
#define GT_CUBLASLT_SONAME "libcublasLt.so." GT_STR(CUBLAS_VER_MAJOR)

static struct {
    __typeof__(cublasLtCreate) *create;
    __typeof__(cublasLtDestroy) *destroy;
    __typeof__(cublasLtGetStatusName) *status_name;
    __typeof__(cublasLtGetStatusString) *status_string;
    __typeof__(cublasLtMatmul) *matmul;
    __typeof__(cublasLtMatmulAlgoGetHeuristic) *heuristic;
    __typeof__(cublasLtMatmulDescCreate) *desc_create;
    __typeof__(cublasLtMatmulDescDestroy) *desc_destroy;
    __typeof__(cublasLtMatmulDescSetAttribute) *desc_set;
    __typeof__(cublasLtMatmulPreferenceCreate) *pref_create;
    __typeof__(cublasLtMatmulPreferenceDestroy) *pref_destroy;
    __typeof__(cublasLtMatmulPreferenceSetAttribute) *pref_set;
    __typeof__(cublasLtMatrixLayoutCreate) *layout_create;
    __typeof__(cublasLtMatrixLayoutDestroy) *layout_destroy;
} lt;

static pthread_once_t lt_once = PTHREAD_ONCE_INIT;
static int lt_ok;
static char lt_why[512];

/* The library by its soname (LD_LIBRARY_PATH, this program's run path, the
 * loader's cache), then in the folder the build linked against. Never
 * closed: backends come and go, the library stays for the process. */
static void *open_lib(void) {
    void *h = dlopen(GT_CUBLASLT_SONAME, RTLD_LAZY | RTLD_LOCAL);
    if (h) return h;
    char first[256];
    const char *err = dlerror();
    snprintf(first, sizeof first, "%s", err ? err : GT_CUBLASLT_SONAME " not found");
    h = dlopen(GT_CUBLASLT_DIR "/" GT_CUBLASLT_SONAME, RTLD_LAZY | RTLD_LOCAL);
    if (h) return h;
    snprintf(lt_why, sizeof lt_why,
             "cuBLASLt could not be loaded: %.256s (also not in %.128s, where the build found "
             "it): install cuBLAS %d or put its lib folder on LD_LIBRARY_PATH",
             first, GT_CUBLASLT_DIR, CUBLAS_VER_MAJOR);
    return NULL;
}

/* dlsym into a function pointer (POSIX's guarantee; ISO C has no such cast);
 * a missing one names itself in lt_why. */
static int find(void *h, const char *name, void *fp, size_t size) {
    void *p = dlsym(h, name);
    if (!p) {
        snprintf(lt_why, sizeof lt_why,
                 "%s lacks %s: gauntlet was built against cuBLAS %d.%d, install that version "
                 "or a later one of the same major",
                 GT_CUBLASLT_SONAME, name, CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR);
        return -1;
    }
    memcpy(fp, &p, size);
    return 0;
}
#define FIND(h, field, name) find((h), (name), &lt.field, sizeof lt.field)

static void load_once(void) {
    void *h = open_lib();
    if (!h) return;
    lt_ok = FIND(h, create, "cublasLtCreate") == 0 && FIND(h, destroy, "cublasLtDestroy") == 0 &&
            FIND(h, status_name, "cublasLtGetStatusName") == 0 &&
            FIND(h, status_string, "cublasLtGetStatusString") == 0 &&
            FIND(h, matmul, "cublasLtMatmul") == 0 &&
            FIND(h, heuristic, "cublasLtMatmulAlgoGetHeuristic") == 0 &&
            FIND(h, desc_create, "cublasLtMatmulDescCreate") == 0 &&
            FIND(h, desc_destroy, "cublasLtMatmulDescDestroy") == 0 &&
            FIND(h, desc_set, "cublasLtMatmulDescSetAttribute") == 0 &&
            FIND(h, pref_create, "cublasLtMatmulPreferenceCreate") == 0 &&
            FIND(h, pref_destroy, "cublasLtMatmulPreferenceDestroy") == 0 &&
            FIND(h, pref_set, "cublasLtMatmulPreferenceSetAttribute") == 0 &&
            FIND(h, layout_create, "cublasLtMatrixLayoutCreate") == 0 &&
            FIND(h, layout_destroy, "cublasLtMatrixLayoutDestroy") == 0;
}

int gt_cublaslt_load(char *why, size_t why_len) {
    pthread_once(&lt_once, load_once);
    if (!lt_ok && why && why_len) snprintf(why, why_len, "%s", lt_why);
    return lt_ok ? 0 : -1;
}

static int ready(void) {
    return gt_cublaslt_load(NULL, 0) == 0;
}

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t *handle) {
    return ready() ? lt.create(handle) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t handle) {
    return ready() ? lt.destroy(handle) : CUBLAS_STATUS_NOT_INITIALIZED;
}

const char *CUBLASWINAPI cublasLtGetStatusName(cublasStatus_t status) {
    return ready() ? lt.status_name(status) : "(cuBLASLt not loaded)";
}

const char *CUBLASWINAPI cublasLtGetStatusString(cublasStatus_t status) {
    return ready() ? lt.status_string(status) : "cuBLASLt could not be loaded";
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                           const void *alpha, const void *A,
                                           cublasLtMatrixLayout_t Adesc, const void *B,
                                           cublasLtMatrixLayout_t Bdesc, const void *beta,
                                           const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
                                           cublasLtMatrixLayout_t Ddesc,
                                           const cublasLtMatmulAlgo_t *algo, void *workspace,
                                           size_t workspace_bytes, cudaStream_t stream) {
    if (!ready()) return CUBLAS_STATUS_NOT_INITIALIZED;
    return lt.matmul(handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo,
                     workspace, workspace_bytes, stream);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t results[],
    int *returned) {
    if (!ready()) return CUBLAS_STATUS_NOT_INITIALIZED;
    return lt.heuristic(handle, desc, Adesc, Bdesc, Cdesc, Ddesc, pref, requested, results,
                        returned);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                                                     cublasComputeType_t compute,
                                                     cudaDataType_t scale) {
    return ready() ? lt.desc_create(desc, compute, scale) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
    return ready() ? lt.desc_destroy(desc) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                                           cublasLtMatmulDescAttributes_t attr,
                                                           const void *buf, size_t bytes) {
    return ready() ? lt.desc_set(desc, attr, buf, bytes) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
    return ready() ? lt.pref_create(pref) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
    return ready() ? lt.pref_destroy(pref) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
    size_t bytes) {
    return ready() ? lt.pref_set(pref, attr, buf, bytes) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout,
                                                       cudaDataType type, uint64_t rows,
                                                       uint64_t cols, int64_t ld) {
    return ready() ? lt.layout_create(layout, type, rows, cols, ld) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
    return ready() ? lt.layout_destroy(layout) : CUBLAS_STATUS_NOT_INITIALIZED;
}
