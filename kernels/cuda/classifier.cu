/* Softmax cross-entropy classifier: loss forward, and the fused
 * forward + backward over the logits.
 *
 * fwd: losses(N) = logsumexp(logits[i,:V]) - logits[i, targets[i]].
 * bwd: the same losses (when losses != NULL) and, in the same pass,
 *      dlogits(N,Vp) = dloss * (softmax(logits[i,:V]) - onehot(targets[i]))
 *      for columns < V, 0 for the padding columns [V, Vp). dlogits may
 *      alias logits: every element is read and then written by one thread,
 *      after the block's last read of the row's other elements.
 * One block per row. Each thread keeps an online (max, sum of exp) over its
 * columns j = tid, tid + CLS_BLOCK, ...; the pairs are combined by xor
 * butterflies in a warp, then across warps in warp order: one read of the
 * row for the statistics, one more (bwd) to write the gradient.
 * Variants: logits / dlogits fp32, bf16 or fp16; losses fp32; fp32 arithmetic.
 * Bound: memory bandwidth (N*Vp elements read once, twice for bwd, plus one
 *      write).
 * Determinism: the combination order depends on the column index only.
 * Non-finite logits as engine/ops.h defines them: a NaN anywhere in a row
 * makes its loss and dlogits NaN (flagged block-wide, below), and so does a
 * +Inf (the combination's exp(Inf - Inf)); a -Inf logit has probability
 * exactly 0 (the online update skips it), a -Inf target gives a loss of
 * +Inf, a row of -Inf only NaN (its sum is 0, its max -Inf).
 */
#include <math.h>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/vec.cuh"

#define CLS_BLOCK 512

/* (m, s) pairs: s = sum of exp(x - m). Symmetric in its arguments, so both
 * lanes of a butterfly step get the same bits. */
__device__ __forceinline__ void cls_combine(float &m, float &s, float m2, float s2) {
    float mx = fmaxf(m, m2);
    float e1 = m == -INFINITY ? 0.0f : expf(m - mx);
    float e2 = m2 == -INFINITY ? 0.0f : expf(m2 - mx);
    s = s * e1 + s2 * e2;
    m = mx;
}

/* The statistics pass reads one element per thread (its online max and sum
 * depend on which columns a thread sees, in order: kept); the gradient
 * pass, elementwise, moves VN consecutive columns per thread (VN > 1 only
 * when Vp is a multiple of it and logits, dlogits are 16-byte aligned,
 * vec.cuh). */
template <typename T, bool GRAD, int VN>
__global__ void __launch_bounds__(CLS_BLOCK)
    classifier_kernel(T *dlogits, float *losses, const T *logits,
                      const int32_t *__restrict__ targets, float dloss, int V, int Vp) {
    __shared__ float sm[CLS_BLOCK / 32], ss[CLS_BLOCK / 32];
    __shared__ float s_target;
    int row = blockIdx.x;
    const T *x = logits + (size_t)row * Vp;
    int target = targets[row];
    if (threadIdx.x == 0) s_target = gt_ld(x, target); /* before any write of the row */

    float m = -INFINITY, s = 0.0f;
    int nan = 0; /* the online max skips NaN (every comparison is false): flagged instead */
    for (int j = threadIdx.x; j < V; j += CLS_BLOCK) {
        float v = gt_ld(x, j);
        nan |= v != v;
        if (v > m) {
            s = s * (m == -INFINITY ? 0.0f : expf(m - v)) + 1.0f;
            m = v;
        } else if (v > -INFINITY) {
            /* not for -Inf: it adds 0, but while a thread has seen only
             * -Inf its m is -Inf too and exp(-Inf - -Inf) would be NaN */
            s += expf(v - m);
        }
    }
    for (int k = 16; k > 0; k >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, k);
        float s2 = __shfl_xor_sync(0xffffffffu, s, k);
        cls_combine(m, s, m2, s2);
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        sm[warp] = m;
        ss[warp] = s;
    }
    /* a barrier (also: every read of the row above is done) and a block-wide OR */
    int any_nan = __syncthreads_or(nan);
    m = -INFINITY;
    s = 0.0f;
    for (int w = 0; w < CLS_BLOCK / 32; w++)
        cls_combine(m, s, sm[w], ss[w]);
    /* a NaN logit makes the row's loss and every dlogit NaN, as on ref and cpu,
     * so that the training loop reports a non-finite loss (not an fp16 overflow) */
    if (any_nan) m = NAN;
    float lse = m + logf(s);
    if (threadIdx.x == 0 && losses) losses[row] = lse - s_target;

    if (GRAD) {
        T *dx = dlogits + (size_t)row * Vp;
        for (int j0 = threadIdx.x * VN; j0 < Vp; j0 += CLS_BLOCK * VN) {
            float xv[VN], g[VN];
            gt_ldv<VN>(x, j0, xv); /* Vp - V padding columns too: read, not used */
#pragma unroll
            for (int k = 0; k < VN; k++) {
                int j = j0 + k;
                g[k] = 0.0f;
                if (j < V) {
                    float p = expf(xv[k] - m) / s;
                    g[k] = dloss * (p - (j == target ? 1.0f : 0.0f));
                }
            }
            gt_stv<VN>(dx, j0, g);
        }
    }
}

template <typename T>
static gt_status classifier_fwd_launch(gt_cuda_impl *im, float *losses, const void *logits,
                                       const int32_t *targets, int N, int V, int Vp) {
    classifier_kernel<T, false, 1><<<N, CLS_BLOCK, 0, im->stream>>>(
        (T *)NULL, losses, (const T *)logits, targets, 0.0f, V, Vp);
    GT_CUDA_LAUNCHED("classifier_kernel (fwd)");
    return GT_OK;
}

template <typename T>
static gt_status classifier_bwd_launch(gt_cuda_impl *im, void *dlogits, float *losses,
                                       const void *logits, const int32_t *targets, float dloss,
                                       int N, int V, int Vp) {
    const int VN = gt_vec_width<T>::value;
    if (Vp % VN == 0 && gt_vec_aligned(dlogits, logits))
        classifier_kernel<T, true, VN><<<N, CLS_BLOCK, 0, im->stream>>>(
            (T *)dlogits, losses, (const T *)logits, targets, dloss, V, Vp);
    else
        classifier_kernel<T, true, 1><<<N, CLS_BLOCK, 0, im->stream>>>(
            (T *)dlogits, losses, (const T *)logits, targets, dloss, V, Vp);
    GT_CUDA_LAUNCHED("classifier_kernel (bwd)");
    return GT_OK;
}

extern "C" gt_status gt_cuda_classifier_fwd(const gt_kctx *k, float *losses, const void *logits,
                                            const int32_t *targets, int N, int V, int Vp) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "classifier_fwd", &im));
    if (N < 0 || V <= 0 || Vp < V)
        return GT_ERR(GT_ERR_INVALID, "classifier_fwd: bad shape N=%d V=%d Vp=%d", N, V, Vp);
    if (N == 0) return GT_OK;
    return GT_CUDA_DISPATCH(k->dt, classifier_fwd_launch, im, losses, logits, targets, N, V, Vp);
}

extern "C" gt_status gt_cuda_classifier_bwd(const gt_kctx *k, void *dlogits, float *losses,
                                            const void *logits, const int32_t *targets, float dloss,
                                            int N, int V, int Vp) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "classifier_bwd", &im));
    if (N < 0 || V <= 0 || Vp < V)
        return GT_ERR(GT_ERR_INVALID, "classifier_bwd: bad shape N=%d V=%d Vp=%d", N, V, Vp);
    if (N == 0) return GT_OK;
    return GT_CUDA_DISPATCH(k->dt, classifier_bwd_launch, im, dlogits, losses, logits, targets,
                            dloss, N, V, Vp);
}
