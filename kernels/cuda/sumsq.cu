/* Sum of squares in fp64 (the global gradient norm), synchronous.
 *
 * *out_host = sum x[i]^2, each square and the sums in fp64.
 * Pass 1: a FIXED grid of SUMSQ_GRID blocks x SUMSQ_BLOCK threads, whatever
 *   the device: thread g sums i = g, g + G, g + 2G, ... in order, the block
 *   reduces in a fixed tree (xor butterflies in a warp, then the warps'
 *   results in order) into partial[block].
 * Pass 2: one block sums the SUMSQ_GRID partials the same way.
 * The result is copied to the host and the stream waited for.
 * Variants: x fp32, bf16 or fp16.
 * Bound: memory bandwidth (one read of x); SUMSQ_GRID = 1024 blocks of 256
 *   threads keeps an H100's 132 SMs busy with 8 resident blocks each.
 * Determinism: the order of every addition depends on n only.
 */
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"

#define SUMSQ_GRID 1024
#define SUMSQ_BLOCK 256

/* Block-wide fp64 sum in a fixed order; blockDim.x == SUMSQ_BLOCK. */
__device__ double sumsq_block_sum(double v) {
    __shared__ double warp_sums[SUMSQ_BLOCK / 32];
    v = gt_warp_sum_d(v);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    double s = 0.0;
    if (warp == 0) {
        s = lane < SUMSQ_BLOCK / 32 ? warp_sums[lane] : 0.0;
        s = gt_warp_sum_d(s);
    }
    return s; /* valid in warp 0 */
}

template <typename T>
__global__ void sumsq_partial_kernel(double *partial, const T *__restrict__ x, size_t n) {
    double acc = 0.0;
    for (size_t i = (size_t)blockIdx.x * SUMSQ_BLOCK + threadIdx.x; i < n;
         i += (size_t)SUMSQ_GRID * SUMSQ_BLOCK) {
        double xi = (double)gt_ld(x, i);
        acc += xi * xi;
    }
    double s = sumsq_block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void sumsq_final_kernel(double *out, const double *__restrict__ partial) {
    double acc = 0.0;
    for (int i = threadIdx.x; i < SUMSQ_GRID; i += SUMSQ_BLOCK)
        acc += partial[i];
    double s = sumsq_block_sum(acc);
    if (threadIdx.x == 0) *out = s;
}

template <typename T>
static gt_status sumsq_launch(gt_cuda_impl *im, double *scratch, const void *x, size_t n) {
    sumsq_partial_kernel<T>
        <<<SUMSQ_GRID, SUMSQ_BLOCK, 0, im->stream>>>(scratch + 1, (const T *)x, n);
    GT_CUDA_LAUNCHED("sumsq_partial_kernel");
    sumsq_final_kernel<<<1, SUMSQ_BLOCK, 0, im->stream>>>(scratch, scratch + 1);
    GT_CUDA_LAUNCHED("sumsq_final_kernel");
    return GT_OK;
}

extern "C" gt_status gt_cuda_sumsq(const gt_kctx *k, const void *x, size_t n, double *out_host) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "sumsq", &im));
    if (n == 0) {
        *out_host = 0.0;
        return GT_OK;
    }
    void *scratch = NULL;
    GT_TRY(gt_cuda_scratch(k, (SUMSQ_GRID + 1) * sizeof(double), &scratch));
    double *d = (double *)scratch;
    gt_status s = GT_CUDA_DISPATCH(k->dt, sumsq_launch, im, d, x, n);
    if (s == GT_OK) {
        cudaError_t e =
            cudaMemcpyAsync(out_host, d, sizeof(double), cudaMemcpyDeviceToHost, im->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(im->stream);
        if (e != cudaSuccess)
            s = GT_ERR(GT_ERR_DEVICE, "sumsq: copying the result to the host failed: %s (%s)",
                       cudaGetErrorString(e), cudaGetErrorName(e));
    }
    gt_cuda_scratch_free(k, scratch);
    return s;
}
