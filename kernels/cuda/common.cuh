/* Shared by every CUDA file of the cuda backend: error macros, the backend's
 * private state, per-call set-up, fp32/bf16/fp16 load/store helpers and
 * deterministic warp reductions.
 *
 * Every kernel is a template over its storage type T, instantiated for
 * float, __nv_bfloat16 and __half only (compile time: CI builds on 2
 * cores). Arithmetic is always fp32 (fp64 for sumsq); bf16 and fp16 are
 * rounded to nearest even once, on store (fp16: overflow to +-Inf, like
 * any IEEE narrowing; keeping values in range is the loss scaler's job).
 */
#ifndef GT_CUDA_COMMON_CUH
#define GT_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gt_config.h"
#ifdef GT_CUDA_EMU
#include "ci/cuda_emu/gt_emu.h"
#endif
#if GT_HAVE_CUBLAS
#include <cublasLt.h>
#endif
#if GT_HAVE_CUDNN
#include <cudnn.h>
#endif

#include "engine/alloc.h"
#include "engine/backend.h"
#include "engine/status.h"
#include "kernels/ops.h"

/* GT_CUDA_TRY: engine/status.h */

/* After a <<<...>>> launch: configuration errors (bad grid, too much shared
 * memory) are reported here; faults inside the kernel surface at the next
 * synchronising call. */
#define GT_CUDA_LAUNCHED(kernel_name)                                                              \
    do {                                                                                           \
        cudaError_t gt_cuda_e_ = cudaGetLastError();                                               \
        if (gt_cuda_e_ != cudaSuccess)                                                             \
            return GT_ERR(GT_ERR_DEVICE, "launch of %s failed: %s (%s)", (kernel_name),            \
                          cudaGetErrorString(gt_cuda_e_), cudaGetErrorName(gt_cuda_e_));           \
    } while (0)

#if GT_HAVE_CUBLAS
#define GT_CUBLAS_TRY(stmt)                                                                        \
    do {                                                                                           \
        cublasStatus_t gt_cublas_s_ = (stmt);                                                      \
        if (gt_cublas_s_ != CUBLAS_STATUS_SUCCESS)                                                 \
            return GT_ERR(GT_ERR_DEVICE, "%s failed: %s (%s)", #stmt,                              \
                          cublasLtGetStatusString(gt_cublas_s_),                                   \
                          cublasLtGetStatusName(gt_cublas_s_));                                    \
    } while (0)
#endif

/* The cuda backend's impl (gt_backend.impl). */
typedef struct gt_cuda_impl {
    int device; /* ordinal */
    int sm;     /* major * 10 + minor */
    int num_sms;
    cudaStream_t stream; /* every op and copy runs on it, in order */
#if GT_HAVE_CUBLAS
    cublasLtHandle_t lt;
#endif
    void *lt_workspace; /* cudaMalloc'd directly, not through the caching allocator */
    size_t lt_workspace_bytes;
#if GT_HAVE_CUDNN
    cudnnHandle_t cudnn;    /* bound to `stream`; NULL when cudnnCreate failed */
    char cudnn_reason[384]; /* why cudnn is NULL (cuDNN's status and last error), else "" */
#endif
    int att_mode;              /* GT_CUDA_ATT_*: GT_CUDA_ATTENTION, read at creation */
    int lt_default_only;       /* GT_CUDA_LT_EPILOGUES=default-only, read at creation */
    int lt_cache_off;          /* GT_CUDA_LT_CACHE=off (matmul.cu), read at creation */
    struct gt_cuda_sdpa *sdpa; /* cuDNN attention plans (attention_cudnn.cu) */
    void *flush_buf;           /* flush_cache's buffer (2 x L2), allocated on first use */
    size_t flush_bytes;
    char desc[256];
    char notes[8192]; /* gt_cuda_note's lines, each once */
} gt_cuda_impl;

/* Attention path (GT_CUDA_ATTENTION=auto|own|cudnn, unset = auto). */
enum { GT_CUDA_ATT_AUTO = 0, GT_CUDA_ATT_OWN, GT_CUDA_ATT_CUDNN };

/* Appends one line (printf format, no newline) to the backend's notes
 * (gt_backend.notes) unless that exact line is already there; silently
 * drops lines once the buffer is full. */
void gt_cuda_note(gt_cuda_impl *im, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Per-call set-up of every op: checks that k is a cuda context, that k->dt
 * is fp32, bf16 or fp16 (GT_ERR_UNSUPPORTED naming `op` otherwise) and
 * makes the backend's device current for the calling thread. */
gt_status gt_cuda_begin(const gt_kctx *k, const char *op, gt_cuda_impl **out);
/* The same without the dtype check, for ops that ignore k->dt (cast). */
gt_status gt_cuda_begin_any(const gt_kctx *k, const char *op, gt_cuda_impl **out);

/* ---- attention: cuDNN fused SDPA (attention_cudnn.cu) and the own kernels
 * (attention.cu), shared between the two files ---- */

/* One decision, pointers aside, says whether a (dtype, shape) takes cuDNN
 * or the own kernels; it never changes for a backend (attention_cudnn.cu).
 * *floats = what attention_fwd keeps in att on that path: B*NH*T (the row
 * logsumexp) for cuDNN, B*NH*T*T (the probabilities) for the own kernels.
 * Builds the shape's cuDNN plans on first use; a failure to build is
 * cached as "own kernels" with its reason, not returned. */
gt_status gt_cuda_sdpa_state_floats(gt_cuda_impl *im, gt_dtype dt, int B, int T, int C, int NH,
                                    size_t *floats);
/* Forward through cuDNN when the decision says so: *done = 1 (att then
 * holds the logsumexp, not the probabilities), 0 when the caller must run
 * the own kernel (the reason is in the notes; when GT_CUDA_ATTENTION=cudnn
 * an error instead: GT_ERR_UNSUPPORTED for a limit such as a cuDNN version
 * limit, GT_ERR_DEVICE when building the plans failed). Pointers that are not 16-byte aligned are
 * staged through aligned scratch, never a reason to change path. */
gt_status gt_cuda_sdpa_fwd(const gt_kctx *k, gt_cuda_impl *im, void *out, float *att,
                           const void *qkv, int B, int T, int C, int NH, int *done);
/* Backward by the same decision: *done = 0 when the own kernel must run
 * (att holds the probabilities). out is the forward's output (required on
 * the cuDNN path: GT_ERR_INVALID when NULL). */
gt_status gt_cuda_sdpa_bwd(const gt_kctx *k, gt_cuda_impl *im, void *dqkv, const void *dout,
                           const void *qkv, const void *out, const float *att, int B, int T,
                           int C, int NH, int *done);
/* Frees the plans (impl_free). Accepts NULL. */
void gt_cuda_sdpa_free(struct gt_cuda_sdpa *s);
/* The own kernels (no dtype or shape checks beyond what attention.cu's
 * entry points did): att holds the probabilities (B,NH,T,T). */
gt_status gt_cuda_attention_fwd_own(gt_cuda_impl *im, gt_dtype dt, void *out, float *att,
                                    const void *qkv, int B, int T, int C, int NH);
gt_status gt_cuda_attention_bwd_own(const gt_kctx *k, gt_cuda_impl *im, void *dqkv,
                                    const void *dout, const void *qkv, const float *att, int B,
                                    int T, int C, int NH);

/* Temporary device memory from the backend's caching allocator. Freeing
 * right after queuing the kernels that use it is safe: all work runs on
 * one stream, so a later user of the block is ordered after them. */
static inline gt_status gt_cuda_scratch(const gt_kctx *k, size_t bytes, void **out) {
    return gt_alloc(k->be->alloc, bytes, out);
}
static inline void gt_cuda_scratch_free(const gt_kctx *k, void *p) {
    gt_dealloc(k->be->alloc, p);
}

/* Staging of device arrays that are not GT_CUDA_STAGE_ALIGN-byte aligned
 * for a library call (cuDNN, cuBLASLt) that may assume they are: each goes
 * through scratch from the caching allocator (256-byte aligned), copied in
 * when the call reads it (`in`), copied back when it writes it (`back`).
 * Aligned arrays pass straight through. Everything is queued on the one
 * stream, so the scratch is released right after the copies back. Use:
 *   gt_cuda_stage sg = gt_cuda_stage_begin(k, im);
 *   st = gt_cuda_stage_ptr(&sg, p, bytes, in, back, &use);  ... the call ...
 *   st = gt_cuda_unstage(&sg, st);
 * sg.n > 0 after staging: something was staged (for the backend notes). */
#define GT_CUDA_STAGE_ALIGN 16
#define GT_CUDA_STAGE_MAX 6
typedef struct gt_cuda_stage {
    const gt_kctx *k;
    gt_cuda_impl *im;
    int n;
    void *orig[GT_CUDA_STAGE_MAX], *tmp[GT_CUDA_STAGE_MAX];
    size_t bytes[GT_CUDA_STAGE_MAX];
    int back[GT_CUDA_STAGE_MAX];
} gt_cuda_stage;

static inline gt_cuda_stage gt_cuda_stage_begin(const gt_kctx *k, gt_cuda_impl *im) {
    gt_cuda_stage sg;
    memset(&sg, 0, sizeof sg);
    sg.k = k;
    sg.im = im;
    return sg;
}

static inline int gt_cuda_aligned(const void *p) {
    return ((uintptr_t)p % GT_CUDA_STAGE_ALIGN) == 0;
}

/* *use = p when p is aligned (or bytes is 0), else scratch of `bytes`
 * holding a copy of p's contents when `in`, remembered for the copy back
 * (`back`) and the release in gt_cuda_unstage. */
static inline gt_status gt_cuda_stage_ptr(gt_cuda_stage *sg, const void *p, size_t bytes, int in,
                                          int back, void **use) {
    *use = (void *)p;
    if (gt_cuda_aligned(p) || bytes == 0) return GT_OK;
    GT_ASSERT(sg->n < GT_CUDA_STAGE_MAX);
    void *t = NULL;
    GT_TRY(gt_cuda_scratch(sg->k, bytes, &t));
    int i = sg->n++;
    sg->orig[i] = (void *)p;
    sg->tmp[i] = t;
    sg->bytes[i] = bytes;
    sg->back[i] = back;
    if (in) GT_CUDA_TRY(cudaMemcpyAsync(t, p, bytes, cudaMemcpyDeviceToDevice, sg->im->stream));
    *use = t;
    return GT_OK;
}

/* Copies the staged outputs back (when st is GT_OK) and releases the
 * scratch. Returns st, or the copy's failure. */
static inline gt_status gt_cuda_unstage(gt_cuda_stage *sg, gt_status st) {
    for (int i = 0; i < sg->n; i++) {
        if (st == GT_OK && sg->back[i]) {
            cudaError_t e = cudaMemcpyAsync(sg->orig[i], sg->tmp[i], sg->bytes[i],
                                            cudaMemcpyDeviceToDevice, sg->im->stream);
            if (e != cudaSuccess)
                st = GT_ERR(GT_ERR_DEVICE, "copying a staged array back failed: %s",
                            cudaGetErrorString(e));
        }
        gt_cuda_scratch_free(sg->k, sg->tmp[i]);
    }
    sg->n = 0;
    return st;
}

/* Grid for a 1-D grid-stride loop over n elements. */
static inline unsigned gt_cuda_grid_1d(size_t n, unsigned block) {
    size_t g = (n + block - 1) / block;
    const size_t max_grid = (size_t)1 << 20; /* grid-stride beyond this */
    if (g > max_grid) g = max_grid;
    if (g == 0) g = 1;
    return (unsigned)g;
}

/* ---- storage <-> fp32 --------------------------------------------------------- */

/* On the CPU emulator every element read or written here is also seen by
 * its check for races between blocks (docs/cuda-emulator.md, Races). */
#ifdef GT_CUDA_EMU
#define GT_EMU_NOTE(p, store)                                                                      \
    (::gt_emu::racecheck ? ::gt_emu::note_access((p), (store)) : (void)0)
#else
#define GT_EMU_NOTE(p, store) ((void)0)
#endif

/* storage <-> fp32 by value: fp32 as is, bf16 and fp16 widened exactly, and
 * rounded to nearest even on the way back (fp64 only as cast.cu's target) */
template <typename T> __device__ __forceinline__ float gt_to_f32(T x);
template <> __device__ __forceinline__ float gt_to_f32<float>(float x) {
    return x;
}
template <> __device__ __forceinline__ float gt_to_f32<__nv_bfloat16>(__nv_bfloat16 x) {
    return __bfloat162float(x);
}
template <> __device__ __forceinline__ float gt_to_f32<__half>(__half x) {
    return __half2float(x);
}
template <typename T> __device__ __forceinline__ T gt_from_f32(float x);
template <> __device__ __forceinline__ float gt_from_f32<float>(float x) {
    return x;
}
template <> __device__ __forceinline__ __nv_bfloat16 gt_from_f32<__nv_bfloat16>(float x) {
    return __float2bfloat16_rn(x);
}
template <> __device__ __forceinline__ __half gt_from_f32<__half>(float x) {
    return __float2half_rn(x);
}
template <> __device__ __forceinline__ double gt_from_f32<double>(float x) {
    return (double)x; /* exact: the cast to fp64 */
}

/* p[i] as fp32; p[i] = v rounded to T */
template <typename T> __device__ __forceinline__ float gt_ld(const T *p, size_t i) {
    GT_EMU_NOTE(p + i, false);
    return gt_to_f32<T>(p[i]);
}
template <typename T> __device__ __forceinline__ void gt_st(T *p, size_t i, float v) {
    GT_EMU_NOTE(p + i, true);
    p[i] = gt_from_f32<T>(v);
}

/* ---- GELU, tanh approximation --------------------------------------------------- */
/* out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) and its derivative
 * (sech^2 = 1 / cosh^2: accurate for small arguments, 0 where cosh
 * overflows), fp32. Shared by gelu.cu and the fused GELU matmuls'
 * fallback (matmul.cu), which therefore give the bits of the unfused
 * sequence. */
#define GT_CUDA_GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */
__device__ __forceinline__ float gt_gelu(float x) {
    float cube = 0.044715f * x * x * x;
    return 0.5f * x * (1.0f + tanhf(GT_CUDA_GELU_SCALE * (x + cube)));
}
__device__ __forceinline__ float gt_gelu_grad(float x) {
    float cube = 0.044715f * x * x * x;
    float arg = GT_CUDA_GELU_SCALE * (x + cube);
    float th = tanhf(arg);
    float ch = coshf(arg);
    float sech2 = 1.0f / (ch * ch);
    return 0.5f * (1.0f + th) +
           x * 0.5f * sech2 * GT_CUDA_GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
}

/* ---- deterministic reductions ------------------------------------------------- */
/* xor butterflies: every lane ends with the same value (fp addition is
 * commutative, so lane i and lane i^m compute the same sum at each step),
 * and the order of operations is fixed by the lane numbers alone. */

__device__ __forceinline__ float gt_warp_sum(float v) {
    for (int m = 16; m > 0; m >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, m);
    return v;
}
__device__ __forceinline__ double gt_warp_sum_d(double v) {
    for (int m = 16; m > 0; m >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, m);
    return v;
}
__device__ __forceinline__ float gt_warp_max(float v) {
    for (int m = 16; m > 0; m >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, m));
    return v;
}

/* Dispatch on k->dt for the launchers: `launch<T>(args...)`, T = float for
 * fp32 (and anything else: gt_cuda_begin has refused other dtypes),
 * __nv_bfloat16 for bf16, __half for fp16. */
#define GT_CUDA_DISPATCH(dt, launch, ...)                                                          \
    ((dt) == GT_DTYPE_BF16   ? launch<__nv_bfloat16>(__VA_ARGS__)                                  \
     : (dt) == GT_DTYPE_FP16 ? launch<__half>(__VA_ARGS__)                                         \
                             : launch<float>(__VA_ARGS__))

#endif
