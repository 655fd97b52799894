/* 2-D convolution (torch.nn.Conv2d: NCHW, cross-correlation, zero padding,
 * one stride, no dilation or groups) through cuDNN's convolution API,
 * forward and backward.
 *
 * fwd: out(N,OC,OH,OW) = conv(inp(N,C,H,W), weight(OC,C,KH,KW)) + bias(OC):
 *      an own kernel writes the bias into out, then cudnnConvolutionForward
 *      adds the convolution with beta = 1, so every output is rounded to
 *      the storage type once (beta = 0 without a bias).
 * bwd: dinp += cudnnConvolutionBackwardData, dweight +=
 *      cudnnConvolutionBackwardFilter (both beta = 1: ops.h's "accumulate"),
 *      dbias(OC) += sum over (N, OH, OW) of dout: an own kernel, one block
 *      per output channel (cuDNN's BackwardBias is not documented as
 *      deterministic, and the sum is cheap).
 * Variants: fp32 storage with CUDNN_FMA_MATH (FMA kernels only: no TF32.
 *      CUDNN_DEFAULT_MATH would allow TF32 tensor cores on Ampere and
 *      later, 10 mantissa bits, far outside fp32's tolerance); bf16 and
 *      fp16 storage with CUDNN_TENSOR_OP_MATH, compute type FLOAT (fp32
 *      accumulation) in all three.
 * Algorithms: chosen explicitly, never left to cuDNN at call time. For
 *      each direction, the candidates of cuDNN's heuristic
 *      (cudnnGet*Algorithm_v7, best first) are filtered: status success,
 *      determinism CUDNN_DETERMINISTIC (and never the algorithms cuDNN's
 *      header marks non-deterministic: BWD_DATA_ALGO_0, BWD_FILTER_ALGO_0
 *      and _3, whatever a heuristic reports), for fp32 the FMA math type
 *      only, a workspace cuDNN can size and of at most CONV_WORKSPACE_MAX;
 *      the first survivor is used. No survivor (the heuristic may rank
 *      no deterministic algorithm for some 16-bit backward-filter shapes):
 *      the algorithm PyTorch's deterministic mode runs for the direction
 *      (IMPLICIT_PRECOMP_GEMM, BWD_DATA_ALGO_1, BWD_FILTER_ALGO_1), if
 *      cuDNN sizes its workspace with the plan's math type (fp32: FMA)
 *      within the limit; the note then says "fallback" and lists why each
 *      candidate was refused. Neither: the op returns GT_ERR_UNSUPPORTED
 *      naming the candidates, why each was refused, and why the fallback
 *      was. The heuristic, unlike cudnnFind* (which times the
 *      candidates and may rank them differently from one process or one
 *      moment to the next), depends only on the shape, the dtype, the
 *      device and the cuDNN version: the same build on the same card picks
 *      the same algorithms in every process, so two runs are bitwise equal
 *      across processes too. The price: the heuristic's pick may be slower
 *      than the fastest deterministic one.
 * Cache: each choice is kept in a process-wide table of CONV_PLANS plans
 *      (with the cuDNN descriptors), keyed by device, dtype and shape, and
 *      reused by every later call: stable within the process even if
 *      cuDNN's heuristic were not. Past CONV_PLANS distinct keys a call
 *      builds a private plan and frees it afterwards (same choice, since
 *      the heuristic is deterministic; only slower). Every choice is also
 *      written to the backend's notes (gt_cuda_note), one line per shape
 *      and direction, e.g. "conv2d_fwd N8 C16 H32 W32 OC32 K3x3 s1 p1 fp32:
 *      cudnn IMPLICIT_PRECOMP_GEMM (deterministic, FMA math: no TF32,
 *      workspace 0 B)".
 * Workspace: from the backend's caching allocator (gt_cuda_scratch),
 *      freed once the calls are queued.
 * Alignment: the legacy API picks its algorithm from the descriptors alone,
 *      never the pointers, and gives no way to say that a tensor is less
 *      aligned than its kernels may assume (vector loads of 16 bytes;
 *      cuDNN 7 documented 4 bytes as the minimum even for fp16). A model's
 *      weights and their gradients sit at the offsets of a flat parameter
 *      buffer, only element-aligned in general (2 bytes in bf16/fp16), so
 *      every tensor cuDNN reads or writes whose pointer is not
 *      GT_CUDA_STAGE_ALIGN-byte aligned is staged through scratch
 *      (gt_cuda_stage_ptr, common.cuh): copied in when cuDNN reads it,
 *      copied back when it writes it. Activations carved from an arena are aligned
 *      and pass straight through; the same data give the same bits either
 *      way (the algorithm does not depend on the pointers).
 * Bound: compute for the usual shapes (2 N OC C KH KW OH OW FLOPs per
 *      direction); memory for 1x1 kernels with few channels.
 * Exists only with cuDNN (GT_HAVE_CUDNN); without it the conv slots of
 *      gt_ops_cuda are empty and the ops report skipped. Compiled in but
 *      without a handle (cudnnCreate failed when the backend was made: a
 *      sub-library or nvrtc missing), both ops return GT_ERR_UNSUPPORTED
 *      saying so, before touching any argument: skipped, as without cuDNN.
 */
#include "gt_config.h"

#if GT_HAVE_CUDNN

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda_vision.h"

#define CONV_PLANS 256                         /* cached shapes per process */
#define CONV_WORKSPACE_MAX ((size_t)256 << 20) /* largest workspace accepted */
#define CONV_MAX_CANDIDATES 16                 /* >= any *_ALGO_COUNT */
#define CONV_BIAS_THREADS 256                  /* dbias: threads per channel */

/* A failing cuDNN call as GT_ERR_DEVICE with the statement and cuDNN's
 * message. Only for functions returning gt_status. */
#define CONV_CUDNN_TRY(stmt)                                                                       \
    do {                                                                                           \
        cudnnStatus_t conv_s_ = (stmt);                                                            \
        if (conv_s_ != CUDNN_STATUS_SUCCESS)                                                       \
            return GT_ERR(GT_ERR_DEVICE, "%s failed: %s", #stmt, cudnnGetErrorString(conv_s_));    \
    } while (0)

enum { CONV_FWD = 0, CONV_BWD_DATA, CONV_BWD_FILTER, CONV_DIRS };
static const char *const conv_dir_op[CONV_DIRS] = {"conv2d_fwd", "conv2d_bwd data",
                                                   "conv2d_bwd filter"};

static const char *fwd_algo_name(int a) {
    static const char *const n[] = {
        "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
        "WINOGRAD",      "WINOGRAD_NONFUSED"};
    return a >= 0 && a < (int)(sizeof n / sizeof n[0]) ? n[a] : "UNKNOWN";
}
static const char *bwd_data_algo_name(int a) {
    static const char *const n[] = {"ALGO_0",     "ALGO_1",   "FFT",
                                    "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
    return a >= 0 && a < (int)(sizeof n / sizeof n[0]) ? n[a] : "UNKNOWN";
}
static const char *bwd_filter_algo_name(int a) {
    static const char *const n[] = {
        "ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};
    return a >= 0 && a < (int)(sizeof n / sizeof n[0]) ? n[a] : "UNKNOWN";
}
static const char *algo_name(int dir, int a) {
    return dir == CONV_FWD        ? fwd_algo_name(a)
           : dir == CONV_BWD_DATA ? bwd_data_algo_name(a)
                                  : bwd_filter_algo_name(a);
}
/* cuDNN's header marks these non-deterministic (atomics); refused even if
 * a heuristic result claimed otherwise. */
static int known_nondeterministic(int dir, int a) {
    return (dir == CONV_BWD_DATA && a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0) ||
           (dir == CONV_BWD_FILTER &&
            (a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3));
}
static const char *math_name(cudnnMathType_t m) {
    switch (m) {
    case CUDNN_DEFAULT_MATH:
        return "default math";
    case CUDNN_TENSOR_OP_MATH:
        return "tensor-op math";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
        return "tensor-op math with conversion";
    case CUDNN_FMA_MATH:
        return "FMA math: no TF32";
    default:
        return "unknown math";
    }
}

/* ---- plans: the cached descriptors and choices --------------------------------------- */

typedef struct conv_choice {
    int ready;
    int algo;
    size_t ws;                         /* workspace bytes */
    cudnnConvolutionDescriptor_t conv; /* math type set for algo */
    char note[768];
} conv_choice;

typedef struct conv_plan {
    int device;
    gt_dtype dt;
    gt_conv2d_shape s;
    int OH, OW;
    cudnnDataType_t data;
    cudnnMathType_t math; /* asked for; a choice may use a narrower one */
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    conv_choice dir[CONV_DIRS];
} conv_plan;

static pthread_mutex_t g_conv_lock = PTHREAD_MUTEX_INITIALIZER;
static conv_plan *g_conv_plans[CONV_PLANS]; /* live for the process */
static int g_conv_nplans;

static int same_key(const conv_plan *p, int device, gt_dtype dt, const gt_conv2d_shape *s) {
    return p->device == device && p->dt == dt && p->s.N == s->N && p->s.C == s->C &&
           p->s.H == s->H && p->s.W == s->W && p->s.OC == s->OC && p->s.KH == s->KH &&
           p->s.KW == s->KW && p->s.stride == s->stride && p->s.pad == s->pad;
}

static void plan_free(conv_plan *p) {
    if (!p) return;
    for (int d = 0; d < CONV_DIRS; d++)
        if (p->dir[d].conv) (void)cudnnDestroyConvolutionDescriptor(p->dir[d].conv);
    if (p->x) (void)cudnnDestroyTensorDescriptor(p->x);
    if (p->y) (void)cudnnDestroyTensorDescriptor(p->y);
    if (p->w) (void)cudnnDestroyFilterDescriptor(p->w);
    free(p);
}

static gt_status plan_init(conv_plan *p, int device, gt_dtype dt, const gt_conv2d_shape *s, int OH,
                           int OW) {
    p->device = device;
    p->dt = dt;
    p->s = *s;
    p->OH = OH;
    p->OW = OW;
    switch (dt) {
    case GT_DTYPE_FP32:
        p->data = CUDNN_DATA_FLOAT;
        p->math = CUDNN_FMA_MATH;
        break;
    case GT_DTYPE_BF16:
        p->data = CUDNN_DATA_BFLOAT16;
        p->math = CUDNN_TENSOR_OP_MATH;
        break;
    case GT_DTYPE_FP16:
        p->data = CUDNN_DATA_HALF;
        p->math = CUDNN_TENSOR_OP_MATH;
        break;
    default:
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "cuda conv2d: dtype %s is not supported (fp32, bf16, fp16)",
                      gt_dtype_name(dt));
    }
    CONV_CUDNN_TRY(cudnnCreateTensorDescriptor(&p->x));
    CONV_CUDNN_TRY(cudnnCreateTensorDescriptor(&p->y));
    CONV_CUDNN_TRY(cudnnCreateFilterDescriptor(&p->w));
    CONV_CUDNN_TRY(
        cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NCHW, p->data, s->N, s->C, s->H, s->W));
    CONV_CUDNN_TRY(
        cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NCHW, p->data, s->N, s->OC, OH, OW));
    CONV_CUDNN_TRY(
        cudnnSetFilter4dDescriptor(p->w, p->data, CUDNN_TENSOR_NCHW, s->OC, s->C, s->KH, s->KW));
    return GT_OK;
}

/* One candidate of a heuristic, whatever the direction. */
typedef struct conv_cand {
    int algo;
    cudnnStatus_t status;
    cudnnDeterminism_t det;
    cudnnMathType_t math;
} conv_cand;

static gt_status query_candidates(gt_cuda_impl *im, conv_plan *p, int dir,
                                  cudnnConvolutionDescriptor_t conv, conv_cand *c, int *nc) {
    int max = 0, got = 0;
    *nc = 0;
    if (dir == CONV_FWD) {
        cudnnConvolutionFwdAlgoPerf_t perf[CONV_MAX_CANDIDATES];
        CONV_CUDNN_TRY(cudnnGetConvolutionForwardAlgorithmMaxCount(im->cudnn, &max));
        if (max > CONV_MAX_CANDIDATES) max = CONV_MAX_CANDIDATES;
        CONV_CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(im->cudnn, p->x, p->w, conv, p->y,
                                                              max, &got, perf));
        for (int i = 0; i < got; i++)
            c[i] = (conv_cand){(int)perf[i].algo, perf[i].status, perf[i].determinism,
                               perf[i].mathType};
    } else if (dir == CONV_BWD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CONV_MAX_CANDIDATES];
        CONV_CUDNN_TRY(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(im->cudnn, &max));
        if (max > CONV_MAX_CANDIDATES) max = CONV_MAX_CANDIDATES;
        CONV_CUDNN_TRY(cudnnGetConvolutionBackwardDataAlgorithm_v7(im->cudnn, p->w, p->y, conv,
                                                                   p->x, max, &got, perf));
        for (int i = 0; i < got; i++)
            c[i] = (conv_cand){(int)perf[i].algo, perf[i].status, perf[i].determinism,
                               perf[i].mathType};
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CONV_MAX_CANDIDATES];
        CONV_CUDNN_TRY(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(im->cudnn, &max));
        if (max > CONV_MAX_CANDIDATES) max = CONV_MAX_CANDIDATES;
        CONV_CUDNN_TRY(cudnnGetConvolutionBackwardFilterAlgorithm_v7(im->cudnn, p->x, p->y, conv,
                                                                     p->w, max, &got, perf));
        for (int i = 0; i < got; i++)
            c[i] = (conv_cand){(int)perf[i].algo, perf[i].status, perf[i].determinism,
                               perf[i].mathType};
    }
    *nc = got < 0 ? 0 : got > CONV_MAX_CANDIDATES ? CONV_MAX_CANDIDATES : got;
    return GT_OK;
}

static cudnnStatus_t workspace_size(gt_cuda_impl *im, conv_plan *p, int dir,
                                    cudnnConvolutionDescriptor_t conv, int algo, size_t *bytes) {
    *bytes = 0;
    if (dir == CONV_FWD)
        return cudnnGetConvolutionForwardWorkspaceSize(im->cudnn, p->x, p->w, conv, p->y,
                                                       (cudnnConvolutionFwdAlgo_t)algo, bytes);
    if (dir == CONV_BWD_DATA)
        return cudnnGetConvolutionBackwardDataWorkspaceSize(
            im->cudnn, p->w, p->y, conv, p->x, (cudnnConvolutionBwdDataAlgo_t)algo, bytes);
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(
        im->cudnn, p->x, p->y, conv, p->w, (cudnnConvolutionBwdFilterAlgo_t)algo, bytes);
}

/* The algorithm PyTorch's deterministic path takes for each direction:
 * with torch.backends.cudnn.deterministic and no benchmark, PyTorch asks no
 * heuristic and runs search::DEFAULT_ALGO with its workspace size
 * (aten/src/ATen/native/cudnn/Conv_v7.cpp, onlyDefaultAlgorithm; fp32
 * without TF32 in FMA math, fp16 in tensor-op math). All three are
 * deterministic by cuDNN's documentation. */
static int fallback_algo(int dir) {
    return dir == CONV_FWD        ? (int)CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM
           : dir == CONV_BWD_DATA ? (int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_1
                                  : (int)CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
}

/* 1 when the fallback algorithm `algo` can run with the plan's math type
 * (fp32: FMA only, no TF32): cuDNN sizes its workspace, within
 * CONV_WORKSPACE_MAX. The descriptor keeps that math type. Else 0 with
 * the reason in why. */
static int fallback_usable(gt_cuda_impl *im, conv_plan *p, int dir,
                           cudnnConvolutionDescriptor_t conv, int algo, size_t *ws, char *why,
                           size_t whylen) {
    cudnnMathType_t m = CUDNN_DEFAULT_MATH;
    cudnnStatus_t cs = cudnnSetConvolutionMathType(conv, p->math);
    if (cs == CUDNN_STATUS_SUCCESS) cs = cudnnGetConvolutionMathType(conv, &m);
    if (cs != CUDNN_STATUS_SUCCESS) {
        snprintf(why, whylen, "math type %s not set: %s", math_name(p->math),
                 cudnnGetErrorString(cs));
        return 0;
    }
    if (m != p->math) { /* fp32 with anything but FMA could use TF32 */
        snprintf(why, whylen, "math type %s asked, %s set", math_name(p->math), math_name(m));
        return 0;
    }
    cs = workspace_size(im, p, dir, conv, algo, ws);
    if (cs != CUDNN_STATUS_SUCCESS) {
        snprintf(why, whylen, "workspace size query failed: %s", cudnnGetErrorString(cs));
        return 0;
    }
    if (*ws > CONV_WORKSPACE_MAX) {
        snprintf(why, whylen, "workspace too large (%zu B, at most %zu B)", *ws,
                 CONV_WORKSPACE_MAX);
        return 0;
    }
    return 1;
}

/* Chooses the algorithm of direction `dir` (see the top) into p->dir[dir]. */
static gt_status choose(gt_cuda_impl *im, conv_plan *p, int dir) {
    conv_choice *ch = &p->dir[dir];
    if (!ch->conv) {
        CONV_CUDNN_TRY(cudnnCreateConvolutionDescriptor(&ch->conv));
        CONV_CUDNN_TRY(cudnnSetConvolution2dDescriptor(ch->conv, p->s.pad, p->s.pad, p->s.stride,
                                                       p->s.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                                       CUDNN_DATA_FLOAT));
    }
    CONV_CUDNN_TRY(cudnnSetConvolutionMathType(ch->conv, p->math));
    conv_cand c[CONV_MAX_CANDIDATES];
    int nc = 0;
    GT_TRY(query_candidates(im, p, dir, ch->conv, c, &nc));

    char why[1024] = "";
    size_t wl = 0;
    for (int i = 0; i < nc; i++) {
        const char *refused = NULL;
        size_t ws = 0;
        if (c[i].status != CUDNN_STATUS_SUCCESS)
            refused = cudnnGetErrorString(c[i].status);
        else if (c[i].det != CUDNN_DETERMINISTIC || known_nondeterministic(dir, c[i].algo))
            refused = "non-deterministic";
        else if (p->data == CUDNN_DATA_FLOAT && c[i].math != CUDNN_FMA_MATH)
            refused = "not FMA math (TF32 possible)";
        else if (cudnnSetConvolutionMathType(ch->conv, c[i].math) != CUDNN_STATUS_SUCCESS ||
                 workspace_size(im, p, dir, ch->conv, c[i].algo, &ws) != CUDNN_STATUS_SUCCESS)
            refused = "workspace size unavailable";
        else if (ws > CONV_WORKSPACE_MAX)
            refused = "workspace too large";
        if (!refused) {
            ch->algo = c[i].algo;
            ch->ws = ws;
            const gt_conv2d_shape *s = &p->s;
            snprintf(ch->note, sizeof ch->note,
                     "%s N%d C%d H%d W%d OC%d K%dx%d s%d p%d %s: cudnn %s (deterministic, %s, "
                     "workspace %zu B)",
                     conv_dir_op[dir], s->N, s->C, s->H, s->W, s->OC, s->KH, s->KW, s->stride,
                     s->pad, gt_dtype_name(p->dt), algo_name(dir, c[i].algo), math_name(c[i].math),
                     ws);
            ch->ready = 1;
            return GT_OK;
        }
        if (wl < sizeof why)
            wl += (size_t)snprintf(why + wl, sizeof why - wl, "%s%s: %s", i ? "; " : "",
                                   algo_name(dir, c[i].algo), refused);
    }
    /* No usable deterministic candidate: PyTorch's deterministic choice
     * for the direction, if cuDNN can size it with the math type asked for. */
    const gt_conv2d_shape *s = &p->s;
    int fb = fallback_algo(dir);
    char fb_why[160] = "";
    size_t ws = 0;
    if (fallback_usable(im, p, dir, ch->conv, fb, &ws, fb_why, sizeof fb_why)) {
        ch->algo = fb;
        ch->ws = ws;
        snprintf(ch->note, sizeof ch->note,
                 "%s N%d C%d H%d W%d OC%d K%dx%d s%d p%d %s: cudnn %s (fallback, deterministic, "
                 "%s, workspace %zu B; the heuristic offered no usable deterministic candidate: "
                 "%.400s)",
                 conv_dir_op[dir], s->N, s->C, s->H, s->W, s->OC, s->KH, s->KW, s->stride, s->pad,
                 gt_dtype_name(p->dt), algo_name(dir, fb), math_name(p->math), ws,
                 nc ? why : "no candidates");
        ch->ready = 1;
        return GT_OK;
    }
    return GT_ERR(GT_ERR_UNSUPPORTED,
                  "cuda %s N%d C%d H%d W%d OC%d K%dx%d s%d p%d %s: cuDNN %zu offers no usable "
                  "deterministic algorithm (%d candidates: %s; fallback %s: %s); this shape "
                  "cannot run reproducibly on this card",
                  conv_dir_op[dir], s->N, s->C, s->H, s->W, s->OC, s->KH, s->KW, s->stride, s->pad,
                  gt_dtype_name(p->dt), cudnnGetVersion(), nc, nc ? why : "none",
                  algo_name(dir, fb), fb_why);
}

/* The plan of (device, dt, s) with the directions in `dirs` (bit d:
 * direction d) chosen. *owned: the caller frees the plan (table full). */
static gt_status plan_get(gt_cuda_impl *im, gt_dtype dt, const gt_conv2d_shape *s, int OH, int OW,
                          unsigned dirs, conv_plan **out, int *owned) {
    *out = NULL;
    *owned = 0;
    gt_status st = GT_OK;
    pthread_mutex_lock(&g_conv_lock);
    conv_plan *p = NULL;
    for (int i = 0; i < g_conv_nplans && !p; i++)
        if (same_key(g_conv_plans[i], im->device, dt, s)) p = g_conv_plans[i];
    if (!p) {
        p = (conv_plan *)calloc(1, sizeof *p);
        if (!p) st = GT_ERR(GT_ERR_OOM, "cuda conv2d: out of host memory for a plan");
        if (st == GT_OK) st = plan_init(p, im->device, dt, s, OH, OW);
        if (st == GT_OK && g_conv_nplans < CONV_PLANS)
            g_conv_plans[g_conv_nplans++] = p;
        else if (st == GT_OK)
            *owned = 1;
        if (st != GT_OK) {
            plan_free(p);
            p = NULL;
        }
    }
    for (int d = 0; d < CONV_DIRS && st == GT_OK; d++)
        if ((dirs & (1u << d)) && !p->dir[d].ready) st = choose(im, p, d);
    pthread_mutex_unlock(&g_conv_lock);
    if (st != GT_OK) {
        if (*owned) plan_free(p);
        *owned = 0;
        return st;
    }
    *out = p;
    return GT_OK;
}

/* ---- own kernels: bias and dbias ------------------------------------------------------ */

/* out(N,OC,OHW) = bias(OC), before the convolution adds itself (beta = 1). */
template <typename T>
__global__ void conv_bias_fill_kernel(T *out, const T *__restrict__ bias, size_t n, int OC,
                                      int OHW) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = bias[(i / OHW) % OC];
}

/* dbias(OC) += sum over (n, p) of dout(N,OC,OHW): grid OC, block
 * CONV_BIAS_THREADS; each thread sums its strided elements in order, then
 * warp butterflies, then warp 0's lane 0 adds the warps' sums in order. */
template <typename T>
__global__ void conv_dbias_kernel(T *dbias, const T *__restrict__ dout, int N, int OC, int OHW) {
    __shared__ float part[CONV_BIAS_THREADS / 32];
    int o = blockIdx.x;
    unsigned ohw = (unsigned)OHW, cnt = (unsigned)N * ohw;
    const T *d = dout + (size_t)o * OHW;
    float s = 0.0f;
    for (unsigned i = threadIdx.x; i < cnt; i += CONV_BIAS_THREADS)
        s += gt_ld(d, (size_t)(i / ohw) * OC * OHW + i % ohw);
    s = gt_warp_sum(s);
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.0f;
        for (int w = 0; w < CONV_BIAS_THREADS / 32; w++)
            t += part[w];
        gt_st(dbias, o, gt_ld(dbias, o) + t);
    }
}

template <typename T>
static gt_status conv_bias_fill_launch(gt_cuda_impl *im, void *out, const void *bias, size_t n,
                                       int OC, int OHW) {
    conv_bias_fill_kernel<T>
        <<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>((T *)out, (const T *)bias, n, OC, OHW);
    GT_CUDA_LAUNCHED("conv_bias_fill_kernel");
    return GT_OK;
}

template <typename T>
static gt_status conv_dbias_launch(gt_cuda_impl *im, void *dbias, const void *dout, int N, int OC,
                                   int OHW) {
    conv_dbias_kernel<T><<<(unsigned)OC, CONV_BIAS_THREADS, 0, im->stream>>>(
        (T *)dbias, (const T *)dout, N, OC, OHW);
    GT_CUDA_LAUNCHED("conv_dbias_kernel");
    return GT_OK;
}

/* ---- the ops ---------------------------------------------------------------------------- */

/* GT_ERR_UNSUPPORTED when the backend has no cuDNN handle (cudnnCreate
 * failed at creation, which leaves the rest of the backend working):
 * nothing of cuDNN is called then. The message quotes the reason
 * cudnnCreate gave (im->cudnn_reason, also in the backend's notes). */
static gt_status conv_need_cudnn(const gt_cuda_impl *im, const char *op) {
    if (im->cudnn) return GT_OK;
    return GT_ERR(GT_ERR_UNSUPPORTED,
                  "cuda %s: cuDNN is unavailable on this backend (%s): no convolution", op,
                  im->cudnn_reason[0] ? im->cudnn_reason
                                      : "no handle; cudnnCreate failed when the backend was created");
}

/* GT_OK when s is a convolution ops.h accepts and cuDNN's 32-bit
 * descriptors can hold; OH, OW out. */
static gt_status conv_check(const char *op, const gt_conv2d_shape *s, int *OH, int *OW) {
    if (!s) return GT_ERR(GT_ERR_INVALID, "%s: shape is NULL", op);
    *OH = gt_conv2d_out_h(s);
    *OW = gt_conv2d_out_w(s);
    if (s->N < 0 || s->C < 1 || s->OC < 1 || *OH < 1 || *OW < 1)
        return GT_ERR(GT_ERR_INVALID,
                      "%s: N=%d C=%d H=%d W=%d OC=%d KH=%d KW=%d stride=%d pad=%d gives "
                      "OH=%d OW=%d (need N >= 0, C, OC, stride >= 1, pad >= 0 and a kernel "
                      "no larger than the padded input)",
                      op, s->N, s->C, s->H, s->W, s->OC, s->KH, s->KW, s->stride, s->pad, *OH, *OW);
    size_t xin = (size_t)s->N * s->C * s->H * s->W, yout = (size_t)s->N * s->OC * *OH * *OW;
    size_t wts = (size_t)s->OC * s->C * s->KH * s->KW;
    if (xin > INT_MAX || yout > INT_MAX || wts > INT_MAX)
        return GT_ERR(GT_ERR_INVALID,
                      "%s: a tensor of %zu / %zu / %zu elements (input / output / weight) "
                      "exceeds cuDNN's 2^31 - 1 per descriptor: split the batch",
                      op, xin, yout, wts);
    return GT_OK;
}

extern "C" gt_status gt_cuda_conv2d_fwd(const gt_kctx *k, void *out, const void *inp,
                                        const void *weight, const void *bias,
                                        const gt_conv2d_shape *s) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "conv2d_fwd", &im));
    GT_TRY(conv_need_cudnn(im, "conv2d_fwd"));
    int OH = 0, OW = 0;
    GT_TRY(conv_check("conv2d_fwd", s, &OH, &OW));
    if (s->N == 0) return GT_OK;
    conv_plan *p;
    int owned;
    GT_TRY(plan_get(im, k->dt, s, OH, OW, 1u << CONV_FWD, &p, &owned));
    const conv_choice *ch = &p->dir[CONV_FWD];
    gt_cuda_note(im, "%s", ch->note);

    /* what cuDNN sees: out is never read back from the caller's memory
     * (the bias fill, or beta = 0, gives its initial contents) */
    size_t es = gt_dtype_size(k->dt), nout = (size_t)s->N * s->OC * OH * OW;
    gt_cuda_stage sg = gt_cuda_stage_begin(k, im);
    void *x = NULL, *w = NULL, *y = NULL;
    gt_status st = gt_cuda_stage_ptr(&sg, inp, (size_t)s->N * s->C * s->H * s->W * es, 1, 0, &x);
    if (st == GT_OK)
        st = gt_cuda_stage_ptr(&sg, weight, (size_t)s->OC * s->C * s->KH * s->KW * es, 1, 0, &w);
    if (st == GT_OK) st = gt_cuda_stage_ptr(&sg, out, nout * es, 0, 1, &y);
    if (st == GT_OK && sg.n)
        gt_cuda_note(im, "conv2d_fwd %s: tensors not %d-byte aligned staged through scratch",
                     gt_dtype_name(k->dt), GT_CUDA_STAGE_ALIGN);
    if (st == GT_OK && bias)
        st = GT_CUDA_DISPATCH(k->dt, conv_bias_fill_launch, im, y, bias, nout, s->OC, OH * OW);
    void *ws = NULL;
    if (st == GT_OK && ch->ws) st = gt_cuda_scratch(k, ch->ws, &ws);
    if (st == GT_OK) {
        float alpha = 1.0f, beta = bias ? 1.0f : 0.0f; /* float for every storage type */
        cudnnStatus_t cs = cudnnConvolutionForward(im->cudnn, &alpha, p->x, x, p->w, w, ch->conv,
                                                   (cudnnConvolutionFwdAlgo_t)ch->algo, ws, ch->ws,
                                                   &beta, p->y, y);
        if (cs != CUDNN_STATUS_SUCCESS)
            st = GT_ERR(GT_ERR_DEVICE, "cudnnConvolutionForward (%s) failed: %s", ch->note,
                        cudnnGetErrorString(cs));
    }
    if (ws) gt_cuda_scratch_free(k, ws);
    st = gt_cuda_unstage(&sg, st);
    if (owned) plan_free(p);
    return st;
}

extern "C" gt_status gt_cuda_conv2d_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                                        const void *dout, const void *inp, const void *weight,
                                        const gt_conv2d_shape *s) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "conv2d_bwd", &im));
    GT_TRY(conv_need_cudnn(im, "conv2d_bwd"));
    int OH = 0, OW = 0;
    GT_TRY(conv_check("conv2d_bwd", s, &OH, &OW));
    if (s->N == 0) return GT_OK; /* nothing to accumulate */
    unsigned dirs = (1u << CONV_BWD_FILTER) | (dinp ? 1u << CONV_BWD_DATA : 0u);
    conv_plan *p;
    int owned;
    GT_TRY(plan_get(im, k->dt, s, OH, OW, dirs, &p, &owned));
    const conv_choice *cd = &p->dir[CONV_BWD_DATA], *cf = &p->dir[CONV_BWD_FILTER];
    if (dinp) gt_cuda_note(im, "%s", cd->note);
    gt_cuda_note(im, "%s", cf->note);

    gt_status st = GT_OK;
    if (dbias) /* the own kernel: any alignment */
        st = GT_CUDA_DISPATCH(k->dt, conv_dbias_launch, im, dbias, dout, s->N, s->OC, OH * OW);
    /* what cuDNN sees; dinp and dweight accumulate (beta = 1): staged both ways */
    size_t es = gt_dtype_size(k->dt), nin = (size_t)s->N * s->C * s->H * s->W;
    size_t nw = (size_t)s->OC * s->C * s->KH * s->KW, nout = (size_t)s->N * s->OC * OH * OW;
    gt_cuda_stage sg = gt_cuda_stage_begin(k, im);
    void *dy = NULL, *x = NULL, *w = NULL, *dx = NULL, *dw = NULL;
    if (st == GT_OK) st = gt_cuda_stage_ptr(&sg, dout, nout * es, 1, 0, &dy);
    if (st == GT_OK) st = gt_cuda_stage_ptr(&sg, inp, nin * es, 1, 0, &x);
    if (st == GT_OK) st = gt_cuda_stage_ptr(&sg, dweight, nw * es, 1, 1, &dw);
    if (st == GT_OK && dinp) st = gt_cuda_stage_ptr(&sg, weight, nw * es, 1, 0, &w);
    if (st == GT_OK && dinp) st = gt_cuda_stage_ptr(&sg, dinp, nin * es, 1, 1, &dx);
    if (st == GT_OK && sg.n)
        gt_cuda_note(im, "conv2d_bwd %s: tensors not %d-byte aligned staged through scratch",
                     gt_dtype_name(k->dt), GT_CUDA_STAGE_ALIGN);
    size_t wsz = cf->ws;
    if (dinp && cd->ws > wsz) wsz = cd->ws;
    void *ws = NULL;
    if (st == GT_OK && wsz) st = gt_cuda_scratch(k, wsz, &ws);
    float alpha = 1.0f, beta = 1.0f; /* accumulate */
    if (st == GT_OK && dinp) {
        cudnnStatus_t cs = cudnnConvolutionBackwardData(
            im->cudnn, &alpha, p->w, w, p->y, dy, cd->conv, (cudnnConvolutionBwdDataAlgo_t)cd->algo,
            ws, wsz, &beta, p->x, dx);
        if (cs != CUDNN_STATUS_SUCCESS)
            st = GT_ERR(GT_ERR_DEVICE, "cudnnConvolutionBackwardData (%s) failed: %s", cd->note,
                        cudnnGetErrorString(cs));
    }
    if (st == GT_OK) {
        cudnnStatus_t cs = cudnnConvolutionBackwardFilter(
            im->cudnn, &alpha, p->x, x, p->y, dy, cf->conv,
            (cudnnConvolutionBwdFilterAlgo_t)cf->algo, ws, wsz, &beta, p->w, dw);
        if (cs != CUDNN_STATUS_SUCCESS)
            st = GT_ERR(GT_ERR_DEVICE, "cudnnConvolutionBackwardFilter (%s) failed: %s", cf->note,
                        cudnnGetErrorString(cs));
    }
    if (ws) gt_cuda_scratch_free(k, ws);
    st = gt_cuda_unstage(&sg, st);
    if (owned) plan_free(p);
    return st;
}

#endif /* GT_HAVE_CUDNN */
