/* Residual connection, forward and backward (elementwise).
 *
 * fwd: out(n) = a + b (out may alias a or b: no __restrict__).
 * bwd: da(n) += dout, db(n) += dout.
 * Variants: fp32, bf16 and fp16 storage, fp32 addition rounded once.
 * Bound: memory bandwidth (fwd 2 reads + 1 write, bwd 3 reads + 2 writes).
 * Determinism: one thread per element, no reduction.
 */
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"

template <typename T>
__global__ void residual_fwd_kernel(T *out, const T *a, const T *b, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        gt_st(out, i, gt_ld(a, i) + gt_ld(b, i));
}

template <typename T> __global__ void residual_bwd_kernel(T *da, T *db, const T *dout, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float d = gt_ld(dout, i);
        gt_st(da, i, gt_ld(da, i) + d);
        gt_st(db, i, gt_ld(db, i) + d);
    }
}

template <typename T>
static gt_status residual_fwd_launch(gt_cuda_impl *im, void *out, const void *a, const void *b,
                                     size_t n) {
    residual_fwd_kernel<T>
        <<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>((T *)out, (const T *)a, (const T *)b, n);
    GT_CUDA_LAUNCHED("residual_fwd_kernel");
    return GT_OK;
}

template <typename T>
static gt_status residual_bwd_launch(gt_cuda_impl *im, void *da, void *db, const void *dout,
                                     size_t n) {
    residual_bwd_kernel<T>
        <<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>((T *)da, (T *)db, (const T *)dout, n);
    GT_CUDA_LAUNCHED("residual_bwd_kernel");
    return GT_OK;
}

extern "C" gt_status gt_cuda_residual_fwd(const gt_kctx *k, void *out, const void *a, const void *b,
                                          size_t n) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "residual_fwd", &im));
    if (n == 0) return GT_OK;
    return GT_CUDA_DISPATCH(k->dt, residual_fwd_launch, im, out, a, b, n);
}

extern "C" gt_status gt_cuda_residual_bwd(const gt_kctx *k, void *da, void *db, const void *dout,
                                          size_t n) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "residual_bwd", &im));
    if (n == 0) return GT_OK;
    return GT_CUDA_DISPATCH(k->dt, residual_bwd_launch, im, da, db, dout, n);
}
