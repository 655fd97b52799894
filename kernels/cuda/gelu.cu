/* GELU, tanh approximation, forward and backward (elementwise).
 *
 * fwd: out(n) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 * bwd: dinp(n) += gelu'(inp) * dout, with sech^2 = 1 / cosh^2 (accurate
 *      for small arguments, 0 where cosh overflows).
 * Variants: fp32, bf16 and fp16 storage, fp32 arithmetic (tanhf, coshf).
 * Bound: memory bandwidth (fwd 1 read + 1 write, bwd 3 reads + 1 write).
 * Determinism: one thread per element, no reduction.
 * Access: 16-byte vectors where the arrays share an aligned start (vec.cuh).
 */
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/vec.cuh"

/* gt_gelu, gt_gelu_grad: common.cuh. VN elements per access where the
 * arrays allow (vec.cuh: gt_vec_split), one at a time elsewhere. */
template <typename T, int VN>
__global__ void gelu_fwd_kernel(T *out, const T *inp, gt_vec_split sp) {
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t v = tid; v < sp.nvec; v += stride) {
        size_t i = sp.head + v * VN;
        float x[VN], y[VN];
        gt_ldv<VN>(inp, i, x);
#pragma unroll
        for (int k = 0; k < VN; k++)
            y[k] = gt_gelu(x[k]);
        gt_stv<VN>(out, i, y);
    }
    for (size_t r = tid; r < sp.rest; r += stride) {
        size_t i = gt_vec_rest_index(sp, r);
        gt_st(out, i, gt_gelu(gt_ld(inp, i)));
    }
}

template <typename T, int VN>
__global__ void gelu_bwd_kernel(T *dinp, const T *inp, const T *dout, gt_vec_split sp) {
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t v = tid; v < sp.nvec; v += stride) {
        size_t i = sp.head + v * VN;
        float d[VN], x[VN], dy[VN];
        gt_ldv<VN>(dinp, i, d);
        gt_ldv<VN>(inp, i, x);
        gt_ldv<VN>(dout, i, dy);
#pragma unroll
        for (int k = 0; k < VN; k++)
            d[k] = d[k] + gt_gelu_grad(x[k]) * dy[k];
        gt_stv<VN>(dinp, i, d);
    }
    for (size_t r = tid; r < sp.rest; r += stride) {
        size_t i = gt_vec_rest_index(sp, r);
        gt_st(dinp, i, gt_ld(dinp, i) + gt_gelu_grad(gt_ld(inp, i)) * gt_ld(dout, i));
    }
}

template <typename T>
static gt_status gelu_fwd_launch(gt_cuda_impl *im, void *out, const void *inp, size_t n) {
    const int VN = gt_vec_width<T>::value;
    const void *p[2] = {out, inp};
    const size_t s[2] = {sizeof(T), sizeof(T)};
    gt_vec_split sp = gt_vec_split_make(n, VN, 2, p, s);
    gelu_fwd_kernel<T, VN><<<gt_cuda_grid_1d(gt_vec_split_work(sp), 256), 256, 0, im->stream>>>(
        (T *)out, (const T *)inp, sp);
    GT_CUDA_LAUNCHED("gelu_fwd_kernel");
    return GT_OK;
}

template <typename T>
static gt_status gelu_bwd_launch(gt_cuda_impl *im, void *dinp, const void *inp, const void *dout,
                                 size_t n) {
    const int VN = gt_vec_width<T>::value;
    const void *p[3] = {dinp, inp, dout};
    const size_t s[3] = {sizeof(T), sizeof(T), sizeof(T)};
    gt_vec_split sp = gt_vec_split_make(n, VN, 3, p, s);
    gelu_bwd_kernel<T, VN><<<gt_cuda_grid_1d(gt_vec_split_work(sp), 256), 256, 0, im->stream>>>(
        (T *)dinp, (const T *)inp, (const T *)dout, sp);
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
