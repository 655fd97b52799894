/* Residual connection, forward and backward (elementwise).
 *
 * fwd: out(n) = a + b (out may alias a or b: no __restrict__).
 * bwd: da(n) += dout, db(n) += dout.
 * Variants: fp32, bf16 and fp16 storage, fp32 addition rounded once.
 * Bound: memory bandwidth (fwd 2 reads + 1 write, bwd 3 reads + 2 writes).
 * Determinism: one thread per element, no reduction.
 * Access: 16-byte vectors where the arrays share an aligned start (vec.cuh).
 */
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/vec.cuh"

/* VN elements per access where the arrays allow (vec.cuh: gt_vec_split). */
template <typename T, int VN>
__global__ void residual_fwd_kernel(T *out, const T *a, const T *b, gt_vec_split sp) {
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t v = tid; v < sp.nvec; v += stride) {
        size_t i = sp.head + v * VN;
        float x[VN], y[VN];
        gt_ldv<VN>(a, i, x);
        gt_ldv<VN>(b, i, y);
#pragma unroll
        for (int k = 0; k < VN; k++)
            x[k] = x[k] + y[k];
        gt_stv<VN>(out, i, x);
    }
    for (size_t r = tid; r < sp.rest; r += stride) {
        size_t i = gt_vec_rest_index(sp, r);
        gt_st(out, i, gt_ld(a, i) + gt_ld(b, i));
    }
}

template <typename T, int VN>
__global__ void residual_bwd_kernel(T *da, T *db, const T *dout, gt_vec_split sp) {
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t v = tid; v < sp.nvec; v += stride) {
        size_t i = sp.head + v * VN;
        float d[VN], x[VN];
        gt_ldv<VN>(dout, i, d);
        gt_ldv<VN>(da, i, x);
#pragma unroll
        for (int k = 0; k < VN; k++)
            x[k] = x[k] + d[k];
        gt_stv<VN>(da, i, x);
        gt_ldv<VN>(db, i, x);
#pragma unroll
        for (int k = 0; k < VN; k++)
            x[k] = x[k] + d[k];
        gt_stv<VN>(db, i, x);
    }
    for (size_t r = tid; r < sp.rest; r += stride) {
        size_t i = gt_vec_rest_index(sp, r);
        float d = gt_ld(dout, i);
        gt_st(da, i, gt_ld(da, i) + d);
        gt_st(db, i, gt_ld(db, i) + d);
    }
}

template <typename T>
static gt_status residual_fwd_launch(gt_cuda_impl *im, void *out, const void *a, const void *b,
                                     size_t n) {
    const int VN = gt_vec_width<T>::value;
    const void *p[3] = {out, a, b};
    const size_t s[3] = {sizeof(T), sizeof(T), sizeof(T)};
    gt_vec_split sp = gt_vec_split_make(n, VN, 3, p, s);
    residual_fwd_kernel<T, VN><<<gt_cuda_grid_1d(gt_vec_split_work(sp), 256), 256, 0,
                                 im->stream>>>((T *)out, (const T *)a, (const T *)b, sp);
    GT_CUDA_LAUNCHED("residual_fwd_kernel");
    return GT_OK;
}

template <typename T>
static gt_status residual_bwd_launch(gt_cuda_impl *im, void *da, void *db, const void *dout,
                                     size_t n) {
    const int VN = gt_vec_width<T>::value;
    const void *p[3] = {da, db, dout};
    const size_t s[3] = {sizeof(T), sizeof(T), sizeof(T)};
    gt_vec_split sp = gt_vec_split_make(n, VN, 3, p, s);
    residual_bwd_kernel<T, VN><<<gt_cuda_grid_1d(gt_vec_split_work(sp), 256), 256, 0,
                                 im->stream>>>((T *)da, (T *)db, (const T *)dout, sp);
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
