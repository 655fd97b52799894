/* LayerNorm over the last dimension, forward and backward.
 *
 * fwd: out(N,C) = (inp - mean) * rstd * weight(C) + bias(C), mean(N) and
 *      rstd(N) saved (fp32). One warp per row, two passes (mean, then the
 *      biased variance of the centred values: no cancellation).
 * bwd: dinp(N,C) += (dnorm - mean(dnorm) - norm * mean(dnorm * norm)) * rstd
 *      with dnorm = dout * weight: one warp per row.
 *      dweight(C) += sum_rows dout * norm, dbias(C) += sum_rows dout: the
 *      rows are cut into fixed chunks of LN_ROWS rows; one block per
 *      (chunk, 32 columns) writes a partial per column, then one thread per
 *      column sums the partials in chunk order and adds once into dweight,
 *      dbias.
 * Variants: fp32, bf16 and fp16 storage, fp32 arithmetic.
 * Bound: memory bandwidth (fwd reads inp about twice from L1/L2 and DRAM
 *      once; bwd reads dout and inp twice: row kernel and column kernel).
 * Determinism: warp sums are xor butterflies in lane order; the column
 *      partials depend only on N and LN_ROWS, never on the device.
 * Access: the elementwise passes (fwd output, bwd dinp write) and the
 *      column partials (each thread VN columns, every column's sum in the
 *      same order) take 16-byte vectors where C and the arrays allow
 *      (vec.cuh); the row statistics stay one element per lane, which fixes
 *      the order of each lane's sum.
 */
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/vec.cuh"

#define LN_WARPS 4  /* rows per block in the row kernels */
#define LN_ROWS 64  /* rows per chunk of the dweight/dbias partials */
#define LN_COLS_Y 8 /* threads per column in the partials kernel */

/* The statistics read x one element per lane (c = lane, lane + 32, ...: the
 * order of each lane's sum, kept); the output pass, elementwise, moves VN
 * consecutive columns per lane (VN > 1 only when C is a multiple of it and
 * the arrays are 16-byte aligned, vec.cuh). */
template <typename T, int VN>
__global__ void layernorm_fwd_kernel(T *out, float *mean, float *rstd, const T *__restrict__ inp,
                                     const T *__restrict__ weight, const T *__restrict__ bias,
                                     int N, int C, float eps) {
    int row = blockIdx.x * LN_WARPS + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= N) return;
    const T *x = inp + (size_t)row * C;
    float s = 0.0f;
    for (int c = lane; c < C; c += 32)
        s += gt_ld(x, c);
    float m = gt_warp_sum(s) / (float)C;
    float v = 0.0f;
    for (int c = lane; c < C; c += 32) {
        float d = gt_ld(x, c) - m;
        v += d * d;
    }
    float r = 1.0f / sqrtf(gt_warp_sum(v) / (float)C + eps);
    T *o = out + (size_t)row * C;
    for (int c = lane * VN; c < C; c += 32 * VN) {
        float xv[VN], w[VN], b[VN], y[VN];
        gt_ldv<VN>(x, c, xv);
        gt_ldv<VN>(weight, c, w);
        gt_ldv<VN>(bias, c, b);
#pragma unroll
        for (int k = 0; k < VN; k++)
            y[k] = (xv[k] - m) * r * w[k] + b[k];
        gt_stv<VN>(o, c, y);
    }
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = r;
    }
}

/* The row sums one element per lane, in the order above; the write pass VN
 * columns per lane, as in the forward. */
template <typename T, int VN>
__global__ void layernorm_bwd_dinp_kernel(T *dinp, const T *__restrict__ dout,
                                          const T *__restrict__ inp, const T *__restrict__ weight,
                                          const float *__restrict__ mean,
                                          const float *__restrict__ rstd, int N, int C) {
    int row = blockIdx.x * LN_WARPS + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= N) return;
    const T *x = inp + (size_t)row * C;
    const T *dy = dout + (size_t)row * C;
    float m = mean[row], r = rstd[row];
    float s1 = 0.0f, s2 = 0.0f;
    for (int c = lane; c < C; c += 32) {
        float norm = (gt_ld(x, c) - m) * r;
        float dnorm = gt_ld(dy, c) * gt_ld(weight, c);
        s1 += dnorm;
        s2 += dnorm * norm;
    }
    float dnorm_mean = gt_warp_sum(s1) / (float)C;
    float dnorm_norm_mean = gt_warp_sum(s2) / (float)C;
    T *dx = dinp + (size_t)row * C;
    for (int c = lane * VN; c < C; c += 32 * VN) {
        float xv[VN], dyv[VN], w[VN], d[VN];
        gt_ldv<VN>(x, c, xv);
        gt_ldv<VN>(dy, c, dyv);
        gt_ldv<VN>(weight, c, w);
        gt_ldv<VN>(dx, c, d);
#pragma unroll
        for (int k = 0; k < VN; k++) {
            float norm = (xv[k] - m) * r;
            float dnorm = dyv[k] * w[k];
            d[k] = d[k] + (dnorm - dnorm_mean - norm * dnorm_norm_mean) * r;
        }
        gt_stv<VN>(dx, c, d);
    }
}

/* grid (chunks, ceil(C/(32 VN))), block (32, LN_COLS_Y); thread x owns VN
 * consecutive columns (VN > 1 only when C is a multiple of it and dout, inp
 * are 16-byte aligned, vec.cuh), each with its own sums over the rows
 * r0 + y, r0 + y + LN_COLS_Y, ... and then over y in order: the order of
 * every column's sum does not depend on VN. */
template <typename T, int VN>
__global__ void layernorm_bwd_partials_kernel(float *pw, float *pb, const T *__restrict__ dout,
                                              const T *__restrict__ inp,
                                              const float *__restrict__ mean,
                                              const float *__restrict__ rstd, int N, int C) {
    __shared__ float sw[LN_COLS_Y][32 * VN], sb[LN_COLS_Y][32 * VN];
    int chunk = blockIdx.x;
    int c = (blockIdx.y * 32 + threadIdx.x) * VN;
    int r0 = chunk * LN_ROWS, r1 = min(r0 + LN_ROWS, N);
    float aw[VN], ab[VN];
#pragma unroll
    for (int k = 0; k < VN; k++)
        aw[k] = ab[k] = 0.0f;
    if (c < C) {
        for (int r = r0 + threadIdx.y; r < r1; r += LN_COLS_Y) {
            size_t i = (size_t)r * C + c;
            float dy[VN], x[VN];
            gt_ldv<VN>(dout, i, dy);
            gt_ldv<VN>(inp, i, x);
#pragma unroll
            for (int k = 0; k < VN; k++) {
                aw[k] += dy[k] * ((x[k] - mean[r]) * rstd[r]);
                ab[k] += dy[k];
            }
        }
    }
#pragma unroll
    for (int k = 0; k < VN; k++) {
        sw[threadIdx.y][threadIdx.x * VN + k] = aw[k];
        sb[threadIdx.y][threadIdx.x * VN + k] = ab[k];
    }
    __syncthreads();
    if (threadIdx.y == 0 && c < C) {
        for (int y = 1; y < LN_COLS_Y; y++) {
#pragma unroll
            for (int k = 0; k < VN; k++) {
                aw[k] += sw[y][threadIdx.x * VN + k];
                ab[k] += sb[y][threadIdx.x * VN + k];
            }
        }
#pragma unroll
        for (int k = 0; k < VN; k++) {
            pw[(size_t)chunk * C + c + k] = aw[k];
            pb[(size_t)chunk * C + c + k] = ab[k];
        }
    }
}

template <typename T>
__global__ void layernorm_bwd_sum_kernel(T *dweight, T *dbias, const float *__restrict__ pw,
                                         const float *__restrict__ pb, int chunks, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float aw = 0.0f, ab = 0.0f;
    for (int i = 0; i < chunks; i++) {
        aw += pw[(size_t)i * C + c];
        ab += pb[(size_t)i * C + c];
    }
    gt_st(dweight, c, gt_ld(dweight, c) + aw);
    gt_st(dbias, c, gt_ld(dbias, c) + ab);
}

template <typename T>
static gt_status layernorm_fwd_launch(gt_cuda_impl *im, void *out, float *mean, float *rstd,
                                      const void *inp, const void *weight, const void *bias, int N,
                                      int C, float eps) {
    unsigned grid = (unsigned)((N + LN_WARPS - 1) / LN_WARPS);
    const int VN = gt_vec_width<T>::value;
    if (C % VN == 0 && gt_vec_aligned(out, inp, weight, bias))
        layernorm_fwd_kernel<T, VN><<<grid, LN_WARPS * 32, 0, im->stream>>>(
            (T *)out, mean, rstd, (const T *)inp, (const T *)weight, (const T *)bias, N, C, eps);
    else
        layernorm_fwd_kernel<T, 1><<<grid, LN_WARPS * 32, 0, im->stream>>>(
            (T *)out, mean, rstd, (const T *)inp, (const T *)weight, (const T *)bias, N, C, eps);
    GT_CUDA_LAUNCHED("layernorm_fwd_kernel");
    return GT_OK;
}

extern "C" gt_status gt_cuda_layernorm_fwd(const gt_kctx *k, void *out, float *mean, float *rstd,
                                           const void *inp, const void *weight, const void *bias,
                                           int N, int C, float eps) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "layernorm_fwd", &im));
    if (N < 0 || C <= 0) return GT_ERR(GT_ERR_INVALID, "layernorm_fwd: bad shape N=%d C=%d", N, C);
    if (N == 0) return GT_OK;
    return GT_CUDA_DISPATCH(k->dt, layernorm_fwd_launch, im, out, mean, rstd, inp, weight, bias, N,
                            C, eps);
}

template <typename T>
static gt_status layernorm_bwd_launch(const gt_kctx *k, gt_cuda_impl *im, void *dinp, void *dweight,
                                      void *dbias, const void *dout, const void *inp,
                                      const void *weight, const float *mean, const float *rstd,
                                      int N, int C) {
    unsigned grid = (unsigned)((N + LN_WARPS - 1) / LN_WARPS);
    const int VN = gt_vec_width<T>::value;
    if (C % VN == 0 && gt_vec_aligned(dinp, dout, inp, weight))
        layernorm_bwd_dinp_kernel<T, VN><<<grid, LN_WARPS * 32, 0, im->stream>>>(
            (T *)dinp, (const T *)dout, (const T *)inp, (const T *)weight, mean, rstd, N, C);
    else
        layernorm_bwd_dinp_kernel<T, 1><<<grid, LN_WARPS * 32, 0, im->stream>>>(
            (T *)dinp, (const T *)dout, (const T *)inp, (const T *)weight, mean, rstd, N, C);
    GT_CUDA_LAUNCHED("layernorm_bwd_dinp_kernel");

    int chunks = (N + LN_ROWS - 1) / LN_ROWS;
    void *scratch = NULL;
    GT_TRY(gt_cuda_scratch(k, 2 * (size_t)chunks * C * sizeof(float), &scratch));
    float *pw = (float *)scratch, *pb = pw + (size_t)chunks * C;
    if (C % VN == 0 && gt_vec_aligned(dout, inp)) {
        dim3 pgrid((unsigned)chunks, (unsigned)((C / VN + 31) / 32));
        layernorm_bwd_partials_kernel<T, VN><<<pgrid, dim3(32, LN_COLS_Y), 0, im->stream>>>(
            pw, pb, (const T *)dout, (const T *)inp, mean, rstd, N, C);
    } else {
        dim3 pgrid((unsigned)chunks, (unsigned)((C + 31) / 32));
        layernorm_bwd_partials_kernel<T, 1><<<pgrid, dim3(32, LN_COLS_Y), 0, im->stream>>>(
            pw, pb, (const T *)dout, (const T *)inp, mean, rstd, N, C);
    }
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) {
        layernorm_bwd_sum_kernel<T>
            <<<(C + 255) / 256, 256, 0, im->stream>>>((T *)dweight, (T *)dbias, pw, pb, chunks, C);
        e = cudaGetLastError();
    }
    gt_cuda_scratch_free(k, scratch);
    if (e != cudaSuccess)
        return GT_ERR(GT_ERR_DEVICE, "launch of layernorm_bwd column kernels failed: %s (%s)",
                      cudaGetErrorString(e), cudaGetErrorName(e));
    return GT_OK;
}

extern "C" gt_status gt_cuda_layernorm_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                                           const void *dout, const void *inp, const void *weight,
                                           const float *mean, const float *rstd, int N, int C) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "layernorm_bwd", &im));
    if (N < 0 || C <= 0 || C > 65535 * 32)
        return GT_ERR(GT_ERR_INVALID, "layernorm_bwd: bad shape N=%d C=%d", N, C);
    if (N == 0) return GT_OK;
    return GT_CUDA_DISPATCH(k->dt, layernorm_bwd_launch, k, im, dinp, dweight, dbias, dout, inp,
                            weight, mean, rstd, N, C);
}
