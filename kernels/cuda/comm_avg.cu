/* The second half of GT_REDOP_AVG for the nccl communicator (engine/comm_nccl.c):
 * x[i] = x[i] / ranks, element-wise, in place, on the communicator's stream.
 * The engine gets the launcher from the registry (gt_backend_cuda_comm_divide,
 * gt_kernels_init: kernels/registry.h), never by name.
 *
 * engine/comm.h defines avg as the sum followed by one correctly rounded
 * division per element, the same bits as the mpi backend: fp32 and fp64
 * divide in their own type (nvcc's default -prec-div=true is IEEE division;
 * never build this with --use_fast_math), bf16 and fp16 divide in fp32 and
 * round to nearest even once, integers use C division (truncation toward
 * zero). NCCL's own ncclAvg multiplies every contribution by 1/n before
 * summing, which rounds differently whenever n is not a power of two.
 *
 * Bound: memory bandwidth, one read and one write of the buffer (16-byte
 * accesses where it is aligned, vec.cuh).
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/dtype.h"
#include "kernels/cuda/vec.cuh"
#include "kernels/registry.h"

/* x / d: fp32, fp64 and the integers in their own type; bf16 and fp16 in fp32. */
template <typename T, typename Dv> __device__ __forceinline__ T divide_one(T x, Dv d) {
    return x / d;
}
template <> __device__ __forceinline__ __nv_bfloat16 divide_one(__nv_bfloat16 x, float d) {
    return __float2bfloat16_rn(__bfloat162float(x) / d);
}
template <> __device__ __forceinline__ __half divide_one(__half x, float d) {
    return __float2half_rn(__half2float(x) / d);
}

/* 16 bytes per access where x is 16-byte aligned (vec.cuh: gt_vec_split),
 * one element at a time before the first aligned one and after the last
 * whole vector. */
template <typename T, typename Dv>
__global__ void divide_kernel(T *x, gt_vec_split sp, Dv d) {
    const int VN = gt_vec_width<T>::value;
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t v = tid; v < sp.nvec; v += stride) {
        T y[VN];
        gt_ldv_raw<VN>(x + sp.head + v * VN, y);
#pragma unroll
        for (int k = 0; k < VN; k++)
            y[k] = divide_one<T, Dv>(y[k], d);
        gt_stv_raw<VN>(x + sp.head + v * VN, y);
    }
    for (size_t r = tid; r < sp.rest; r += stride) {
        size_t i = gt_vec_rest_index(sp, r);
        x[i] = divide_one<T, Dv>(x[i], d);
    }
}

template <typename T, typename Dv>
static void divide_launch(void *buf, size_t n, Dv d, cudaStream_t s) {
    const void *p[1] = {buf};
    const size_t sz[1] = {sizeof(T)};
    gt_vec_split sp = gt_vec_split_make(n, gt_vec_width<T>::value, 1, p, sz);
    const unsigned threads = 256;
    size_t want = (gt_vec_split_work(sp) + threads - 1) / threads;
    unsigned blocks = want > 4096 ? 4096u : want == 0 ? 1u : (unsigned)want; /* grid-stride beyond */
    divide_kernel<T, Dv><<<blocks, threads, 0, s>>>((T *)buf, sp, d);
}

/* Returns the cudaError_t of the launch (0: launched). */
extern "C" int gt_cuda_comm_divide(void *buf, size_t n, int dtype, int ranks, void *stream) {
    if (n == 0 || ranks <= 1) return (int)cudaSuccess;
    cudaStream_t s = (cudaStream_t)stream;
    switch ((gt_dtype)dtype) {
    case GT_DTYPE_FP32:
        divide_launch<float>(buf, n, (float)ranks, s);
        break;
    case GT_DTYPE_FP64:
        divide_launch<double>(buf, n, (double)ranks, s);
        break;
    case GT_DTYPE_BF16:
        divide_launch<__nv_bfloat16>(buf, n, (float)ranks, s);
        break;
    case GT_DTYPE_FP16:
        divide_launch<__half>(buf, n, (float)ranks, s);
        break;
    case GT_DTYPE_INT32:
        divide_launch<int32_t>(buf, n, (int32_t)ranks, s);
        break;
    case GT_DTYPE_INT64:
        divide_launch<int64_t>(buf, n, (int64_t)ranks, s);
        break;
    default: return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" gt_comm_divide_fn gt_backend_cuda_comm_divide(void) { return gt_cuda_comm_divide; }
