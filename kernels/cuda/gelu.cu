/* GELU, tanh approximation, forward and backward (elementwise).
 *
 * fwd: out(n) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 * bwd: dinp(n) += gelu'(inp) * dout, with sech^2 = 1 / cosh^2 (accurate
 *      for small arguments, 0 where cosh overflows).
 * Variants: fp32, bf16 and fp16 storage, fp32 arithmetic (tanhf, coshf).
 * Bound: memory bandwidth (fwd 1 read + 1 write, bwd 3 reads + 1 write).
 * Determinism: one thread per element, no reduction.
 */
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"

/* gt_gelu, gt_gelu_grad: common.cuh */
template <typename T> __global__ void gelu_fwd_kernel(T *out, const T *inp, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        gt_st(out, i, gt_gelu(gt_ld(inp, i)));
}

template <typename T>
__global__ void gelu_bwd_kernel(T *dinp, const T *inp, const T *dout, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        gt_st(dinp, i, gt_ld(dinp, i) + gt_gelu_grad(gt_ld(inp, i)) * gt_ld(dout, i));
}

template <typename T>
static gt_status gelu_fwd_launch(gt_cuda_impl *im, void *out, const void *inp, size_t n) {
    gelu_fwd_kernel<T>
        <<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>((T *)out, (const T *)inp, n);
    GT_CUDA_LAUNCHED("gelu_fwd_kernel");
    return GT_OK;
}

template <typename T>
static gt_status gelu_bwd_launch(gt_cuda_impl *im, void *dinp, const void *inp, const void *dout,
                                 size_t n) {
    gelu_bwd_kernel<T><<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>((T *)dinp, (const T *)inp,
                                                                        (const T *)dout, n);
    GT_CUDA_LAUNCHED("gelu_bwd_kernel");
    return GT_OK;
}

extern "C" gt_status gt_cuda_gelu_fwd(const gt_kctx *k, void *out, const void *inp, size_t n) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "gelu_fwd", &im));
    if (n == 0) return GT_OK;
    return GT_CUDA_DISPATCH(k->dt, gelu_fwd_launch, im, out, inp, n);
}

extern "C" gt_status gt_cuda_gelu_bwd(const gt_kctx *k, void *dinp, const void *inp,
                                      const void *dout, size_t n) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "gelu_bwd", &im));
    if (n == 0) return GT_OK;
    return GT_CUDA_DISPATCH(k->dt, gelu_bwd_launch, im, dinp, inp, dout, n);
}
