/* The CUDA emulator's stand-in for cuDNN's legacy convolution API
 * (cudnn_emu.cc says what the stand-in is; conv.cu calls it).
 *
 * With cuDNN's documented semantics:
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
 *   Injection (read at every call): GT_EMU_CUDNN_CONV_HEURISTIC, a comma
 *      list of DIR=MODE with DIR fwd, bwd_data, bwd_filter or all:
 *      MODE nodet: the heuristic of DIR reports every deterministic
 *      algorithm NOT_SUPPORTED, so it offers only non-deterministic ones
 *      (bwd) or none that succeeds (fwd), as cuDNN's heuristic may for
 *      some 16-bit backward-filter shapes; the algorithms still run when
 *      asked by name (workspace query, call). MODE unusable: as nodet, and
 *      the workspace query and the call refuse every deterministic
 *      algorithm of DIR too (nothing deterministic runs the shape). A
 *      value not understood stops the process.
 *   Refused as unsupported (NOT_SUPPORTED): 3-D convolutions, NCHW_VECT_C,
 *      data types other than fp32/fp16/bf16, fp16 compute (TRUE_HALF).
 *
 * Single-threaded, synchronous (every stream is the emulator's null stream). */
#include "ci/cuda_emu/cudnn_emu.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

using namespace gt_cudnn_emu;

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


extern "C" {

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

/* GT_EMU_CUDNN_CONV_HEURISTIC (the top): the mode of direction `dir`. */
enum { INJ_NONE = 0, INJ_NODET, INJ_UNUSABLE };
int injected(int dir) {
    static const char *const dname[3] = {"fwd", "bwd_data", "bwd_filter"};
    const char *v = getenv("GT_EMU_CUDNN_CONV_HEURISTIC");
    int mode = INJ_NONE;
    for (const char *p = v; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = (const char *)memchr(p, '=', len);
        size_t dl = eq ? (size_t)(eq - p) : 0, ml = eq ? len - dl - 1 : 0;
        int d = -2, m = -1;
        for (int i = 0; i < 3 && eq; i++)
            if (dl == strlen(dname[i]) && strncmp(p, dname[i], dl) == 0) d = i;
        if (eq && dl == 3 && strncmp(p, "all", 3) == 0) d = -1;
        if (eq && ml == 5 && strncmp(eq + 1, "nodet", 5) == 0) m = INJ_NODET;
        if (eq && ml == 8 && strncmp(eq + 1, "unusable", 8) == 0) m = INJ_UNUSABLE;
        if (d == -2 || m < 0) {
            fprintf(stderr,
                    "cuDNN stand-in: GT_EMU_CUDNN_CONV_HEURISTIC=%s: '%.*s' is not DIR=MODE with "
                    "DIR fwd, bwd_data, bwd_filter or all and MODE nodet or unusable\n",
                    v, (int)len, p);
            abort();
        }
        if ((d == -1 || d == dir) && m > mode) mode = m;
        p = end ? end + 1 : p + len;
    }
    return mode;
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
    if (!nondeterministic(dir, a) && injected(dir) == INJ_UNUSABLE) {
        *why = "refused by GT_EMU_CUDNN_CONV_HEURISTIC (unusable)";
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
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
    bool nodet = injected(dir) != INJ_NONE; /* no deterministic candidate succeeds */
    for (int pass = 0; pass < 2; pass++) {
        int lim = pass == 0 ? n : algo_count[dir];
        for (int i = 0; i < lim; i++) {
            int a = pass == 0 ? order[i] : i;
            if (listed[a]) continue;
            const char *why;
            cudnnStatus_t st = algo_support(dir, a, g, &why);
            if (nodet && !nondeterministic(dir, a)) st = CUDNN_STATUS_NOT_SUPPORTED;
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
