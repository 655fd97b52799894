/* The CUDA emulator's stand-in for cuDNN: exactly the functions the cuda
 * backend calls (conv.cu, attention_cudnn.cu, backend_cuda.cu), compiled
 * into the emulator's library when GT_CUDA_EMULATOR is on
 * (docs/cuda-emulator.md). The real header (cudnn.h) gives the types and
 * signatures.
 *
 * Legacy convolution API, with cuDNN's documented semantics:
 *   descriptors: tensors (4d NCHW/NHWC, 4dEx and Nd with strides), filters
 *      (4d/Nd, NCHW or NHWC packed), convolutions (2d/Nd: padding, stride,
 *      dilation, CROSS_CORRELATION or CONVOLUTION (flipped filter), compute
 *      type, math type, group count); the output dims of
 *      cudnnGetConvolution2dForwardOutputDim.
 *   heuristics: cudnnGetConvolution*Algorithm_v7 list every algorithm of
 *      the direction, the supported ones first in an order that depends on
 *      the shape (so different shapes pick different algorithms), the rest
 *      with CUDNN_STATUS_NOT_SUPPORTED; BWD_DATA_ALGO_0, BWD_FILTER_ALGO_0
 *      and BWD_FILTER_ALGO_3 are CUDNN_NON_DETERMINISTIC, as in cuDNN, and
 *      often ranked first, so a caller's filtering really runs. The math
 *      type reported is the descriptor's (FMA stays FMA) for algorithms with
 *      tensor-core variants, else DEFAULT (or FMA when FMA was asked).
 *   workspace: a size per (direction, algorithm, shape, math type); the
 *      tensor-core variants need more, so a descriptor whose math type
 *      changed between the size query and the call is caught.
 *   compute: y = alpha * conv + beta * y (beta == 0: y is not read, it may
 *      hold NaN), alpha and beta host floats, fp32 / bf16 / fp16 storage,
 *      fp32 accumulation in a fixed order, one rounding to the storage type
 *      (round to nearest even, cuda_bf16.h / cuda_fp16.h host conversions).
 *      fp32 data with a math type that allows tensor cores (anything but
 *      CUDNN_FMA_MATH) on an algorithm that has a tensor-core variant reads
 *      its operands rounded to TF32, as on sm_80+. The non-deterministic
 *      algorithms, if called, change their summation order from call to
 *      call, as atomics would.
 *   strict, as the library (or a GPU) would be, where it finds bugs:
 *      NULL or unknown handles and descriptors, descriptors never set,
 *      dtype disagreement, an output descriptor whose dims are not what
 *      cudnnGetConvolution2dForwardOutputDim gives, C != filter C x groups,
 *      NULL alpha/beta, pointers that are not device memory over the
 *      whole tensor, not 16-byte aligned (CUDNN_STATUS_BAD_PARAM_
 *      MISALIGNED_POINTER: the legacy API's kernels may use 16-byte vector
 *      accesses and cannot be told otherwise), an output overlapping an
 *      input or the workspace, a workspace smaller than the size the query
 *      reports, an algorithm the shape does not support. The workspace is
 *      overwritten by every call (a caller that keeps data there sees it).
 *   Every refusal leaves a message for cudnnGetLastErrorString.
 *   Refused as unsupported (NOT_SUPPORTED): 3-D convolutions, NCHW_VECT_C,
 *      data types other than fp32/fp16/bf16, fp16 compute (TRUE_HALF).
 *
 * Graph (backend) API: descriptors are created, typed attributes are
 * checked and stored (attribute type and owning descriptor type for the
 * attributes attention_cudnn.cu uses, referenced descriptors live and
 * finalized), finalize checks what cuDNN requires of tensors, pointwise,
 * matmul, reduction and reshape operations (required attributes, shape
 * agreement, broadcasting) and of the operation graph (handle, ops, unique
 * tensor ids), and compiles the graph for an interpreter that executes it
 * as built: ops in data-dependence order, each tensor held as fp32 values
 * by coordinate and rounded to its declared type when written (virtual
 * ones too), tensors in memory read and written through their own dims and
 * strides, a reshape a view (X laid out by its strides, read back by Y's).
 * Matmul (batched, broadcast), the pointwise modes pw_interpreted lists,
 * reductions ADD/MUL/MAX/MIN, reshape; anything else is NOT_SUPPORTED. The
 * heuristics offer two engines: 0, noted NONDETERMINISTIC and ranked
 * first, reverses its matmuls' summation order on every other call; 1 is
 * deterministic. A plan asks for a workspace: the fp32 bytes of its
 * largest virtual tensor (the real engines ask for one too). Execute checks
 * the variant pack against the graph (every non-virtual uid, no other, no
 * NULL, device memory over each tensor's extent, the declared byte
 * alignment; a workspace pointer that is device memory over the size the
 * plan asked for and overlaps no tensor) and writes over the whole
 * workspace, as the engines' kernels would. Nothing here says what the real
 * cuDNN's engines accept.
 *
 * Single-threaded, synchronous (every stream is the emulator's null stream). */
#include <cuda_runtime.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudnn.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

/* ---- errors, handles, the registry of live objects ------------------------------------ */

namespace {

thread_local char last_msg[512];

/* Records "fn: message" for cudnnGetLastErrorString and returns s. */
cudnnStatus_t fail(cudnnStatus_t s, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
cudnnStatus_t fail(cudnnStatus_t s, const char *fn, const char *fmt, ...) {
    int n = snprintf(last_msg, sizeof last_msg, "%s: ", fn);
    if (n < 0 || (size_t)n >= sizeof last_msg) n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_msg + n, sizeof last_msg - (size_t)n, fmt, ap);
    va_end(ap);
    return s;
}

enum obj_kind { K_HANDLE, K_TENSOR, K_FILTER, K_CONV, K_BACKEND, K_KINDS };

std::mutex reg_mu;
std::set<const void *> live[K_KINDS];

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

/* bytes of one element; 0 for a data type the stand-in does not compute */
size_t dt_size(cudnnDataType_t dt) {
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
bool dt_known(int dt) {
    return dt >= CUDNN_DATA_FLOAT && dt <= CUDNN_DATA_FP4_E2M1;
}
const char *dt_name(cudnnDataType_t dt) {
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
bool device_range(const void *p, size_t bytes) {
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess || a.type != cudaMemoryTypeDevice)
        return false;
    if (bytes <= 1) return true;
    const void *last = (const char *)p + bytes - 1;
    return cudaPointerGetAttributes(&a, last) == cudaSuccess && a.type == cudaMemoryTypeDevice;
}

bool overlap(const void *a, size_t an, const void *b, size_t bn) {
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return an && bn && x < y + bn && y < x + an;
}

} // namespace

struct cudnnContext {
    cudaStream_t stream;
};

struct cudnnTensorStruct {
    bool set;
    cudnnDataType_t dt;
    int nb;
    int dim[CUDNN_DIM_MAX];
    int stride[CUDNN_DIM_MAX];
};

struct cudnnFilterStruct {
    bool set;
    cudnnDataType_t dt;
    cudnnTensorFormat_t fmt;
    int nb;
    int dim[CUDNN_DIM_MAX];
};

struct cudnnConvolutionStruct {
    bool set;
    int nsp; /* spatial dims */
    int pad[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX], dil[CUDNN_DIM_MAX];
    cudnnConvolutionMode_t mode;
    cudnnDataType_t compute;
    cudnnMathType_t math;
    int groups;
};

/* ---- handle, version, errors ---------------------------------------------------------- */

extern "C" {

size_t CUDNNWINAPI cudnnGetVersion(void) {
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

/* ---- tensor, filter and convolution descriptors ----------------------------------------- */

cudnnStatus_t CUDNNWINAPI cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *tensorDesc) {
    if (!tensorDesc)
        return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnCreateTensorDescriptor",
                    "tensorDesc is NULL");
    cudnnTensorStruct *t = (cudnnTensorStruct *)calloc(1, sizeof *t);
    if (!t)
        return fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                    "cudnnCreateTensorDescriptor", "out of host memory");
    reg_add(K_TENSOR, t);
    *tensorDesc = t;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc) {
    if (!tensorDesc) return CUDNN_STATUS_SUCCESS; /* documented: NULL is a no-op */
    if (!reg_del(K_TENSOR, tensorDesc))
        return fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroyTensorDescriptor",
                    "not a live tensor descriptor: %p", (void *)tensorDesc);
    free(tensorDesc);
    return CUDNN_STATUS_SUCCESS;
}

} // extern "C"

namespace {

/* Sets t from dims and strides after the checks cudnnSetTensorNdDescriptor
 * documents: known type, dims and strides > 0, fewer than 2^31 elements. */
cudnnStatus_t tensor_set(const char *fn, cudnnTensorDescriptor_t t, cudnnDataType_t dt, int nb,
                         const int *dim, const int *stride) {
    if (!reg_has(K_TENSOR, t))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live tensor descriptor: %p", (void *)t);
    if (!dt_known(dt)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown data type %d", (int)dt);
    if (nb < 3 || nb > CUDNN_DIM_MAX)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "nbDims %d outside [3, %d]", nb, CUDNN_DIM_MAX);
    long long elems = 1;
    for (int i = 0; i < nb; i++) {
        if (dim[i] <= 0 || stride[i] <= 0)
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "dim %d is %d with stride %d (both must be > 0)", i, dim[i], stride[i]);
        elems *= dim[i];
        if (elems > INT_MAX)
            return fail(CUDNN_STATUS_NOT_SUPPORTED, fn,
                        "more than 2^31 - 1 elements in one tensor descriptor");
    }
    t->dt = dt;
    t->nb = nb;
    memcpy(t->dim, dim, (size_t)nb * sizeof *dim);
    memcpy(t->stride, stride, (size_t)nb * sizeof *stride);
    t->set = true;
    return CUDNN_STATUS_SUCCESS;
}

/* Fully packed strides of dims `dim` in `fmt` (NCHW order of dim[]). */
bool packed_strides(cudnnTensorFormat_t fmt, int nb, const int *dim, int *stride) {
    if (fmt == CUDNN_TENSOR_NCHW) {
        long long s = 1;
        for (int i = nb - 1; i >= 0; i--) {
            stride[i] = (int)s;
            s *= dim[i];
        }
        return true;
    }
    if (fmt == CUDNN_TENSOR_NHWC) { /* C innermost, then the spatial dims, then N */
        long long s = 1;
        stride[1] = 1;
        s = dim[1];
        for (int i = nb - 1; i >= 2; i--) {
            stride[i] = (int)s;
            s *= dim[i];
        }
        stride[0] = (int)s;
        return true;
    }
    return false;
}

} // namespace

extern "C" {

cudnnStatus_t CUDNNWINAPI cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t tensorDesc,
                                                     cudnnTensorFormat_t format,
                                                     cudnnDataType_t dataType, int n, int c, int h,
                                                     int w) {
    const char *fn = "cudnnSetTensor4dDescriptor";
    int dim[4] = {n, c, h, w}, stride[4];
    if (format == CUDNN_TENSOR_NCHW_VECT_C)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "NCHW_VECT_C is not emulated");
    for (int i = 0; i < 4; i++)
        if (dim[i] <= 0)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "n=%d c=%d h=%d w=%d: all must be > 0", n, c, h,
                        w);
    if (!packed_strides(format, 4, dim, stride))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown format %d", (int)format);
    return tensor_set(fn, tensorDesc, dataType, 4, dim, stride);
}

cudnnStatus_t CUDNNWINAPI cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t tensorDesc,
                                                       cudnnDataType_t dataType, int n, int c,
                                                       int h, int w, int nStride, int cStride,
                                                       int hStride, int wStride) {
    int dim[4] = {n, c, h, w}, stride[4] = {nStride, cStride, hStride, wStride};
    return tensor_set("cudnnSetTensor4dDescriptorEx", tensorDesc, dataType, 4, dim, stride);
}

cudnnStatus_t CUDNNWINAPI cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc,
                                                     cudnnDataType_t dataType, int nbDims,
                                                     const int dimA[], const int strideA[]) {
    if (!dimA || !strideA)
        return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnSetTensorNdDescriptor",
                    "dimA or strideA is NULL");
    return tensor_set("cudnnSetTensorNdDescriptor", tensorDesc, dataType, nbDims, dimA, strideA);
}

cudnnStatus_t CUDNNWINAPI cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t tensorDesc,
                                                     cudnnDataType_t *dataType, int *n, int *c,
                                                     int *h, int *w, int *nStride, int *cStride,
                                                     int *hStride, int *wStride) {
    const char *fn = "cudnnGetTensor4dDescriptor";
    if (!reg_has(K_TENSOR, tensorDesc) || !tensorDesc->set || tensorDesc->nb != 4)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live, set 4-d tensor descriptor");
    if (!dataType || !n || !c || !h || !w || !nStride || !cStride || !hStride || !wStride)
        return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, fn, "an output pointer is NULL");
    const cudnnTensorStruct *t = tensorDesc;
    *dataType = t->dt;
    *n = t->dim[0], *c = t->dim[1], *h = t->dim[2], *w = t->dim[3];
    *nStride = t->stride[0], *cStride = t->stride[1], *hStride = t->stride[2];
    *wStride = t->stride[3];
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *filterDesc) {
    if (!filterDesc)
        return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnCreateFilterDescriptor",
                    "filterDesc is NULL");
    cudnnFilterStruct *f = (cudnnFilterStruct *)calloc(1, sizeof *f);
    if (!f)
        return fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                    "cudnnCreateFilterDescriptor", "out of host memory");
    reg_add(K_FILTER, f);
    *filterDesc = f;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc) {
    if (!filterDesc) return CUDNN_STATUS_SUCCESS;
    if (!reg_del(K_FILTER, filterDesc))
        return fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroyFilterDescriptor",
                    "not a live filter descriptor: %p", (void *)filterDesc);
    free(filterDesc);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t filterDesc,
                                                     cudnnDataType_t dataType,
                                                     cudnnTensorFormat_t format, int nbDims,
                                                     const int filterDimA[]) {
    const char *fn = "cudnnSetFilterNdDescriptor";
    if (!reg_has(K_FILTER, filterDesc))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live filter descriptor: %p",
                    (void *)filterDesc);
    if (!filterDimA) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, fn, "filterDimA is NULL");
    if (!dt_known(dataType))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown data type %d", (int)dataType);
    if (format == CUDNN_TENSOR_NCHW_VECT_C)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "NCHW_VECT_C is not emulated");
    if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown format %d", (int)format);
    if (nbDims < 3 || nbDims > CUDNN_DIM_MAX)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "nbDims %d outside [3, %d]", nbDims, CUDNN_DIM_MAX);
    long long elems = 1;
    for (int i = 0; i < nbDims; i++) {
        if (filterDimA[i] <= 0)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "dim %d is %d (must be > 0)", i, filterDimA[i]);
        elems *= filterDimA[i];
        if (elems > INT_MAX)
            return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "more than 2^31 - 1 elements");
    }
    filterDesc->dt = dataType;
    filterDesc->fmt = format;
    filterDesc->nb = nbDims;
    memcpy(filterDesc->dim, filterDimA, (size_t)nbDims * sizeof(int));
    filterDesc->set = true;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t filterDesc,
                                                     cudnnDataType_t dataType,
                                                     cudnnTensorFormat_t format, int k, int c,
                                                     int h, int w) {
    int dim[4] = {k, c, h, w};
    return cudnnSetFilterNdDescriptor(filterDesc, dataType, format, 4, dim);
}

cudnnStatus_t CUDNNWINAPI cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *convDesc) {
    if (!convDesc)
        return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnCreateConvolutionDescriptor",
                    "convDesc is NULL");
    cudnnConvolutionStruct *c = (cudnnConvolutionStruct *)calloc(1, sizeof *c);
    if (!c)
        return fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                    "cudnnCreateConvolutionDescriptor", "out of host memory");
    c->math = CUDNN_DEFAULT_MATH; /* cuDNN's defaults */
    c->groups = 1;
    reg_add(K_CONV, c);
    *convDesc = c;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc) {
    if (!convDesc) return CUDNN_STATUS_SUCCESS;
    if (!reg_del(K_CONV, convDesc))
        return fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroyConvolutionDescriptor",
                    "not a live convolution descriptor: %p", (void *)convDesc);
    free(convDesc);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t convDesc,
                                                          int arrayLength, const int padA[],
                                                          const int filterStrideA[],
                                                          const int dilationA[],
                                                          cudnnConvolutionMode_t mode,
                                                          cudnnDataType_t computeType) {
    const char *fn = "cudnnSetConvolutionNdDescriptor";
    if (!reg_has(K_CONV, convDesc))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live convolution descriptor: %p",
                    (void *)convDesc);
    if (!padA || !filterStrideA || !dilationA)
        return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, fn, "an array is NULL");
    if (arrayLength < 1 || arrayLength > CUDNN_DIM_MAX - 2)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "arrayLength %d outside [1, %d]", arrayLength,
                    CUDNN_DIM_MAX - 2);
    if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown mode %d", (int)mode);
    if (!dt_known(computeType))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown compute type %d", (int)computeType);
    for (int i = 0; i < arrayLength; i++)
        if (padA[i] < 0 || filterStrideA[i] <= 0 || dilationA[i] <= 0)
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "spatial dim %d: pad %d, stride %d, dilation %d (need pad >= 0, stride "
                        "and dilation > 0)",
                        i, padA[i], filterStrideA[i], dilationA[i]);
    convDesc->nsp = arrayLength;
    memcpy(convDesc->pad, padA, (size_t)arrayLength * sizeof(int));
    memcpy(convDesc->stride, filterStrideA, (size_t)arrayLength * sizeof(int));
    memcpy(convDesc->dil, dilationA, (size_t)arrayLength * sizeof(int));
    convDesc->mode = mode;
    convDesc->compute = computeType;
    convDesc->set = true;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t convDesc,
                                                          int pad_h, int pad_w, int u, int v,
                                                          int dilation_h, int dilation_w,
                                                          cudnnConvolutionMode_t mode,
                                                          cudnnDataType_t computeType) {
    int pad[2] = {pad_h, pad_w}, stride[2] = {u, v}, dil[2] = {dilation_h, dilation_w};
    return cudnnSetConvolutionNdDescriptor(convDesc, 2, pad, stride, dil, mode, computeType);
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolution2dDescriptor(
    const cudnnConvolutionDescriptor_t convDesc, int *pad_h, int *pad_w, int *u, int *v,
    int *dilation_h, int *dilation_w, cudnnConvolutionMode_t *mode, cudnnDataType_t *computeType) {
    const char *fn = "cudnnGetConvolution2dDescriptor";
    if (!reg_has(K_CONV, convDesc) || !convDesc->set || convDesc->nsp != 2)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live, set 2-d convolution descriptor");
    if (!pad_h || !pad_w || !u || !v || !dilation_h || !dilation_w || !mode || !computeType)
        return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, fn, "an output pointer is NULL");
    *pad_h = convDesc->pad[0], *pad_w = convDesc->pad[1];
    *u = convDesc->stride[0], *v = convDesc->stride[1];
    *dilation_h = convDesc->dil[0], *dilation_w = convDesc->dil[1];
    *mode = convDesc->mode;
    *computeType = convDesc->compute;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc,
                                                      cudnnMathType_t mathType) {
    const char *fn = "cudnnSetConvolutionMathType";
    if (!reg_has(K_CONV, convDesc))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live convolution descriptor: %p",
                    (void *)convDesc);
    if (mathType != CUDNN_DEFAULT_MATH && mathType != CUDNN_TENSOR_OP_MATH &&
        mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && mathType != CUDNN_FMA_MATH)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown math type %d", (int)mathType);
    convDesc->math = mathType;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc,
                                                      cudnnMathType_t *mathType) {
    if (!reg_has(K_CONV, convDesc) || !mathType)
        return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionMathType",
                    "not a live convolution descriptor, or NULL out");
    *mathType = convDesc->math;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc,
                                                        int groupCount) {
    const char *fn = "cudnnSetConvolutionGroupCount";
    if (!reg_has(K_CONV, convDesc))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live convolution descriptor: %p",
                    (void *)convDesc);
    if (groupCount < 1) return fail(CUDNN_STATUS_BAD_PARAM, fn, "groupCount %d < 1", groupCount);
    convDesc->groups = groupCount;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc,
                                                        int *groupCount) {
    if (!reg_has(K_CONV, convDesc) || !groupCount)
        return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionGroupCount",
                    "not a live convolution descriptor, or NULL out");
    *groupCount = convDesc->groups;
    return CUDNN_STATUS_SUCCESS;
}

} // extern "C"

/* ---- geometry: the descriptors of one call, checked together ------------------------------ */

namespace {

enum { DIR_FWD = 0, DIR_BWD_DATA, DIR_BWD_FILTER };

struct geom {
    cudnnDataType_t dt;
    size_t es;
    int N, C, H, W;  /* x */
    int K, Cg, R, S; /* filter (K, C / groups, R, S) */
    int G, Kg;       /* groups, K / groups */
    int OH, OW;      /* y */
    int ph, pw, u, v, dh, dw;
    bool flip; /* CUDNN_CONVOLUTION: the filter is applied flipped */
    cudnnMathType_t math;
    long long xs[4], ys[4];           /* strides of x and y, NCHW order */
    long long fs[4];                  /* strides of the (packed) filter, KCRS order */
    size_t x_bytes, y_bytes, w_bytes; /* extents in memory */
};

/* What cudnnGetConvolutionNdForwardOutputDim computes, after its checks. */
cudnnStatus_t out_dims(const char *fn, cudnnConvolutionDescriptor_t c, cudnnTensorDescriptor_t x,
                       cudnnFilterDescriptor_t w, int nb, int *out) {
    if (!reg_has(K_CONV, c) || !c->set)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "convolution descriptor %p is not live or not set",
                    (void *)c);
    if (!reg_has(K_TENSOR, x) || !x->set)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "input tensor descriptor %p is not live or not set",
                    (void *)x);
    if (!reg_has(K_FILTER, w) || !w->set)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "filter descriptor %p is not live or not set",
                    (void *)w);
    if (x->nb != w->nb || x->nb != c->nsp + 2 || nb != x->nb)
        return fail(CUDNN_STATUS_BAD_PARAM, fn,
                    "dimension counts disagree: input %d, filter %d, convolution %d spatial, "
                    "asked %d",
                    x->nb, w->nb, c->nsp, nb);
    if (x->dim[1] != w->dim[1] * c->groups)
        return fail(CUDNN_STATUS_BAD_PARAM, fn,
                    "input channels %d != filter channels %d x group count %d", x->dim[1],
                    w->dim[1], c->groups);
    if (w->dim[0] % c->groups)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "filter count %d not a multiple of group count %d",
                    w->dim[0], c->groups);
    out[0] = x->dim[0];
    out[1] = w->dim[0];
    for (int i = 0; i < c->nsp; i++) {
        long long span = (long long)(w->dim[i + 2] - 1) * c->dil[i] + 1;
        long long o = 1 + ((long long)x->dim[i + 2] + 2LL * c->pad[i] - span) / c->stride[i];
        if ((long long)x->dim[i + 2] + 2LL * c->pad[i] < span || o < 1)
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "spatial dim %d: the dilated filter (%lld) exceeds the padded input "
                        "(%d + 2 x %d)",
                        i, span, x->dim[i + 2], c->pad[i]);
        out[i + 2] = (int)o;
    }
    return CUDNN_STATUS_SUCCESS;
}

size_t extent_bytes(int nb, const int *dim, const long long *stride, size_t es) {
    long long last = 0;
    for (int i = 0; i < nb; i++)
        last += (long long)(dim[i] - 1) * stride[i];
    return (size_t)(last + 1) * es;
}

/* x (N,C,H,W), w (K,C/G,R,S), conv, y (N,K,OH,OW): every descriptor live and
 * set, one data type, compute type valid for it, y's dims what the output
 * dims of (x, w, conv) are. */
cudnnStatus_t make_geom(const char *fn, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                        cudnnConvolutionDescriptor_t c, cudnnTensorDescriptor_t y, geom *g) {
    int od[CUDNN_DIM_MAX];
    if (!reg_has(K_TENSOR, y) || !y->set)
        return fail(CUDNN_STATUS_BAD_PARAM, fn,
                    "output tensor descriptor %p is not live or not set", (void *)y);
    cudnnStatus_t s = out_dims(fn, c, x, w, x && reg_has(K_TENSOR, x) ? x->nb : 0, od);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    if (y->nb != x->nb)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "output has %d dims, input %d", y->nb, x->nb);
    for (int i = 0; i < y->nb; i++)
        if (y->dim[i] != od[i])
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "output dim %d is %d, the convolution gives %d (input %dx%dx%dx%d, filter "
                        "%dx%dx%dx%d)",
                        i, y->dim[i], od[i], x->dim[0], x->dim[1], x->dim[2],
                        x->nb > 3 ? x->dim[3] : 1, w->dim[0], w->dim[1], w->dim[2],
                        w->nb > 3 ? w->dim[3] : 1);
    if (x->dt != y->dt || x->dt != w->dt)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "data types disagree: x %s, w %s, y %s",
                    dt_name(x->dt), dt_name(w->dt), dt_name(y->dt));
    if (x->nb != 4)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "%d-d convolutions are not emulated (2-d only)",
                    x->nb - 2);
    g->es = dt_size(x->dt);
    if (!g->es)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn,
                    "data type %s is not emulated (FLOAT, HALF, BFLOAT16)", dt_name(x->dt));
    /* cuDNN's supported configurations: FLOAT_CONFIG, PSEUDO_HALF_CONFIG and
     * TRUE_HALF_CONFIG, BFLOAT16 with FLOAT compute */
    if (x->dt == CUDNN_DATA_HALF && c->compute == CUDNN_DATA_HALF)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn,
                    "TRUE_HALF_CONFIG (fp16 accumulation) is not emulated");
    if (c->compute != CUDNN_DATA_FLOAT)
        return fail(CUDNN_STATUS_BAD_PARAM, fn,
                    "compute type %s with %s data is not a valid "
                    "configuration",
                    dt_name(c->compute), dt_name(x->dt));
    g->dt = x->dt;
    g->N = x->dim[0], g->C = x->dim[1], g->H = x->dim[2], g->W = x->dim[3];
    g->K = w->dim[0], g->Cg = w->dim[1], g->R = w->dim[2], g->S = w->dim[3];
    g->G = c->groups, g->Kg = g->K / g->G;
    g->OH = y->dim[2], g->OW = y->dim[3];
    g->ph = c->pad[0], g->pw = c->pad[1], g->u = c->stride[0], g->v = c->stride[1];
    g->dh = c->dil[0], g->dw = c->dil[1];
    g->flip = c->mode == CUDNN_CONVOLUTION;
    g->math = c->math;
    for (int i = 0; i < 4; i++) {
        g->xs[i] = x->stride[i];
        g->ys[i] = y->stride[i];
    }
    if (w->fmt == CUDNN_TENSOR_NCHW) {
        g->fs[0] = (long long)g->Cg * g->R * g->S, g->fs[1] = (long long)g->R * g->S;
        g->fs[2] = g->S, g->fs[3] = 1;
    } else { /* NHWC: K, R, S, C */
        g->fs[0] = (long long)g->R * g->S * g->Cg, g->fs[1] = 1;
        g->fs[2] = (long long)g->S * g->Cg, g->fs[3] = g->Cg;
    }
    g->x_bytes = extent_bytes(4, x->dim, g->xs, g->es);
    g->y_bytes = extent_bytes(4, y->dim, g->ys, g->es);
    g->w_bytes = (size_t)g->K * g->Cg * g->R * g->S * g->es;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- algorithms: support, workspace, ranking -------------------------------------------- */

const int algo_count[3] = {CUDNN_CONVOLUTION_FWD_ALGO_COUNT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT};

/* Algorithms with a tensor-core variant (GEMM-based ones). */
bool tensor_capable(int dir, int a) {
    if (dir == DIR_FWD)
        return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
               a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    if (dir == DIR_BWD_DATA) return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
    return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
}

bool nondeterministic(int dir, int a) {
    return (dir == DIR_BWD_DATA && a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0) ||
           (dir == DIR_BWD_FILTER &&
            (a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3));
}

/* Tensor cores in use: the math type allows them and the algorithm has them. */
bool uses_tensor_ops(int dir, int a, const geom &g, cudnnMathType_t math) {
    return math != CUDNN_FMA_MATH && tensor_capable(dir, a);
}

int next_pow2(long long n) {
    int p = 1;
    while (p < n && p < (1 << 20))
        p <<= 1;
    return p;
}

/* Whether `a` of direction `dir` runs this shape: CUDNN_STATUS_SUCCESS, or
 * NOT_SUPPORTED with the reason in *why. Restrictions modelled on cuDNN's
 * documented ones (FFT: stride 1, no dilation, padding smaller than the
 * filter, padded input at most 256; Winograd: 3x3 (non-fused: 3x3 or 5x5),
 * stride 1; no FFT or Winograd for BFLOAT16; DIRECT is not implemented). */
cudnnStatus_t algo_support(int dir, int a, const geom &g, const char **why) {
    bool s1 = g.u == 1 && g.v == 1 && g.dh == 1 && g.dw == 1;
    bool bf = g.dt == CUDNN_DATA_BFLOAT16;
    bool k3 = g.R == 3 && g.S == 3, k5 = g.R == 5 && g.S == 5;
    bool fft_pad = g.ph < g.R && g.pw < g.S;
    bool fft = s1 && !bf && fft_pad && g.H + 2 * g.ph <= 256 && g.W + 2 * g.pw <= 256;
    bool fft_tiling = s1 && !bf && fft_pad && g.R <= 32 && g.S <= 32;
    bool wino = s1 && !bf && k3 && g.dt == CUDNN_DATA_FLOAT;
    bool wino_nf = s1 && !bf && (k3 || k5);
    bool ok = true;
    *why = "";
    if (dir == DIR_FWD) {
        switch (a) {
        case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
            ok = false, *why = "DIRECT is not implemented";
            break;
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
            ok = fft, *why = "FFT: needs stride 1, no dilation, pad < filter, input <= 256";
            break;
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
            ok = fft_tiling, *why = "FFT_TILING: needs stride 1, no dilation, pad < filter";
            break;
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
            ok = wino, *why = "WINOGRAD: FLOAT 3x3 stride 1 only";
            break;
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
            ok = wino_nf, *why = "WINOGRAD_NONFUSED: 3x3 or 5x5 stride 1 only";
            break;
        default:
            break;
        }
    } else if (dir == DIR_BWD_DATA) {
        switch (a) {
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT:
            ok = fft, *why = "FFT: needs stride 1, no dilation, pad < filter, input <= 256";
            break;
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING:
            ok = fft_tiling, *why = "FFT_TILING: needs stride 1, no dilation, pad < filter";
            break;
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD:
            ok = wino, *why = "WINOGRAD: FLOAT 3x3 stride 1 only";
            break;
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED:
            ok = wino_nf, *why = "WINOGRAD_NONFUSED: 3x3 or 5x5 stride 1 only";
            break;
        default:
            break;
        }
    } else {
        switch (a) {
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT:
            ok = fft, *why = "FFT: needs stride 1, no dilation, pad < filter, input <= 256";
            break;
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING:
            ok = fft_tiling, *why = "FFT_TILING: needs stride 1, no dilation, pad < filter";
            break;
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD:
            ok = false, *why = "BWD_FILTER WINOGRAD is not implemented";
            break;
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED:
            ok = wino_nf, *why = "WINOGRAD_NONFUSED: 3x3 or 5x5 stride 1 only";
            break;
        default:
            break;
        }
    }
    return ok ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
}

/* Workspace bytes of `a` with math type `math` (only meaningful when
 * supported): index tables, im2col buffers, transformed operands. */
size_t algo_workspace(int dir, int a, const geom &g, cudnnMathType_t math) {
    size_t es = g.es;
    size_t filt = (size_t)g.K * g.Cg * g.R * g.S;
    size_t nin = (size_t)g.N * g.C, nout = (size_t)g.N * g.K;
    size_t col = (size_t)g.Cg * g.R * g.S * g.OH * g.OW * es; /* one image's im2col */
    size_t fh = (size_t)next_pow2(g.H + 2 * g.ph), fw = (size_t)next_pow2(g.W + 2 * g.pw);
    size_t fft = 8 * fh * (fw / 2 + 1) * (nin + (size_t)g.K * g.Cg + nout);
    size_t fft_tile = 8 * 32 * 17 * (nin + (size_t)g.K * g.Cg + nout);
    size_t tiles = (size_t)((g.OH + 1) / 2) * ((g.OW + 1) / 2);
    size_t wino_nf = 4 * 16 * (tiles * (nin + nout) + (size_t)g.K * g.Cg);
    size_t tc = uses_tensor_ops(dir, a, g, math) ? filt * es + 256 : 0; /* repacked filter */
    if (dir == DIR_FWD) {
        switch (a) {
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
            return tc;
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
            return 4 * (size_t)g.Cg * g.R * g.S + 64 + tc;
        case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
            return col;
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
            return fft;
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
            return fft_tile;
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
            return 0;
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
            return wino_nf;
        default:
            return 0;
        }
    }
    if (dir == DIR_BWD_DATA) {
        switch (a) {
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0:
            return 0;
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1:
            return tc;
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT:
            return fft;
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING:
            return fft_tile;
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD:
            return 0;
        default:
            return wino_nf;
        }
    }
    switch (a) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0:
        return 0;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1:
        return col + tc;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3:
        return 4 * filt * (size_t)(g.N < 8 ? g.N : 8); /* partial sums */
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT:
        return fft;
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING:
        return fft_tile;
    default:
        return wino_nf;
    }
}

/* The heuristic's ranking of the supported algorithms: the order depends on
 * the filter size and stride, the way cuDNN's does. */
int algo_rank(int dir, const geom &g, int *order) {
    bool s1 = g.u == 1 && g.v == 1 && g.dh == 1 && g.dw == 1;
    bool one = g.R == 1 && g.S == 1, k3 = g.R == 3 && g.S == 3, big = g.R >= 5 || g.S >= 5;
    int n = 0;
    if (dir == DIR_FWD) {
        if (one) {
            int o[] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                       CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                       CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, CUDNN_CONVOLUTION_FWD_ALGO_FFT};
            for (int a : o)
                order[n++] = a;
        } else if (k3 && s1) {
            int o[] = {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                       CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                       CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
                       CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
                       CUDNN_CONVOLUTION_FWD_ALGO_FFT};
            for (int a : o)
                order[n++] = a;
        } else if (big && s1) {
            int o[] = {CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                       CUDNN_CONVOLUTION_FWD_ALGO_FFT,
                       CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                       CUDNN_CONVOLUTION_FWD_ALGO_GEMM};
            for (int a : o)
                order[n++] = a;
        } else {
            int o[] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_GEMM};
            for (int a : o)
                order[n++] = a;
        }
    } else if (dir == DIR_BWD_DATA) {
        if (k3 && s1) {
            int o[] = {CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED,
                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD,
                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING,
                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT};
            for (int a : o)
                order[n++] = a;
        } else {
            int o[] = {CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING,
                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT,
                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED};
            for (int a : o)
                order[n++] = a;
        }
    } else {
        if (one) {
            int o[] = {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
                       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3,
                       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING,
                       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT};
            for (int a : o)
                order[n++] = a;
        } else {
            int o[] = {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
                       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3,
                       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED,
                       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
                       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING,
                       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT};
            for (int a : o)
                order[n++] = a;
        }
    }
    return n;
}

struct cand {
    int algo;
    cudnnStatus_t status;
    size_t memory;
    cudnnDeterminism_t det;
    cudnnMathType_t math;
};

/* Every algorithm of `dir`: the supported ones in rank order, then the rest
 * (NOT_SUPPORTED). Returns the count (the direction's ALGO_COUNT). */
int candidates(int dir, const geom &g, cand *out) {
    int order[16], n = algo_rank(dir, g, order), m = 0;
    bool listed[16] = {false};
    for (int pass = 0; pass < 2; pass++) {
        int lim = pass == 0 ? n : algo_count[dir];
        for (int i = 0; i < lim; i++) {
            int a = pass == 0 ? order[i] : i;
            if (listed[a]) continue;
            const char *why;
            cudnnStatus_t st = algo_support(dir, a, g, &why);
            if (pass == 0 && st != CUDNN_STATUS_SUCCESS) continue;
            listed[a] = true;
            cand &c = out[m++];
            c.algo = a;
            c.status = st;
            c.det = nondeterministic(dir, a) ? CUDNN_NON_DETERMINISTIC : CUDNN_DETERMINISTIC;
            /* the math type the algorithm runs with: the descriptor's where
             * it has a tensor-core variant, else plain FMA kernels */
            c.math =
                tensor_capable(dir, a) || g.math == CUDNN_FMA_MATH ? g.math : CUDNN_DEFAULT_MATH;
            c.memory = st == CUDNN_STATUS_SUCCESS ? algo_workspace(dir, a, g, c.math) : 0;
        }
    }
    return m;
}

const char *const dir_fn_ws[3] = {"cudnnGetConvolutionForwardWorkspaceSize",
                                  "cudnnGetConvolutionBackwardDataWorkspaceSize",
                                  "cudnnGetConvolutionBackwardFilterWorkspaceSize"};

cudnnStatus_t heuristic(const char *fn, int dir, cudnnHandle_t h, cudnnTensorDescriptor_t x,
                        cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t c,
                        cudnnTensorDescriptor_t y, int requested, int *returned, cand *out) {
    if (!reg_has(K_HANDLE, h))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live handle: %p", (void *)h);
    if (!returned || !out)
        return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, fn,
                    "returnedAlgoCount or perfResults is NULL");
    if (requested < 1)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "requestedAlgoCount %d < 1", requested);
    geom g;
    cudnnStatus_t s = make_geom(fn, x, w, c, y, &g);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    cand all[16];
    int n = candidates(dir, g, all);
    if (n > requested) n = requested;
    for (int i = 0; i < n; i++)
        out[i] = all[i];
    *returned = n;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t workspace_query(int dir, cudnnHandle_t h, cudnnTensorDescriptor_t x,
                              cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t c,
                              cudnnTensorDescriptor_t y, int algo, size_t *bytes) {
    const char *fn = dir_fn_ws[dir];
    if (!reg_has(K_HANDLE, h))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live handle: %p", (void *)h);
    if (!bytes) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, fn, "sizeInBytes is NULL");
    if (algo < 0 || algo >= algo_count[dir])
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown algorithm %d", algo);
    geom g;
    cudnnStatus_t s = make_geom(fn, x, w, c, y, &g);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    const char *why;
    if (algo_support(dir, algo, g, &why) != CUDNN_STATUS_SUCCESS)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "algorithm %d: %s", algo, why);
    *bytes = algo_workspace(dir, algo, g, g.math);
    return CUDNN_STATUS_SUCCESS;
}

} // namespace

extern "C" {

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionNdForwardOutputDim(
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t inputTensorDesc,
    const cudnnFilterDescriptor_t filterDesc, int nbDims, int tensorOuputDimA[]) {
    if (!tensorOuputDimA)
        return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnGetConvolutionNdForwardOutputDim",
                    "tensorOuputDimA is NULL");
    return out_dims("cudnnGetConvolutionNdForwardOutputDim", convDesc, inputTensorDesc, filterDesc,
                    nbDims, tensorOuputDimA);
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolution2dForwardOutputDim(
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t inputTensorDesc,
    const cudnnFilterDescriptor_t filterDesc, int *n, int *c, int *h, int *w) {
    const char *fn = "cudnnGetConvolution2dForwardOutputDim";
    if (!n || !c || !h || !w)
        return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, fn, "an output pointer is NULL");
    int d[4];
    cudnnStatus_t s = out_dims(fn, convDesc, inputTensorDesc, filterDesc, 4, d);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    *n = d[0], *c = d[1], *h = d[2], *w = d[3];
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t handle,
                                                                      int *count) {
    if (!reg_has(K_HANDLE, handle) || !count)
        return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionForwardAlgorithmMaxCount",
                    "not a live handle, or count is NULL");
    *count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t handle,
                                                                           int *count) {
    if (!reg_has(K_HANDLE, handle) || !count)
        return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionBackwardDataAlgorithmMaxCount",
                    "not a live handle, or count is NULL");
    *count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t handle,
                                                                             int *count) {
    if (!reg_has(K_HANDLE, handle) || !count)
        return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount",
                    "not a live handle, or count is NULL");
    *count = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
    return CUDNN_STATUS_SUCCESS;
}

/* The heuristic's candidates into cuDNN's perf struct of the direction
 * (the three differ in the algo enum only). time -1: a heuristic measures
 * nothing. */
extern "C++" template <typename P> void fill_perf(P *out, const cand *c, int n) {
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].algo = (decltype(out[i].algo))c[i].algo;
        out[i].status = c[i].status;
        out[i].time = -1.0f;
        out[i].memory = c[i].memory;
        out[i].determinism = c[i].det;
        out[i].mathType = c[i].math;
    }
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnFilterDescriptor_t filterDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionFwdAlgoPerf_t *perfResults) {
    cand c[16];
    cudnnStatus_t s =
        heuristic("cudnnGetConvolutionForwardAlgorithm_v7", DIR_FWD, handle, srcDesc, filterDesc,
                  convDesc, destDesc, requestedAlgoCount, returnedAlgoCount, c);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    fill_perf(perfResults, c, *returnedAlgoCount);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc,
    const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionBwdDataAlgoPerf_t *perfResults) {
    cand c[16];
    cudnnStatus_t s =
        heuristic("cudnnGetConvolutionBackwardDataAlgorithm_v7", DIR_BWD_DATA, handle, gradDesc,
                  filterDesc, convDesc, diffDesc, requestedAlgoCount, returnedAlgoCount, c);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    fill_perf(perfResults, c, *returnedAlgoCount);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnFilterDescriptor_t gradDesc, const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionBwdFilterAlgoPerf_t *perfResults) {
    cand c[16];
    cudnnStatus_t s =
        heuristic("cudnnGetConvolutionBackwardFilterAlgorithm_v7", DIR_BWD_FILTER, handle, srcDesc,
                  gradDesc, convDesc, diffDesc, requestedAlgoCount, returnedAlgoCount, c);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    fill_perf(perfResults, c, *returnedAlgoCount);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnFilterDescriptor_t wDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc,
    cudnnConvolutionFwdAlgo_t algo, size_t *sizeInBytes) {
    return workspace_query(DIR_FWD, handle, xDesc, wDesc, convDesc, yDesc, (int)algo, sizeInBytes);
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc,
    cudnnConvolutionBwdDataAlgo_t algo, size_t *sizeInBytes) {
    return workspace_query(DIR_BWD_DATA, handle, dxDesc, wDesc, convDesc, dyDesc, (int)algo,
                           sizeInBytes);
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t gradDesc,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t *sizeInBytes) {
    return workspace_query(DIR_BWD_FILTER, handle, xDesc, gradDesc, convDesc, dyDesc, (int)algo,
                           sizeInBytes);
}

} // extern "C"

/* ---- the computation ------------------------------------------------------------------- */

namespace {

unsigned long long g_calls; /* the non-deterministic algorithms' summation order */

float load1(const void *p, size_t i, cudnnDataType_t dt) {
    if (dt == CUDNN_DATA_FLOAT) return ((const float *)p)[i];
    if (dt == CUDNN_DATA_HALF) return __half2float(((const __half *)p)[i]);
    return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
}

void store1(void *p, size_t i, cudnnDataType_t dt, float v) {
    if (dt == CUDNN_DATA_FLOAT)
        ((float *)p)[i] = v;
    else if (dt == CUDNN_DATA_HALF)
        ((__half *)p)[i] = __float2half_rn(v);
    else
        ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
}

/* fp32 rounded to TF32 (10 mantissa bits, nearest even), as tensor cores
 * read fp32 operands. */
float to_tf32(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    if ((b & 0x7f800000u) == 0x7f800000u) return f; /* Inf, NaN */
    b += 0xfffu + ((b >> 13) & 1u);
    b &= ~0x1fffu;
    memcpy(&f, &b, 4);
    return f;
}

/* A 4-D strided array as packed NCHW floats. */
void load4(std::vector<float> &out, const void *p, cudnnDataType_t dt, const int *d,
           const long long *st, bool tf32) {
    out.resize((size_t)d[0] * d[1] * d[2] * d[3]);
    size_t o = 0;
    for (int a = 0; a < d[0]; a++)
        for (int b = 0; b < d[1]; b++)
            for (int c = 0; c < d[2]; c++) {
                size_t base = (size_t)(a * st[0] + b * st[1] + c * st[2]);
                for (int e = 0; e < d[3]; e++) {
                    float v = load1(p, base + (size_t)(e * st[3]), dt);
                    out[o++] = tf32 ? to_tf32(v) : v;
                }
            }
}

/* dst = alpha * acc + beta * dst over a 4-D strided array; beta == 0: dst
 * is not read (cuDNN's documented blending). */
void blend4(void *p, cudnnDataType_t dt, const int *d, const long long *st, const float *acc,
            float alpha, float beta) {
    size_t o = 0;
    for (int a = 0; a < d[0]; a++)
        for (int b = 0; b < d[1]; b++)
            for (int c = 0; c < d[2]; c++) {
                size_t base = (size_t)(a * st[0] + b * st[1] + c * st[2]);
                for (int e = 0; e < d[3]; e++) {
                    size_t i = base + (size_t)(e * st[3]);
                    float v = alpha * acc[o++];
                    if (beta != 0.0f) v += beta * load1(p, i, dt);
                    store1(p, i, dt, v);
                }
            }
}

/* The range of output columns ow whose input column ow*v - pw + s*dw lies in [0, W). */
void col_range(const geom &g, int s, int *lo, int *hi) {
    int off = s * g.dw - g.pw; /* iw = ow * v + off */
    int l = off >= 0 ? 0 : (-off + g.v - 1) / g.v;
    int h = (g.W - 1 - off) < 0 ? 0 : (g.W - 1 - off) / g.v + 1;
    if (h > g.OW) h = g.OW;
    *lo = l;
    *hi = h < l ? l : h;
}

/* Y(N,K,OH,OW) = sum over (c, r, s) in that order of X * Wf. */
void conv_fwd(const geom &g, const float *X, const float *Wf, float *Y) {
    size_t hw = (size_t)g.H * g.W, ohw = (size_t)g.OH * g.OW;
    memset(Y, 0, (size_t)g.N * g.K * ohw * sizeof *Y);
    for (int n = 0; n < g.N; n++)
        for (int k = 0; k < g.K; k++) {
            int grp = k / g.Kg;
            float *yp = Y + ((size_t)n * g.K + k) * ohw;
            for (int cc = 0; cc < g.Cg; cc++) {
                const float *xp = X + ((size_t)n * g.C + grp * g.Cg + cc) * hw;
                for (int r = 0; r < g.R; r++)
                    for (int s = 0; s < g.S; s++) {
                        int rr = g.flip ? g.R - 1 - r : r, ss = g.flip ? g.S - 1 - s : s;
                        float wv = Wf[(((size_t)k * g.Cg + cc) * g.R + rr) * g.S + ss];
                        int lo, hi;
                        col_range(g, s, &lo, &hi);
                        int off = s * g.dw - g.pw;
                        for (int oh = 0; oh < g.OH; oh++) {
                            int ih = oh * g.u - g.ph + r * g.dh;
                            if (ih < 0 || ih >= g.H) continue;
                            const float *row = xp + (size_t)ih * g.W;
                            float *orow = yp + (size_t)oh * g.OW;
                            for (int ow = lo; ow < hi; ow++)
                                orow[ow] += wv * row[ow * g.v + off];
                        }
                    }
            }
        }
}

/* DX(N,C,H,W) = sum over (k, r, s) of DY * Wf; `rot` rotates the k order
 * (the non-deterministic algorithms). */
void conv_bwd_data(const geom &g, const float *DY, const float *Wf, float *DX, int rot) {
    size_t hw = (size_t)g.H * g.W, ohw = (size_t)g.OH * g.OW;
    memset(DX, 0, (size_t)g.N * g.C * hw * sizeof *DX);
    for (int n = 0; n < g.N; n++)
        for (int c = 0; c < g.C; c++) {
            int grp = c / g.Cg, cc = c % g.Cg;
            float *dxp = DX + ((size_t)n * g.C + c) * hw;
            for (int i = 0; i < g.Kg; i++) {
                int k = grp * g.Kg + (i + rot) % g.Kg;
                const float *dyp = DY + ((size_t)n * g.K + k) * ohw;
                for (int r = 0; r < g.R; r++)
                    for (int s = 0; s < g.S; s++) {
                        int rr = g.flip ? g.R - 1 - r : r, ss = g.flip ? g.S - 1 - s : s;
                        float wv = Wf[(((size_t)k * g.Cg + cc) * g.R + rr) * g.S + ss];
                        int lo, hi;
                        col_range(g, s, &lo, &hi);
                        int off = s * g.dw - g.pw;
                        for (int oh = 0; oh < g.OH; oh++) {
                            int ih = oh * g.u - g.ph + r * g.dh;
                            if (ih < 0 || ih >= g.H) continue;
                            float *row = dxp + (size_t)ih * g.W;
                            const float *drow = dyp + (size_t)oh * g.OW;
                            for (int ow = lo; ow < hi; ow++)
                                row[ow * g.v + off] += wv * drow[ow];
                        }
                    }
            }
        }
}

/* DW(K,C/G,R,S) = sum over (n, oh, ow) of DY * X; `rot` rotates the n order. */
void conv_bwd_filter(const geom &g, const float *X, const float *DY, float *DW, int rot) {
    size_t hw = (size_t)g.H * g.W, ohw = (size_t)g.OH * g.OW;
    for (int k = 0; k < g.K; k++) {
        int grp = k / g.Kg;
        for (int cc = 0; cc < g.Cg; cc++)
            for (int r = 0; r < g.R; r++)
                for (int s = 0; s < g.S; s++) {
                    int lo, hi;
                    col_range(g, s, &lo, &hi);
                    int off = s * g.dw - g.pw;
                    float acc = 0.0f;
                    for (int i = 0; i < g.N; i++) {
                        int n = (i + rot) % g.N;
                        const float *xp = X + ((size_t)n * g.C + grp * g.Cg + cc) * hw;
                        const float *dyp = DY + ((size_t)n * g.K + k) * ohw;
                        for (int oh = 0; oh < g.OH; oh++) {
                            int ih = oh * g.u - g.ph + r * g.dh;
                            if (ih < 0 || ih >= g.H) continue;
                            const float *row = xp + (size_t)ih * g.W;
                            const float *drow = dyp + (size_t)oh * g.OW;
                            for (int ow = lo; ow < hi; ow++)
                                acc += drow[ow] * row[ow * g.v + off];
                        }
                    }
                    int rr = g.flip ? g.R - 1 - r : r, ss = g.flip ? g.S - 1 - s : s;
                    DW[(((size_t)k * g.Cg + cc) * g.R + rr) * g.S + ss] = acc;
                }
    }
}

/* A device array a call reads or writes: NULL, not device memory over its
 * extent, or not 16-byte aligned is refused. */
cudnnStatus_t check_ptr(const char *fn, const char *what, const void *p, size_t bytes) {
    if (!p) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, fn, "%s is NULL", what);
    if (!device_range(p, bytes))
        return fail(CUDNN_STATUS_BAD_PARAM, fn,
                    "%s (%p, %zu bytes) is not device memory over its whole extent", what, p,
                    bytes);
    if ((uintptr_t)p % 16)
        return fail(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, fn,
                    "%s (%p) is not 16-byte aligned (the legacy API's kernels may use 16-byte "
                    "vector accesses)",
                    what, p);
    return CUDNN_STATUS_SUCCESS;
}

const char *const dir_fn[3] = {"cudnnConvolutionForward", "cudnnConvolutionBackwardData",
                               "cudnnConvolutionBackwardFilter"};

/* One compute call. in0/in1: the two operands (fwd: x, w; bwd data: w, dy;
 * bwd filter: x, dy); out the result. */
cudnnStatus_t compute(int dir, cudnnHandle_t h, const void *alpha, const void *beta,
                      cudnnTensorDescriptor_t xd, cudnnFilterDescriptor_t wd,
                      cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t yd, int algo,
                      void *ws, size_t ws_bytes, const void *x, const void *w, const void *y,
                      void *out) {
    const char *fn = dir_fn[dir];
    if (!reg_has(K_HANDLE, h))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live handle: %p", (void *)h);
    if (!alpha || !beta)
        return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, fn, "alpha or beta is NULL");
    geom g;
    cudnnStatus_t s = make_geom(fn, xd, wd, cd, yd, &g);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    if (algo < 0 || algo >= algo_count[dir])
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown algorithm %d", algo);
    const char *why;
    if (algo_support(dir, algo, g, &why) != CUDNN_STATUS_SUCCESS)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn, "algorithm %d: %s", algo, why);

    /* the operands and the result, each over its extent */
    static const char *const names[3][3] = {{"x", "w", "y"}, {"w", "dy", "dx"}, {"x", "dy", "dw"}};
    const void *p[3];
    size_t b[3];
    if (dir == DIR_FWD)
        p[0] = x, b[0] = g.x_bytes, p[1] = w, b[1] = g.w_bytes, p[2] = out, b[2] = g.y_bytes;
    else if (dir == DIR_BWD_DATA)
        p[0] = w, b[0] = g.w_bytes, p[1] = y, b[1] = g.y_bytes, p[2] = out, b[2] = g.x_bytes;
    else
        p[0] = x, b[0] = g.x_bytes, p[1] = y, b[1] = g.y_bytes, p[2] = out, b[2] = g.w_bytes;
    for (int i = 0; i < 3; i++) {
        s = check_ptr(fn, names[dir][i], p[i], b[i]);
        if (s != CUDNN_STATUS_SUCCESS) return s;
    }
    for (int i = 0; i < 2; i++)
        if (overlap(p[2], b[2], p[i], b[i]))
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "the output %s overlaps the input %s",
                        names[dir][2], names[dir][i]);

    /* the workspace contract: at least what the size query reports for
     * this algorithm with the descriptor's math type */
    size_t need = algo_workspace(dir, algo, g, g.math);
    if (ws_bytes < need)
        return fail(CUDNN_STATUS_BAD_PARAM, fn,
                    "workSpaceSizeInBytes %zu < %zu, the size this algorithm (%d) needs with math "
                    "type %d",
                    ws_bytes, need, algo, (int)g.math);
    if (need) {
        if (!ws)
            return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, fn,
                        "workSpace is NULL, %zu bytes needed", need);
        if (!device_range(ws, ws_bytes))
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "workSpace (%p, %zu bytes) is not device memory over its whole extent", ws,
                        ws_bytes);
        for (int i = 0; i < 3; i++)
            if (overlap(ws, ws_bytes, p[i], b[i]))
                return fail(CUDNN_STATUS_BAD_PARAM, fn, "workSpace overlaps %s", names[dir][i]);
    }

    float a = *(const float *)alpha, bt = *(const float *)beta;
    bool tf32 = g.dt == CUDNN_DATA_FLOAT && uses_tensor_ops(dir, algo, g, g.math);
    int rot = nondeterministic(dir, algo) ? (int)(g_calls % 9973u) : 0;
    g_calls++;
    int xdim[4] = {g.N, g.C, g.H, g.W}, ydim[4] = {g.N, g.K, g.OH, g.OW};
    int wdim[4] = {g.K, g.Cg, g.R, g.S};
    std::vector<float> A, B, R;
    if (dir == DIR_FWD) {
        load4(A, x, g.dt, xdim, g.xs, tf32);
        load4(B, w, g.dt, wdim, g.fs, tf32);
        R.resize((size_t)g.N * g.K * g.OH * g.OW);
        conv_fwd(g, A.data(), B.data(), R.data());
    } else if (dir == DIR_BWD_DATA) {
        load4(A, y, g.dt, ydim, g.ys, tf32);
        load4(B, w, g.dt, wdim, g.fs, tf32);
        R.resize((size_t)g.N * g.C * g.H * g.W);
        conv_bwd_data(g, A.data(), B.data(), R.data(), g.Kg ? rot % g.Kg : 0);
    } else {
        load4(A, x, g.dt, xdim, g.xs, tf32);
        load4(B, y, g.dt, ydim, g.ys, tf32);
        R.resize((size_t)g.K * g.Cg * g.R * g.S);
        conv_bwd_filter(g, A.data(), B.data(), R.data(), g.N ? rot % g.N : 0);
    }
    /* the algorithm's scratch: whatever the caller kept there is gone */
    if (need) memset(ws, 0xa5, need);
    if (dir == DIR_FWD)
        blend4(out, g.dt, ydim, g.ys, R.data(), a, bt);
    else if (dir == DIR_BWD_DATA)
        blend4(out, g.dt, xdim, g.xs, R.data(), a, bt);
    else
        blend4(out, g.dt, wdim, g.fs, R.data(), a, bt);
    return CUDNN_STATUS_SUCCESS;
}

} // namespace

extern "C" {

cudnnStatus_t CUDNNWINAPI cudnnConvolutionForward(
    cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
    const cudnnTensorDescriptor_t yDesc, void *y) {
    return compute(DIR_FWD, handle, alpha, beta, xDesc, wDesc, convDesc, yDesc, (int)algo,
                   workSpace, workSpaceSizeInBytes, x, w, NULL, y);
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionBackwardData(
    cudnnHandle_t handle, const void *alpha, const cudnnFilterDescriptor_t wDesc, const void *w,
    const cudnnTensorDescriptor_t dyDesc, const void *dy,
    const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdDataAlgo_t algo,
    void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
    const cudnnTensorDescriptor_t dxDesc, void *dx) {
    return compute(DIR_BWD_DATA, handle, alpha, beta, dxDesc, wDesc, convDesc, dyDesc, (int)algo,
                   workSpace, workSpaceSizeInBytes, NULL, w, dy, dx);
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionBackwardFilter(
    cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnTensorDescriptor_t dyDesc, const void *dy,
    const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdFilterAlgo_t algo,
    void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
    const cudnnFilterDescriptor_t dwDesc, void *dw) {
    return compute(DIR_BWD_FILTER, handle, alpha, beta, xDesc, dwDesc, convDesc, dyDesc, (int)algo,
                   workSpace, workSpaceSizeInBytes, x, NULL, dy, dw);
}

} // extern "C"

/* ---- the graph (backend) API: checked descriptors, an interpreter ------------------------- */

namespace {

struct battr {
    cudnnBackendAttributeType_t type;
    int64_t count;
    std::vector<unsigned char> bytes;
};

struct program; /* a finalized operation graph, compiled for the interpreter */

struct bdesc {
    cudnnBackendDescriptorType_t type;
    bool finalized;
    std::map<int, battr> attrs;
    /* operation graph, heuristics, engine config, engine, plan: the
     * compiled graph and (config, engine, plan) the engine's index */
    std::shared_ptr<program> prog;
    int64_t engine = -1;
    int64_t workspace = 0; /* plan: the bytes it asked for */
};

size_t attr_elem_size(cudnnBackendAttributeType_t t) {
    switch (t) {
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR:
        return sizeof(void *);
    case CUDNN_TYPE_BOOLEAN:
        return sizeof(bool);
    case CUDNN_TYPE_INT64:
    case CUDNN_TYPE_DOUBLE:
        return 8;
    case CUDNN_TYPE_FLOAT:
    case CUDNN_TYPE_INT32:
        return 4;
    case CUDNN_TYPE_CHAR:
        return 1;
    case CUDNN_TYPE_FRACTION:
        return sizeof(cudnnFraction_t);
    default:
        return sizeof(int); /* the enums */
    }
}

/* What cuDNN documents for the attributes the backend sets: the descriptor
 * they belong to, their type and, for descriptor-valued ones, the type of
 * descriptor they take (-1: any). */
struct attr_spec {
    cudnnBackendAttributeName_t name;
    cudnnBackendDescriptorType_t owner;
    cudnnBackendAttributeType_t type;
    int takes;
};
const attr_spec specs[] = {
    {CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_INT64, -1},
    {CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_DATA_TYPE, -1},
    {CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_INT64, -1},
    {CUDNN_ATTR_TENSOR_STRIDES, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_INT64, -1},
    {CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_INT64, -1},
    {CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_BOOLEAN, -1},
    {CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_BACKEND_TENSOR_DESCRIPTOR, CUDNN_TYPE_BOOLEAN, -1},
    {CUDNN_ATTR_POINTWISE_MODE, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_TYPE_POINTWISE_MODE, -1},
    {CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_TYPE_DATA_TYPE, -1},
    {CUDNN_ATTR_POINTWISE_AXIS, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_TYPE_INT64, -1},
    {CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_POINTWISE_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_BACKEND_MATMUL_DESCRIPTOR, CUDNN_TYPE_DATA_TYPE, -1},
    {CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_MATMUL_DESCRIPTOR},
    {CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_BACKEND_REDUCTION_DESCRIPTOR,
     CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, -1},
    {CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, CUDNN_TYPE_DATA_TYPE, -1},
    {CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_REDUCTION_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_TENSOR_DESCRIPTOR},
    {CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, CUDNN_TYPE_HANDLE,
     -1},
    {CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, -1},
    {CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, CUDNN_TYPE_HEUR_MODE, -1},
    {CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR},
    {CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, CUDNN_TYPE_HANDLE,
     -1},
    {CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR},
    {CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, CUDNN_TYPE_INT64,
     -1},
    {CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
     CUDNN_TYPE_VOID_PTR, -1},
    {CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, CUDNN_TYPE_VOID_PTR,
     -1},
};

const attr_spec *spec_of(int name) {
    for (const attr_spec &s : specs)
        if ((int)s.name == name) return &s;
    return NULL;
}

bdesc *bd(cudnnBackendDescriptor_t d) {
    return reg_has(K_BACKEND, d) ? (bdesc *)d : NULL;
}

const battr *attr(const bdesc *d, int name) {
    auto it = d->attrs.find(name);
    return it == d->attrs.end() ? NULL : &it->second;
}

bdesc *attr_desc(const bdesc *d, int name, int i = 0) {
    const battr *a = attr(d, name);
    if (!a || a->type != CUDNN_TYPE_BACKEND_DESCRIPTOR || i >= a->count) return NULL;
    void *p;
    memcpy(&p, a->bytes.data() + (size_t)i * sizeof p, sizeof p);
    return bd(p);
}

bool attr_i64(const bdesc *d, int name, std::vector<int64_t> &out) {
    const battr *a = attr(d, name);
    if (!a || a->type != CUDNN_TYPE_INT64) return false;
    out.resize((size_t)a->count);
    if (a->count) memcpy(out.data(), a->bytes.data(), (size_t)a->count * 8);
    return true;
}

int attr_enum(const bdesc *d, int name, int dflt) {
    const battr *a = attr(d, name);
    if (!a || a->count < 1) return dflt;
    int v;
    memcpy(&v, a->bytes.data(), sizeof v);
    return v;
}

std::vector<int64_t> dims_of(const bdesc *t) {
    std::vector<int64_t> d;
    if (t) attr_i64(t, CUDNN_ATTR_TENSOR_DIMENSIONS, d);
    return d;
}

/* The tensor `name` of operation d, required. */
cudnnStatus_t need_tensor(const char *fn, const bdesc *d, int name, const char *what, bdesc **out) {
    *out = attr_desc(d, name);
    if (!*out)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "required attribute %s (%d) is not set", what,
                    name);
    return CUDNN_STATUS_SUCCESS;
}

/* Broadcasting as cuDNN's pointwise operations allow: each dim of `in`
 * equal to out's or 1, same rank. */
bool broadcasts(const std::vector<int64_t> &in, const std::vector<int64_t> &out) {
    if (in.size() != out.size()) return false;
    for (size_t i = 0; i < in.size(); i++)
        if (in[i] != out[i] && in[i] != 1) return false;
    return true;
}

const char *dstr(const std::vector<int64_t> &d, char *buf, size_t n) {
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < d.size() && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? "x" : "", (long long)d[i]);
    return buf;
}

cudnnStatus_t finalize_tensor(const char *fn, bdesc *d) {
    static const int req[] = {CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_ATTR_TENSOR_DIMENSIONS,
                              CUDNN_ATTR_TENSOR_STRIDES, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                              CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT};
    for (int r : req)
        if (!attr(d, r) || attr(d, r)->count < 1)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensor: required attribute %d is not set", r);
    std::vector<int64_t> dim, st, al;
    attr_i64(d, CUDNN_ATTR_TENSOR_DIMENSIONS, dim);
    attr_i64(d, CUDNN_ATTR_TENSOR_STRIDES, st);
    attr_i64(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, al);
    if (dim.size() != st.size() || dim.empty() || dim.size() > CUDNN_DIM_MAX)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensor: %zu dims, %zu strides", dim.size(),
                    st.size());
    for (size_t i = 0; i < dim.size(); i++)
        if (dim[i] <= 0 || st[i] <= 0)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensor: dim %zu is %lld, stride %lld", i,
                        (long long)dim[i], (long long)st[i]);
    if (al.size() != 1 || al[0] <= 0 || (al[0] & (al[0] - 1)))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensor: byte alignment must be a power of 2");
    bool virt = false, byval = false;
    const battr *v = attr(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL),
                *b = attr(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE);
    if (v && v->count >= 1) memcpy(&virt, v->bytes.data(), sizeof virt);
    if (b && b->count >= 1) memcpy(&byval, b->bytes.data(), sizeof byval);
    if (virt && byval)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "tensor: virtual and by-value at once");
    return CUDNN_STATUS_SUCCESS;
}

bool pw_binary(int mode) {
    switch (mode) {
    case CUDNN_POINTWISE_ADD:
    case CUDNN_POINTWISE_ADD_SQUARE:
    case CUDNN_POINTWISE_DIV:
    case CUDNN_POINTWISE_MAX:
    case CUDNN_POINTWISE_MIN:
    case CUDNN_POINTWISE_MOD:
    case CUDNN_POINTWISE_MUL:
    case CUDNN_POINTWISE_POW:
    case CUDNN_POINTWISE_SUB:
    case CUDNN_POINTWISE_ATAN2:
    case CUDNN_POINTWISE_BINARY_SELECT:
        return true;
    default:
        return mode >= CUDNN_POINTWISE_CMP_EQ && mode <= CUDNN_POINTWISE_LOGICAL_OR;
    }
}

cudnnStatus_t finalize_op(const char *fn, bdesc *d) {
    char b1[96], b2[96], b3[96];
    cudnnStatus_t s;
    if (d->type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) {
        bdesc *pw = attr_desc(d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR), *x, *y;
        if (!pw)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "pointwise operation without PW_DESCRIPTOR");
        if ((s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, "XDESC", &x)) ||
            (s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, "YDESC", &y)))
            return s;
        int mode = attr_enum(pw, CUDNN_ATTR_POINTWISE_MODE, -1);
        std::vector<int64_t> dy = dims_of(y);
        if (!broadcasts(dims_of(x), dy))
            return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, fn,
                        "pointwise mode %d: X %s does not broadcast to Y %s", mode,
                        dstr(dims_of(x), b1, sizeof b1), dstr(dy, b2, sizeof b2));
        bdesc *bt = attr_desc(d, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
        if (pw_binary(mode) && !bt)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "pointwise mode %d needs BDESC", mode);
        if (bt && !broadcasts(dims_of(bt), dy))
            return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, fn,
                        "pointwise mode %d: B %s does not broadcast to Y %s", mode,
                        dstr(dims_of(bt), b1, sizeof b1), dstr(dy, b2, sizeof b2));
        bdesc *t = attr_desc(d, CUDNN_ATTR_OPERATION_POINTWISE_TDESC);
        if (mode == CUDNN_POINTWISE_BINARY_SELECT && !t)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "BINARY_SELECT needs TDESC (the mask)");
        if (t && !broadcasts(dims_of(t), dy))
            return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, fn,
                        "pointwise mode %d: T does not broadcast to Y", mode);
        if (mode == CUDNN_POINTWISE_GEN_INDEX) {
            std::vector<int64_t> ax;
            if (!attr_i64(pw, CUDNN_ATTR_POINTWISE_AXIS, ax) || ax.size() != 1 || ax[0] < 0 ||
                ax[0] >= (int64_t)dy.size())
                return fail(CUDNN_STATUS_BAD_PARAM, fn, "GEN_INDEX needs an axis within Y's rank");
        }
        return CUDNN_STATUS_SUCCESS;
    }
    if (d->type == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR) {
        bdesc *a, *b, *c;
        if ((s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_MATMUL_ADESC, "ADESC", &a)) ||
            (s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_MATMUL_BDESC, "BDESC", &b)) ||
            (s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_MATMUL_CDESC, "CDESC", &c)))
            return s;
        if (!attr_desc(d, CUDNN_ATTR_OPERATION_MATMUL_DESC))
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "matmul operation without MATMUL_DESC");
        std::vector<int64_t> da = dims_of(a), db = dims_of(b), dc = dims_of(c);
        size_t n = dc.size();
        bool ok = n >= 3 && da.size() == n && db.size() == n && da[n - 1] == db[n - 2] &&
                  dc[n - 2] == da[n - 2] && dc[n - 1] == db[n - 1];
        for (size_t i = 0; ok && i + 2 < n; i++)
            ok = (da[i] == dc[i] || da[i] == 1) && (db[i] == dc[i] || db[i] == 1);
        if (!ok)
            return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, fn,
                        "matmul: A %s times B %s cannot give C %s", dstr(da, b1, sizeof b1),
                        dstr(db, b2, sizeof b2), dstr(dc, b3, sizeof b3));
        return CUDNN_STATUS_SUCCESS;
    }
    if (d->type == CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR) {
        bdesc *x, *y;
        if ((s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, "XDESC", &x)) ||
            (s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, "YDESC", &y)))
            return s;
        if (!attr_desc(d, CUDNN_ATTR_OPERATION_REDUCTION_DESC))
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "reduction operation without its DESC");
        if (!broadcasts(dims_of(y), dims_of(x)))
            return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, fn,
                        "reduction: Y %s is not X %s with some dims reduced to 1",
                        dstr(dims_of(y), b1, sizeof b1), dstr(dims_of(x), b2, sizeof b2));
        return CUDNN_STATUS_SUCCESS;
    }
    if (d->type == CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR) {
        bdesc *x, *y;
        if ((s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, "XDESC", &x)) ||
            (s = need_tensor(fn, d, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, "YDESC", &y)))
            return s;
        long long nx = 1, ny = 1;
        for (int64_t v : dims_of(x))
            nx *= v;
        for (int64_t v : dims_of(y))
            ny *= v;
        if (nx != ny)
            return fail(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, fn,
                        "reshape: X has %lld elements, Y %lld", nx, ny);
        return CUDNN_STATUS_SUCCESS;
    }
    return CUDNN_STATUS_SUCCESS;
}

bool is_operation(cudnnBackendDescriptorType_t t) {
    switch (t) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_BN_FINALIZE_STATISTICS_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_SIGNAL_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR:
        return true;
    default:
        return false;
    }
}

/* ---- the interpreter: a finalized operation graph compiled into a program ---------------- */

enum { P_POINTWISE, P_MATMUL, P_REDUCTION, P_RESHAPE };

struct ptensor {
    int64_t uid;
    cudnnDataType_t dt;
    std::vector<int64_t> dim, stride;
    int64_t align;
    bool virt, byval;
    size_t n; /* elements */
};

struct pop {
    int kind;
    int mode;       /* pointwise mode or reduction operator */
    int64_t axis;   /* GEN_INDEX */
    int x, b, t, y; /* tensor indices, -1: none (matmul: x = A, b = B, y = C) */
};

struct program {
    std::vector<ptensor> t;
    std::vector<pop> ops;      /* in an order where every input is written before it is read */
    std::vector<int> last_use; /* per tensor: the last op reading it, -1 none */
};

bool attr_bool(const bdesc *d, int name) {
    const battr *a = attr(d, name);
    bool v = false;
    if (a && a->count >= 1 && a->type == CUDNN_TYPE_BOOLEAN) memcpy(&v, a->bytes.data(), sizeof v);
    return v;
}

bool pw_unary(int mode) {
    switch (mode) {
    case CUDNN_POINTWISE_EXP:
    case CUDNN_POINTWISE_LOG:
    case CUDNN_POINTWISE_NEG:
    case CUDNN_POINTWISE_ABS:
    case CUDNN_POINTWISE_SQRT:
    case CUDNN_POINTWISE_RSQRT:
    case CUDNN_POINTWISE_RECIPROCAL:
    case CUDNN_POINTWISE_IDENTITY:
    case CUDNN_POINTWISE_TANH_FWD:
    case CUDNN_POINTWISE_LOGICAL_NOT:
        return true;
    default:
        return false;
    }
}

/* the pointwise modes the interpreter computes */
bool pw_interpreted(int mode) {
    switch (mode) {
    case CUDNN_POINTWISE_ADD:
    case CUDNN_POINTWISE_SUB:
    case CUDNN_POINTWISE_MUL:
    case CUDNN_POINTWISE_DIV:
    case CUDNN_POINTWISE_MAX:
    case CUDNN_POINTWISE_MIN:
    case CUDNN_POINTWISE_CMP_EQ:
    case CUDNN_POINTWISE_CMP_NEQ:
    case CUDNN_POINTWISE_CMP_GT:
    case CUDNN_POINTWISE_CMP_GE:
    case CUDNN_POINTWISE_CMP_LT:
    case CUDNN_POINTWISE_CMP_LE:
    case CUDNN_POINTWISE_LOGICAL_AND:
    case CUDNN_POINTWISE_LOGICAL_OR:
    case CUDNN_POINTWISE_BINARY_SELECT:
    case CUDNN_POINTWISE_GEN_INDEX:
        return true;
    default:
        return pw_unary(mode);
    }
}

bool dt_interpreted(cudnnDataType_t dt) {
    return dt == CUDNN_DATA_FLOAT || dt == CUDNN_DATA_HALF || dt == CUDNN_DATA_BFLOAT16 ||
           dt == CUDNN_DATA_INT32 || dt == CUDNN_DATA_BOOLEAN;
}

/* Compiles the finalized graph d (its ops checked by finalize_op) into
 * d->prog: tensors by uid, ops in data-dependence order. */
cudnnStatus_t compile(const char *fn, bdesc *d) {
    auto P = std::make_shared<program>();
    std::map<const bdesc *, int> idx;
    cudnnStatus_t bad = CUDNN_STATUS_SUCCESS;
    auto tix = [&](const bdesc *t) -> int {
        if (!t) return -1;
        auto it = idx.find(t);
        if (it != idx.end()) return it->second;
        ptensor pt;
        std::vector<int64_t> v;
        attr_i64(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, v);
        pt.uid = v[0];
        attr_i64(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, v);
        pt.align = v[0];
        pt.dt = (cudnnDataType_t)attr_enum(t, CUDNN_ATTR_TENSOR_DATA_TYPE, -1);
        attr_i64(t, CUDNN_ATTR_TENSOR_DIMENSIONS, pt.dim);
        attr_i64(t, CUDNN_ATTR_TENSOR_STRIDES, pt.stride);
        pt.virt = attr_bool(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL);
        pt.byval = attr_bool(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE);
        pt.n = 1;
        for (int64_t e : pt.dim)
            pt.n *= (size_t)e;
        if (!dt_interpreted(pt.dt) && !bad)
            bad = fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, fn,
                       "tensor uid %lld: data type %s (%d) is not interpreted", (long long)pt.uid,
                       dt_name(pt.dt), (int)pt.dt);
        if (!pt.virt && pt.dt == CUDNN_DATA_BOOLEAN && !bad)
            bad = fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, fn,
                       "tensor uid %lld: a BOOLEAN tensor in memory is not interpreted (virtual "
                       "only)",
                       (long long)pt.uid);
        if (pt.byval && (pt.n != 1 || pt.dt != CUDNN_DATA_FLOAT) && !bad)
            bad = fail(CUDNN_STATUS_NOT_SUPPORTED, fn,
                       "tensor uid %lld: by-value tensors are interpreted as one FLOAT only",
                       (long long)pt.uid);
        P->t.push_back(pt);
        return idx[t] = (int)P->t.size() - 1;
    };
    const battr *ops = attr(d, CUDNN_ATTR_OPERATIONGRAPH_OPS);
    std::vector<pop> raw;
    for (int64_t i = 0; i < ops->count; i++) {
        const bdesc *op = attr_desc(d, CUDNN_ATTR_OPERATIONGRAPH_OPS, (int)i);
        pop o = {0, -1, -1, -1, -1, -1, -1};
        if (op->type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) {
            const bdesc *pw = attr_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
            o.kind = P_POINTWISE;
            o.mode = attr_enum(pw, CUDNN_ATTR_POINTWISE_MODE, -1);
            int prec = attr_enum(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, -1);
            o.x = tix(attr_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC));
            o.b = tix(attr_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC));
            o.t = tix(attr_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC));
            o.y = tix(attr_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC));
            std::vector<int64_t> ax;
            if (attr_i64(pw, CUDNN_ATTR_POINTWISE_AXIS, ax) && !ax.empty()) o.axis = ax[0];
            if (!pw_interpreted(o.mode))
                return fail(CUDNN_STATUS_NOT_SUPPORTED, fn,
                            "op %lld: pointwise mode %d is not interpreted", (long long)i, o.mode);
            if (prec != CUDNN_DATA_FLOAT && prec != CUDNN_DATA_INT32 && prec != CUDNN_DATA_BOOLEAN)
                return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, fn,
                            "op %lld: pointwise math precision %s (%d) is not interpreted",
                            (long long)i, dt_name((cudnnDataType_t)prec), prec);
            bool unary = pw_unary(o.mode) || o.mode == CUDNN_POINTWISE_GEN_INDEX;
            if (unary && o.b >= 0)
                return fail(CUDNN_STATUS_BAD_PARAM, fn,
                            "op %lld: pointwise mode %d takes one input, BDESC is set",
                            (long long)i, o.mode);
            if (o.t >= 0 && o.mode != CUDNN_POINTWISE_BINARY_SELECT)
                return fail(CUDNN_STATUS_BAD_PARAM, fn, "op %lld: pointwise mode %d takes no TDESC",
                            (long long)i, o.mode);
            if (o.mode == CUDNN_POINTWISE_GEN_INDEX && o.axis < 0)
                return fail(CUDNN_STATUS_BAD_PARAM, fn, "op %lld: GEN_INDEX without an axis",
                            (long long)i);
            if (o.mode != CUDNN_POINTWISE_GEN_INDEX && o.axis >= 0)
                return fail(CUDNN_STATUS_BAD_PARAM, fn,
                            "op %lld: AXIS is set on pointwise mode %d (GEN_INDEX only)",
                            (long long)i, o.mode);
            if (o.mode == CUDNN_POINTWISE_BINARY_SELECT && P->t[o.t].dt != CUDNN_DATA_BOOLEAN)
                return fail(CUDNN_STATUS_BAD_PARAM, fn,
                            "op %lld: BINARY_SELECT's TDESC (uid %lld) is %s, not BOOLEAN",
                            (long long)i, (long long)P->t[o.t].uid, dt_name(P->t[o.t].dt));
        } else if (op->type == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR) {
            const bdesc *mm = attr_desc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC);
            o.kind = P_MATMUL;
            o.x = tix(attr_desc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC));
            o.b = tix(attr_desc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC));
            o.y = tix(attr_desc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC));
            int comp = attr_enum(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, -1);
            if (comp != CUDNN_DATA_FLOAT)
                return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, fn,
                            "op %lld: matmul compute type %s (%d) is not interpreted (FLOAT only)",
                            (long long)i, dt_name((cudnnDataType_t)comp), comp);
        } else if (op->type == CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR) {
            const bdesc *rd = attr_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC);
            o.kind = P_REDUCTION;
            o.mode = attr_enum(rd, CUDNN_ATTR_REDUCTION_OPERATOR, -1);
            o.x = tix(attr_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC));
            o.y = tix(attr_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC));
            int comp = attr_enum(rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, -1);
            if (o.mode != CUDNN_REDUCE_TENSOR_ADD && o.mode != CUDNN_REDUCE_TENSOR_MAX &&
                o.mode != CUDNN_REDUCE_TENSOR_MIN && o.mode != CUDNN_REDUCE_TENSOR_MUL)
                return fail(CUDNN_STATUS_NOT_SUPPORTED, fn,
                            "op %lld: reduction operator %d is not interpreted", (long long)i,
                            o.mode);
            if (comp != CUDNN_DATA_FLOAT)
                return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, fn,
                            "op %lld: reduction compute type %s (%d) is not interpreted",
                            (long long)i, dt_name((cudnnDataType_t)comp), comp);
        } else if (op->type == CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR) {
            o.kind = P_RESHAPE;
            o.x = tix(attr_desc(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC));
            o.y = tix(attr_desc(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC));
        } else {
            return fail(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, fn,
                        "op %lld: operation descriptor type %d is not interpreted", (long long)i,
                        (int)op->type);
        }
        if (bad) return bad;
        raw.push_back(o);
    }
    /* every tensor written at most once, never a by-value one; every virtual
     * tensor read is written */
    size_t nt = P->t.size(), no = raw.size();
    std::vector<int> producer(nt, -1);
    for (size_t i = 0; i < no; i++) {
        int y = raw[i].y;
        if (producer[y] >= 0)
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "tensor uid %lld is the output of ops %d and %zu", (long long)P->t[y].uid,
                        producer[y], i);
        if (P->t[y].byval)
            return fail(CUDNN_STATUS_BAD_PARAM, fn, "op %zu writes the by-value tensor uid %lld", i,
                        (long long)P->t[y].uid);
        producer[y] = (int)i;
    }
    for (size_t i = 0; i < no; i++)
        for (int in : {raw[i].x, raw[i].b, raw[i].t})
            if (in >= 0 && P->t[in].virt && producer[in] < 0)
                return fail(CUDNN_STATUS_BAD_PARAM, fn,
                            "op %zu reads the virtual tensor uid %lld, which no op writes", i,
                            (long long)P->t[in].uid);
    /* data-dependence order, the graph's own order among ready ops */
    std::vector<bool> done(no, false), ready_t(nt, false);
    for (size_t j = 0; j < nt; j++)
        ready_t[j] = producer[j] < 0;
    for (size_t step = 0; step < no; step++) {
        size_t pick = no;
        for (size_t i = 0; i < no && pick == no; i++) {
            if (done[i]) continue;
            bool ok = true;
            for (int in : {raw[i].x, raw[i].b, raw[i].t})
                if (in >= 0 && !ready_t[in]) ok = false;
            if (ok) pick = i;
        }
        if (pick == no) return fail(CUDNN_STATUS_BAD_PARAM, fn, "the operation graph has a cycle");
        done[pick] = true;
        ready_t[raw[pick].y] = true;
        P->ops.push_back(raw[pick]);
    }
    P->last_use.assign(nt, -1);
    for (size_t i = 0; i < no; i++)
        for (int in : {P->ops[i].x, P->ops[i].b, P->ops[i].t})
            if (in >= 0) P->last_use[in] = (int)i;
    d->prog = P;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- execution ---------------------------------------------------------------------------- */

unsigned long long g_graph_calls; /* the nondeterministic engine's summation order */

/* v rounded to what a tensor of type dt holds */
float round_to(cudnnDataType_t dt, float v) {
    switch (dt) {
    case CUDNN_DATA_HALF:
        return __half2float(__float2half_rn(v));
    case CUDNN_DATA_BFLOAT16:
        return __bfloat162float(__float2bfloat16_rn(v));
    case CUDNN_DATA_INT32:
        if (v != v) return 0.0f;
        return v >= 2147483647.0f    ? 2147483647.0f
               : v <= -2147483648.0f ? -2147483648.0f
                                     : truncf(v);
    case CUDNN_DATA_BOOLEAN:
        return v != 0.0f ? 1.0f : 0.0f;
    default:
        return v;
    }
}

size_t mem_size(cudnnDataType_t dt) {
    return dt == CUDNN_DATA_INT32 ? 4 : dt_size(dt);
}

float mem_load(const void *p, int64_t i, cudnnDataType_t dt) {
    if (dt == CUDNN_DATA_INT32) return (float)((const int32_t *)p)[i];
    return load1(p, (size_t)i, dt);
}

void mem_store(void *p, int64_t i, cudnnDataType_t dt, float v) {
    if (dt == CUDNN_DATA_INT32)
        ((int32_t *)p)[i] = (int32_t)v;
    else
        store1(p, (size_t)i, dt, v);
}

/* Calls f(logical index, memory offset) over the tensor's elements in
 * row-major order (the offset from the tensor's strides). */
template <typename F> void each_elem(const ptensor &t, F f) {
    size_t n = t.dim.size();
    std::vector<int64_t> c(n, 0);
    int64_t off = 0;
    int64_t inner = t.dim[n - 1], is = t.stride[n - 1];
    for (size_t i = 0; i < t.n; i += (size_t)inner) {
        for (int64_t e = 0; e < inner; e++)
            f(i + (size_t)e, off + e * is);
        for (int k = (int)n - 2; k >= 0; k--) {
            off += t.stride[k];
            if (++c[k] < t.dim[k]) break;
            off -= t.stride[k] * t.dim[k];
            c[k] = 0;
        }
    }
}

/* the elements' span in memory, in elements */
int64_t span_of(const ptensor &t) {
    int64_t s = 1;
    for (size_t i = 0; i < t.dim.size(); i++)
        s += (t.dim[i] - 1) * t.stride[i];
    return s;
}

/* row-major strides of `in` seen with `out`'s dims: 0 where in broadcasts */
std::vector<int64_t> bstrides(const std::vector<int64_t> &in, const std::vector<int64_t> &out) {
    std::vector<int64_t> s(in.size());
    int64_t acc = 1;
    for (int i = (int)in.size() - 1; i >= 0; i--) {
        s[i] = (in[i] == 1 && out[i] != 1) ? 0 : acc;
        acc *= in[i];
    }
    return s;
}

float pw_eval(int mode, float x, float b, float t) {
    switch (mode) {
    case CUDNN_POINTWISE_ADD:
        return x + b;
    case CUDNN_POINTWISE_SUB:
        return x - b;
    case CUDNN_POINTWISE_MUL:
        return x * b;
    case CUDNN_POINTWISE_DIV:
        return x / b;
    case CUDNN_POINTWISE_MAX:
        return x > b ? x : b;
    case CUDNN_POINTWISE_MIN:
        return x < b ? x : b;
    case CUDNN_POINTWISE_CMP_EQ:
        return x == b;
    case CUDNN_POINTWISE_CMP_NEQ:
        return x != b;
    case CUDNN_POINTWISE_CMP_GT:
        return x > b;
    case CUDNN_POINTWISE_CMP_GE:
        return x >= b;
    case CUDNN_POINTWISE_CMP_LT:
        return x < b;
    case CUDNN_POINTWISE_CMP_LE:
        return x <= b;
    case CUDNN_POINTWISE_LOGICAL_AND:
        return x != 0 && b != 0;
    case CUDNN_POINTWISE_LOGICAL_OR:
        return x != 0 || b != 0;
    case CUDNN_POINTWISE_LOGICAL_NOT:
        return x == 0;
    case CUDNN_POINTWISE_BINARY_SELECT: /* y = t ? x : b */
        return t != 0 ? x : b;
    case CUDNN_POINTWISE_EXP:
        return expf(x);
    case CUDNN_POINTWISE_LOG:
        return logf(x);
    case CUDNN_POINTWISE_NEG:
        return -x;
    case CUDNN_POINTWISE_ABS:
        return fabsf(x);
    case CUDNN_POINTWISE_SQRT:
        return sqrtf(x);
    case CUDNN_POINTWISE_RSQRT:
        return 1.0f / sqrtf(x);
    case CUDNN_POINTWISE_RECIPROCAL:
        return 1.0f / x;
    case CUDNN_POINTWISE_TANH_FWD:
        return tanhf(x);
    default: /* IDENTITY */
        return x;
    }
}

struct runner {
    const program &P;
    int64_t engine;
    std::vector<const void *> ptr;       /* per tensor: memory (non-virtual) */
    std::vector<std::vector<float>> val; /* per tensor: row-major values, rounded to its type */
    std::vector<bool> have;

    const std::vector<float> &get(int i) {
        if (!have[i]) { /* a non-virtual input: read from memory */
            const ptensor &t = P.t[i];
            std::vector<float> &v = val[i];
            v.resize(t.n);
            if (t.byval)
                v[0] = *(const float *)ptr[i];
            else
                each_elem(t, [&](size_t l, int64_t off) { v[l] = mem_load(ptr[i], off, t.dt); });
            have[i] = true;
        }
        return val[i];
    }

    /* y's values are complete: round them, write them out when y is in memory */
    void put(int y) {
        const ptensor &t = P.t[y];
        std::vector<float> &v = val[y];
        if (t.dt != CUDNN_DATA_FLOAT)
            for (float &e : v)
                e = round_to(t.dt, e);
        if (!t.virt)
            each_elem(t,
                      [&](size_t l, int64_t off) { mem_store((void *)ptr[y], off, t.dt, v[l]); });
        have[y] = true;
    }

    void pointwise(const pop &o) {
        const ptensor &ty = P.t[o.y];
        const std::vector<int64_t> &dy = ty.dim;
        size_t n = dy.size();
        const float *xv = get(o.x).data();
        const float *bv = o.b >= 0 ? get(o.b).data() : NULL;
        const float *tv = o.t >= 0 ? get(o.t).data() : NULL;
        std::vector<int64_t> sx = bstrides(P.t[o.x].dim, dy);
        std::vector<int64_t> sb =
            o.b >= 0 ? bstrides(P.t[o.b].dim, dy) : std::vector<int64_t>(n, 0);
        std::vector<int64_t> st =
            o.t >= 0 ? bstrides(P.t[o.t].dim, dy) : std::vector<int64_t>(n, 0);
        std::vector<float> &out = val[o.y];
        out.resize(ty.n);
        std::vector<int64_t> c(n, 0);
        int64_t ox = 0, ob = 0, ot = 0, inner = dy[n - 1];
        for (size_t i = 0; i < ty.n; i += (size_t)inner) {
            if (o.mode == CUDNN_POINTWISE_GEN_INDEX) {
                for (int64_t e = 0; e < inner; e++)
                    out[i + e] = (float)(o.axis == (int64_t)n - 1 ? e : c[o.axis]);
            } else {
                for (int64_t e = 0; e < inner; e++)
                    out[i + e] =
                        pw_eval(o.mode, xv[ox + e * sx[n - 1]], bv ? bv[ob + e * sb[n - 1]] : 0.0f,
                                tv ? tv[ot + e * st[n - 1]] : 0.0f);
            }
            for (int k = (int)n - 2; k >= 0; k--) {
                ox += sx[k], ob += sb[k], ot += st[k];
                if (++c[k] < dy[k]) break;
                ox -= sx[k] * dy[k], ob -= sb[k] * dy[k], ot -= st[k] * dy[k];
                c[k] = 0;
            }
        }
    }

    /* C = A B over the last two dims, batched (and broadcast) over the rest;
     * fp32, k summed in order (the nondeterministic engine reverses it on
     * every other call, as split-k atomics would reorder it) */
    void matmul(const pop &o) {
        const ptensor &ta = P.t[o.x], &tb = P.t[o.b], &tc = P.t[o.y];
        size_t n = tc.dim.size();
        int64_t M = tc.dim[n - 2], N = tc.dim[n - 1], K = ta.dim[n - 1];
        const float *av = get(o.x).data(), *bv = get(o.b).data();
        std::vector<float> &cv = val[o.y];
        cv.assign(tc.n, 0.0f);
        std::vector<int64_t> bdim(tc.dim.begin(), tc.dim.end() - 2);
        std::vector<int64_t> sa =
            bstrides(std::vector<int64_t>(ta.dim.begin(), ta.dim.end() - 2), bdim);
        std::vector<int64_t> sb =
            bstrides(std::vector<int64_t>(tb.dim.begin(), tb.dim.end() - 2), bdim);
        bool rev = engine == 0 && (g_graph_calls & 1);
        size_t nb = tc.n / (size_t)(M * N);
        std::vector<int64_t> c(bdim.size(), 0);
        for (size_t bi = 0; bi < nb; bi++) {
            int64_t oa = 0, ob = 0;
            for (size_t k = 0; k < bdim.size(); k++)
                oa += c[k] * sa[k], ob += c[k] * sb[k];
            const float *A = av + oa * M * K, *B = bv + ob * K * N;
            float *C = cv.data() + bi * (size_t)(M * N);
            for (int64_t m = 0; m < M; m++) {
                float *crow = C + m * N;
                for (int64_t kk = 0; kk < K; kk++) {
                    int64_t k = rev ? K - 1 - kk : kk;
                    float a = A[m * K + k];
                    const float *brow = B + k * N;
                    for (int64_t j = 0; j < N; j++)
                        crow[j] += a * brow[j];
                }
            }
            for (int k = (int)bdim.size() - 1; k >= 0; k--) {
                if (++c[k] < bdim[k]) break;
                c[k] = 0;
            }
        }
    }

    /* Y = reduce(X) over the dims where Y's extent is 1, in row-major order */
    void reduction(const pop &o) {
        const ptensor &tx = P.t[o.x], &ty = P.t[o.y];
        const float *xv = get(o.x).data();
        float init = o.mode == CUDNN_REDUCE_TENSOR_ADD   ? 0.0f
                     : o.mode == CUDNN_REDUCE_TENSOR_MUL ? 1.0f
                     : o.mode == CUDNN_REDUCE_TENSOR_MAX ? -INFINITY
                                                         : INFINITY;
        std::vector<float> &yv = val[o.y];
        yv.assign(ty.n, init);
        /* Y's row-major strides seen over X's dims (0 where reduced) */
        std::vector<int64_t> sy(ty.dim.size());
        int64_t acc = 1;
        for (int i = (int)ty.dim.size() - 1; i >= 0; i--) {
            sy[i] = ty.dim[i] == 1 ? 0 : acc;
            acc *= ty.dim[i];
        }
        ptensor view = tx;
        view.stride = sy;
        each_elem(view, [&](size_t l, int64_t oy) {
            float v = xv[l], &r = yv[oy];
            switch (o.mode) {
            case CUDNN_REDUCE_TENSOR_ADD:
                r += v;
                break;
            case CUDNN_REDUCE_TENSOR_MUL:
                r *= v;
                break;
            case CUDNN_REDUCE_TENSOR_MAX:
                r = v > r ? v : r;
                break;
            default:
                r = v < r ? v : r;
                break;
            }
        });
    }

    /* Y = X's elements laid out by X's strides, read back by Y's strides (a
     * view: VIEW_ONLY reshape; a transpose when only the strides differ) */
    cudnnStatus_t reshape(const char *fn, const pop &o) {
        const ptensor &tx = P.t[o.x], &ty = P.t[o.y];
        const float *xv = get(o.x).data();
        int64_t span = span_of(tx);
        std::vector<float> mem((size_t)span, 0.0f);
        std::vector<unsigned char> set((size_t)span, 0);
        bool clash = false;
        each_elem(tx, [&](size_t l, int64_t off) {
            clash |= set[off] != 0;
            set[off] = 1;
            mem[off] = xv[l];
        });
        if (clash)
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "reshape uid %lld -> %lld: X's strides give two elements one address",
                        (long long)tx.uid, (long long)ty.uid);
        std::vector<float> &yv = val[o.y];
        yv.resize(ty.n);
        bool outside = false;
        each_elem(ty, [&](size_t l, int64_t off) {
            if (off >= span || !set[off]) {
                outside = true;
                return;
            }
            yv[l] = mem[off];
        });
        if (outside)
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "reshape uid %lld -> %lld: Y's strides reach addresses X does not hold",
                        (long long)tx.uid, (long long)ty.uid);
        return CUDNN_STATUS_SUCCESS;
    }
};

cudnnStatus_t execute(const char *fn, const bdesc *plan, const bdesc *vp) {
    const program &P = *plan->prog;
    std::vector<int64_t> uids;
    attr_i64(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids);
    const battr *pa = attr(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
    std::map<int64_t, const void *> given;
    for (size_t i = 0; i < uids.size(); i++) {
        const void *p;
        memcpy(&p, pa->bytes.data() + i * sizeof p, sizeof p);
        given[uids[i]] = p;
    }
    runner r{P, plan->engine, {}, {}, {}};
    size_t nt = P.t.size();
    r.ptr.assign(nt, NULL);
    r.val.resize(nt);
    r.have.assign(nt, false);
    std::set<int64_t> used;
    for (size_t i = 0; i < nt; i++) {
        const ptensor &t = P.t[i];
        if (t.virt) continue;
        auto it = given.find(t.uid);
        if (it == given.end())
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "tensor uid %lld is not virtual and not in the variant pack",
                        (long long)t.uid);
        used.insert(t.uid);
        const void *p = it->second;
        if (!p)
            return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, fn,
                        "the variant pack's pointer for uid %lld is NULL", (long long)t.uid);
        if (!t.byval) {
            size_t bytes = (size_t)span_of(t) * mem_size(t.dt);
            if (!device_range(p, bytes))
                return fail(CUDNN_STATUS_BAD_PARAM, fn,
                            "uid %lld (%p, %zu bytes from its dims and strides) is not device "
                            "memory over its whole extent",
                            (long long)t.uid, p, bytes);
            if ((uintptr_t)p % (uintptr_t)t.align)
                return fail(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, fn,
                            "uid %lld (%p) is not aligned to its declared %lld bytes",
                            (long long)t.uid, p, (long long)t.align);
        }
        r.ptr[i] = p;
    }
    for (int64_t u : uids)
        if (!used.count(u))
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "the variant pack names uid %lld, which is no non-virtual tensor of the "
                        "graph",
                        (long long)u);
    /* the workspace: what the plan asked for, device memory, apart from
     * every tensor; then overwritten, as the engines' kernels would */
    void *ws = NULL;
    memcpy(&ws, attr(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE)->bytes.data(), sizeof ws);
    size_t ws_bytes = (size_t)plan->workspace;
    if (ws_bytes) {
        if (!ws)
            return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, fn,
                        "the variant pack's workspace is NULL; the plan needs %zu bytes",
                        ws_bytes);
        if (!device_range(ws, ws_bytes))
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "the workspace (%p) is not device memory over the %zu bytes the plan "
                        "needs",
                        ws, ws_bytes);
        for (size_t i = 0; i < nt; i++)
            if (r.ptr[i] && !P.t[i].byval &&
                overlap(ws, ws_bytes, r.ptr[i], (size_t)span_of(P.t[i]) * mem_size(P.t[i].dt)))
                return fail(CUDNN_STATUS_BAD_PARAM, fn, "the workspace overlaps uid %lld",
                            (long long)P.t[i].uid);
        memset(ws, 0xa5, ws_bytes);
    }
    for (size_t i = 0; i < P.ops.size(); i++) {
        const pop &o = P.ops[i];
        switch (o.kind) {
        case P_POINTWISE:
            r.pointwise(o);
            break;
        case P_MATMUL:
            r.matmul(o);
            break;
        case P_REDUCTION:
            r.reduction(o);
            break;
        default: {
            cudnnStatus_t s = r.reshape(fn, o);
            if (s != CUDNN_STATUS_SUCCESS) return s;
        }
        }
        r.put(o.y);
        for (int in : {o.x, o.b, o.t})
            if (in >= 0 && P.last_use[in] == (int)i) std::vector<float>().swap(r.val[in]);
    }
    g_graph_calls++;
    return CUDNN_STATUS_SUCCESS;
}

/* The operation graph: a live handle, at least one finalized operation,
 * every tensor id naming one tensor; then compiled for the interpreter. */
cudnnStatus_t finalize_graph(const char *fn, bdesc *d) {
    const battr *h = attr(d, CUDNN_ATTR_OPERATIONGRAPH_HANDLE);
    void *hp = NULL;
    if (h && h->count >= 1) memcpy(&hp, h->bytes.data(), sizeof hp);
    if (!h || !reg_has(K_HANDLE, hp))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "operation graph: no live HANDLE");
    const battr *ops = attr(d, CUDNN_ATTR_OPERATIONGRAPH_OPS);
    if (!ops || ops->count < 1) return fail(CUDNN_STATUS_BAD_PARAM, fn, "operation graph: no OPS");
    std::map<int64_t, const bdesc *> uids;
    for (int64_t i = 0; i < ops->count; i++) {
        const bdesc *op = attr_desc(d, CUDNN_ATTR_OPERATIONGRAPH_OPS, (int)i);
        if (!op || !is_operation(op->type))
            return fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE, fn,
                        "operation graph: op %lld is not an operation descriptor", (long long)i);
        for (const auto &kv : op->attrs) {
            if (kv.second.type != CUDNN_TYPE_BACKEND_DESCRIPTOR) continue;
            for (int64_t j = 0; j < kv.second.count; j++) {
                const bdesc *t = attr_desc(op, kv.first, (int)j);
                if (!t || t->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR) continue;
                std::vector<int64_t> uid;
                attr_i64(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, uid);
                auto it = uids.find(uid[0]);
                if (it != uids.end() && it->second != t)
                    return fail(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES, fn,
                                "operation graph: two tensors share unique id %lld",
                                (long long)uid[0]);
                uids[uid[0]] = t;
            }
        }
    }
    return compile(fn, d);
}

/* ---- heuristics, engines, plans, variant packs ----------------------------------------------- */

/* The engines every compiled graph offers, in the heuristics' order:
 * engine 0 sums its matmuls in an order that changes from call to call
 * (NONDETERMINISTIC, as split-k atomics; ranked first so that a caller's
 * filtering really runs), engine 1 is deterministic. */
const int N_ENGINES = 2;

void set_attr(bdesc *d, int name, cudnnBackendAttributeType_t type, int64_t count,
              const void *elems) {
    battr a;
    a.type = type;
    a.count = count;
    const unsigned char *b = (const unsigned char *)elems;
    a.bytes.assign(b, b + (size_t)count * attr_elem_size(type));
    d->attrs[name] = a;
}

cudnnStatus_t finalize_heur(const char *fn, bdesc *d) {
    bdesc *g = attr_desc(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
    if (!g || !g->prog)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "heuristics: no finalized OPERATION_GRAPH");
    int mode = attr_enum(d, CUDNN_ATTR_ENGINEHEUR_MODE, -1);
    if (mode != CUDNN_HEUR_MODE_INSTANT && mode != CUDNN_HEUR_MODE_B &&
        mode != CUDNN_HEUR_MODE_FALLBACK && mode != CUDNN_HEUR_MODE_A)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "heuristics: MODE %d is not a heuristics mode",
                    mode);
    d->prog = g->prog;
    return CUDNN_STATUS_SUCCESS;
}

/* The attributes the library fills into descriptors the caller created:
 * ENGINEHEUR_RESULTS (engine configs), ENGINECFG_ENGINE (an engine). */
cudnnStatus_t get_filled(const char *fn, bdesc *d, int name, cudnnBackendAttributeType_t type,
                         int64_t req, int64_t *count, void *elems) {
    if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR)
        return fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, fn,
                    "attribute %d has type CUDNN_TYPE_BACKEND_DESCRIPTOR, not %d", name, (int)type);
    bool heur = name == CUDNN_ATTR_ENGINEHEUR_RESULTS;
    int64_t have = heur ? N_ENGINES : 1;
    cudnnBackendDescriptorType_t want =
        heur ? CUDNN_BACKEND_ENGINECFG_DESCRIPTOR : CUDNN_BACKEND_ENGINE_DESCRIPTOR;
    int64_t n = req < have ? req : have;
    for (int64_t i = 0; i < n; i++) {
        bdesc *o = bd(((void **)elems)[i]);
        if (!o || o->type != want)
            return fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE, fn,
                        "attribute %d: element %lld is not a live descriptor of type %d (create "
                        "them before asking)",
                        name, (long long)i, (int)want);
        if (o->finalized)
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "attribute %d: element %lld is already finalized", name, (long long)i);
    }
    for (int64_t i = 0; i < n; i++) {
        bdesc *o = bd(((void **)elems)[i]);
        o->attrs.clear();
        o->prog = d->prog;
        o->engine = heur ? i : d->engine;
        if (heur) {
            set_attr(o, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, NULL);
        } else {
            cudnnBackendNumericalNote_t nd = CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
            set_attr(o, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &o->engine);
            set_attr(o, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                     o->engine == 0 ? 1 : 0, &nd);
            set_attr(o, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, 0, NULL);
            set_attr(o, CUDNN_ATTR_ENGINE_KNOB_INFO, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, NULL);
        }
        o->finalized = true;
    }
    if (count) *count = have;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_plan(const char *fn, bdesc *d) {
    const battr *h = attr(d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE);
    void *hp = NULL;
    if (h && h->count >= 1) memcpy(&hp, h->bytes.data(), sizeof hp);
    if (!h || !reg_has(K_HANDLE, hp))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "execution plan: no live HANDLE");
    bdesc *cfg = attr_desc(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
    if (!cfg || !cfg->finalized || !cfg->prog)
        return fail(CUDNN_STATUS_BAD_PARAM, fn,
                    "execution plan: ENGINE_CONFIG is not an engine config from the heuristics");
    d->prog = cfg->prog;
    d->engine = cfg->engine;
    /* The interpreter keeps its intermediates in host memory; the plan asks
     * for what an engine staging its largest intermediate in fp32 would,
     * so that the caller's workspace path runs (execute checks it and
     * writes over it). */
    int64_t ws = 0;
    for (const ptensor &t : d->prog->t)
        if (t.virt && (int64_t)t.n * 4 > ws) ws = (int64_t)t.n * 4;
    d->workspace = ws;
    set_attr(d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &ws);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_variant_pack(const char *fn, bdesc *d) {
    const battr *u = attr(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS),
                *p = attr(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS),
                *w = attr(d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
    if (!u || !p || !w)
        return fail(CUDNN_STATUS_BAD_PARAM, fn,
                    "variant pack: UNIQUE_IDS, DATA_POINTERS and WORKSPACE are required");
    if (u->count != p->count)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "variant pack: %lld unique ids, %lld pointers",
                    (long long)u->count, (long long)p->count);
    if (w->count != 1)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "variant pack: WORKSPACE takes one pointer");
    std::vector<int64_t> ids;
    attr_i64(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, ids);
    std::set<int64_t> seen;
    for (int64_t id : ids)
        if (!seen.insert(id).second)
            return fail(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES, fn,
                        "variant pack: unique id %lld given twice", (long long)id);
    return CUDNN_STATUS_SUCCESS;
}

} // namespace

extern "C" {

cudnnStatus_t CUDNNWINAPI cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t descriptorType,
                                                       cudnnBackendDescriptor_t *descriptor) {
    const char *fn = "cudnnBackendCreateDescriptor";
    if (!descriptor) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, fn, "descriptor is NULL");
    if ((int)descriptorType < 0 ||
        (int)descriptorType > (int)CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown descriptor type %d", (int)descriptorType);
    bdesc *d = new bdesc();
    d->type = descriptorType;
    d->finalized = false;
    reg_add(K_BACKEND, d);
    *descriptor = d;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
    if (!reg_del(K_BACKEND, descriptor))
        return fail(CUDNN_STATUS_BAD_PARAM, "cudnnBackendDestroyDescriptor",
                    "not a live backend descriptor: %p", descriptor);
    delete (bdesc *)descriptor;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                                   cudnnBackendAttributeName_t attributeName,
                                                   cudnnBackendAttributeType_t attributeType,
                                                   int64_t elementCount,
                                                   const void *arrayOfElements) {
    const char *fn = "cudnnBackendSetAttribute";
    bdesc *d = bd(descriptor);
    if (!d)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live backend descriptor: %p", descriptor);
    if (d->finalized)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "attribute %d: the descriptor is already finalized",
                    (int)attributeName);
    if (elementCount < 0 || (elementCount > 0 && !arrayOfElements))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "attribute %d: %lld elements at %p",
                    (int)attributeName, (long long)elementCount, arrayOfElements);
    const attr_spec *sp = spec_of(attributeName);
    if (!sp)
        return fail(CUDNN_STATUS_NOT_SUPPORTED, fn,
                    "attribute %d (on descriptor type %d) is not emulated by the graph stand-in",
                    (int)attributeName, (int)d->type);
    {
        if (sp->owner != d->type)
            return fail(CUDNN_STATUS_BAD_PARAM, fn,
                        "attribute %d belongs to descriptor type %d, not %d", (int)attributeName,
                        (int)sp->owner, (int)d->type);
        if (sp->type != attributeType)
            return fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, fn,
                        "attribute %d has type %d, not %d", (int)attributeName, (int)sp->type,
                        (int)attributeType);
    }
    bool many = attributeName == CUDNN_ATTR_TENSOR_DIMENSIONS ||
                attributeName == CUDNN_ATTR_TENSOR_STRIDES ||
                attributeName == CUDNN_ATTR_OPERATIONGRAPH_OPS ||
                attributeName == CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS ||
                attributeName == CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS;
    if (!many && elementCount != 1)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "attribute %d takes one element, not %lld",
                    (int)attributeName, (long long)elementCount);
    if (attributeType == CUDNN_TYPE_BACKEND_DESCRIPTOR)
        for (int64_t i = 0; i < elementCount; i++) {
            const bdesc *r = bd(((void *const *)arrayOfElements)[i]);
            if (!r)
                return fail(CUDNN_STATUS_BAD_PARAM, fn,
                            "attribute %d: element %lld is not a live backend descriptor",
                            (int)attributeName, (long long)i);
            if (sp && sp->takes >= 0 && (int)r->type != sp->takes)
                return fail(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE, fn,
                            "attribute %d takes descriptor type %d, got %d", (int)attributeName,
                            sp->takes, (int)r->type);
            /* descriptors referenced by an operation or graph must be finalized;
             * engine configs and engines are filled in by the library */
            if (!r->finalized && d->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)
                return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, fn,
                            "attribute %d: element %lld is not finalized", (int)attributeName,
                            (long long)i);
        }
    if (attributeType == CUDNN_TYPE_HANDLE && elementCount >= 1 &&
        !reg_has(K_HANDLE, *(void *const *)arrayOfElements))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "attribute %d: not a live cuDNN handle",
                    (int)attributeName);
    battr a;
    a.type = attributeType;
    a.count = elementCount;
    size_t bytes = (size_t)elementCount * attr_elem_size(attributeType);
    a.bytes.assign((const unsigned char *)arrayOfElements,
                   (const unsigned char *)arrayOfElements + bytes);
    d->attrs[attributeName] = a;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                                   cudnnBackendAttributeName_t attributeName,
                                                   cudnnBackendAttributeType_t attributeType,
                                                   int64_t requestedElementCount,
                                                   int64_t *elementCount, void *arrayOfElements) {
    const char *fn = "cudnnBackendGetAttribute";
    bdesc *d = bd(descriptor);
    if (!d)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live backend descriptor: %p", descriptor);
    if (!d->finalized)
        return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, fn,
                    "attribute %d: the descriptor is not finalized", (int)attributeName);
    if (requestedElementCount < 0 || (requestedElementCount > 0 && !arrayOfElements))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "attribute %d: bad request", (int)attributeName);
    if ((d->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR &&
         attributeName == CUDNN_ATTR_ENGINEHEUR_RESULTS) ||
        (d->type == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR &&
         attributeName == CUDNN_ATTR_ENGINECFG_ENGINE))
        return get_filled(fn, d, attributeName, attributeType, requestedElementCount, elementCount,
                          arrayOfElements);
    const battr *a = attr(d, attributeName);
    if (!a)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "attribute %d is not available here",
                    (int)attributeName);
    if (a->type != attributeType)
        return fail(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE, fn, "attribute %d has type %d, not %d",
                    (int)attributeName, (int)a->type, (int)attributeType);
    if (elementCount) *elementCount = a->count;
    int64_t n = requestedElementCount < a->count ? requestedElementCount : a->count;
    if (n > 0) memcpy(arrayOfElements, a->bytes.data(), (size_t)n * attr_elem_size(a->type));
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
    const char *fn = "cudnnBackendFinalize";
    bdesc *d = bd(descriptor);
    if (!d)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live backend descriptor: %p", descriptor);
    if (d->finalized)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "descriptor type %d is already finalized",
                    (int)d->type);
    cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
    switch (d->type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
        s = finalize_tensor(fn, d);
        break;
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
        if (!attr(d, CUDNN_ATTR_POINTWISE_MODE) || !attr(d, CUDNN_ATTR_POINTWISE_MATH_PREC))
            s = fail(CUDNN_STATUS_BAD_PARAM, fn, "pointwise: MODE and MATH_PREC are required");
        break;
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
        if (!attr(d, CUDNN_ATTR_MATMUL_COMP_TYPE))
            s = fail(CUDNN_STATUS_BAD_PARAM, fn, "matmul: COMP_TYPE is required");
        break;
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
        if (!attr(d, CUDNN_ATTR_REDUCTION_OPERATOR) || !attr(d, CUDNN_ATTR_REDUCTION_COMP_TYPE))
            s = fail(CUDNN_STATUS_BAD_PARAM, fn, "reduction: OPERATOR and COMP_TYPE are required");
        break;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
        s = finalize_graph(fn, d);
        break;
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
        s = finalize_heur(fn, d);
        break;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
        s = finalize_plan(fn, d);
        break;
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
        s = finalize_variant_pack(fn, d);
        break;
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
        s = fail(CUDNN_STATUS_NOT_SUPPORTED, fn,
                 "the graph stand-in's engines and engine configs come from the heuristics "
                 "(CUDNN_ATTR_ENGINEHEUR_RESULTS), they are not built by hand (descriptor type %d)",
                 (int)d->type);
        break;
    default:
        if (is_operation(d->type)) s = finalize_op(fn, d);
        break;
    }
    if (s == CUDNN_STATUS_SUCCESS) d->finalized = true;
    return s;
}

cudnnStatus_t CUDNNWINAPI cudnnBackendExecute(cudnnHandle_t handle,
                                              cudnnBackendDescriptor_t executionPlan,
                                              cudnnBackendDescriptor_t variantPack) {
    const char *fn = "cudnnBackendExecute";
    if (!reg_has(K_HANDLE, handle))
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not a live handle: %p", (void *)handle);
    bdesc *p = bd(executionPlan), *v = bd(variantPack);
    if (!p || p->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !v ||
        v->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
        return fail(CUDNN_STATUS_BAD_PARAM, fn, "not an execution plan and a variant pack");
    if (!p->finalized || !p->prog)
        return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, fn,
                    "the execution plan is not finalized");
    if (!v->finalized)
        return fail(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, fn, "the variant pack is not finalized");
    return execute(fn, p, v);
}

} // extern "C"
