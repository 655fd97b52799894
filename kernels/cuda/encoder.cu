/* Encoder: token + position embedding, forward and backward.
 *
 * fwd: out(B,T,C) = wte(V,C)[inp(B,T)] + wpe(maxT,C)[t]. One thread per
 *      output element; bound: memory bandwidth (read 2, write 1 element).
 * bwd: dwpe(t,c) += sum over b of dout(b,t,c): one thread per (t,c), b in
 *      order. dwte: a scatter-add by token, done without atomics so that the
 *      result is bitwise reproducible and each token's sum runs in (b,t)
 *      order, in fp32, rounded once into dwte (one rounding even in bf16/fp16):
 *        1. next[i] = the next position j > i with inp[j] == inp[i] (or -1),
 *           head[j] = 0 for every position that has an earlier occurrence.
 *           One thread per position scanning forward through shared-memory
 *           tiles: O(N * distance to the next occurrence), N^2/2 compares
 *           in the worst case (all tokens distinct): ~33 M for N = 8192,
 *           tens of microseconds on an H100; 2 G for N = 65536.
 *        2. one block per head position walks its chain in order and adds
 *           the rows of dout into dwte[token]: reads dout once, bandwidth
 *           bound, serialised only along one token's occurrences.
 *      Variants: fp32, bf16 and fp16 storage; token ids int32 (in [0,V), checked
 *      by callers).
 * Access: 16-byte vectors along C where C and the arrays allow (vec.cuh).
 */
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/vec.cuh"

#define ENC_BLOCK 256

/* VN consecutive elements of one row per thread: VN = 16 bytes' worth when
 * C is a multiple of it and out, wte, wpe are 16-byte aligned (then so is
 * every row), else 1 (vec.cuh). */
template <typename T, int VN>
__global__ void encoder_fwd_kernel(T *out, const int32_t *__restrict__ inp,
                                   const T *__restrict__ wte, const T *__restrict__ wpe, int T_,
                                   int C, size_t n) {
    for (size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x; v < n / VN;
         v += (size_t)gridDim.x * blockDim.x) {
        size_t idx = v * VN;
        size_t bt = idx / C;
        int c = (int)(idx % C);
        int t = (int)(bt % T_);
        int32_t tok = inp[bt];
        float a[VN], b[VN];
        gt_ldv<VN>(wte, (size_t)tok * C + c, a);
        gt_ldv<VN>(wpe, (size_t)t * C + c, b);
#pragma unroll
        for (int k = 0; k < VN; k++)
            a[k] = a[k] + b[k];
        gt_stv<VN>(out, idx, a);
    }
}

template <typename T>
static gt_status encoder_fwd_launch(gt_cuda_impl *im, void *out, const int32_t *inp,
                                    const void *wte, const void *wpe, int B, int T_, int C) {
    size_t n = (size_t)B * T_ * C;
    const int VN = gt_vec_width<T>::value;
    if (C % VN == 0 && gt_vec_aligned(out, wte, wpe))
        encoder_fwd_kernel<T, VN><<<gt_cuda_grid_1d(n / VN, ENC_BLOCK), ENC_BLOCK, 0,
                                    im->stream>>>((T *)out, inp, (const T *)wte, (const T *)wpe,
                                                  T_, C, n);
    else
        encoder_fwd_kernel<T, 1><<<gt_cuda_grid_1d(n, ENC_BLOCK), ENC_BLOCK, 0, im->stream>>>(
            (T *)out, inp, (const T *)wte, (const T *)wpe, T_, C, n);
    GT_CUDA_LAUNCHED("encoder_fwd_kernel");
    return GT_OK;
}

extern "C" gt_status gt_cuda_encoder_fwd(const gt_kctx *k, void *out, const int32_t *inp,
                                         const void *wte, const void *wpe, int B, int T, int C) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "encoder_fwd", &im));
    if (B < 0 || T < 0 || C < 0)
        return GT_ERR(GT_ERR_INVALID, "encoder_fwd: bad shape B=%d T=%d C=%d", B, T, C);
    if ((size_t)B * T * C == 0) return GT_OK;
    return GT_CUDA_DISPATCH(k->dt, encoder_fwd_launch, im, out, inp, wte, wpe, B, T, C);
}

/* dwpe(t,c) += sum_b dout(b,t,c), b in order; VN consecutive (t,c) per
 * thread (VN > 1 only when T*C is a multiple of it and both arrays are
 * 16-byte aligned), each with its own sum. */
template <typename T, int VN>
__global__ void encoder_bwd_wpe_kernel(T *dwpe, const T *__restrict__ dout, int B, int T_, int C) {
    size_t tc_n = (size_t)T_ * C;
    for (size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x; v < tc_n / VN;
         v += (size_t)gridDim.x * blockDim.x) {
        size_t idx = v * VN;
        float acc[VN], d[VN];
        gt_ldv<VN>(dwpe, idx, acc);
        for (int b = 0; b < B; b++) {
            gt_ldv<VN>(dout, (size_t)b * tc_n + idx, d);
#pragma unroll
            for (int k = 0; k < VN; k++)
                acc[k] += d[k];
        }
        gt_stv<VN>(dwpe, idx, acc);
    }
}

/* next[i] = smallest j > i with inp[j] == inp[i], -1 if none; clears head[j]
 * of that j (head was set to 1 for all positions beforehand). */
__global__ void encoder_next_kernel(int *next, uint8_t *head, const int32_t *__restrict__ inp,
                                    int N) {
    __shared__ int32_t tile[ENC_BLOCK];
    int i = blockIdx.x * ENC_BLOCK + threadIdx.x;
    bool active = i < N;
    int32_t tok = active ? inp[i] : 0;
    int found = -1;
    for (int j0 = blockIdx.x * ENC_BLOCK; j0 < N; j0 += ENC_BLOCK) {
        if (j0 + (int)threadIdx.x < N) tile[threadIdx.x] = inp[j0 + threadIdx.x];
        __syncthreads();
        if (active && found < 0) {
            int len = min(ENC_BLOCK, N - j0);
            for (int jj = 0; jj < len; jj++) {
                int j = j0 + jj;
                if (j > i && tile[jj] == tok) {
                    found = j;
                    break;
                }
            }
        }
        /* Barrier too: the tile is overwritten only after everyone is done. */
        if (!__syncthreads_or(active && found < 0)) break;
    }
    if (active) {
        next[i] = found;
        if (found >= 0) head[found] = 0; /* each j has one predecessor: no two writers */
    }
}

/* One block per position; heads walk their chain: dwte[tok] += dout rows in
 * (b,t) order, fp32 accumulation starting from dwte's value. VN
 * consecutive columns per thread (VN > 1 only when C is a multiple of it
 * and both arrays are 16-byte aligned), each with its own sum. */
template <typename T, int VN>
__global__ void
encoder_bwd_wte_kernel(T *dwte, const T *__restrict__ dout, const int32_t *__restrict__ inp,
                       const int *__restrict__ next, const uint8_t *__restrict__ head, int C) {
    int i = blockIdx.x;
    if (!head[i]) return;
    size_t row = (size_t)inp[i] * C;
    for (int c = threadIdx.x * VN; c < C; c += blockDim.x * VN) {
        float acc[VN], d[VN];
        gt_ldv<VN>(dwte, row + c, acc);
        for (int j = i; j >= 0; j = next[j]) {
            gt_ldv<VN>(dout, (size_t)j * C + c, d);
#pragma unroll
            for (int k = 0; k < VN; k++)
                acc[k] += d[k];
        }
        gt_stv<VN>(dwte, row + c, acc);
    }
}

template <typename T>
static gt_status encoder_bwd_launch(const gt_kctx *k, gt_cuda_impl *im, void *dwte, void *dwpe,
                                    const void *dout, const int32_t *inp, int B, int T_, int C) {
    size_t tc = (size_t)T_ * C;
    const int VN = gt_vec_width<T>::value;
    if (tc % VN == 0 && gt_vec_aligned(dwpe, dout))
        encoder_bwd_wpe_kernel<T, VN><<<gt_cuda_grid_1d(tc / VN, ENC_BLOCK), ENC_BLOCK, 0,
                                        im->stream>>>((T *)dwpe, (const T *)dout, B, T_, C);
    else
        encoder_bwd_wpe_kernel<T, 1><<<gt_cuda_grid_1d(tc, ENC_BLOCK), ENC_BLOCK, 0, im->stream>>>(
            (T *)dwpe, (const T *)dout, B, T_, C);
    GT_CUDA_LAUNCHED("encoder_bwd_wpe_kernel");

    int N = B * T_;
    void *scratch = NULL;
    size_t next_bytes = ((size_t)N * sizeof(int) + 255) & ~(size_t)255;
    GT_TRY(gt_cuda_scratch(k, next_bytes + (size_t)N, &scratch));
    int *next = (int *)scratch;
    uint8_t *head = (uint8_t *)scratch + next_bytes;
    gt_status s = GT_OK;
    cudaError_t e = cudaMemsetAsync(head, 1, (size_t)N, im->stream);
    if (e != cudaSuccess) {
        s = GT_ERR(GT_ERR_DEVICE, "cudaMemsetAsync(head) failed: %s", cudaGetErrorString(e));
    } else {
        encoder_next_kernel<<<(N + ENC_BLOCK - 1) / ENC_BLOCK, ENC_BLOCK, 0, im->stream>>>(
            next, head, inp, N);
        e = cudaGetLastError();
        if (e == cudaSuccess) {
            int threads = C >= 256 ? 256 : ((C + 31) / 32) * 32;
            if (C % VN == 0 && gt_vec_aligned(dwte, dout)) {
                int groups = C / VN; /* one thread per VN columns */
                threads = groups >= 256 ? 256 : ((groups + 31) / 32) * 32;
                encoder_bwd_wte_kernel<T, VN><<<N, threads, 0, im->stream>>>(
                    (T *)dwte, (const T *)dout, inp, next, head, C);
            } else
                encoder_bwd_wte_kernel<T, 1><<<N, threads, 0, im->stream>>>(
                    (T *)dwte, (const T *)dout, inp, next, head, C);
            e = cudaGetLastError();
        }
        if (e != cudaSuccess)
            s = GT_ERR(GT_ERR_DEVICE, "launch of encoder_bwd kernels failed: %s",
                       cudaGetErrorString(e));
    }
    gt_cuda_scratch_free(k, scratch);
    return s;
}

extern "C" gt_status gt_cuda_encoder_bwd(const gt_kctx *k, void *dwte, void *dwpe, const void *dout,
                                         const int32_t *inp, int B, int T, int C) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "encoder_bwd", &im));
    if (B < 0 || T < 0 || C < 0 || (int64_t)B * T > INT32_MAX)
        return GT_ERR(GT_ERR_INVALID, "encoder_bwd: bad shape B=%d T=%d C=%d", B, T, C);
    if ((size_t)B * T * C == 0) return GT_OK;
    return GT_CUDA_DISPATCH(k->dt, encoder_bwd_launch, k, im, dwte, dwpe, dout, inp, B, T, C);
}
