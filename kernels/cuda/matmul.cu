/* Matmul (a linear layer) through cuBLASLt, forward and backward, and the
 * same layer fused with GELU (a transformer's MLP).
 *
 * fwd: out(N,OC) = inp(N,C) @ weight(OC,C)^T + bias(OC), bias fused as the
 *      cuBLASLt BIAS epilogue (when no algorithm takes the epilogue, even
 *      with the pointers staged, see Alignment: the GEMM into fp32 and an
 *      own broadcast kernel that adds the bias and rounds once).
 * bwd: dinp(N,C) = dout(N,OC) @ weight(OC,C)         (beta = 0: overwritten,
 *                                                      never read)
 *      dweight(OC,C) += dout^T @ inp                  (beta = 1)
 *      dbias(OC) += column sums of dout: fixed chunks of MM_ROWS rows, a
 *      partial per (chunk, column), then the partials summed in chunk order.
 * gelu_fwd: pre = inp @ weight^T + bias, out = gelu(pre) in ONE GEMM: the
 *      GELU_AUX_BIAS (GELU_AUX without a bias) epilogue writes out as D and
 *      pre as its auxiliary matrix (aux ld = OC).
 * dgelu_bwd: dpre = (dout @ weight) * gelu'(pre) in ONE GEMM: the DGELU
 *      epilogue reads pre as its auxiliary matrix (aux ld = C), beta = 0;
 *      dweight and dbias as bwd.
 *      The GELU epilogues are taken for bf16 and fp16 storage only, when
 *      the aux ld (OC, resp. C) is a multiple of 8 (cublasLt.h,
 *      CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD) and the heuristic offers an
 *      algorithm (a misaligned bias or aux matrix staged, see Alignment);
 *      otherwise the GEMM without the GELU epilogue and an own elementwise
 *      kernel (common.cuh's gt_gelu / gt_gelu_grad, the functions of
 *      gelu_fwd/gelu_bwd) that rounds each result once: forward, matmul_fwd's
 *      path writes pre (GEMM + bias rounded once) and the kernel takes
 *      gelu of it; backward, the GEMM's fp32 result is multiplied by
 *      gelu'(pre). fp32 always
 *      takes the own kernel: cuBLASLt's GELU is not documented to be
 *      fp32-accurate (a hardware tanh approximation would be ~2^-11), and
 *      fp32 conformance allows a few ulp. The path taken is noted once per
 *      shape (gt_cuda_note).
 * Row-major through column-major cuBLASLt: the bytes of a row-major (R,K)
 * matrix are the column-major (K,R) matrix, its transpose, so a row-major
 * X = Y @ Z is computed as the column-major X^T = Z^T @ Y^T; each call below
 * names the column-major shapes it uses. The aux matrices (pre, dpre's pre)
 * have D's column-major shape and ld.
 * Variants: fp32 (CUBLAS_COMPUTE_32F: true fp32, no TF32), and bf16 or fp16
 *      storage (CUDA_R_16BF / CUDA_R_16F) with fp32 compute and scale; A, B,
 *      C, D, the bias and the aux matrix in the storage type (the aux type
 *      is left at its default, D's type), except the fallbacks' GEMMs,
 *      whose D is CUDA_R_32F scratch from the caching allocator.
 * Bound: FLOP/s: 2*N*C*OC per GEMM (dense fp32 ~ 60 TFLOP/s, bf16 and fp16
 *      tensor cores ~ 990 TFLOP/s dense on an H100 SXM); dbias and the own
 *      GELU kernels are bandwidth bound.
 * Alignment: the heuristic is told each pointer's alignment (ptr_alignment),
 *      so it only offers algorithms that can read it. Should it offer none
 *      for a GEMM whose operands are not all 16-byte aligned (a tensor at an
 *      odd element offset of a flat 16-bit store is 2-byte aligned), lt_gemm
 *      stages the misaligned ones through aligned scratch
 *      (gt_cuda_stage_ptr, common.cuh, as conv.cu and the cuDNN attention
 *      do; D copied in when beta != 0, and back) and asks again. A bias or
 *      aux matrix that is not 16-byte aligned is staged before the first
 *      ask (the heuristic is said to read their alignment from the
 *      pointers, but nothing tells it for sure; the aux matrix is copied
 *      in for DGELU, back for GELU_AUX). Either way the epilogue is kept:
 *      the fallback costs a pass over an fp32 copy of the result. (The
 *      fallback must not round the GEMM's result to 16 bits before adding
 *      the bias: GEMM + bias rounded twice is an error of u |GEMM|, which
 *      cancellation against the bias makes large relative to the result.)
 *      The path is noted once per shape.
 * Plans: the descriptors and the heuristic's first answer (a refusal too)
 *      are built once per key (shape, transposes, lds, types, epilogue,
 *      bias/aux presence and alignment, A/B/C/D alignment, workspace,
 *      device: lt_key) and kept for the process (lt_plan_get: 1024 keys
 *      behind a mutex, past that a private plan per call); the bias and aux
 *      pointers are set per call under the plan's mutex, held through
 *      cublasLtMatmul (which reads the descriptors during the call only).
 *      GT_CUDA_LT_CACHE=off: a private plan per call, as before the cache.
 *      docs/cuda.md, "cuBLASLt plans".
 * Determinism: cuBLASLt picks its algorithm from the shape, types, epilogue,
 *      pointer alignment and workspace size only, and its algorithms
 *      (split-K reductions included) are bitwise reproducible on the same GPU
 *      model and library version; the dbias reduction order depends on N
 *      only; the GELU kernels are elementwise.
 */
#include "engine/stats.h" /* gt_fnv1a64 */
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"

#include <algorithm>
#include <new>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#if GT_HAVE_CUBLAS

#define MM_ROWS 64
#define MM_COLS_Y 8

/* Largest power of two (<= 256) dividing the address: told to the heuristic
 * so that it never picks an algorithm needing more alignment than we have. */
static uint32_t ptr_alignment(const void *p) {
    uintptr_t a = (uintptr_t)p;
    uint32_t al = 256;
    while (al > 1 && (a % al) != 0)
        al >>= 1;
    return al;
}

namespace {
struct lt_descs {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    ~lt_descs() {
        if (pref) (void)cublasLtMatmulPreferenceDestroy(pref);
        if (c) (void)cublasLtMatrixLayoutDestroy(c);
        if (b) (void)cublasLtMatrixLayoutDestroy(b);
        if (a) (void)cublasLtMatrixLayoutDestroy(a);
        if (op) (void)cublasLtMatmulDescDestroy(op);
    }
};

/* An epilogue for lt_matmul: BIAS (bias), GELU_AUX / GELU_AUX_BIAS (bias,
 * aux written: the pre-GELU values), DGELU (aux read: the pre-GELU values).
 * aux has D's shape, leading dimension aux_ld elements, D's type. */
struct lt_epi {
    cublasLtEpilogue_t kind = CUBLASLT_EPILOGUE_DEFAULT;
    const void *bias = nullptr;
    const void *aux = nullptr;
    int64_t aux_ld = 0;
};
} // namespace

static const char *dt_name(cudaDataType_t t) {
    return t == CUDA_R_16BF ? "bf16" : t == CUDA_R_16F ? "fp16" : "fp32";
}

/* lt_matmul's descriptors and heuristic preference (the pointers'
 * alignment, the workspace) for its arguments: column-major D(m,n) (ld
 * ldd) = epilogue(op(A)(m,kk) @ op(B)(kk,n) + beta * D), see lt_matmul. */
static gt_status lt_describe(gt_cuda_impl *im, cudaDataType_t dtype, cudaDataType_t dtype_d,
                             bool ta, bool tb, int m, int n, int kk, const void *A, int lda,
                             const void *B, int ldb, void *D, int ldd, const lt_epi *epi,
                             lt_descs &d) {
    /* the bias and aux types below are dtype's: D must have it too */
    GT_ASSERT(dtype_d == dtype || !epi || epi->kind == CUBLASLT_EPILOGUE_DEFAULT);
    GT_CUBLAS_TRY(cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    GT_CUBLAS_TRY(
        cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    GT_CUBLAS_TRY(
        cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    bool has_aux = epi && epi->aux;
    if (epi && epi->kind != CUBLASLT_EPILOGUE_DEFAULT) {
        cublasLtEpilogue_t kind = epi->kind;
        GT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &kind,
                                                     sizeof kind));
    }
    if (epi && epi->bias) {
        const void *bias = epi->bias;
        GT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                     sizeof bias));
        GT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                     &dtype, sizeof dtype));
    }
    if (has_aux) {
        /* The aux type stays at its default (-1: D's type), which is the
         * storage type pre must have. The heuristic reads the pointer's
         * alignment from its value. */
        const void *aux = epi->aux;
        int64_t ld = epi->aux_ld;
        GT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(
            d.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux));
        GT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                                     &ld, sizeof ld));
    }
    GT_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&d.a, dtype, ta ? kk : m, ta ? m : kk, lda));
    GT_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&d.b, dtype, tb ? n : kk, tb ? kk : n, ldb));
    GT_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&d.c, dtype_d, m, n, ldd));

    GT_CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&d.pref));
    uint64_t ws = im->lt_workspace_bytes;
    GT_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(
        d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    uint32_t al_a = ptr_alignment(A), al_b = ptr_alignment(B), al_d = ptr_alignment(D);
    GT_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(
        d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof al_a));
    GT_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(
        d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof al_b));
    GT_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(
        d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_d, sizeof al_d));
    GT_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(
        d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_d, sizeof al_d));
    return GT_OK;
}

/* ---- plans: the cached descriptors and heuristic answers ---------------------------- */

/* Everything that decides lt_describe's descriptors and the heuristic's
 * answer, and nothing else: the pointers enter only through their
 * alignment (ptr_alignment of A, B, D: the MIN_ALIGNMENT preferences, C is
 * D; of the bias and aux: the heuristic reads it from their values).
 * Zeroed before it is filled and compared bytewise. */
namespace {
struct lt_key {
    int32_t device;
    int32_t compute, scale; /* CUBLAS_COMPUTE_32F, CUDA_R_32F: fixed today */
    int32_t ab_type, cd_type, bias_type;
    int32_t ta, tb, m, n, kk, lda, ldb, ldd;
    int32_t epilogue, has_bias, has_aux, pad_;
    int64_t aux_ld;
    uint32_t al_a, al_b, al_c, al_d, al_bias, al_aux;
    uint64_t workspace; /* MAX_WORKSPACE_BYTES */
};

/* A plan: the descriptors of one key and the heuristic's first answer
 * for them (or its refusal, which is as much an answer: NOT_SUPPORTED is
 * asked once, not on every call of a GEMM that then stages or falls
 * back). `mu` is held from setting the per-call attributes (the bias and
 * aux pointers) through cublasLtMatmul, which reads the descriptors
 * during the call only: the previous code and llm.c destroy them right
 * after it returns, with the GEMM still queued. So a plan used by two
 * threads (two backends' streams) at once never has one caller's bias in
 * another caller's GEMM, and no descriptor is read while it is written. */
struct lt_plan {
    lt_key key;
    lt_descs d;
    cublasStatus_t hs; /* the heuristic's status */
    int count;         /* and how many answers (0 or 1) */
    cublasLtMatmulHeuristicResult_t res;
    pthread_mutex_t mu;
    lt_plan() { pthread_mutex_init(&mu, nullptr); }
    ~lt_plan() { pthread_mutex_destroy(&mu); }
};
} // namespace

#define LT_PLANS 1024 /* cached keys per process (a model: its few shapes x its alignments) */
#define LT_SLOTS 2048 /* open-addressing slots, a power of two > LT_PLANS */

static pthread_mutex_t g_lt_lock = PTHREAD_MUTEX_INITIALIZER;
static lt_plan *g_lt_plans[LT_SLOTS]; /* live for the process, like conv.cu's plans */
static int g_lt_nplans;

static size_t lt_key_hash(const lt_key &k) {
    uint64_t h = gt_fnv1a64(GT_FNV1A64_INIT, &k, sizeof k);
    return (size_t)(h ^ (h >> 29));
}

static lt_key lt_make_key(gt_cuda_impl *im, cudaDataType_t dtype, cudaDataType_t dtype_d, bool ta,
                          bool tb, int m, int n, int kk, const void *A, int lda, const void *B,
                          int ldb, const void *D, int ldd, const lt_epi *epi) {
    lt_key k;
    memset(&k, 0, sizeof k);
    k.device = im->device;
    k.compute = (int32_t)CUBLAS_COMPUTE_32F;
    k.scale = (int32_t)CUDA_R_32F;
    k.ab_type = (int32_t)dtype;
    k.cd_type = (int32_t)dtype_d;
    k.ta = ta;
    k.tb = tb;
    k.m = m;
    k.n = n;
    k.kk = kk;
    k.lda = lda;
    k.ldb = ldb;
    k.ldd = ldd;
    k.epilogue = (int32_t)(epi ? epi->kind : CUBLASLT_EPILOGUE_DEFAULT);
    if (epi && epi->bias) {
        k.has_bias = 1;
        k.bias_type = (int32_t)dtype;
        k.al_bias = ptr_alignment(epi->bias);
    }
    if (epi && epi->aux) {
        k.has_aux = 1;
        k.aux_ld = epi->aux_ld;
        k.al_aux = ptr_alignment(epi->aux);
    }
    k.al_a = ptr_alignment(A);
    k.al_b = ptr_alignment(B);
    k.al_c = k.al_d = ptr_alignment(D);
    k.workspace = im->lt_workspace_bytes;
    return k;
}

/* A new plan for key k: lt_describe's descriptors and one heuristic
 * query, exactly what every call made before plans were cached. */
static gt_status lt_plan_build(gt_cuda_impl *im, const lt_key &k, cudaDataType_t dtype,
                               cudaDataType_t dtype_d, bool ta, bool tb, int m, int n, int kk,
                               const void *A, int lda, const void *B, int ldb, void *D, int ldd,
                               const lt_epi *epi, lt_plan **out) {
    *out = nullptr;
    lt_plan *p = new (std::nothrow) lt_plan();
    if (!p) return GT_ERR(GT_ERR_OOM, "cuBLASLt: out of host memory for a plan");
    p->key = k;
    gt_status s = lt_describe(im, dtype, dtype_d, ta, tb, m, n, kk, A, lda, B, ldb, D, ldd, epi,
                              p->d);
    if (s != GT_OK) {
        delete p;
        return s;
    }
    p->count = 0;
    p->hs = cublasLtMatmulAlgoGetHeuristic(im->lt, p->d.op, p->d.a, p->d.b, p->d.c, p->d.c,
                                           p->d.pref, 1, &p->res, &p->count);
    /* the preference has done its work: only the heuristic reads it */
    (void)cublasLtMatmulPreferenceDestroy(p->d.pref);
    p->d.pref = nullptr;
    *out = p;
    return GT_OK;
}

/* The plan for these arguments: the process's cached one, else a new one,
 * cached while there is room (LT_PLANS keys), else *owned (the caller
 * frees it after its call: the same descriptors and answer, only slower).
 * With GT_CUDA_LT_CACHE=off every plan is owned: every call describes and
 * asks again, as before the cache. */
static gt_status lt_plan_get(gt_cuda_impl *im, cudaDataType_t dtype, cudaDataType_t dtype_d,
                             bool ta, bool tb, int m, int n, int kk, const void *A, int lda,
                             const void *B, int ldb, void *D, int ldd, const lt_epi *epi,
                             lt_plan **out, bool *owned) {
    *out = nullptr;
    *owned = false;
    lt_key k = lt_make_key(im, dtype, dtype_d, ta, tb, m, n, kk, A, lda, B, ldb, D, ldd, epi);
    if (im->lt_cache_off) {
        *owned = true;
        return lt_plan_build(im, k, dtype, dtype_d, ta, tb, m, n, kk, A, lda, B, ldb, D, ldd, epi,
                             out);
    }
    gt_status s = GT_OK;
    pthread_mutex_lock(&g_lt_lock);
    size_t i = lt_key_hash(k) & (LT_SLOTS - 1);
    while (g_lt_plans[i] && memcmp(&g_lt_plans[i]->key, &k, sizeof k) != 0)
        i = (i + 1) & (LT_SLOTS - 1);
    lt_plan *p = g_lt_plans[i];
    if (!p) {
        /* built under the lock, as conv.cu's: one query per key */
        s = lt_plan_build(im, k, dtype, dtype_d, ta, tb, m, n, kk, A, lda, B, ldb, D, ldd, epi, &p);
        /* an answer about the problem is kept; another failure (out of
         * memory, an internal error) may pass, and is asked again */
        bool answer = s == GT_OK && (p->hs == CUBLAS_STATUS_SUCCESS ||
                                     p->hs == CUBLAS_STATUS_NOT_SUPPORTED ||
                                     p->hs == CUBLAS_STATUS_INVALID_VALUE);
        if (answer && g_lt_nplans < LT_PLANS) {
            g_lt_plans[i] = p;
            g_lt_nplans++;
        } else if (s == GT_OK) {
            *owned = true;
        }
    }
    pthread_mutex_unlock(&g_lt_lock);
    GT_TRY(s);
    *out = p;
    return GT_OK;
}

namespace {
/* frees an owned plan on every path out of lt_matmul */
struct lt_plan_ref {
    lt_plan *p = nullptr;
    bool owned = false;
    ~lt_plan_ref() {
        if (owned) delete p;
    }
};
} // namespace

/* Column-major D(m,n) (ld ldd) = epilogue(op(A)(m,kk) @ op(B)(kk,n) + beta * D).
 * A is stored (kk,m) when ta, else (m,kk); B is stored (n,kk) when tb, else
 * (kk,n). A and B have type dtype; D (and C, the same matrix) dtype_d: dtype,
 * or CUDA_R_32F for a 16-bit dtype (the fallbacks' fp32 accumulator, a
 * combination the cuBLASLt guide lists for CUBLAS_COMPUTE_32F), then with
 * no epilogue. epi may be NULL (none). GT_ERR_UNSUPPORTED when cuBLASLt
 * has no algorithm for it (or, with an aux matrix, refuses the descriptor
 * as an invalid value: the caller falls back). The heuristic's first
 * algorithm, from the plan of these arguments (lt_plan_get). */
static gt_status lt_matmul(gt_cuda_impl *im, cudaDataType_t dtype, cudaDataType_t dtype_d, bool ta,
                           bool tb, int m, int n, int kk, const void *A, int lda, const void *B,
                           int ldb, void *D, int ldd, float beta, const lt_epi *epi) {
    lt_plan_ref ref;
    bool has_aux = epi && epi->aux;
    GT_TRY(lt_plan_get(im, dtype, dtype_d, ta, tb, m, n, kk, A, lda, B, ldb, D, ldd, epi, &ref.p,
                       &ref.owned));
    lt_plan *p = ref.p;
    cublasStatus_t hs = p->hs;
    int count = p->count;
    /* GT_CUDA_LT_EPILOGUES=default-only: answered as a library without
     * kernels for the epilogue would answer (the fallbacks run) */
    if (im->lt_default_only && epi && epi->kind != CUBLASLT_EPILOGUE_DEFAULT &&
        hs == CUBLAS_STATUS_SUCCESS)
        hs = CUBLAS_STATUS_NOT_SUPPORTED;
    if (hs == CUBLAS_STATUS_NOT_SUPPORTED || (hs == CUBLAS_STATUS_INVALID_VALUE && has_aux) ||
        (hs == CUBLAS_STATUS_SUCCESS && count == 0))
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "cuBLASLt has no algorithm for %s%s m=%d n=%d k=%d op=%c%c epilogue %d "
                      "(alignment A %u B %u D %u aux %u; heuristic %s)",
                      dt_name(dtype), dtype_d != dtype ? " (D fp32)" : "", m, n, kk, ta ? 'T' : 'N',
                      tb ? 'T' : 'N', epi ? (int)epi->kind : 0, ptr_alignment(A),
                      ptr_alignment(B), ptr_alignment(D), has_aux ? ptr_alignment(epi->aux) : 0,
                      cublasLtGetStatusName(hs));
    GT_CUBLAS_TRY(hs);

    const float alpha = 1.0f;
    cublasStatus_t ms = CUBLAS_STATUS_SUCCESS;
    pthread_mutex_lock(&p->mu);
    /* this call's bias and aux pointers (the key holds only their
     * alignment, so the algorithm stays valid for them) */
    if (epi && epi->bias) {
        const void *bias = epi->bias;
        ms = cublasLtMatmulDescSetAttribute(p->d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                            sizeof bias);
    }
    if (ms == CUBLAS_STATUS_SUCCESS && has_aux) {
        const void *aux = epi->aux;
        ms = cublasLtMatmulDescSetAttribute(p->d.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                            &aux, sizeof aux);
    }
    if (ms == CUBLAS_STATUS_SUCCESS)
        ms = cublasLtMatmul(im->lt, p->d.op, &alpha, A, p->d.a, B, p->d.b, &beta, D, p->d.c, D,
                            p->d.c, &p->res.algo, im->lt_workspace, im->lt_workspace_bytes,
                            im->stream);
    pthread_mutex_unlock(&p->mu);
    if (ms != CUBLAS_STATUS_SUCCESS)
        return GT_ERR(GT_ERR_DEVICE,
                      "cublasLtMatmul (%s m=%d n=%d k=%d op=%c%c epilogue %d) failed: %s (%s)",
                      dt_name(dtype), m, n, kk, ta ? 'T' : 'N', tb ? 'T' : 'N',
                      epi ? (int)epi->kind : 0, cublasLtGetStatusString(ms),
                      cublasLtGetStatusName(ms));
    return GT_OK;
}

/* Elements a column-major (rows, cols) matrix with leading dimension ld
 * spans: the last column holds only its rows, so no byte past the end of a
 * tightly allocated matrix is read. */
static size_t lt_extent(int rows, int cols, int ld) {
    return rows <= 0 || cols <= 0 ? 0 : (size_t)(cols - 1) * (size_t)ld + (size_t)rows;
}

/* A GEMM through lt_matmul with epilogue epi (NULL: none); when cuBLASLt
 * has no algorithm for these pointers and one of A, B, D is not 16-byte
 * aligned, again with the misaligned ones staged; a misaligned bias or aux
 * matrix is staged (with the rest) at once (see the top). Staging keeps
 * the epilogue: the fallbacks without it need an fp32 copy of the GEMM's
 * result and another pass over memory. */
static gt_status lt_gemm(const gt_kctx *k, gt_cuda_impl *im, cudaDataType_t dtype,
                         cudaDataType_t dtype_d, bool ta, bool tb, int m, int n, int kk,
                         const void *A, int lda, const void *B, int ldb, void *D, int ldd,
                         float beta, const lt_epi *epi) {
    const void *bias = epi ? epi->bias : NULL, *aux = epi ? epi->aux : NULL;
    bool side_misaligned = (bias && !gt_cuda_aligned(bias)) || (aux && !gt_cuda_aligned(aux));
    bool misaligned = side_misaligned || !gt_cuda_aligned(A) || !gt_cuda_aligned(B) ||
                      !gt_cuda_aligned(D);
    char why[256];
    gt_status s;
    if (!side_misaligned) {
        s = lt_matmul(im, dtype, dtype_d, ta, tb, m, n, kk, A, lda, B, ldb, D, ldd, beta, epi);
        if (s != GT_ERR_UNSUPPORTED || !misaligned) return s;
        snprintf(why, sizeof why, "%s", gt_last_error());
        gt_error_clear();
    } else {
        snprintf(why, sizeof why, "the bias or aux matrix is not 16-byte aligned: not asked");
    }
    size_t es = dtype == CUDA_R_32F ? 4 : 2, es_d = dtype_d == CUDA_R_32F ? 4 : 2;
    gt_cuda_stage sg = gt_cuda_stage_begin(k, im);
    void *a = NULL, *b = NULL, *dd = NULL, *sb = NULL, *sx = NULL;
    lt_epi e;
    if (epi) e = *epi;
    s = gt_cuda_stage_ptr(&sg, A, lt_extent(ta ? kk : m, ta ? m : kk, lda) * es, 1, 0, &a);
    if (s == GT_OK)
        s = gt_cuda_stage_ptr(&sg, B, lt_extent(tb ? n : kk, tb ? kk : n, ldb) * es, 1, 0, &b);
    if (s == GT_OK)
        s = gt_cuda_stage_ptr(&sg, D, lt_extent(m, n, ldd) * es_d, beta != 0.0f, 1, &dd);
    /* the bias: D's rows, read; the aux matrix: D's shape at ld aux_ld,
     * read by DGELU, written by the GELU_AUX epilogues */
    if (s == GT_OK && bias) s = gt_cuda_stage_ptr(&sg, bias, (size_t)m * es, 1, 0, &sb);
    if (s == GT_OK && aux) {
        bool reads = epi->kind == CUBLASLT_EPILOGUE_DGELU;
        s = gt_cuda_stage_ptr(&sg, aux, lt_extent(m, n, (int)epi->aux_ld) * es, reads, !reads,
                              &sx);
    }
    if (s == GT_OK) {
        e.bias = sb;
        e.aux = sx;
        s = lt_matmul(im, dtype, dtype_d, ta, tb, m, n, kk, a, lda, b, ldb, dd, ldd, beta,
                      epi ? &e : NULL);
    }
    s = gt_cuda_unstage(&sg, s);
    if (s == GT_OK)
        gt_cuda_note(im, "GEMM %s m=%d n=%d k=%d op=%c%c epilogue %d: operands staged to "
                     "16-byte aligned scratch (unstaged: %.160s)", dt_name(dtype), m, n, kk,
                     ta ? 'T' : 'N', tb ? 'T' : 'N', epi ? (int)epi->kind : 0, why);
    return s;
}

/* out(N,OC) = acc + bias(OC), rounded once to T: when no algorithm takes
 * the BIAS epilogue. acc is the GEMM's result in fp32: scratch for 16-bit
 * storage, out itself for fp32 (in place, hence no __restrict__). */
template <typename T>
__global__ void matmul_bias_kernel(T *out, const float *acc, const T *__restrict__ bias, size_t n,
                                   int OC) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        gt_st(out, i, acc[i] + gt_ld(bias, i % OC));
}

/* grid (chunks, ceil(OC/32)), block (32, MM_COLS_Y): partial[chunk][col]. */
template <typename T>
__global__ void matmul_dbias_partials_kernel(float *part, const T *__restrict__ dout, int N,
                                             int OC) {
    __shared__ float s[MM_COLS_Y][32];
    int chunk = blockIdx.x;
    int c = blockIdx.y * 32 + threadIdx.x;
    int r0 = chunk * MM_ROWS, r1 = min(r0 + MM_ROWS, N);
    float acc = 0.0f;
    if (c < OC)
        for (int r = r0 + threadIdx.y; r < r1; r += MM_COLS_Y)
            acc += gt_ld(dout, (size_t)r * OC + c);
    s[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < OC) {
        for (int y = 1; y < MM_COLS_Y; y++)
            acc += s[y][threadIdx.x];
        part[(size_t)chunk * OC + c] = acc;
    }
}

template <typename T>
__global__ void matmul_dbias_sum_kernel(T *dbias, const float *__restrict__ part, int chunks,
                                        int OC) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= OC) return;
    float acc = 0.0f;
    for (int i = 0; i < chunks; i++)
        acc += part[(size_t)i * OC + c];
    gt_st(dbias, c, gt_ld(dbias, c) + acc);
}

static cudaDataType_t cuda_type(gt_dtype dt) {
    return dt == GT_DTYPE_BF16 ? CUDA_R_16BF : dt == GT_DTYPE_FP16 ? CUDA_R_16F : CUDA_R_32F;
}

template <typename T>
static gt_status bias_launch(gt_cuda_impl *im, void *out, const float *acc, const void *bias, int N,
                             int OC) {
    size_t n = (size_t)N * OC;
    matmul_bias_kernel<T>
        <<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>((T *)out, acc, (const T *)bias, n, OC);
    GT_CUDA_LAUNCHED("matmul_bias_kernel");
    return GT_OK;
}

/* The fallbacks' GEMM without an epilogue, whose result the own kernel
 * reads in fp32 and rounds once to the storage type after adding the bias
 * or applying GELU/GELU': column-major (m,n) = op(A) @ op(B) as lt_gemm
 * (beta 0). fp32 storage: into D itself (*acc = D, the kernel works in
 * place). bf16/fp16: into fp32 scratch of m*n floats, ld m, from the
 * caching allocator (*acc; the caller frees it with gt_cuda_scratch_free
 * once its kernel is queued: one stream orders a later user after it). */
static gt_status gemm_acc32(const gt_kctx *k, gt_cuda_impl *im, bool ta, bool tb, int m, int n,
                            int kk, const void *A, int lda, const void *B, int ldb, void *D,
                            int ldd, float **acc) {
    cudaDataType_t t = cuda_type(k->dt);
    *acc = NULL;
    if (k->dt == GT_DTYPE_FP32) {
        GT_TRY(lt_gemm(k, im, t, t, ta, tb, m, n, kk, A, lda, B, ldb, D, ldd, 0.0f, NULL));
        *acc = (float *)D;
        return GT_OK;
    }
    void *p = NULL;
    GT_TRY(gt_cuda_scratch(k, (size_t)m * n * sizeof(float), &p));
    gt_status s = lt_gemm(k, im, t, CUDA_R_32F, ta, tb, m, n, kk, A, lda, B, ldb, p, m, 0.0f, NULL);
    if (s != GT_OK) {
        gt_cuda_scratch_free(k, p);
        return s;
    }
    *acc = (float *)p;
    return GT_OK;
}

/* Releases gemm_acc32's scratch (nothing for fp32, where acc is D). */
static void acc32_free(const gt_kctx *k, float *acc) {
    if (k->dt != GT_DTYPE_FP32) gt_cuda_scratch_free(k, acc);
}

/* out(N,OC) = inp @ weight^T + bias, the BIAS epilogue when an algorithm
 * takes it (a misaligned bias staged like the operands), else the GEMM in
 * fp32 (gemm_acc32) and the own broadcast kernel: one rounding of GEMM +
 * bias to the storage type either way. */
static gt_status linear_fwd(const gt_kctx *k, gt_cuda_impl *im, void *out, const void *inp,
                            const void *weight, const void *bias, int N, int C, int OC) {
    cudaDataType_t t = cuda_type(k->dt);
    /* out^T(OC,N) = op_T(weight as column-major (C,OC)) @ inp as column-major (C,N). */
    if (!bias)
        return lt_gemm(k, im, t, t, true, false, OC, N, C, weight, C, inp, C, out, OC, 0.0f, NULL);
    lt_epi e;
    e.kind = CUBLASLT_EPILOGUE_BIAS;
    e.bias = bias;
    gt_status s = lt_gemm(k, im, t, t, true, false, OC, N, C, weight, C, inp, C, out, OC, 0.0f, &e);
    if (s != GT_ERR_UNSUPPORTED) return s;
    gt_error_clear(); /* the fallback */
    gt_cuda_note(im,
                 "matmul_fwd N%d C%d OC%d %s: matmul + own bias kernel (no cuBLASLt algorithm "
                 "takes the BIAS epilogue)",
                 N, C, OC, dt_name(t));
    float *acc = NULL;
    GT_TRY(gemm_acc32(k, im, true, false, OC, N, C, weight, C, inp, C, out, OC, &acc));
    s = GT_CUDA_DISPATCH(k->dt, bias_launch, im, out, acc, bias, N, OC);
    acc32_free(k, acc);
    return s;
}

extern "C" gt_status gt_cuda_matmul_fwd(const gt_kctx *k, void *out, const void *inp,
                                        const void *weight, const void *bias, int N, int C,
                                        int OC) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "matmul_fwd", &im));
    if (N < 0 || C <= 0 || OC < 0)
        return GT_ERR(GT_ERR_INVALID, "matmul_fwd: bad shape N=%d C=%d OC=%d", N, C, OC);
    if (N == 0 || OC == 0) return GT_OK;
    return linear_fwd(k, im, out, inp, weight, bias, N, C, OC);
}

/* ---- the library's own best, for the kernels suite --------------------------------- */

#define LT_BEST_ALGOS 16  /* heuristic answers asked for */
#define LT_BEST_SAMPLES 5 /* timed batches per algorithm: the median */

/* The fastest of the heuristic's algorithms for lt_describe's GEMM (beta
 * 0), each run once to warm up (that run also sizes the batch to ~0.2 ms),
 * then LT_BEST_SAMPLES batches timed with events on the backend's stream;
 * the median per call. An algorithm whose launch fails is skipped.
 * *timed: how many ran; *rank: the heuristic's rank of the fastest (0 is
 * the one lt_matmul takes). */
static gt_status lt_best_of(gt_cuda_impl *im, cudaDataType_t t, bool ta, bool tb, int m, int n,
                            int kk, const void *A, int lda, const void *B, int ldb, void *D,
                            int ldd, const lt_epi *epi, double *best_s, int *timed, int *rank) {
    *best_s = 0.0;
    *timed = 0;
    *rank = -1;
    lt_descs d;
    GT_TRY(lt_describe(im, t, t, ta, tb, m, n, kk, A, lda, B, ldb, D, ldd, epi, d));
    cublasLtMatmulHeuristicResult_t res[LT_BEST_ALGOS];
    int count = 0;
    cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(im->lt, d.op, d.a, d.b, d.c, d.c, d.pref,
                                                       LT_BEST_ALGOS, res, &count);
    if (hs == CUBLAS_STATUS_NOT_SUPPORTED || (hs == CUBLAS_STATUS_SUCCESS && count == 0))
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "cuBLASLt offers no algorithm for %s m=%d n=%d k=%d epilogue %d "
                      "(alignment A %u B %u D %u)",
                      dt_name(t), m, n, kk, epi ? (int)epi->kind : 0, ptr_alignment(A),
                      ptr_alignment(B), ptr_alignment(D));
    GT_CUBLAS_TRY(hs);
    cudaEvent_t ev0 = nullptr, ev1 = nullptr;
    cudaError_t ce = cudaEventCreate(&ev0);
    if (ce == cudaSuccess) ce = cudaEventCreate(&ev1);
    const float alpha = 1.0f, beta = 0.0f;
    for (int i = 0; ce == cudaSuccess && i < count; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS ||
            res[i].workspaceSize > im->lt_workspace_bytes)
            continue;
        /* one call, or a batch of `calls`, between two events: ms per call */
        auto batch = [&](int calls, double *ms) -> bool {
            if (cudaEventRecord(ev0, im->stream) != cudaSuccess) return false;
            for (int c = 0; c < calls; c++)
                if (cublasLtMatmul(im->lt, d.op, &alpha, A, d.a, B, d.b, &beta, D, d.c, D, d.c,
                                   &res[i].algo, im->lt_workspace, im->lt_workspace_bytes,
                                   im->stream) != CUBLAS_STATUS_SUCCESS)
                    return false;
            float e = 0.0f;
            if (cudaEventRecord(ev1, im->stream) != cudaSuccess ||
                cudaEventSynchronize(ev1) != cudaSuccess ||
                cudaEventElapsedTime(&e, ev0, ev1) != cudaSuccess)
                return false;
            *ms = (double)e / calls;
            return true;
        };
        double warm = 0.0, ms[LT_BEST_SAMPLES];
        if (!batch(1, &warm)) {
            (void)cudaGetLastError();
            continue;
        }
        int calls = warm > 0.0 ? (int)(0.2 / warm) : 1000;
        calls = calls < 1 ? 1 : calls > 1000 ? 1000 : calls;
        int ok = 1;
        for (int r = 0; ok && r < LT_BEST_SAMPLES; r++)
            ok = batch(calls, &ms[r]);
        if (!ok) {
            (void)cudaGetLastError();
            continue;
        }
        std::sort(ms, ms + LT_BEST_SAMPLES);
        double med = ms[LT_BEST_SAMPLES / 2] * 1e-3;
        if (*rank < 0 || med < *best_s) {
            *best_s = med;
            *rank = i;
        }
        (*timed)++;
    }
    if (ev0) (void)cudaEventDestroy(ev0);
    if (ev1) (void)cudaEventDestroy(ev1);
    if (ce != cudaSuccess)
        return GT_ERR(GT_ERR_DEVICE, "library best: cudaEventCreate failed: %s",
                      cudaGetErrorString(ce));
    if (*timed == 0)
        return GT_ERR(GT_ERR_DEVICE,
                      "library best: none of cuBLASLt's %d algorithms for %s m=%d n=%d k=%d ran",
                      count, dt_name(t), m, n, kk);
    return GT_OK;
}

/* The library's own best for matmul_fwd's GEMM (gemm_library_best in
 * engine/backend.h): the descriptors linear_fwd's first choice uses, the
 * BIAS epilogue with a bias (the GEMM alone without one, or when no
 * algorithm takes BIAS, as linear_fwd's fallback then does; always under
 * GT_CUDA_LT_EPILOGUES=default-only), through lt_best_of. Writes out. */
extern "C" gt_status gt_cuda_matmul_fwd_library_best(const gt_kctx *k, void *out, const void *inp,
                                                     const void *weight, const void *bias, int N,
                                                     int C, int OC, double *best_s, char *what,
                                                     size_t what_len) {
    gt_cuda_impl *im;
    *best_s = 0.0;
    if (what && what_len) what[0] = '\0';
    GT_TRY(gt_cuda_begin(k, "matmul_fwd (library best)", &im));
    if (N <= 0 || C <= 0 || OC <= 0)
        return GT_ERR(GT_ERR_INVALID, "matmul_fwd library best: bad shape N=%d C=%d OC=%d", N,
                      C, OC);
    cudaDataType_t t = cuda_type(k->dt);
    lt_epi e;
    e.kind = CUBLASLT_EPILOGUE_BIAS;
    e.bias = bias;
    int timed = 0, rank = -1, fused = bias && !im->lt_default_only;
    gt_status s = GT_ERR_UNSUPPORTED;
    if (fused) {
        s = lt_best_of(im, t, true, false, OC, N, C, weight, C, inp, C, out, OC, &e, best_s,
                       &timed, &rank);
        if (s == GT_ERR_UNSUPPORTED) {
            gt_error_clear();
            fused = 0;
        }
    }
    if (s == GT_ERR_UNSUPPORTED)
        s = lt_best_of(im, t, true, false, OC, N, C, weight, C, inp, C, out, OC, NULL, best_s,
                       &timed, &rank);
    GT_TRY(s);
    if (what && what_len)
        snprintf(what, what_len,
                 "cuBLASLt %s m=%d n=%d k=%d op=TN epilogue %s: %d algorithm%s timed, the "
                 "fastest the heuristic's #%d (matmul_fwd takes #0)",
                 dt_name(t), OC, N, C, fused ? "BIAS" : "DEFAULT", timed, timed == 1 ? "" : "s",
                 rank);
    return GT_OK;
}

template <typename T>
static gt_status dbias_launch(const gt_kctx *k, gt_cuda_impl *im, void *dbias, const void *dout,
                              int N, int OC) {
    int chunks = (N + MM_ROWS - 1) / MM_ROWS;
    void *part = NULL;
    GT_TRY(gt_cuda_scratch(k, (size_t)chunks * OC * sizeof(float), &part));
    dim3 grid((unsigned)chunks, (unsigned)((OC + 31) / 32));
    matmul_dbias_partials_kernel<T>
        <<<grid, dim3(32, MM_COLS_Y), 0, im->stream>>>((float *)part, (const T *)dout, N, OC);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) {
        matmul_dbias_sum_kernel<T>
            <<<(OC + 255) / 256, 256, 0, im->stream>>>((T *)dbias, (const float *)part, chunks, OC);
        e = cudaGetLastError();
    }
    gt_cuda_scratch_free(k, part);
    if (e != cudaSuccess)
        return GT_ERR(GT_ERR_DEVICE, "launch of matmul dbias kernels failed: %s (%s)",
                      cudaGetErrorString(e), cudaGetErrorName(e));
    return GT_OK;
}

/* The parameter gradients of a linear layer (matmul_bwd and
 * matmul_dgelu_bwd): dweight(OC,C) += dout^T @ inp, dbias(OC) += column
 * sums of dout (dbias may be NULL). */
static gt_status weight_grads(const gt_kctx *k, gt_cuda_impl *im, void *dweight, void *dbias,
                              const void *dout, const void *inp, int N, int C, int OC) {
    /* dweight^T(C,OC) += inp^T(C,N col-major) @ dout(N,OC) = op T of the
     * column-major (OC,N) view of dout. */
    cudaDataType_t t = cuda_type(k->dt);
    GT_TRY(lt_gemm(k, im, t, t, false, true, C, OC, N, inp, C, dout, OC, dweight, C, 1.0f, NULL));
    if (dbias) return GT_CUDA_DISPATCH(k->dt, dbias_launch, k, im, dbias, dout, N, OC);
    return GT_OK;
}

extern "C" gt_status gt_cuda_matmul_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                                        const void *dout, const void *inp, const void *weight,
                                        int N, int C, int OC) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "matmul_bwd", &im));
    if (N < 0 || C <= 0 || OC <= 0 || OC > 65535 * 32)
        return GT_ERR(GT_ERR_INVALID, "matmul_bwd: bad shape N=%d C=%d OC=%d", N, C, OC);
    if (N == 0) return GT_OK;
    if (dinp) {
        /* dinp^T(C,N) = weight(C,OC col-major) @ dout^T(OC,N col-major);
         * beta 0: the old dinp is never read (it may hold NaN). */
        cudaDataType_t t = cuda_type(k->dt);
        GT_TRY(
            lt_gemm(k, im, t, t, false, false, C, N, OC, weight, C, dout, OC, dinp, C, 0.0f, NULL));
    }
    return weight_grads(k, im, dweight, dbias, dout, inp, N, C, OC);
}

/* ---- linear + GELU ------------------------------------------------------------------ */

/* out(n) = gelu(pre): the fallback's pass after matmul_fwd's path wrote
 * pre (GEMM + bias, rounded once). gelu is taken of pre as stored, as the
 * unfused matmul_fwd + gelu_fwd do, so out = gelu(pre) holds bitwise for
 * the pre the backward reads. */
template <typename T>
__global__ void matmul_gelu_kernel(T *out, const T *__restrict__ pre, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        gt_st(out, i, gt_gelu(gt_ld(pre, i)));
}

/* dpre(n) = gelu'(pre) * acc, rounded once to T: the fallback's pass after
 * the GEMM dout @ weight without the DGELU epilogue. acc is that GEMM's
 * result in fp32: scratch for 16-bit storage, dpre itself for fp32. */
template <typename T>
__global__ void matmul_dgelu_kernel(T *dpre, const float *acc, const T *__restrict__ pre,
                                    size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        gt_st(dpre, i, gt_gelu_grad(gt_ld(pre, i)) * acc[i]);
}

template <typename T>
static gt_status gelu_launch(gt_cuda_impl *im, void *out, const void *pre, int N, int OC) {
    size_t n = (size_t)N * OC;
    matmul_gelu_kernel<T>
        <<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>((T *)out, (const T *)pre, n);
    GT_CUDA_LAUNCHED("matmul_gelu_kernel");
    return GT_OK;
}

template <typename T>
static gt_status dgelu_launch(gt_cuda_impl *im, void *dpre, const float *acc, const void *pre,
                              int N, int C) {
    size_t n = (size_t)N * C;
    matmul_dgelu_kernel<T>
        <<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>((T *)dpre, acc, (const T *)pre, n);
    GT_CUDA_LAUNCHED("matmul_dgelu_kernel");
    return GT_OK;
}

/* Why the GELU epilogue is not tried for this call (NULL: try it). ld: the
 * aux matrix's leading dimension (OC forward, C backward). A bias or aux
 * pointer that is not 16-byte aligned is no reason: lt_gemm stages it. */
static const char *gelu_epi_refusal(gt_dtype dt, int ld) {
    if (dt == GT_DTYPE_FP32) return "fp32: cuBLASLt's GELU is not documented fp32-accurate";
    if (ld % 8 != 0) return "aux ld not a multiple of 8";
    return NULL;
}

extern "C" gt_status gt_cuda_matmul_gelu_fwd(const gt_kctx *k, void *out, void *pre,
                                             const void *inp, const void *weight, const void *bias,
                                             int N, int C, int OC) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "matmul_gelu_fwd", &im));
    if (N < 0 || C <= 0 || OC < 0)
        return GT_ERR(GT_ERR_INVALID, "matmul_gelu_fwd: bad shape N=%d C=%d OC=%d", N, C, OC);
    if (N == 0 || OC == 0) return GT_OK;
    cudaDataType_t t = cuda_type(k->dt);
    const char *why = gelu_epi_refusal(k->dt, OC);
    const char *epi_name = bias ? "GELU_AUX_BIAS" : "GELU_AUX";
    if (!why) {
        /* out^T(OC,N) = gelu(op_T(weight as column-major (C,OC)) @ inp^T + bias),
         * the aux pre^T(OC,N) the values before GELU, ld OC like D's. */
        lt_epi e;
        e.kind = bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
        e.bias = bias;
        e.aux = pre;
        e.aux_ld = OC;
        gt_status s =
            lt_gemm(k, im, t, t, true, false, OC, N, C, weight, C, inp, C, out, OC, 0.0f, &e);
        if (s == GT_OK) {
            gt_cuda_note(im, "matmul_gelu_fwd N%d C%d OC%d %s: cublasLt %s epilogue", N, C, OC,
                         dt_name(t), epi_name);
            return GT_OK;
        }
        if (s != GT_ERR_UNSUPPORTED) return s;
        gt_error_clear(); /* the fallback below */
        why = "no cuBLASLt algorithm takes the epilogue here";
    }
    gt_cuda_note(im, "matmul_gelu_fwd N%d C%d OC%d %s: matmul + own GELU kernel (%s)", N, C, OC,
                 dt_name(t), why);
    /* pre = inp @ weight^T + bias rounded once (matmul_fwd's path: the
     * BIAS epilogue, else the GEMM in fp32 and the own bias kernel), then
     * out = gelu(pre) */
    GT_TRY(linear_fwd(k, im, pre, inp, weight, bias, N, C, OC));
    return GT_CUDA_DISPATCH(k->dt, gelu_launch, im, out, pre, N, OC);
}

extern "C" gt_status gt_cuda_matmul_dgelu_bwd(const gt_kctx *k, void *dpre, void *dweight,
                                              void *dbias, const void *dout, const void *inp,
                                              const void *weight, const void *pre, int N, int C,
                                              int OC) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin(k, "matmul_dgelu_bwd", &im));
    if (N < 0 || C <= 0 || OC <= 0 || OC > 65535 * 32)
        return GT_ERR(GT_ERR_INVALID, "matmul_dgelu_bwd: bad shape N=%d C=%d OC=%d", N, C, OC);
    if (N == 0) return GT_OK;
    cudaDataType_t t = cuda_type(k->dt);
    const char *why = gelu_epi_refusal(k->dt, C);
    bool done = false;
    if (!why) {
        /* dpre^T(C,N) = (weight(C,OC col-major) @ dout^T(OC,N)) * gelu'(pre^T),
         * the aux pre^T(C,N) ld C like D's; beta 0: dpre is never read. */
        lt_epi e;
        e.kind = CUBLASLT_EPILOGUE_DGELU;
        e.aux = pre;
        e.aux_ld = C;
        gt_status s =
            lt_gemm(k, im, t, t, false, false, C, N, OC, weight, C, dout, OC, dpre, C, 0.0f, &e);
        if (s == GT_OK) {
            gt_cuda_note(im, "matmul_dgelu_bwd N%d C%d OC%d %s: cublasLt DGELU epilogue", N, C, OC,
                         dt_name(t));
            done = true;
        } else if (s != GT_ERR_UNSUPPORTED) {
            return s;
        } else {
            gt_error_clear(); /* the fallback below */
            why = "no cuBLASLt algorithm takes the epilogue here";
        }
    }
    if (!done) {
        gt_cuda_note(im, "matmul_dgelu_bwd N%d C%d OC%d %s: matmul + own GELU' kernel (%s)", N, C,
                     OC, dt_name(t), why);
        /* the GEMM in fp32, gelu' applied and dpre rounded once by the own kernel */
        float *acc = NULL;
        GT_TRY(gemm_acc32(k, im, false, false, C, N, OC, weight, C, dout, OC, dpre, C, &acc));
        gt_status s = GT_CUDA_DISPATCH(k->dt, dgelu_launch, im, dpre, acc, pre, N, C);
        acc32_free(k, acc);
        GT_TRY(s);
    }
    return weight_grads(k, im, dweight, dbias, dout, inp, N, C, OC);
}

#endif /* GT_HAVE_CUBLAS */
