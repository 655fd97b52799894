/* AdamW (torch.optim.AdamW semantics, the formula of engine/ops.h).
 *
 *   g = grads * grad_scale
 *   m = beta1 m + (1-beta1) g ;  v = beta2 v + (1-beta2) g^2
 *   params -= lr * ((m / (1-beta1^t)) / (sqrt(v / (1-beta2^t)) + eps)
 *                   + weight_decay * params)
 * params, m, v fp32 (master weights); grads fp32, bf16 or fp16 (k->dt). The bias
 * corrections 1-beta^t are computed once on the host in fp64 and rounded to
 * fp32. One thread per parameter.
 * Bound: memory bandwidth (4 reads + 3 writes per parameter).
 * Determinism: elementwise, no reduction.
 * Access: 16-byte vectors where the arrays share an aligned start (vec.cuh).
 */
#include <math.h>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/vec.cuh"

/* One parameter: g is grads[i] as fp32; updates p, m, v in place. */
__device__ __forceinline__ void adamw_one(float &p, float &m, float &v, float g, float lr,
                                          float beta1, float beta2, float eps, float wd,
                                          float grad_scale, float bc1, float bc2) {
    g = g * grad_scale;
    float mi = beta1 * m + (1.0f - beta1) * g;
    float vi = beta2 * v + (1.0f - beta2) * g * g;
    m = mi;
    v = vi;
    p = p - lr * ((mi / bc1) / (sqrtf(vi / bc2) + eps) + wd * p);
}

/* VN parameters per thread where params, grads, m and v share an aligned
 * start (vec.cuh: gt_vec_split; fp32 arrays take VN / 4 16-byte accesses). */
template <typename T, int VN>
__global__ void adamw_kernel(float *params, const T *__restrict__ grads, float *m, float *v,
                             gt_vec_split sp, float lr, float beta1, float beta2, float eps,
                             float wd, float grad_scale, float bc1, float bc2) {
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t u = tid; u < sp.nvec; u += stride) {
        size_t i = sp.head + u * VN;
        float g[VN], pp[VN], mm[VN], vv[VN];
        gt_ldv<VN>(grads, i, g);
        gt_ldv<VN>(params, i, pp);
        gt_ldv<VN>(m, i, mm);
        gt_ldv<VN>(v, i, vv);
#pragma unroll
        for (int k = 0; k < VN; k++)
            adamw_one(pp[k], mm[k], vv[k], g[k], lr, beta1, beta2, eps, wd, grad_scale, bc1, bc2);
        gt_stv<VN>(m, i, mm);
        gt_stv<VN>(v, i, vv);
        gt_stv<VN>(params, i, pp);
    }
    for (size_t r = tid; r < sp.rest; r += stride) {
        size_t i = gt_vec_rest_index(sp, r);
        float pi = params[i], mi = m[i], vi = v[i];
        adamw_one(pi, mi, vi, gt_ld(grads, i), lr, beta1, beta2, eps, wd, grad_scale, bc1, bc2);
        m[i] = mi;
        v[i] = vi;
        params[i] = pi;
    }
}

template <typename T>
static gt_status adamw_launch(gt_cuda_impl *im, float *params, const void *grads, float *m,
                              float *v, size_t n, float lr, float beta1, float beta2, float eps,
                              float wd, float grad_scale, float bc1, float bc2) {
    const int VN = gt_vec_width<T>::value;
    const void *p[4] = {params, grads, m, v};
    const size_t s[4] = {sizeof(float), sizeof(T), sizeof(float), sizeof(float)};
    gt_vec_split sp = gt_vec_split_make(n, VN, 4, p, s);
    adamw_kernel<T, VN><<<gt_cuda_grid_1d(gt_vec_split_work(sp), 256), 256, 0, im->stream>>>(
        params, (const T *)grads, m, v, sp, lr, beta1, beta2, eps, wd, grad_scale, bc1, bc2);
    GT_CUDA_LAUNCHED("adamw_kernel");
    return GT_OK;
}

extern "C" gt_status gt_cuda_adamw(const gt_kctx *k, float *params, const void *grads, float *m,
                                   float *v, size_t n, float lr, float beta1, float beta2,
                                   float eps, float weight_decay, float grad_scale, int t) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "adamw", &im));
    if (t < 1) return GT_ERR(GT_ERR_INVALID, "adamw: step t=%d, must be >= 1", t);
    if (n == 0) return GT_OK;
    float bc1 = (float)(1.0 - pow((double)beta1, (double)t));
    float bc2 = (float)(1.0 - pow((double)beta2, (double)t));
    return GT_CUDA_DISPATCH(k->dt, adamw_launch, im, params, grads, m, v, n, lr, beta1, beta2, eps,
                            weight_decay, grad_scale, bc1, bc2);
}
