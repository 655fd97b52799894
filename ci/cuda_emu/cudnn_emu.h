/* What the CUDA emulator's stand-in for cuDNN shares between its files:
 *   cudnn_emu.cc        errors, the registry of live objects, handles
 *   cudnn_conv_emu.cc   the legacy convolution API
 *   cudnn_graph_emu.cc  the graph (backend) API and its interpreter (SDPA)
 * Internal to ci/cuda_emu/: the backend sees only cudnn.h. */
#ifndef GT_CUDNN_EMU_H
#define GT_CUDNN_EMU_H

#include <cuda_runtime.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudnn.h>
#include <stddef.h>
#include <stdint.h>

namespace gt_cudnn_emu {

/* Records "fn: message" for cudnnGetLastErrorString and returns s. Every
 * refusal of the stand-in goes through it. */
cudnnStatus_t fail(cudnnStatus_t s, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The registry of live objects, by kind: every handle and descriptor the
 * stand-in created and has not destroyed, so a stale or foreign pointer is
 * refused instead of used. */
enum obj_kind { K_HANDLE, K_TENSOR, K_FILTER, K_CONV, K_BACKEND, K_KINDS };
void reg_add(obj_kind k, const void *p);
bool reg_del(obj_kind k, const void *p);
bool reg_has(obj_kind k, const void *p); /* false for NULL */

/* Fault injection (docs/cuda-emulator.md, "Injected cuDNN faults"): true
 * with *s = the status environment variable `var` names (a CUDNN_STATUS_*
 * name or its number; a value that is neither stops the process), false
 * when it is unset or empty. Read at every call, so a test can set it
 * between backends. */
bool injected_status(const char *var, cudnnStatus_t *s);

/* bytes of one element; 0 for a data type the stand-in does not compute */
inline size_t dt_size(cudnnDataType_t dt) {
    switch (dt) {
    case CUDNN_DATA_FLOAT:
        return 4;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16:
        return 2;
    default:
        return 0;
    }
}
inline bool dt_known(int dt) {
    return dt >= CUDNN_DATA_FLOAT && dt <= CUDNN_DATA_FP4_E2M1;
}
inline const char *dt_name(cudnnDataType_t dt) {
    switch (dt) {
    case CUDNN_DATA_FLOAT:
        return "FLOAT";
    case CUDNN_DATA_DOUBLE:
        return "DOUBLE";
    case CUDNN_DATA_HALF:
        return "HALF";
    case CUDNN_DATA_BFLOAT16:
        return "BFLOAT16";
    case CUDNN_DATA_INT32:
        return "INT32";
    case CUDNN_DATA_INT8:
        return "INT8";
    case CUDNN_DATA_BOOLEAN:
        return "BOOLEAN";
    default:
        return "another type";
    }
}

/* Whether [p, p + bytes) is device memory: both ends inside allocations. */
inline bool device_range(const void *p, size_t bytes) {
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess || a.type != cudaMemoryTypeDevice)
        return false;
    if (bytes <= 1) return true;
    const void *last = (const char *)p + bytes - 1;
    return cudaPointerGetAttributes(&a, last) == cudaSuccess && a.type == cudaMemoryTypeDevice;
}

inline bool overlap(const void *a, size_t an, const void *b, size_t bn) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return an && bn && x < y + bn && y < x + an;
}

/* One element of fp32, fp16 or bf16 storage, as fp32. */
inline float load1(const void *p, size_t i, cudnnDataType_t dt) {
    if (dt == CUDNN_DATA_FLOAT) return ((const float *)p)[i];
    if (dt == CUDNN_DATA_HALF) return __half2float(((const __half *)p)[i]);
    return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
}

/* v rounded to nearest even into one element of fp32, fp16 or bf16 storage. */
inline void store1(void *p, size_t i, cudnnDataType_t dt, float v) {
    if (dt == CUDNN_DATA_FLOAT)
        ((float *)p)[i] = v;
    else if (dt == CUDNN_DATA_HALF)
        ((__half *)p)[i] = __float2half_rn(v);
    else
        ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
}

} // namespace gt_cudnn_emu

#endif
