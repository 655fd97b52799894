/* The CUDA emulator's stand-in for cuDNN: exactly the functions the cuda
 * backend calls (conv.cu, attention_cudnn.cu, backend_cuda.cu), compiled
 * into the emulator's library when GT_CUDA_EMULATOR is on
 * (docs/cuda-emulator.md). The real header (cudnn.h) gives the types and
 * signatures. By job:
 *   cudnn_emu.cc        (this file) errors, the registry of live objects,
 *                       handles and streams, versions
 *   cudnn_conv_emu.cc   the legacy convolution API
 *   cudnn_graph_emu.cc  the graph (backend) API: checked descriptors and an
 *                       interpreter of the operation graphs attention
 *                       builds (SDPA)
 *   cudnn_emu.h         what they share
 * Every refusal leaves a message for cudnnGetLastErrorString.
 *
 * Single-threaded, synchronous (every stream is the emulator's null stream). */
#include "ci/cuda_emu/cudnn_emu.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>
#include <set>

/* ---- errors, the registry of live objects ----------------------------------------------- */

namespace gt_cudnn_emu {

namespace {
thread_local char last_msg[512];
} // namespace

cudnnStatus_t fail(cudnnStatus_t s, const char *fn, const char *fmt, ...) {
    int n = snprintf(last_msg, sizeof last_msg, "%s: ", fn);
    if (n < 0 || (size_t)n >= sizeof last_msg) n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_msg + n, sizeof last_msg - (size_t)n, fmt, ap);
    va_end(ap);
    return s;
}

namespace {
std::mutex reg_mu;
std::set<const void *> live[K_KINDS];
} // namespace

void reg_add(obj_kind k, const void *p) {
    std::lock_guard<std::mutex> g(reg_mu);
    live[k].insert(p);
}
bool reg_del(obj_kind k, const void *p) {
    std::lock_guard<std::mutex> g(reg_mu);
    return live[k].erase(p) == 1;
}
bool reg_has(obj_kind k, const void *p) {
    std::lock_guard<std::mutex> g(reg_mu);
    return p && live[k].count(p) == 1;
}

bool injected_status(const char *var, cudnnStatus_t *s) {
    const char *v = getenv(var);
    if (!v || !*v) return false;
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (!*end && n > 0) {
        *s = (cudnnStatus_t)n;
        return true;
    }
    /* a name: every status is below 6000 (cudnn_graph.h) */
    for (int i = 1; i < 6000; i++)
        if (strcmp(cudnnGetErrorString((cudnnStatus_t)i), v) == 0) {
            *s = (cudnnStatus_t)i;
            return true;
        }
    fprintf(stderr, "cuDNN stand-in: %s=%s is neither a CUDNN_STATUS_* name nor a number\n", var,
            v);
    abort();
}

} // namespace gt_cudnn_emu

using namespace gt_cudnn_emu;

struct cudnnContext {
    cudaStream_t stream;
};

/* ---- handle, version, errors ---------------------------------------------------------- */

extern "C" {

/* GT_EMU_CUDNN_VERSION=91500 fakes an older (or newer) library: what the
 * backend's version checks see (attention_cudnn.cu), nothing else changes. */
size_t CUDNNWINAPI cudnnGetVersion(void) {
    const char *v = getenv("GT_EMU_CUDNN_VERSION");
    if (v && *v) {
        char *end = NULL;
        unsigned long n = strtoul(v, &end, 10);
        if (*end || n == 0) {
            fprintf(stderr,
                    "cuDNN stand-in: GT_EMU_CUDNN_VERSION=%s is not a version number "
                    "such as 91500\n",
                    v);
            abort();
        }
        return (size_t)n;
    }
    return CUDNN_VERSION;
}

const char *CUDNNWINAPI cudnnGetErrorString(cudnnStatus_t s) {
    switch (s) {
#define GT_S(x)                                                                                    \
    case x:                                                                                        \
        return #x;
        GT_S(CUDNN_STATUS_SUCCESS)
        GT_S(CUDNN_STATUS_NOT_INITIALIZED)
        GT_S(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)
        GT_S(CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH)
        GT_S(CUDNN_STATUS_DEPRECATED)
        GT_S(CUDNN_STATUS_LICENSE_ERROR)
        GT_S(CUDNN_STATUS_RUNTIME_IN_PROGRESS)
        GT_S(CUDNN_STATUS_RUNTIME_FP_OVERFLOW)
        GT_S(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED)
        GT_S(CUDNN_STATUS_BAD_PARAM)
        GT_S(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
        GT_S(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER)
        GT_S(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED)
        GT_S(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND)
        GT_S(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT)
        GT_S(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH)
        GT_S(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH)
        GT_S(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES)
        GT_S(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE)
        GT_S(CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH)
        GT_S(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE)
        GT_S(CUDNN_STATUS_NOT_SUPPORTED)
        GT_S(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN)
        GT_S(CUDNN_STATUS_NOT_SUPPORTED_SHAPE)
        GT_S(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE)
        GT_S(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT)
        GT_S(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER)
        GT_S(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART)
        GT_S(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH)
        GT_S(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING)
        GT_S(CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE)
        GT_S(CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT)
        GT_S(CUDNN_STATUS_NOT_SUPPORTED_PADDING)
        GT_S(CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM)
        GT_S(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API)
        GT_S(CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE)
        GT_S(CUDNN_STATUS_INTERNAL_ERROR)
        GT_S(CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED)
        GT_S(CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE)
        GT_S(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
        GT_S(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
        GT_S(CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM)
        GT_S(CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED)
        GT_S(CUDNN_STATUS_EXECUTION_FAILED)
        GT_S(CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER)
        GT_S(CUDNN_STATUS_EXECUTION_FAILED_CUBLAS)
        GT_S(CUDNN_STATUS_EXECUTION_FAILED_CUDART)
        GT_S(CUDNN_STATUS_EXECUTION_FAILED_CURAND)
#undef GT_S
    default:
        return "CUDNN_STATUS_UNKNOWN";
    }
}

void CUDNNWINAPI cudnnGetLastErrorString(char *message, size_t max_size) {
    if (!message || max_size == 0) return;
    snprintf(message, max_size, "%s", last_msg);
}

cudnnStatus_t CUDNNWINAPI cudnnCreate(cudnnHandle_t *handle) {
    if (!handle) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnCreate", "handle is NULL");
    cudnnStatus_t inj;
    if (injected_status("GT_EMU_CUDNN_CREATE_STATUS", &inj))
        return fail(inj, "cudnnCreate",
                    "libcudnn_engines_runtime_compiled.so.9: cannot open shared object file "
                    "(injected: GT_EMU_CUDNN_CREATE_STATUS)");
    cudnnContext *h = (cudnnContext *)calloc(1, sizeof *h);
    if (!h)
        return fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, "cudnnCreate",
                    "out of host memory");
    reg_add(K_HANDLE, h);
    *handle = h;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroy(cudnnHandle_t handle) {
    if (!reg_del(K_HANDLE, handle))
        return fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroy", "not a live handle: %p",
                    (void *)handle);
    free(handle);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId) {
    if (!reg_has(K_HANDLE, handle))
        return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream", "not a live handle: %p",
                    (void *)handle);
    handle->stream = streamId;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetStream(cudnnHandle_t handle, cudaStream_t *streamId) {
    if (!reg_has(K_HANDLE, handle) || !streamId)
        return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetStream", "not a live handle, or NULL out");
    *streamId = handle->stream;
    return CUDNN_STATUS_SUCCESS;
}

} // extern "C"
