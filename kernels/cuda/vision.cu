/* The vision ops' own kernels: ReLU, global average pooling and batch
 * normalisation (torch.nn.BatchNorm2d), forward and backward.
 *
 * relu fwd: out(n) = inp < 0 ? 0 : inp (a NaN passes through, as in torch
 *      and the ref); out may alias inp. bwd: dinp(n) += dout where out > 0.
 * avgpool fwd: out(N,C) = mean over HW of inp(N,C,HW): one warp per row.
 *      bwd: dinp(N,C,HW) += dout(N,C) / HW, one thread per element.
 * batchnorm fwd, training: one block per channel computes the mean, then
 *      the biased variance of the centred values (two passes: no
 *      cancellation), normalises the channel, saves mean and rstd and moves
 *      the running statistics towards the batch's (the unbiased variance;
 *      with a count of 1 the running variance stays as it is, like the
 *      ref). eval: one thread per element, with the running statistics.
 *      bwd: one block per channel sums dout and dout * norm, then adds
 *      (w dout - mean(w dout) - norm mean(w dout norm)) rstd into dinp and
 *      the two sums into dbias and dweight.
 * Variants: every storage type of GT_CUDA_DISPATCH; fp32 arithmetic; the
 *      statistics (mean, rstd, running_mean, running_var) are fp32.
 * Bound: memory bandwidth. relu: 2 accesses per element (fwd), 4 (bwd);
 *      avgpool: 1 read (fwd), 1 read + 1 write (bwd); batchnorm fwd reads a
 *      channel three times (the later passes from L2 when the channel fits)
 *      and writes it once, bwd reads dout and inp twice and dinp once and
 *      writes dinp. One block per channel leaves SMs idle when C is below
 *      the SM count (the first layers of a ConvNet): there the batchnorm
 *      kernels are latency-bound and far from the bandwidth peak.
 * Determinism: each thread sums its strided elements in index order, warps
 *      reduce with xor butterflies, and every thread adds the warps'
 *      partials in warp order: the order depends on N, C, HW and the fixed
 *      block size only. No atomics anywhere.
 */
#include <limits.h>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda_vision.h"

#define BN_THREADS 512 /* threads per channel block */
#define BN_WARPS (BN_THREADS / 32)
#define POOL_WARPS 8 /* rows per block in avgpool_fwd */

/* ---- relu --------------------------------------------------------------------------- */

template <typename T> __global__ void relu_fwd_kernel(T *out, const T *inp, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float x = gt_ld(inp, i);
        gt_st(out, i, x < 0.0f ? 0.0f : x);
    }
}

template <typename T>
__global__ void relu_bwd_kernel(T *dinp, const T *__restrict__ out, const T *__restrict__ dout,
                                size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (gt_ld(out, i) > 0.0f) gt_st(dinp, i, gt_ld(dinp, i) + gt_ld(dout, i));
}

template <typename T>
static gt_status relu_fwd_launch(gt_cuda_impl *im, void *out, const void *inp, size_t n) {
    relu_fwd_kernel<T>
        <<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>((T *)out, (const T *)inp, n);
    GT_CUDA_LAUNCHED("relu_fwd_kernel");
    return GT_OK;
}

template <typename T>
static gt_status relu_bwd_launch(gt_cuda_impl *im, void *dinp, const void *out, const void *dout,
                                 size_t n) {
    relu_bwd_kernel<T><<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>((T *)dinp, (const T *)out,
                                                                        (const T *)dout, n);
    GT_CUDA_LAUNCHED("relu_bwd_kernel");
    return GT_OK;
}

extern "C" gt_status gt_cuda_relu_fwd(const gt_kctx *k, void *out, const void *inp, size_t n) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "relu_fwd", &im));
    if (n == 0) return GT_OK;
    return GT_CUDA_DISPATCH(k->dt, relu_fwd_launch, im, out, inp, n);
}

extern "C" gt_status gt_cuda_relu_bwd(const gt_kctx *k, void *dinp, const void *out,
                                      const void *dout, size_t n) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "relu_bwd", &im));
    if (n == 0) return GT_OK;
    return GT_CUDA_DISPATCH(k->dt, relu_bwd_launch, im, dinp, out, dout, n);
}

/* ---- global average pooling ------------------------------------------------------------ */

template <typename T>
__global__ void avgpool_fwd_kernel(T *out, const T *__restrict__ inp, size_t rows, int HW) {
    size_t row = (size_t)blockIdx.x * POOL_WARPS + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const T *x = inp + row * HW;
    float s = 0.0f;
    for (int p = lane; p < HW; p += 32)
        s += gt_ld(x, p);
    s = gt_warp_sum(s);
    if (lane == 0) gt_st(out, row, s / (float)HW);
}

template <typename T>
__global__ void avgpool_bwd_kernel(T *dinp, const T *__restrict__ dout, size_t n, int HW) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        gt_st(dinp, i, gt_ld(dinp, i) + gt_ld(dout, i / HW) / (float)HW);
}

template <typename T>
static gt_status avgpool_fwd_launch(gt_cuda_impl *im, void *out, const void *inp, size_t rows,
                                    int HW) {
    size_t grid = (rows + POOL_WARPS - 1) / POOL_WARPS;
    avgpool_fwd_kernel<T>
        <<<(unsigned)grid, POOL_WARPS * 32, 0, im->stream>>>((T *)out, (const T *)inp, rows, HW);
    GT_CUDA_LAUNCHED("avgpool_fwd_kernel");
    return GT_OK;
}

template <typename T>
static gt_status avgpool_bwd_launch(gt_cuda_impl *im, void *dinp, const void *dout, size_t n,
                                    int HW) {
    avgpool_bwd_kernel<T>
        <<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>((T *)dinp, (const T *)dout, n, HW);
    GT_CUDA_LAUNCHED("avgpool_bwd_kernel");
    return GT_OK;
}

static gt_status pool_check(const char *op, int N, int C, int HW) {
    if (N < 0 || C < 1 || HW < 1)
        return GT_ERR(GT_ERR_INVALID, "%s: N=%d C=%d HW=%d (need N >= 0, C >= 1, HW >= 1)", op, N,
                      C, HW);
    /* the fwd grid has one block per POOL_WARPS rows, at most 2^31 - 1 */
    if ((size_t)N * C / POOL_WARPS >= (size_t)INT_MAX)
        return GT_ERR(GT_ERR_INVALID, "%s: N*C = %zu rows is more than one launch covers", op,
                      (size_t)N * C);
    return GT_OK;
}

extern "C" gt_status gt_cuda_avgpool_fwd(const gt_kctx *k, void *out, const void *inp, int N, int C,
                                         int HW) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "avgpool_fwd", &im));
    GT_TRY(pool_check("avgpool_fwd", N, C, HW));
    if (N == 0) return GT_OK;
    return GT_CUDA_DISPATCH(k->dt, avgpool_fwd_launch, im, out, inp, (size_t)N * C, HW);
}

extern "C" gt_status gt_cuda_avgpool_bwd(const gt_kctx *k, void *dinp, const void *dout, int N,
                                         int C, int HW) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "avgpool_bwd", &im));
    GT_TRY(pool_check("avgpool_bwd", N, C, HW));
    if (N == 0) return GT_OK;
    return GT_CUDA_DISPATCH(k->dt, avgpool_bwd_launch, im, dinp, dout, (size_t)N * C * HW, HW);
}

/* ---- batch normalisation ------------------------------------------------------------- */

/* Sums a and b over the block (BN_THREADS threads); every thread returns
 * the same two sums. sh: 2 * BN_WARPS floats of shared memory. The leading
 * barrier lets the previous call's readers finish before sh is rewritten. */
__device__ __forceinline__ float2 bn_block_sum2(float a, float b, float *sh) {
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    a = gt_warp_sum(a);
    b = gt_warp_sum(b);
    __syncthreads();
    if (lane == 0) {
        sh[warp] = a;
        sh[BN_WARPS + warp] = b;
    }
    __syncthreads();
    float sa = 0.0f, sb = 0.0f;
    for (int w = 0; w < BN_WARPS; w++) {
        sa += sh[w];
        sb += sh[BN_WARPS + w];
    }
    return make_float2(sa, sb);
}

/* Element i in [0, N*HW) of channel c, relative to the channel's first
 * element: sample i / HW, position i % HW. cnt < 2^31 (checked). */
__device__ __forceinline__ size_t bn_at(unsigned i, unsigned HW, size_t chw) {
    return (size_t)(i / HW) * chw + (i % HW);
}

/* grid C, block BN_THREADS: one channel per block. */
template <typename T>
__global__ void batchnorm_fwd_train_kernel(T *out, float *mean, float *rstd, float *running_mean,
                                           float *running_var, const T *__restrict__ inp,
                                           const T *__restrict__ weight, const T *__restrict__ bias,
                                           int N, int C, int HW, float eps, float momentum) {
    __shared__ float sh[2 * BN_WARPS];
    int c = blockIdx.x;
    unsigned hw = (unsigned)HW, cnt = (unsigned)N * hw;
    size_t chw = (size_t)C * HW;
    const T *x = inp + (size_t)c * HW;
    float s = 0.0f;
    for (unsigned i = threadIdx.x; i < cnt; i += BN_THREADS)
        s += gt_ld(x, bn_at(i, hw, chw));
    float m = bn_block_sum2(s, 0.0f, sh).x / (float)cnt;
    float v = 0.0f;
    for (unsigned i = threadIdx.x; i < cnt; i += BN_THREADS) {
        float d = gt_ld(x, bn_at(i, hw, chw)) - m;
        v += d * d;
    }
    float var = bn_block_sum2(v, 0.0f, sh).x / (float)cnt; /* biased: what normalises */
    float r = 1.0f / sqrtf(var + eps);
    float w = gt_ld(weight, c), b = gt_ld(bias, c);
    T *o = out + (size_t)c * HW;
    for (unsigned i = threadIdx.x; i < cnt; i += BN_THREADS) {
        size_t at = bn_at(i, hw, chw);
        gt_st(o, at, (gt_ld(x, at) - m) * r * w + b);
    }
    if (threadIdx.x == 0) {
        mean[c] = m;
        rstd[c] = r;
        double mom = momentum, n = (double)cnt;
        running_mean[c] = (float)((1.0 - mom) * running_mean[c] + mom * m);
        if (cnt > 1)
            running_var[c] = (float)((1.0 - mom) * running_var[c] + mom * var * n / (n - 1.0));
    }
}

template <typename T>
__global__ void batchnorm_fwd_eval_kernel(T *out, const float *__restrict__ running_mean,
                                          const float *__restrict__ running_var,
                                          const T *__restrict__ inp, const T *__restrict__ weight,
                                          const T *__restrict__ bias, size_t n, int C, int HW,
                                          float eps) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int c = (int)((i / HW) % C);
        float r = 1.0f / sqrtf(running_var[c] + eps);
        gt_st(out, i, (gt_ld(inp, i) - running_mean[c]) * r * gt_ld(weight, c) + gt_ld(bias, c));
    }
}

/* grid C, block BN_THREADS. */
template <typename T>
__global__ void batchnorm_bwd_kernel(T *dinp, T *dweight, T *dbias, const T *__restrict__ dout,
                                     const T *__restrict__ inp, const T *__restrict__ weight,
                                     const float *__restrict__ mean, const float *__restrict__ rstd,
                                     int N, int C, int HW) {
    __shared__ float sh[2 * BN_WARPS];
    int c = blockIdx.x;
    unsigned hw = (unsigned)HW, cnt = (unsigned)N * hw;
    size_t chw = (size_t)C * HW, c0 = (size_t)c * HW;
    float m = mean[c], r = rstd[c], w = gt_ld(weight, c);
    float s_dy = 0.0f, s_dyn = 0.0f;
    for (unsigned i = threadIdx.x; i < cnt; i += BN_THREADS) {
        size_t at = c0 + bn_at(i, hw, chw);
        float dy = gt_ld(dout, at);
        s_dy += dy;
        s_dyn += dy * ((gt_ld(inp, at) - m) * r);
    }
    float2 sums = bn_block_sum2(s_dy, s_dyn, sh);
    float dnorm_mean = w * sums.x / (float)cnt;
    float dnorm_norm_mean = w * sums.y / (float)cnt;
    for (unsigned i = threadIdx.x; i < cnt; i += BN_THREADS) {
        size_t at = c0 + bn_at(i, hw, chw);
        float norm = (gt_ld(inp, at) - m) * r;
        float g = (w * gt_ld(dout, at) - dnorm_mean - norm * dnorm_norm_mean) * r;
        gt_st(dinp, at, gt_ld(dinp, at) + g);
    }
    if (threadIdx.x == 0) {
        gt_st(dweight, c, gt_ld(dweight, c) + sums.y);
        gt_st(dbias, c, gt_ld(dbias, c) + sums.x);
    }
}

template <typename T>
static gt_status batchnorm_fwd_launch(gt_cuda_impl *im, void *out, float *mean, float *rstd,
                                      float *running_mean, float *running_var, const void *inp,
                                      const void *weight, const void *bias, int N, int C, int HW,
                                      float eps, float momentum, int training) {
    if (training) {
        batchnorm_fwd_train_kernel<T><<<(unsigned)C, BN_THREADS, 0, im->stream>>>(
            (T *)out, mean, rstd, running_mean, running_var, (const T *)inp, (const T *)weight,
            (const T *)bias, N, C, HW, eps, momentum);
        GT_CUDA_LAUNCHED("batchnorm_fwd_train_kernel");
    } else {
        size_t n = (size_t)N * C * HW;
        batchnorm_fwd_eval_kernel<T><<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>(
            (T *)out, running_mean, running_var, (const T *)inp, (const T *)weight, (const T *)bias,
            n, C, HW, eps);
        GT_CUDA_LAUNCHED("batchnorm_fwd_eval_kernel");
    }
    return GT_OK;
}

template <typename T>
static gt_status batchnorm_bwd_launch(gt_cuda_impl *im, void *dinp, void *dweight, void *dbias,
                                      const void *dout, const void *inp, const void *weight,
                                      const float *mean, const float *rstd, int N, int C, int HW) {
    batchnorm_bwd_kernel<T><<<(unsigned)C, BN_THREADS, 0, im->stream>>>(
        (T *)dinp, (T *)dweight, (T *)dbias, (const T *)dout, (const T *)inp, (const T *)weight,
        mean, rstd, N, C, HW);
    GT_CUDA_LAUNCHED("batchnorm_bwd_kernel");
    return GT_OK;
}

static gt_status bn_check(const char *op, int N, int C, int HW) {
    if (N < 1 || C < 1 || HW < 1)
        return GT_ERR(GT_ERR_INVALID, "%s: N=%d C=%d HW=%d (each must be >= 1)", op, N, C, HW);
    /* a channel's elements are indexed in 32 bits inside the block */
    if ((size_t)N * HW > (size_t)INT_MAX)
        return GT_ERR(GT_ERR_INVALID,
                      "%s: N*HW = %zu elements per channel; the cuda kernels take at most "
                      "2^31 - 1 (split the batch)",
                      op, (size_t)N * HW);
    return GT_OK;
}

extern "C" gt_status gt_cuda_batchnorm_fwd(const gt_kctx *k, void *out, float *mean, float *rstd,
                                           float *running_mean, float *running_var, const void *inp,
                                           const void *weight, const void *bias, int N, int C,
                                           int HW, float eps, float momentum, int training) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "batchnorm_fwd", &im));
    GT_TRY(bn_check("batchnorm_fwd", N, C, HW));
    if (training && (!mean || !rstd || !running_mean || !running_var))
        return GT_ERR(GT_ERR_INVALID, "batchnorm_fwd: training needs mean, rstd, running_mean "
                                      "and running_var (one is NULL)");
    if (!training && (!running_mean || !running_var))
        return GT_ERR(GT_ERR_INVALID, "batchnorm_fwd: eval mode needs running_mean and "
                                      "running_var (one is NULL)");
    return GT_CUDA_DISPATCH(k->dt, batchnorm_fwd_launch, im, out, mean, rstd, running_mean,
                            running_var, inp, weight, bias, N, C, HW, eps, momentum, training);
}

extern "C" gt_status gt_cuda_batchnorm_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                                           const void *dout, const void *inp, const void *weight,
                                           const float *mean, const float *rstd, int N, int C,
                                           int HW) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "batchnorm_bwd", &im));
    GT_TRY(bn_check("batchnorm_bwd", N, C, HW));
    return GT_CUDA_DISPATCH(k->dt, batchnorm_bwd_launch, im, dinp, dweight, dbias, dout, inp,
                            weight, mean, rstd, N, C, HW);
}
