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
 * Bound: memory bandwidth, one read and one write of the buffer.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/dtype.h"
#include "kernels/registry.h"

template <typename T>
__global__ void divide_kernel(T *x, size_t n, T d) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = x[i] / d;
}

__global__ void divide_bf16_kernel(__nv_bfloat16 *x, size_t n, float d) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = __float2bfloat16_rn(__bfloat162float(x[i]) / d);
}

__global__ void divide_fp16_kernel(__half *x, size_t n, float d) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = __float2half_rn(__half2float(x[i]) / d);
}

/* Returns the cudaError_t of the launch (0: launched). */
extern "C" int gt_cuda_comm_divide(void *buf, size_t n, int dtype, int ranks, void *stream) {
    if (n == 0 || ranks <= 1) return (int)cudaSuccess;
    cudaStream_t s = (cudaStream_t)stream;
    const unsigned threads = 256;
    size_t want = (n + threads - 1) / threads;
    unsigned blocks = want > 4096 ? 4096u : (unsigned)want; /* grid-stride beyond */
    switch ((gt_dtype)dtype) {
    case GT_DTYPE_FP32:
        divide_kernel<float><<<blocks, threads, 0, s>>>((float *)buf, n, (float)ranks);
        break;
    case GT_DTYPE_FP64:
        divide_kernel<double><<<blocks, threads, 0, s>>>((double *)buf, n, (double)ranks);
        break;
    case GT_DTYPE_BF16:
        divide_bf16_kernel<<<blocks, threads, 0, s>>>((__nv_bfloat16 *)buf, n, (float)ranks);
        break;
    case GT_DTYPE_FP16:
        divide_fp16_kernel<<<blocks, threads, 0, s>>>((__half *)buf, n, (float)ranks);
        break;
    case GT_DTYPE_INT32:
        divide_kernel<int32_t><<<blocks, threads, 0, s>>>((int32_t *)buf, n, (int32_t)ranks);
        break;
    case GT_DTYPE_INT64:
        divide_kernel<int64_t><<<blocks, threads, 0, s>>>((int64_t *)buf, n, (int64_t)ranks);
        break;
    default: return (int)cudaErrorInvalidValue;
    }
    return (int)cudaGetLastError();
}

extern "C" gt_comm_divide_fn gt_backend_cuda_comm_divide(void) { return gt_cuda_comm_divide; }
