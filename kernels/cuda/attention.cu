/* Causal multi-head self-attention, forward and backward: gauntlet's own
 * straightforward kernels, and the entry points, which first offer the call
 * to cuDNN's fused flash attention (attention_cudnn.cu: bf16/fp16, never
 * stores the (T,T) probabilities). The own kernels are the fp32 path, the
 * fallback, and the simple, obviously-deterministic baseline the cuDNN path
 * is checked against (kernels.attention_cudnn.cuda).
 *
 * qkv(B,T,3C) holds q, k, v side by side; head h is columns [h*hs, (h+1)*hs)
 * of each, hs = C / NH <= ATT_MAX_HS. scale = 1/sqrt(hs).
 *
 * fwd: one warp per query row (b,h,t):
 *      1. lane l scores keys t2 = l, l+32, ... <= t (a serial dot product
 *         over hs), writing scale * q.k into att(b,h,t,t2) and keeping the
 *         max; warp max;
 *      2. the same lanes replace their entries with exp(s - max) and sum;
 *         warp sum;
 *      3. in chunks of 32 keys, each lane normalises its entry (p = e/sum,
 *         stored: att holds the probabilities (B,NH,T,T), 0 above the
 *         diagonal, like ref and cpu), and the chunk's probabilities are
 *         broadcast by shuffles while lane l accumulates out[d] for
 *         d = l, l+32, ... (coalesced reads of v rows).
 * State: att holds the probabilities (B,NH,T,T) when the own kernels
 *      take the shape (attention_state_floats then answers B*NH*T*T; on
 *      cuDNN's path it answers B*NH*T and the own kernels never run).
 * bwd: with P = att, dO = dout, D_t = sum_t2 P[t,t2] dP[t,t2] = dO_t . O_t
 *      (O_t recomputed as sum_t2 P[t,t2] v[t2]), dP[t,t2] = dO_t . v_t2 and
 *      dS = P (dP - D_t):
 *      kernel 1, one warp per query row t: D_t (kept in scratch (B,NH,T)),
 *        then dq_t += scale * sum_t2 dS[t,t2] k_t2;
 *      kernel 2, one warp per key row t2: dk_t2 += scale * sum_t dS[t,t2] q_t,
 *        dv_t2 += sum_t P[t,t2] dO_t, for t = t2 .. T-1 in chunks of 32.
 *      Every gradient element has one writer: no atomics.
 * Variants: qkv / out / dout / dqkv fp32, bf16 or fp16; att fp32; fp32
 *      arithmetic.
 * Bound: FLOP/s in principle (about 2*B*NH*T^2*hs for the forward, 2.5x that
 *      backward, half of it masked), but these kernels are CUDA-core and
 *      L2-bandwidth bound (q.k dot products per lane read k rows with a
 *      stride of 3C), far from tensor-core peak; plus writing and reading
 *      B*NH*T*T fp32 for att.
 * Determinism: each sum runs in a fixed order set by t, t2 and the lane
 *      number (serial dot products, xor butterflies, shuffles in lane order).
 * Speed: none claimed. The own kernels are the untuned fallback for what
 *      cuDNN's SDPA cannot run: they materialise B*NH*T^2 fp32 probabilities
 *      (768 MiB at gpt2-124m B=16 T=1024) and read k rows with a stride of
 *      3C, one lane per key (uncoalesced). Every call that runs them notes
 *      so (ATT_OWN_NOTE below), which the kernels suite's backend_notes
 *      carry beside their figures; ci/gpu_summary.py labels its own-
 *      attention training row the same way (docs/performance.md).
 */
#include <math.h>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"

/* The label of every figure the own kernels produce (a backend note per op
 * and shape; gt_cuda_note keeps each line once). */
#define ATT_OWN_NOTE                                                                               \
    "own attention (fallback: stores B*NH*T^2 fp32 scores, uncoalesced reads; not tuned for "      \
    "speed)"
static void att_note_own(gt_cuda_impl *im, const char *op, gt_dtype dt, int B, int T, int C,
                         int NH) {
    double mib = (double)B * NH * T * T * sizeof(float) / (1024.0 * 1024.0);
    gt_cuda_note(im, "%s B%d T%d NH%d hs%d %s: " ATT_OWN_NOTE ", att %.0f MiB", op, B, T, NH,
                 C / NH, gt_dtype_name(dt), mib);
}

#define ATT_WARPS 4    /* rows per block */
#define ATT_MAX_HS 256 /* head size limit: ATT_PER_LANE registers per lane */
#define ATT_PER_LANE (ATT_MAX_HS / 32)

/* Row r of the (B, NH, T) rows -> b, h, t. */
struct att_row {
    int b, h, t;
};
__device__ __forceinline__ att_row att_decompose(size_t r, int T_, int NH) {
    att_row a;
    a.t = (int)(r % T_);
    a.h = (int)((r / T_) % NH);
    a.b = (int)(r / ((size_t)T_ * NH));
    return a;
}

template <typename T>
__global__ void __launch_bounds__(ATT_WARPS * 32)
    attention_fwd_kernel(T *out, float *att, const T *__restrict__ qkv, int B, int T_, int C,
                         int NH) {
    __shared__ float q_s[ATT_WARPS][ATT_MAX_HS];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    size_t r = (size_t)blockIdx.x * ATT_WARPS + warp;
    if (r >= (size_t)B * NH * T_) return; /* whole warps only */
    att_row a = att_decompose(r, T_, NH);
    int hs = C / NH, t = a.t;
    size_t C3 = 3 * (size_t)C;
    const T *base = qkv + (size_t)a.b * T_ * C3 + (size_t)a.h * hs; /* q of row 0 */
    const T *kb = base + C, *vb = base + 2 * (size_t)C;
    float *q = q_s[warp];
    for (int d = lane; d < hs; d += 32)
        q[d] = gt_ld(base + (size_t)t * C3, d);
    __syncwarp();
    float scale = 1.0f / sqrtf((float)hs);
    float *arow = att + r * T_;

    float mx = -INFINITY;
    for (int t2 = lane; t2 <= t; t2 += 32) {
        const T *kr = kb + (size_t)t2 * C3;
        float dot = 0.0f;
        for (int d = 0; d < hs; d++)
            dot += q[d] * gt_ld(kr, d);
        float sc = dot * scale;
        arow[t2] = sc;
        mx = fmaxf(mx, sc);
    }
    mx = gt_warp_max(mx);
    float sum = 0.0f;
    for (int t2 = lane; t2 <= t; t2 += 32) { /* entries this lane wrote */
        float e = expf(arow[t2] - mx);
        arow[t2] = e;
        sum += e;
    }
    sum = gt_warp_sum(sum);

    float acc[ATT_PER_LANE];
#pragma unroll
    for (int i = 0; i < ATT_PER_LANE; i++)
        acc[i] = 0.0f;
    for (int b0 = 0; b0 <= t; b0 += 32) {
        int t2 = b0 + lane;
        float p = 0.0f;
        if (t2 <= t) {
            p = arow[t2] / sum;
            arow[t2] = p;
        }
        int n = min(32, t - b0 + 1);
        for (int j = 0; j < n; j++) {
            float pj = __shfl_sync(0xffffffffu, p, j);
            const T *vr = vb + (size_t)(b0 + j) * C3;
#pragma unroll
            for (int i = 0; i < ATT_PER_LANE; i++) {
                int d = lane + 32 * i;
                if (d < hs) acc[i] += pj * gt_ld(vr, d);
            }
        }
    }
    for (int t2 = t + 1 + lane; t2 < T_; t2 += 32)
        arow[t2] = 0.0f;
    T *o = out + ((size_t)a.b * T_ + t) * C + (size_t)a.h * hs;
#pragma unroll
    for (int i = 0; i < ATT_PER_LANE; i++) {
        int d = lane + 32 * i;
        if (d < hs) gt_st(o, d, acc[i]);
    }
}

/* Kernel 1 of the backward: one warp per query row; writes D(B,NH,T) and
 * accumulates dq. */
template <typename T>
__global__ void __launch_bounds__(ATT_WARPS * 32)
    attention_bwd_dq_kernel(T *dqkv, float *Dbuf, const T *__restrict__ dout,
                            const T *__restrict__ qkv, const float *__restrict__ att, int B, int T_,
                            int C, int NH) {
    __shared__ float do_s[ATT_WARPS][ATT_MAX_HS];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    size_t r = (size_t)blockIdx.x * ATT_WARPS + warp;
    if (r >= (size_t)B * NH * T_) return;
    att_row a = att_decompose(r, T_, NH);
    int hs = C / NH, t = a.t;
    size_t C3 = 3 * (size_t)C;
    const T *base = qkv + (size_t)a.b * T_ * C3 + (size_t)a.h * hs;
    const T *kb = base + C, *vb = base + 2 * (size_t)C;
    const T *dor = dout + ((size_t)a.b * T_ + t) * C + (size_t)a.h * hs;
    float *dov = do_s[warp];
    for (int d = lane; d < hs; d += 32)
        dov[d] = gt_ld(dor, d);
    __syncwarp();
    const float *prow = att + r * T_;
    float scale = 1.0f / sqrtf((float)hs);

    /* O_t[d] = sum_t2 P[t2] v_t2[d] (lane owns d = lane + 32 i); D = dO . O. */
    float o[ATT_PER_LANE];
#pragma unroll
    for (int i = 0; i < ATT_PER_LANE; i++)
        o[i] = 0.0f;
    for (int b0 = 0; b0 <= t; b0 += 32) {
        int t2 = b0 + lane;
        float p = t2 <= t ? prow[t2] : 0.0f;
        int n = min(32, t - b0 + 1);
        for (int j = 0; j < n; j++) {
            float pj = __shfl_sync(0xffffffffu, p, j);
            const T *vr = vb + (size_t)(b0 + j) * C3;
#pragma unroll
            for (int i = 0; i < ATT_PER_LANE; i++) {
                int d = lane + 32 * i;
                if (d < hs) o[i] += pj * gt_ld(vr, d);
            }
        }
    }
    float dd = 0.0f;
#pragma unroll
    for (int i = 0; i < ATT_PER_LANE; i++) {
        int d = lane + 32 * i;
        if (d < hs) dd += dov[d] * o[i];
    }
    float D = gt_warp_sum(dd);
    if (lane == 0) Dbuf[r] = D;

    /* dq_t = scale * sum_t2 P (dO.v_t2 - D) k_t2. */
    float acc[ATT_PER_LANE];
#pragma unroll
    for (int i = 0; i < ATT_PER_LANE; i++)
        acc[i] = 0.0f;
    for (int b0 = 0; b0 <= t; b0 += 32) {
        int t2 = b0 + lane;
        float ds = 0.0f;
        if (t2 <= t) {
            const T *vr = vb + (size_t)t2 * C3;
            float dp = 0.0f;
            for (int d = 0; d < hs; d++)
                dp += dov[d] * gt_ld(vr, d);
            ds = prow[t2] * (dp - D);
        }
        int n = min(32, t - b0 + 1);
        for (int j = 0; j < n; j++) {
            float dsj = __shfl_sync(0xffffffffu, ds, j);
            const T *kr = kb + (size_t)(b0 + j) * C3;
#pragma unroll
            for (int i = 0; i < ATT_PER_LANE; i++) {
                int d = lane + 32 * i;
                if (d < hs) acc[i] += dsj * gt_ld(kr, d);
            }
        }
    }
    T *dq = dqkv + ((size_t)a.b * T_ + t) * C3 + (size_t)a.h * hs;
#pragma unroll
    for (int i = 0; i < ATT_PER_LANE; i++) {
        int d = lane + 32 * i;
        if (d < hs) gt_st(dq, d, gt_ld(dq, d) + scale * acc[i]);
    }
}

/* Kernel 2 of the backward: one warp per key row t2; accumulates dk, dv. */
template <typename T>
__global__ void __launch_bounds__(ATT_WARPS * 32)
    attention_bwd_dkv_kernel(T *dqkv, const float *__restrict__ Dbuf, const T *__restrict__ dout,
                             const T *__restrict__ qkv, const float *__restrict__ att, int B,
                             int T_, int C, int NH) {
    __shared__ float v_s[ATT_WARPS][ATT_MAX_HS];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    size_t r = (size_t)blockIdx.x * ATT_WARPS + warp;
    if (r >= (size_t)B * NH * T_) return;
    att_row a = att_decompose(r, T_, NH);
    int hs = C / NH, t2 = a.t;
    size_t C3 = 3 * (size_t)C;
    const T *base = qkv + (size_t)a.b * T_ * C3 + (size_t)a.h * hs;
    const T *dob = dout + (size_t)a.b * T_ * C + (size_t)a.h * hs; /* dO of row 0 */
    float *vv = v_s[warp];
    for (int d = lane; d < hs; d += 32)
        vv[d] = gt_ld(base + 2 * (size_t)C + (size_t)t2 * C3, d);
    __syncwarp();
    size_t bh = r - t2;                     /* row index of (b, h, 0) */
    const float *pcol = att + bh * T_ + t2; /* P[t][t2] = pcol[t * T] */
    float scale = 1.0f / sqrtf((float)hs);

    float dk[ATT_PER_LANE], dv[ATT_PER_LANE];
#pragma unroll
    for (int i = 0; i < ATT_PER_LANE; i++)
        dk[i] = dv[i] = 0.0f;
    for (int b0 = t2; b0 < T_; b0 += 32) {
        int t = b0 + lane;
        float p = 0.0f, ds = 0.0f;
        if (t < T_) {
            p = pcol[(size_t)t * T_];
            const T *dor = dob + (size_t)t * C;
            float dp = 0.0f;
            for (int d = 0; d < hs; d++)
                dp += gt_ld(dor, d) * vv[d];
            ds = p * (dp - Dbuf[bh + t]);
        }
        int n = min(32, T_ - b0);
        for (int j = 0; j < n; j++) {
            float pj = __shfl_sync(0xffffffffu, p, j);
            float dsj = __shfl_sync(0xffffffffu, ds, j);
            const T *qr = base + (size_t)(b0 + j) * C3;
            const T *dor = dob + (size_t)(b0 + j) * C;
#pragma unroll
            for (int i = 0; i < ATT_PER_LANE; i++) {
                int d = lane + 32 * i;
                if (d < hs) {
                    dk[i] += dsj * gt_ld(qr, d);
                    dv[i] += pj * gt_ld(dor, d);
                }
            }
        }
    }
    T *dkr = dqkv + ((size_t)a.b * T_ + t2) * C3 + C + (size_t)a.h * hs;
    T *dvr = dkr + C;
#pragma unroll
    for (int i = 0; i < ATT_PER_LANE; i++) {
        int d = lane + 32 * i;
        if (d < hs) {
            gt_st(dkr, d, gt_ld(dkr, d) + scale * dk[i]);
            gt_st(dvr, d, gt_ld(dvr, d) + dv[i]);
        }
    }
}

static gt_status att_check(const char *op, int B, int T_, int C, int NH) {
    if (B < 0 || T_ < 0 || C <= 0 || NH <= 0 || C % NH != 0)
        return GT_ERR(GT_ERR_INVALID, "%s: bad shape B=%d T=%d C=%d NH=%d", op, B, T_, C, NH);
    if (C / NH > ATT_MAX_HS)
        return GT_ERR(GT_ERR_UNSUPPORTED, "%s: head size %d > %d is not supported", op, C / NH,
                      ATT_MAX_HS);
    return GT_OK;
}

static unsigned att_grid(size_t rows) {
    return (unsigned)((rows + ATT_WARPS - 1) / ATT_WARPS);
}

template <typename T>
static gt_status attention_fwd_launch(gt_cuda_impl *im, void *out, float *att, const void *qkv,
                                      int B, int T_, int C, int NH) {
    size_t rows = (size_t)B * NH * T_;
    attention_fwd_kernel<T><<<att_grid(rows), ATT_WARPS * 32, 0, im->stream>>>(
        (T *)out, att, (const T *)qkv, B, T_, C, NH);
    GT_CUDA_LAUNCHED("attention_fwd_kernel");
    return GT_OK;
}

gt_status gt_cuda_attention_fwd_own(gt_cuda_impl *im, gt_dtype dt, void *out, float *att,
                                    const void *qkv, int B, int T, int C, int NH) {
    return GT_CUDA_DISPATCH(dt, attention_fwd_launch, im, out, att, qkv, B, T, C, NH);
}

extern "C" gt_status gt_cuda_attention_fwd(const gt_kctx *k, void *out, float *att, const void *qkv,
                                           int B, int T, int C, int NH) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "attention_fwd", &im));
    GT_TRY(att_check("attention_fwd", B, T, C, NH));
    if ((size_t)B * T == 0) return GT_OK;
    int done = 0;
    GT_TRY(gt_cuda_sdpa_fwd(k, im, out, att, qkv, B, T, C, NH, &done));
    if (done) return GT_OK;
    GT_TRY(gt_cuda_attention_fwd_own(im, k->dt, out, att, qkv, B, T, C, NH));
    att_note_own(im, "attention_fwd", k->dt, B, T, C, NH);
    return GT_OK;
}

template <typename T>
static gt_status attention_bwd_launch(const gt_kctx *k, gt_cuda_impl *im, void *dqkv,
                                      const void *dout, const void *qkv, const float *att, int B,
                                      int T_, int C, int NH) {
    size_t rows = (size_t)B * NH * T_;
    void *scratch = NULL;
    GT_TRY(gt_cuda_scratch(k, rows * sizeof(float), &scratch));
    float *Dbuf = (float *)scratch;
    attention_bwd_dq_kernel<T><<<att_grid(rows), ATT_WARPS * 32, 0, im->stream>>>(
        (T *)dqkv, Dbuf, (const T *)dout, (const T *)qkv, att, B, T_, C, NH);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) {
        attention_bwd_dkv_kernel<T><<<att_grid(rows), ATT_WARPS * 32, 0, im->stream>>>(
            (T *)dqkv, Dbuf, (const T *)dout, (const T *)qkv, att, B, T_, C, NH);
        e = cudaGetLastError();
    }
    gt_cuda_scratch_free(k, scratch);
    if (e != cudaSuccess)
        return GT_ERR(GT_ERR_DEVICE, "launch of attention_bwd kernels failed: %s (%s)",
                      cudaGetErrorString(e), cudaGetErrorName(e));
    return GT_OK;
}

gt_status gt_cuda_attention_bwd_own(const gt_kctx *k, gt_cuda_impl *im, void *dqkv,
                                    const void *dout, const void *qkv, const float *att, int B,
                                    int T, int C, int NH) {
    return GT_CUDA_DISPATCH(k->dt, attention_bwd_launch, k, im, dqkv, dout, qkv, att, B, T, C, NH);
}

extern "C" gt_status gt_cuda_attention_bwd(const gt_kctx *k, void *dqkv, const void *dout,
                                           const void *qkv, const void *out, const float *att,
                                           int B, int T, int C, int NH) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "attention_bwd", &im));
    GT_TRY(att_check("attention_bwd", B, T, C, NH));
    if (!out) return GT_ERR(GT_ERR_INVALID, "attention_bwd: out (the forward's output) is NULL");
    if ((size_t)B * T == 0) return GT_OK;
    int done = 0;
    GT_TRY(gt_cuda_sdpa_bwd(k, im, dqkv, dout, qkv, out, att, B, T, C, NH, &done));
    if (done) return GT_OK;
    GT_TRY(gt_cuda_attention_bwd_own(k, im, dqkv, dout, qkv, att, B, T, C, NH));
    att_note_own(im, "attention_bwd", k->dt, B, T, C, NH);
    return GT_OK;
}

/* The answer of the path decision the ops take (gt_cuda_sdpa_state_floats).
 * A shape or context the ops would refuse, or a cuDNN failure while
 * building the shape's plans (the op will report it), answers the own
 * kernels' B*NH*T*T: never less than the op could write. */
extern "C" size_t gt_cuda_attention_state_floats(const gt_kctx *k, int B, int T, int C, int NH) {
    if (B <= 0 || T <= 0 || NH <= 0) return 0;
    size_t full = (size_t)B * NH * T * T, n = full;
    gt_cuda_impl *im = NULL;
    gt_status s = gt_cuda_begin(k, "attention_state_floats", &im);
    if (s == GT_OK) s = att_check("attention_state_floats", B, T, C, NH);
    if (s == GT_OK) s = gt_cuda_sdpa_state_floats(im, k->dt, B, T, C, NH, &n);
    if (s != GT_OK) {
        gt_error_clear(); /* the op itself reports it */
        return full;
    }
    return n < full ? n : full;
}
