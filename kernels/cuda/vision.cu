/* The vision ops' own kernels: ReLU, global average pooling and batch
 * normalisation (torch.nn.BatchNorm2d), forward and backward.
 *
 * relu fwd: out(n) = inp < 0 ? 0 : inp (a NaN passes through, as in torch
 *      and the ref); out may alias inp. bwd: dinp(n) += dout where out > 0.
 * avgpool fwd: out(N,C) = mean over HW of inp(N,C,HW): one warp per row.
 *      bwd: dinp(N,C,HW) += dout(N,C) / HW, one thread per element.
 * batchnorm fwd, training: each channel's N*HW elements are cut into P
 *      chunks (bn_split_of: about 1024 blocks in all, chunks of at least
 *      2048 elements, a function of the shape only); one block per (chunk,
 *      channel) writes the chunk's count, mean and sum of squared deviations
 *      from that mean (two passes over the chunk: no cancellation); one
 *      thread per channel merges the chunks in order with Chan's pairwise
 *      update in fp64 (mean, biased variance), saves mean and rstd and moves
 *      the running statistics towards the batch's (the unbiased variance;
 *      with a count of 1 the running variance stays as it is, like the ref);
 *      then one thread per element normalises. eval: the element pass alone,
 *      with the running statistics.
 *      bwd: the same chunks sum dout and dout * norm, one thread per channel
 *      adds the chunks in order (fp64) into dbias and dweight, then one
 *      thread per element adds (w dout - mean(w dout) - norm mean(w dout
 *      norm)) rstd into dinp.
 * Variants: every storage type of GT_CUDA_DISPATCH; fp32 arithmetic; the
 *      statistics (mean, rstd, running_mean, running_var) are fp32.
 * Bound: memory bandwidth. relu: 2 accesses per element (fwd), 4 (bwd);
 *      avgpool: 1 read (fwd), 1 read + 1 write (bwd); batchnorm fwd reads
 *      the input three times (the second from L1/L2, chunk by chunk) and
 *      writes once, bwd reads dout and inp twice and dinp once and writes
 *      dinp. The chunking keeps every SM busy even for the few channels of
 *      a ConvNet's first layers (one block per channel did not).
 * Determinism: each thread sums its strided elements in index order, warps
 *      reduce with xor butterflies, and every thread adds the warps'
 *      partials in warp order; batchnorm's chunks are merged in chunk
 *      order by one thread: the order depends on N, C, HW and the fixed
 *      block sizes only (not on the GPU's SM count). No atomics anywhere.
 */
#include <limits.h>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda_vision.h"

#define BN_THREADS 256 /* threads per (channel, chunk) block */
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

/* How a channel's cnt = N*HW elements are cut into P chunks of `chunk`
 * (the last may be shorter, none is empty): enough blocks in all (about
 * BN_TARGET_BLOCKS) to fill the GPU when C is small, chunks of at least
 * BN_MIN_CHUNK elements. A function of the shape alone, so the summation
 * order (and the bits) do not depend on the GPU. */
#define BN_TARGET_BLOCKS 1024
#define BN_MIN_CHUNK 2048u
struct bn_split {
    unsigned cnt, chunk;
    int P;
};
static bn_split bn_split_of(int N, int C, int HW) {
    bn_split b;
    b.cnt = (unsigned)N * (unsigned)HW;
    unsigned want = (unsigned)((BN_TARGET_BLOCKS + C - 1) / C);      /* chunks per channel */
    unsigned most = (b.cnt + BN_MIN_CHUNK - 1) / BN_MIN_CHUNK;         /* >= 1 */
    unsigned P = want < most ? want : most;
    if (P < 1) P = 1;
    b.chunk = (b.cnt + P - 1) / P;
    b.P = (int)((b.cnt + b.chunk - 1) / b.chunk);
    return b;
}

/* grid (P, C), block BN_THREADS: chunk p of channel c -> part[(c P + p) 3 + {0,1,2}] =
 * its count, its mean and the sum of squared deviations from that mean (two passes
 * over the chunk, the second mostly from L1/L2: no cancellation). */
template <typename T>
__global__ void bn_stats_partial_kernel(float *part, const T *__restrict__ inp, int C, int HW,
                                        bn_split sp) {
    __shared__ float sh[2 * BN_WARPS];
    int p = blockIdx.x, c = blockIdx.y;
    unsigned hw = (unsigned)HW;
    size_t chw = (size_t)C * HW;
    unsigned lo = (unsigned)p * sp.chunk;
    unsigned hi = sp.cnt - lo < sp.chunk ? sp.cnt : lo + sp.chunk;
    const T *x = inp + (size_t)c * HW;
    float s = 0.0f;
    for (unsigned i = lo + threadIdx.x; i < hi; i += BN_THREADS)
        s += gt_ld(x, bn_at(i, hw, chw));
    float n = (float)(hi - lo);
    float m = bn_block_sum2(s, 0.0f, sh).x / n;
    float v = 0.0f;
    for (unsigned i = lo + threadIdx.x; i < hi; i += BN_THREADS) {
        float d = gt_ld(x, bn_at(i, hw, chw)) - m;
        v += d * d;
    }
    float m2 = bn_block_sum2(v, 0.0f, sh).x;
    if (threadIdx.x == 0) {
        float *q = part + ((size_t)c * sp.P + p) * 3;
        q[0] = n;
        q[1] = m;
        q[2] = m2;
    }
}

/* One thread per channel: merges the P partials in chunk order (Chan et al.'s
 * pairwise update, in fp64), saves mean and rstd, moves the running statistics. */
__global__ void bn_stats_combine_kernel(float *mean, float *rstd, float *running_mean,
                                        float *running_var, const float *__restrict__ part, int C,
                                        int P, float eps, float momentum) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    const float *q = part + (size_t)c * P * 3;
    double n = q[0], m = q[1], m2 = q[2];
    for (int p = 1; p < P; p++) {
        double nb = q[3 * p], mb = q[3 * p + 1], m2b = q[3 * p + 2];
        double nab = n + nb, d = mb - m;
        m += d * nb / nab;
        m2 += m2b + d * d * n * nb / nab;
        n = nab;
    }
    float var = (float)(m2 / n); /* biased: what normalises */
    float r = 1.0f / sqrtf(var + eps);
    mean[c] = (float)m;
    rstd[c] = r;
    double mom = momentum;
    running_mean[c] = (float)((1.0 - mom) * running_mean[c] + mom * m);
    if (n > 1.0) running_var[c] = (float)((1.0 - mom) * running_var[c] + mom * var * n / (n - 1.0));
}

/* One thread per element: out = (inp - mu) r w + b with the channel's mu and r
 * (the batch's in training, the running statistics' in eval mode). */
template <typename T, bool kEval>
__global__ void bn_normalise_kernel(T *out, const float *__restrict__ mu,
                                    const float *__restrict__ stat, const T *__restrict__ inp,
                                    const T *__restrict__ weight, const T *__restrict__ bias,
                                    size_t n, int C, int HW, float eps) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int c = (int)((i / HW) % C);
        float r = kEval ? 1.0f / sqrtf(stat[c] + eps) : stat[c];
        gt_st(out, i, (gt_ld(inp, i) - mu[c]) * r * gt_ld(weight, c) + gt_ld(bias, c));
    }
}

/* grid (P, C), block BN_THREADS: chunk p of channel c -> part[(c P + p) 2 + {0,1}] =
 * sum of dout and of dout * norm over the chunk. */
template <typename T>
__global__ void bn_bwd_partial_kernel(float *part, const T *__restrict__ dout,
                                      const T *__restrict__ inp, const float *__restrict__ mean,
                                      const float *__restrict__ rstd, int C, int HW, bn_split sp) {
    __shared__ float sh[2 * BN_WARPS];
    int p = blockIdx.x, c = blockIdx.y;
    unsigned hw = (unsigned)HW;
    size_t chw = (size_t)C * HW, c0 = (size_t)c * HW;
    unsigned lo = (unsigned)p * sp.chunk;
    unsigned hi = sp.cnt - lo < sp.chunk ? sp.cnt : lo + sp.chunk;
    float m = mean[c], r = rstd[c];
    float s_dy = 0.0f, s_dyn = 0.0f;
    for (unsigned i = lo + threadIdx.x; i < hi; i += BN_THREADS) {
        size_t at = c0 + bn_at(i, hw, chw);
        float dy = gt_ld(dout, at);
        s_dy += dy;
        s_dyn += dy * ((gt_ld(inp, at) - m) * r);
    }
    float2 sums = bn_block_sum2(s_dy, s_dyn, sh);
    if (threadIdx.x == 0) {
        float *q = part + ((size_t)c * sp.P + p) * 2;
        q[0] = sums.x;
        q[1] = sums.y;
    }
}

/* One thread per channel: the P partial sums in chunk order (fp64) -> sums(C,2) =
 * (w sum(dout) / cnt, w sum(dout norm) / cnt) for the element pass; dbias += sum(dout),
 * dweight += sum(dout norm). */
template <typename T>
__global__ void bn_bwd_combine_kernel(float *sums, T *dweight, T *dbias,
                                      const float *__restrict__ part, const T *__restrict__ weight,
                                      int C, int P, unsigned cnt) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    const float *q = part + (size_t)c * P * 2;
    double a = 0.0, b = 0.0;
    for (int p = 0; p < P; p++) {
        a += q[2 * p];
        b += q[2 * p + 1];
    }
    float w = gt_ld(weight, c);
    sums[2 * c] = w * (float)a / (float)cnt;
    sums[2 * c + 1] = w * (float)b / (float)cnt;
    gt_st(dweight, c, gt_ld(dweight, c) + (float)b);
    gt_st(dbias, c, gt_ld(dbias, c) + (float)a);
}

/* One thread per element: dinp += (w dout - mean(w dout) - norm mean(w dout norm)) r. */
template <typename T>
__global__ void bn_bwd_apply_kernel(T *dinp, const T *__restrict__ dout, const T *__restrict__ inp,
                                    const T *__restrict__ weight, const float *__restrict__ mean,
                                    const float *__restrict__ rstd, const float *__restrict__ sums,
                                    size_t n, int C, int HW) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int c = (int)((i / HW) % C);
        float r = rstd[c];
        float norm = (gt_ld(inp, i) - mean[c]) * r;
        float g = (gt_ld(weight, c) * gt_ld(dout, i) - sums[2 * c] - norm * sums[2 * c + 1]) * r;
        gt_st(dinp, i, gt_ld(dinp, i) + g);
    }
}

/* part: P*C*3 floats of scratch (training only). */
template <typename T>
static gt_status batchnorm_fwd_launch(gt_cuda_impl *im, void *out, float *mean, float *rstd,
                                      float *running_mean, float *running_var, const void *inp,
                                      const void *weight, const void *bias, int N, int C, int HW,
                                      float eps, float momentum, int training, float *part) {
    size_t n = (size_t)N * C * HW;
    if (training) {
        bn_split sp = bn_split_of(N, C, HW);
        bn_stats_partial_kernel<T><<<dim3((unsigned)sp.P, (unsigned)C), BN_THREADS, 0,
                                     im->stream>>>(part, (const T *)inp, C, HW, sp);
        GT_CUDA_LAUNCHED("bn_stats_partial_kernel");
        bn_stats_combine_kernel<<<(unsigned)((C + 127) / 128), 128, 0, im->stream>>>(
            mean, rstd, running_mean, running_var, part, C, sp.P, eps, momentum);
        GT_CUDA_LAUNCHED("bn_stats_combine_kernel");
        bn_normalise_kernel<T, false><<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>(
            (T *)out, mean, rstd, (const T *)inp, (const T *)weight, (const T *)bias, n, C, HW,
            eps);
        GT_CUDA_LAUNCHED("bn_normalise_kernel");
    } else {
        bn_normalise_kernel<T, true><<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>(
            (T *)out, running_mean, running_var, (const T *)inp, (const T *)weight,
            (const T *)bias, n, C, HW, eps);
        GT_CUDA_LAUNCHED("bn_normalise_kernel (eval)");
    }
    return GT_OK;
}

/* part: P*C*2 floats of scratch, sums: C*2 floats. */
template <typename T>
static gt_status batchnorm_bwd_launch(gt_cuda_impl *im, void *dinp, void *dweight, void *dbias,
                                      const void *dout, const void *inp, const void *weight,
                                      const float *mean, const float *rstd, int N, int C, int HW,
                                      float *part, float *sums) {
    bn_split sp = bn_split_of(N, C, HW);
    bn_bwd_partial_kernel<T><<<dim3((unsigned)sp.P, (unsigned)C), BN_THREADS, 0, im->stream>>>(
        part, (const T *)dout, (const T *)inp, mean, rstd, C, HW, sp);
    GT_CUDA_LAUNCHED("bn_bwd_partial_kernel");
    bn_bwd_combine_kernel<T><<<(unsigned)((C + 127) / 128), 128, 0, im->stream>>>(
        sums, (T *)dweight, (T *)dbias, part, (const T *)weight, C, sp.P, sp.cnt);
    GT_CUDA_LAUNCHED("bn_bwd_combine_kernel");
    size_t n = (size_t)N * C * HW;
    bn_bwd_apply_kernel<T><<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>(
        (T *)dinp, (const T *)dout, (const T *)inp, (const T *)weight, mean, rstd, sums, n, C, HW);
    GT_CUDA_LAUNCHED("bn_bwd_apply_kernel");
    return GT_OK;
}

static gt_status bn_check(const char *op, int N, int C, int HW) {
    if (N < 1 || C < 1 || HW < 1)
        return GT_ERR(GT_ERR_INVALID, "%s: N=%d C=%d HW=%d (each must be >= 1)", op, N, C, HW);
    if (C > 65535)
        return GT_ERR(GT_ERR_INVALID, "%s: C = %d channels; the cuda kernels take at most 65535 "
                                      "(one grid row per channel)", op, C);
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
    float *part = NULL;
    if (training) {
        bn_split sp = bn_split_of(N, C, HW);
        GT_TRY(gt_cuda_scratch(k, (size_t)sp.P * C * 3 * sizeof(float), (void **)&part));
    }
    gt_status s = GT_CUDA_DISPATCH(k->dt, batchnorm_fwd_launch, im, out, mean, rstd, running_mean,
                                   running_var, inp, weight, bias, N, C, HW, eps, momentum,
                                   training, part);
    if (part) gt_cuda_scratch_free(k, part);
    return s;
}

extern "C" gt_status gt_cuda_batchnorm_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                                           const void *dout, const void *inp, const void *weight,
                                           const float *mean, const float *rstd, int N, int C,
                                           int HW) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "batchnorm_bwd", &im));
    GT_TRY(bn_check("batchnorm_bwd", N, C, HW));
    bn_split sp = bn_split_of(N, C, HW);
    float *part = NULL;
    GT_TRY(gt_cuda_scratch(k, ((size_t)sp.P + 1) * C * 2 * sizeof(float), (void **)&part));
    gt_status s = GT_CUDA_DISPATCH(k->dt, batchnorm_bwd_launch, im, dinp, dweight, dbias, dout,
                                   inp, weight, mean, rstd, N, C, HW, part,
                                   part + (size_t)sp.P * C * 2);
    gt_cuda_scratch_free(k, part);
    return s;
}
