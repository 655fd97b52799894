/* The cuda backend: one device, one stream, one cuBLASLt handle, and the
 * caching allocator over cudaMalloc/cudaFree. Also the op table gt_ops_cuda.
 *
 * Every op and copy is queued on the backend's stream, so the device work
 * of one backend is totally ordered; copies (and sumsq) wait for the stream
 * before returning, as engine/backend.h asks. The stream is a blocking one
 * (cudaStreamCreate): it also orders with work others put on the legacy
 * default stream.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/env.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/cublaslt_load.h"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/ops_cuda_vision.h"
#include "kernels/registry.h"

/* cuBLASLt workspace: enough for the split-K and stream-K algorithms of
 * GPT-2-sized GEMMs on Hopper (llm.c uses the same). */
#define GT_CUDA_LT_WORKSPACE_BYTES ((size_t)32 << 20)

extern "C" const gt_ops gt_ops_cuda = {
    .encoder_fwd = gt_cuda_encoder_fwd,
    .encoder_bwd = gt_cuda_encoder_bwd,
    .layernorm_fwd = gt_cuda_layernorm_fwd,
    .layernorm_bwd = gt_cuda_layernorm_bwd,
#if GT_HAVE_CUBLAS
    .matmul_fwd = gt_cuda_matmul_fwd,
    .matmul_bwd = gt_cuda_matmul_bwd,
#else
    .matmul_fwd = NULL,
    .matmul_bwd = NULL,
#endif
    .attention_fwd = gt_cuda_attention_fwd,
    .attention_bwd = gt_cuda_attention_bwd,
    .attention_state_floats = gt_cuda_attention_state_floats,
    .gelu_fwd = gt_cuda_gelu_fwd,
    .gelu_bwd = gt_cuda_gelu_bwd,
    .residual_fwd = gt_cuda_residual_fwd,
    .residual_bwd = gt_cuda_residual_bwd,
    .classifier_fwd = gt_cuda_classifier_fwd,
    .classifier_bwd = gt_cuda_classifier_bwd,
    .adamw = gt_cuda_adamw,
    .sumsq = gt_cuda_sumsq,
    /* C++ designators must follow the declaration order of gt_ops */
#if GT_HAVE_CUDNN
    .conv2d_fwd = gt_cuda_conv2d_fwd,
    .conv2d_bwd = gt_cuda_conv2d_bwd,
#else
    .conv2d_fwd = NULL, /* cuDNN absent: skipped */
    .conv2d_bwd = NULL,
#endif
    .batchnorm_fwd = gt_cuda_batchnorm_fwd,
    .batchnorm_bwd = gt_cuda_batchnorm_bwd,
    .relu_fwd = gt_cuda_relu_fwd,
    .relu_bwd = gt_cuda_relu_bwd,
    .avgpool_fwd = gt_cuda_avgpool_fwd,
    .avgpool_bwd = gt_cuda_avgpool_bwd,
    .cast = gt_cuda_cast,
#if GT_HAVE_CUBLAS
    .matmul_gelu_fwd = gt_cuda_matmul_gelu_fwd,
    .matmul_dgelu_bwd = gt_cuda_matmul_dgelu_bwd,
#else
    .matmul_gelu_fwd = NULL, /* no cuBLASLt: models compose the unfused ops */
    .matmul_dgelu_bwd = NULL,
#endif
};

static gt_cuda_impl *impl_of(gt_backend *be) {
    return (gt_cuda_impl *)be->impl;
}

gt_status gt_cuda_begin_any(const gt_kctx *k, const char *op, gt_cuda_impl **out) {
    if (!k || !k->be || k->be->device != GT_DEVICE_CUDA || !k->be->impl)
        return GT_ERR(GT_ERR_INVALID, "cuda %s: the context is not a cuda backend's", op);
    gt_cuda_impl *im = impl_of(k->be);
    int cur = -1;
    GT_CUDA_TRY(cudaGetDevice(&cur));
    if (cur != im->device) GT_CUDA_TRY(cudaSetDevice(im->device));
    *out = im;
    return GT_OK;
}

gt_status gt_cuda_begin(const gt_kctx *k, const char *op, gt_cuda_impl **out) {
    if (!k || !k->be || k->be->device != GT_DEVICE_CUDA || !k->be->impl)
        return GT_ERR(GT_ERR_INVALID, "cuda %s: the context is not a cuda backend's", op);
    if (k->dt != GT_DTYPE_FP32 && k->dt != GT_DTYPE_BF16 && k->dt != GT_DTYPE_FP16)
        return GT_ERR(GT_ERR_UNSUPPORTED, "cuda %s: dtype %s is not supported (fp32, bf16, fp16)",
                      op, gt_dtype_name(k->dt));
    gt_cuda_impl *im = impl_of(k->be);
    int cur = -1;
    GT_CUDA_TRY(cudaGetDevice(&cur));
    if (cur != im->device) GT_CUDA_TRY(cudaSetDevice(im->device));
    *out = im;
    return GT_OK;
}

/* ---- raw allocator --------------------------------------------------------------- */
/* ctx is the device ordinal (not the impl): gt_backend_free frees the
 * allocator after destroy() has freed the impl. The device is made current
 * because the data loader thread allocates too. */

static void *raw_cuda_alloc(void *ctx, size_t bytes) {
    int dev = (int)(intptr_t)ctx;
    if (cudaSetDevice(dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
        (void)cudaGetLastError(); /* OOM is not sticky: clear it for the next call */
        return NULL;
    }
    return p; /* cudaMalloc aligns to at least 256 bytes */
}

static void raw_cuda_free(void *ctx, void *p, size_t bytes) {
    (void)bytes;
    int dev = (int)(intptr_t)ctx;
    if (!p) return;
    if (cudaSetDevice(dev) == cudaSuccess) (void)cudaFree(p);
    (void)cudaGetLastError();
}

/* ---- the backend's functions -------------------------------------------------------- */

static gt_status set_device(gt_cuda_impl *im) {
    int cur = -1;
    GT_CUDA_TRY(cudaGetDevice(&cur));
    if (cur != im->device) GT_CUDA_TRY(cudaSetDevice(im->device));
    return GT_OK;
}

static gt_status copy_sync(gt_backend *be, void *dst, const void *src, size_t bytes,
                           cudaMemcpyKind kind) {
    if (bytes == 0) return GT_OK;
    gt_cuda_impl *im = impl_of(be);
    GT_TRY(set_device(im));
    GT_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, kind, im->stream));
    GT_CUDA_TRY(cudaStreamSynchronize(im->stream));
    return GT_OK;
}

static gt_status cuda_copy_to_device(gt_backend *be, void *dst, const void *src_host,
                                     size_t bytes) {
    return copy_sync(be, dst, src_host, bytes, cudaMemcpyHostToDevice);
}

static gt_status cuda_copy_to_host(gt_backend *be, void *dst_host, const void *src, size_t bytes) {
    return copy_sync(be, dst_host, src, bytes, cudaMemcpyDeviceToHost);
}

static gt_status cuda_copy_device(gt_backend *be, void *dst, const void *src, size_t bytes) {
    return copy_sync(be, dst, src, bytes, cudaMemcpyDeviceToDevice);
}

/* Queued on the stream like an op (not waited for): every later op, copy or
 * synchronize of this backend sees the zeros. */
static gt_status cuda_memset_zero(gt_backend *be, void *dst, size_t bytes) {
    if (bytes == 0) return GT_OK;
    gt_cuda_impl *im = impl_of(be);
    GT_TRY(set_device(im));
    GT_CUDA_TRY(cudaMemsetAsync(dst, 0, bytes, im->stream));
    return GT_OK;
}

static gt_status cuda_synchronize(gt_backend *be) {
    gt_cuda_impl *im = impl_of(be);
    GT_TRY(set_device(im));
    GT_CUDA_TRY(cudaStreamSynchronize(im->stream));
    return GT_OK;
}

static const char *cuda_describe(gt_backend *be) {
    return impl_of(be)->desc;
}

void gt_cuda_note(gt_cuda_impl *im, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n <= 0) return;
    size_t len = strlen(line);
    /* already there as a whole line? */
    for (const char *p = im->notes; (p = strstr(p, line)) != NULL; p++)
        if ((p == im->notes || p[-1] == '\n') && (p[len] == '\n' || p[len] == '\0')) return;
    size_t used = strlen(im->notes);
    if (used + len + 2 > sizeof im->notes) return;
    if (used) im->notes[used++] = '\n';
    memcpy(im->notes + used, line, len + 1);
}

static const char *cuda_notes(gt_backend *be) {
    return impl_of(be)->notes;
}

#if GT_HAVE_CUBLAS
static gt_status cuda_gemm_library_best(gt_backend *be, gt_dtype dt, void *out, const void *inp,
                                        const void *weight, const void *bias, int N, int C, int OC,
                                        double *best_s, char *what, size_t what_len) {
    gt_kctx k = {be, dt};
    return gt_cuda_matmul_fwd_library_best(&k, out, inp, weight, bias, N, C, OC, best_s, what,
                                           what_len);
}
#endif

/* ---- device timing and cache flush ---------------------------------------------------- */

typedef struct cuda_timer {
    cudaEvent_t start, stop;
} cuda_timer;

static gt_status cuda_timer_start(gt_backend *be, void **token) {
    gt_cuda_impl *im = impl_of(be);
    *token = NULL;
    GT_TRY(set_device(im));
    cuda_timer *t = (cuda_timer *)calloc(1, sizeof *t);
    if (!t) return GT_ERR(GT_ERR_OOM, "cuda timer: out of host memory");
    cudaError_t e = cudaEventCreate(&t->start);
    if (e == cudaSuccess) e = cudaEventCreate(&t->stop);
    if (e == cudaSuccess) e = cudaEventRecord(t->start, im->stream);
    if (e != cudaSuccess) {
        if (t->start) (void)cudaEventDestroy(t->start);
        if (t->stop) (void)cudaEventDestroy(t->stop);
        free(t);
        return GT_ERR(GT_ERR_DEVICE, "cuda timer start: %s", cudaGetErrorString(e));
    }
    *token = t;
    return GT_OK;
}

static gt_status cuda_timer_stop(gt_backend *be, void *token, double *seconds) {
    gt_cuda_impl *im = impl_of(be);
    cuda_timer *t = (cuda_timer *)token;
    if (!t) return GT_ERR(GT_ERR_INVALID, "cuda timer stop: no token");
    float ms = 0.0f;
    cudaError_t e = cudaSetDevice(im->device);
    if (e == cudaSuccess) e = cudaEventRecord(t->stop, im->stream);
    if (e == cudaSuccess) e = cudaEventSynchronize(t->stop);
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, t->start, t->stop);
    (void)cudaEventDestroy(t->start);
    (void)cudaEventDestroy(t->stop);
    free(t);
    if (e != cudaSuccess)
        return GT_ERR(GT_ERR_DEVICE, "cuda timer stop: %s", cudaGetErrorString(e));
    *seconds = (double)ms * 1e-3;
    return GT_OK;
}

/* ---- profiling marks and NVTX ranges (engine/profile.h) ------------------------------- */

/* A mark is a CUDA event with timing: recorded on the stream without a wait,
 * read back after the step's own synchronisation. */
static gt_status cuda_mark_new(gt_backend *be, void **mark) {
    gt_cuda_impl *im = impl_of(be);
    *mark = NULL;
    GT_TRY(set_device(im));
    cudaEvent_t ev;
    cudaError_t e = cudaEventCreate(&ev);
    if (e != cudaSuccess)
        return GT_ERR(GT_ERR_DEVICE, "profile mark: cudaEventCreate: %s", cudaGetErrorString(e));
    *mark = (void *)ev;
    return GT_OK;
}

static gt_status cuda_mark_record(gt_backend *be, void *mark) {
    cudaError_t e = cudaEventRecord((cudaEvent_t)mark, impl_of(be)->stream);
    if (e != cudaSuccess)
        return GT_ERR(GT_ERR_DEVICE, "profile mark: cudaEventRecord: %s", cudaGetErrorString(e));
    return GT_OK;
}

static gt_status cuda_mark_elapsed(gt_backend *be, void *a, void *b, double *seconds) {
    (void)be;
    float ms = 0.0f;
    cudaError_t e = cudaEventElapsedTime(&ms, (cudaEvent_t)a, (cudaEvent_t)b);
    if (e != cudaSuccess)
        return GT_ERR(GT_ERR_DEVICE, "profile mark: cudaEventElapsedTime: %s",
                      cudaGetErrorString(e));
    *seconds = (double)ms * 1e-3;
    return GT_OK;
}

static void cuda_mark_free(gt_backend *be, void *mark) {
    (void)be;
    if (mark) (void)cudaEventDestroy((cudaEvent_t)mark);
}

/* NVTX 3 is header-only (the toolkit's include/nvtx3): the ranges cost a
 * branch until a tool such as nsys injects itself. */
#if defined(__has_include)
#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define GT_CUDA_NVTX 1
static void cuda_range_push(gt_backend *be, const char *name) {
    (void)be;
    nvtxRangePushA(name);
}
static void cuda_range_pop(gt_backend *be) {
    (void)be;
    nvtxRangePop();
}
#endif
#endif

/* Writes a buffer of twice the L2 size: every line of L2 then holds flush
 * data, not an op's inputs. */
static gt_status cuda_flush_cache(gt_backend *be) {
    gt_cuda_impl *im = impl_of(be);
    GT_TRY(set_device(im));
    if (!im->flush_buf) {
        int l2 = 0;
        GT_CUDA_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, im->device));
        size_t bytes = 2 * (size_t)(l2 > 0 ? l2 : (64 << 20));
        GT_CUDA_TRY(cudaMalloc(&im->flush_buf, bytes));
        im->flush_bytes = bytes;
    }
    GT_CUDA_TRY(cudaMemsetAsync(im->flush_buf, 0x5a, im->flush_bytes, im->stream));
    return GT_OK;
}

static void impl_free(gt_cuda_impl *im) {
    if (!im) return;
    if (cudaSetDevice(im->device) == cudaSuccess) {
        if (im->stream) (void)cudaStreamSynchronize(im->stream);
#if GT_HAVE_CUBLAS
        if (im->lt) (void)cublasLtDestroy(im->lt);
#endif
        gt_cuda_sdpa_free(im->sdpa); /* plans reference the cuDNN handle */
#if GT_HAVE_CUDNN
        if (im->cudnn) (void)cudnnDestroy(im->cudnn);
#endif
        if (im->flush_buf) (void)cudaFree(im->flush_buf);
        if (im->lt_workspace) (void)cudaFree(im->lt_workspace);
        if (im->stream) (void)cudaStreamDestroy(im->stream);
    }
    (void)cudaGetLastError();
    free(im);
}

static void cuda_destroy(gt_backend *be) {
    impl_free(impl_of(be));
    be->impl = NULL;
}

/* cfg->device < 0: the rank's local index from the launcher's environment
 * (gt_env_local_rank), modulo the device count; 0 when none is set. */
static int local_rank_device(int count) {
    int r = gt_env_local_rank();
    return r < 0 ? 0 : r % count;
}

/* GT_CUDA_ATTENTION: which attention path (docs/cuda.md). */
static gt_status attention_mode(int *mode) {
    const char *s = getenv("GT_CUDA_ATTENTION");
    *mode = GT_CUDA_ATT_AUTO;
    if (!s || !*s || strcmp(s, "auto") == 0) return GT_OK;
    if (strcmp(s, "own") == 0) {
        *mode = GT_CUDA_ATT_OWN;
        return GT_OK;
    }
    if (strcmp(s, "cudnn") == 0) {
        *mode = GT_CUDA_ATT_CUDNN;
        return GT_OK;
    }
    return GT_ERR(GT_ERR_INVALID,
                  "GT_CUDA_ATTENTION=%.64s is not understood: use auto (or unset), own or cudnn",
                  s);
}

/* GT_CUDA_LT_EPILOGUES: default-only takes no cuBLASLt epilogue but
 * DEFAULT, as a library without the BIAS/GELU kernels would (matmul.cu's
 * fallbacks run; kernels.conformance*_lt_fallback.cuda). */
static gt_status lt_epilogues_mode(int *default_only) {
    const char *s = getenv("GT_CUDA_LT_EPILOGUES");
    *default_only = 0;
    if (!s || !*s || strcmp(s, "all") == 0) return GT_OK;
    if (strcmp(s, "default-only") == 0) {
        *default_only = 1;
        return GT_OK;
    }
    return GT_ERR(GT_ERR_INVALID,
                  "GT_CUDA_LT_EPILOGUES=%.64s is not understood: use all (or unset) or "
                  "default-only",
                  s);
}

/* GT_CUDA_LT_CACHE: off builds cuBLASLt's descriptors and asks the
 * heuristic on every GEMM, as before the plan cache (matmul.cu; the
 * uncached side of kernels.matmul_lt_cache.cuda). */
static gt_status lt_cache_mode(int *off) {
    const char *s = getenv("GT_CUDA_LT_CACHE");
    *off = 0;
    if (!s || !*s || strcmp(s, "on") == 0) return GT_OK;
    if (strcmp(s, "off") == 0) {
        *off = 1;
        return GT_OK;
    }
    return GT_ERR(GT_ERR_INVALID,
                  "GT_CUDA_LT_CACHE=%.64s is not understood: use on (or unset) or off", s);
}

static gt_status impl_init(gt_cuda_impl *im, int dev) {
    im->device = dev;
    GT_TRY(attention_mode(&im->att_mode));
    GT_TRY(lt_epilogues_mode(&im->lt_default_only));
    GT_TRY(lt_cache_mode(&im->lt_cache_off));
    GT_CUDA_TRY(cudaSetDevice(dev));
    cudaDeviceProp prop;
    GT_CUDA_TRY(cudaGetDeviceProperties(&prop, dev));
    im->sm = prop.major * 10 + prop.minor;
    im->num_sms = prop.multiProcessorCount;
    int rt = 0;
    GT_CUDA_TRY(cudaRuntimeGetVersion(&rt));
    snprintf(im->desc, sizeof im->desc, "cuda: %.200s, sm_%d, CUDA runtime %d.%d", prop.name,
             im->sm, rt / 1000, (rt % 1000) / 10);
    GT_CUDA_TRY(cudaStreamCreate(&im->stream));
#if GT_HAVE_CUBLAS
#ifndef GT_CUDA_EMU
    /* a device without its BLAS is a broken install, not a host without a GPU:
     * an error, never a skip */
    char why[512];
    if (gt_cublaslt_load(why, sizeof why) != 0) return GT_ERR(GT_ERR_DEVICE, "%s", why);
#endif
    GT_CUBLAS_TRY(cublasLtCreate(&im->lt));
    GT_CUDA_TRY(cudaMalloc(&im->lt_workspace, GT_CUDA_LT_WORKSPACE_BYTES));
    im->lt_workspace_bytes = GT_CUDA_LT_WORKSPACE_BYTES;
#endif
#if GT_HAVE_CUDNN
    {
        /* A cuDNN that cannot start (a sub-library or nvrtc not found) is a
         * note, not the end of the backend: im->cudnn stays NULL, the reason
         * is kept in im->cudnn_reason, attention takes the own kernels
         * (GT_CUDA_ATTENTION=cudnn fails naming it), conv2d declines. */
        const char *call = "cudnnCreate";
        cudnnStatus_t cs = cudnnCreate(&im->cudnn);
        if (cs == CUDNN_STATUS_SUCCESS) {
            call = "cudnnSetStream";
            cs = cudnnSetStream(im->cudnn, im->stream);
        }
        if (cs != CUDNN_STATUS_SUCCESS) {
            char detail[256] = "";
            cudnnGetLastErrorString(detail, sizeof detail);
            if (im->cudnn) (void)cudnnDestroy(im->cudnn);
            im->cudnn = NULL;
            snprintf(im->cudnn_reason, sizeof im->cudnn_reason, "%s failed: %s (%d)%s%.256s", call,
                     cudnnGetErrorString(cs), (int)cs, detail[0] ? ": " : "", detail);
            gt_cuda_note(im, "cuDNN unavailable, its paths off: %s", im->cudnn_reason);
        }
    }
#endif
    return GT_OK;
}

extern "C" gt_status gt_backend_cuda_new(const gt_backend_config *cfg, gt_backend **out) {
    *out = NULL;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return GT_ERR(GT_ERR_UNSUPPORTED, "no usable GPU: cudaGetDeviceCount failed: %s (%s)",
                      cudaGetErrorString(e), cudaGetErrorName(e));
    }
    if (count == 0) return GT_ERR(GT_ERR_UNSUPPORTED, "no usable GPU: no CUDA device found");
    int dev = (cfg && cfg->device >= 0) ? cfg->device : local_rank_device(count);
    if (dev >= count)
        return GT_ERR(GT_ERR_INVALID, "cuda device %d requested, but only %d present", dev, count);

    gt_cuda_impl *im = (gt_cuda_impl *)calloc(1, sizeof *im);
    gt_backend *be = (gt_backend *)calloc(1, sizeof *be);
    if (!im || !be) {
        free(im);
        free(be);
        return GT_ERR(GT_ERR_OOM, "cuda backend: out of host memory");
    }
    gt_status s = impl_init(im, dev);
    if (s != GT_OK) {
        impl_free(im);
        free(be);
        return gt_error_wrap(s, "creating the cuda backend on device %d", dev);
    }
    gt_raw_allocator raw;
    raw.name = "cuda";
    raw.alloc = raw_cuda_alloc;
    raw.free = raw_cuda_free;
    raw.ctx = (void *)(intptr_t)dev;
    raw.zeroed = 0; /* cudaMalloc leaves memory as it was */
    s = gt_allocator_new(&raw, &be->alloc);
    if (s != GT_OK) {
        impl_free(im);
        free(be);
        return s;
    }
    be->name = "cuda";
    be->device = GT_DEVICE_CUDA;
    be->threads = 1;
    be->ops = &gt_ops_cuda;
    be->copy_to_device = cuda_copy_to_device;
    be->copy_to_host = cuda_copy_to_host;
    be->copy_device = cuda_copy_device;
    be->memset_zero = cuda_memset_zero;
    be->synchronize = cuda_synchronize;
    be->describe = cuda_describe;
    be->timer_start = cuda_timer_start;
    be->timer_stop = cuda_timer_stop;
    be->flush_cache = cuda_flush_cache;
    be->notes = cuda_notes;
    be->mark_new = cuda_mark_new;
    be->mark_record = cuda_mark_record;
    be->mark_elapsed = cuda_mark_elapsed;
    be->mark_free = cuda_mark_free;
#ifdef GT_CUDA_NVTX
    be->range_push = cuda_range_push;
    be->range_pop = cuda_range_pop;
#endif
#if GT_HAVE_CUBLAS
    be->gemm_library_best = cuda_gemm_library_best;
#endif
    be->destroy = cuda_destroy;
    be->impl = im;
    *out = be;
    return GT_OK;
}
