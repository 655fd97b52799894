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
 */
#include <math.h>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"

template <typename T>
__global__ void adamw_kernel(float *params, const T *__restrict__ grads, float *m, float *v,
                             size_t n, float lr, float beta1, float beta2, float eps, float wd,
                             float grad_scale, float bc1, float bc2) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float g = gt_ld(grads, i) * grad_scale;
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float p = params[i];
        params[i] = p - lr * ((mi / bc1) / (sqrtf(vi / bc2) + eps) + wd * p);
    }
}

template <typename T>
static gt_status adamw_launch(gt_cuda_impl *im, float *params, const void *grads, float *m,
                              float *v, size_t n, float lr, float beta1, float beta2, float eps,
                              float wd, float grad_scale, float bc1, float bc2) {
    adamw_kernel<T><<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>(
        params, (const T *)grads, m, v, n, lr, beta1, beta2, eps, wd, grad_scale, bc1, bc2);
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
