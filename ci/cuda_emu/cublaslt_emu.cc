/* The CUDA emulator's stand-in for cuBLASLt: the functions the cuda
 * backend calls (kernels/cuda/matmul.cu, backend_cuda.cu), with the
 * semantics cuBLASLt documents (cublasLt.h, the cuBLAS guide), computed by
 * plain loops on the CPU. Types come from the real cublasLt.h; each
 * descriptor is an own struct behind the opaque handle type.
 *
 * What it computes: column-major D(m,n) = epilogue(alpha op(A)(m,k) op(B)(k,n)
 * + beta C), op = N or T (C = T for real types), CUBLAS_COMPUTE_32F with
 * CUDA_R_32F scale and host alpha/beta: fp32 accumulation in k order,
 * one rounding (nearest even) into D's type on store. A and B of one
 * type: CUDA_R_32F (C, D fp32), CUDA_R_16BF or CUDA_R_16F (C, D that
 * type or fp32). When beta is 0, C is not read (it may hold NaN).
 * Epilogues: DEFAULT, RELU, BIAS, RELU_BIAS, GELU, GELU_BIAS (bias added
 * after alpha/beta, before the activation), GELU_AUX and GELU_AUX_BIAS
 * (aux = the GELU input rounded to the aux type, D = gelu of the fp32
 * value), DGELU (D = gelu'(aux) * (alpha AB + beta C), aux the GELU input
 * saved by the forward). GELU is the tanh approximation. The bias has D's
 * rows, packed, of BIAS_DATA_TYPE (default -1: D's type); the aux matrix
 * has D's shape, EPILOGUE_AUX_LD, AUX_DATA_TYPE (default -1: D's type).
 *
 * Strict where the library is, to find bugs in the caller:
 *  - every SetAttribute checks the buffer size of the attribute
 *    (INVALID_VALUE) and the enum values it can check;
 *  - the heuristic refuses (INVALID_VALUE) shapes that do not chain
 *    (op(A) m x k, op(B) k x n, C and D m x n), ld < rows, a bias or aux
 *    epilogue without its pointer, an aux ld below D's rows or not a
 *    multiple of 8; it offers no algorithm (NOT_SUPPORTED, count 0) for
 *    type, compute, epilogue or attribute combinations it does not
 *    emulate, and when the MIN_ALIGNMENT preference of A, B, C or D is
 *    below 16 bytes or the bias or aux pointer is not 16-byte aligned
 *    (the emulated algorithm reads 16-byte vectors, as tensor-core
 *    kernels do);
 *  - the heuristic answers with one algorithm (no workspace); asked for
 *    more, with a second (the same loops, 1 MiB of workspace) when the
 *    preference allows that much;
 *  - cublasLtMatmul checks that the algo came from a heuristic call on
 *    descriptors with the same contents (a fingerprint in the algo), the
 *    workspace against the algo's need, every pointer against the 16-byte
 *    alignment the algo was chosen for, that each matrix lies inside one
 *    emulated device allocation, that in-place C == D has one layout, and
 *    that the outputs (D, a written aux) do not overlap the inputs.
 * Counts: every heuristic query, descriptor creation and matmul is
 * counted; gt_emu_cublaslt_counts (emulator only) reads them, for tests of
 * the backend's plan cache (kernels.matmul_lt_cache.cuda).
 * Refusals of the INVALID_VALUE kind are also printed on stderr (they are
 * bugs in the caller); NOT_SUPPORTED ones when GT_EMU_CUBLASLT_VERBOSE is
 * set (they are expected: the caller falls back).
 *
 * Speed: op(A) and op(B) are widened to fp32 copies once; D is computed in
 * blocks of 128 rows x 4 columns, by register tiles of 8 x 4 (SSE vectors,
 * op(A)'s rows packed so that a tile streams through memory) and an axpy
 * form for the rows and columns left over; every element accumulates in k
 * order either way (the same bits). Single-threaded, like the rest of the
 * emulator. */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <mutex>
#include <set>
#include <vector>

namespace {

/* ---- objects ---------------------------------------------------------------- */

enum kind { K_HANDLE = 1, K_DESC, K_LAYOUT, K_PREF };

struct lt_context {
    int kind;
};

struct op_desc {
    int kind;
    int32_t compute;      /* cublasComputeType_t */
    int32_t scale;        /* cudaDataType_t of alpha, beta */
    int32_t pointer_mode; /* cublasLtPointerMode_t */
    int32_t transa, transb, transc;
    int32_t fill;
    uint32_t epilogue;
    const void *bias;
    int32_t bias_type; /* -1: D's type */
    int64_t bias_batch_stride;
    const void *aux;
    int64_t aux_ld;
    int64_t aux_batch_stride;
    int32_t aux_type; /* -1: D's type */
    /* an attribute this stand-in does not emulate was set to a value other
     * than its default: the heuristic offers nothing */
    const char *unemulated;
};

struct layout {
    int kind;
    int32_t type;
    uint64_t rows, cols;
    int64_t ld;
};

struct pref {
    int kind;
    uint32_t search_mode;
    uint64_t max_workspace;
    uint32_t reduction_mask;
    uint32_t align[4]; /* A, B, C, D */
    float max_waves;
    uint64_t impl_mask;
};

std::mutex live_mu;
std::set<const void *> live; /* every object created and not yet destroyed */

template <typename T> T *create_obj(int k) {
    T *o = new (std::nothrow) T();
    if (!o) return nullptr;
    o->kind = k;
    std::lock_guard<std::mutex> g(live_mu);
    live.insert(o);
    return o;
}

/* The object behind an opaque handle, or NULL when it is not a live object
 * of that kind (never created, destroyed, or another kind). */
template <typename T> T *get_obj(const void *h, int k) {
    if (!h) return nullptr;
    std::lock_guard<std::mutex> g(live_mu);
    if (!live.count(h)) return nullptr;
    T *o = (T *)h;
    return o->kind == k ? o : nullptr;
}

template <typename T> cublasStatus_t destroy_obj(void *h, int k) {
    if (!h) return CUBLAS_STATUS_SUCCESS; /* as the library: destroying NULL is fine */
    std::lock_guard<std::mutex> g(live_mu);
    if (!live.count(h) || ((T *)h)->kind != k) return CUBLAS_STATUS_INVALID_VALUE;
    live.erase(h);
    delete (T *)h;
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- counts, for tests of the caller's descriptor and heuristic cache ---- */

/* calls answered: heuristic queries, matmul descriptors, matrix layouts and
 * preferences created, matmuls run (gt_emu_cublaslt_counts) */
enum { C_HEURISTIC, C_DESC, C_LAYOUT, C_PREF, C_MATMUL, C_COUNT };
std::atomic<unsigned long long> counts[C_COUNT];

void count(int which) { counts[which].fetch_add(1, std::memory_order_relaxed); }

/* ---- messages ---------------------------------------------------------------- */

int verbose = -1;

cublasStatus_t refuse(cublasStatus_t s, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
cublasStatus_t refuse(cublasStatus_t s, const char *fn, const char *fmt, ...) {
    if (verbose < 0) {
        const char *v = getenv("GT_EMU_CUBLASLT_VERBOSE");
        verbose = v && *v && strcmp(v, "0") != 0;
    }
    if (s == CUBLAS_STATUS_NOT_SUPPORTED && !verbose) return s;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gauntlet cublasLt emulator: %s: %s: ", fn,
            s == CUBLAS_STATUS_NOT_SUPPORTED ? "CUBLAS_STATUS_NOT_SUPPORTED"
            : s == CUBLAS_STATUS_INVALID_VALUE ? "CUBLAS_STATUS_INVALID_VALUE"
                                               : "error");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return s;
}

/* ---- types and values -------------------------------------------------------- */

size_t elem_size(int32_t t) {
    switch (t) {
    case CUDA_R_32F:
        return 4;
    case CUDA_R_16F:
    case CUDA_R_16BF:
        return 2;
    default:
        return 0; /* not emulated */
    }
}

const char *type_name(int32_t t) {
    switch (t) {
    case CUDA_R_32F:
        return "CUDA_R_32F";
    case CUDA_R_16F:
        return "CUDA_R_16F";
    case CUDA_R_16BF:
        return "CUDA_R_16BF";
    case CUDA_R_64F:
        return "CUDA_R_64F";
    case -1:
        return "default (-1)";
    default:
        return "a type not emulated";
    }
}

bool known_epilogue(uint32_t e) {
    switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT:
    case CUBLASLT_EPILOGUE_RELU:
    case CUBLASLT_EPILOGUE_RELU_AUX:
    case CUBLASLT_EPILOGUE_BIAS:
    case CUBLASLT_EPILOGUE_RELU_BIAS:
    case CUBLASLT_EPILOGUE_RELU_AUX_BIAS:
    case CUBLASLT_EPILOGUE_DRELU:
    case CUBLASLT_EPILOGUE_DRELU_BGRAD:
    case CUBLASLT_EPILOGUE_GELU:
    case CUBLASLT_EPILOGUE_GELU_AUX:
    case CUBLASLT_EPILOGUE_GELU_BIAS:
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
    case CUBLASLT_EPILOGUE_DGELU:
    case CUBLASLT_EPILOGUE_DGELU_BGRAD:
    case CUBLASLT_EPILOGUE_BGRADA:
    case CUBLASLT_EPILOGUE_BGRADB:
        return true;
    default:
        return false;
    }
}

/* What an emulated epilogue does. */
struct epi_info {
    bool emulated;
    bool bias;      /* reads the bias vector */
    bool aux_out;   /* writes the GELU input to aux */
    bool aux_in;    /* reads the GELU input from aux */
    int act;        /* 0 none, 1 relu, 2 gelu, 3 gelu' */
};

epi_info epilogue_info(uint32_t e) {
    epi_info i = {};
    i.emulated = true;
    switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT:
        break;
    case CUBLASLT_EPILOGUE_RELU:
        i.act = 1;
        break;
    case CUBLASLT_EPILOGUE_BIAS:
        i.bias = true;
        break;
    case CUBLASLT_EPILOGUE_RELU_BIAS:
        i.bias = true;
        i.act = 1;
        break;
    case CUBLASLT_EPILOGUE_GELU:
        i.act = 2;
        break;
    case CUBLASLT_EPILOGUE_GELU_BIAS:
        i.bias = true;
        i.act = 2;
        break;
    case CUBLASLT_EPILOGUE_GELU_AUX:
        i.aux_out = true;
        i.act = 2;
        break;
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
        i.bias = true;
        i.aux_out = true;
        i.act = 2;
        break;
    case CUBLASLT_EPILOGUE_DGELU:
        i.aux_in = true;
        i.act = 3;
        break;
    default:
        /* the ReLU bit-mask, bias-gradient and BGRAD epilogues */
        i.emulated = false;
        break;
    }
    return i;
}

uint32_t ptr_alignment(const void *p) {
    uintptr_t a = (uintptr_t)p;
    uint32_t al = 256;
    while (al > 1 && (a % al) != 0)
        al >>= 1;
    return al;
}

/* The 16-byte alignment the emulated algorithm needs of every matrix and
 * vector (a tensor-core kernel's 128-bit loads). */
const uint32_t ALGO_ALIGN = 16;

/* ---- descriptors' checks ------------------------------------------------------- */

/* A problem as the descriptors state it, checked; filled by check_problem. */
struct problem {
    const op_desc *op;
    const layout *a, *b, *c, *d;
    uint64_t m, n, k;
    int32_t ab_type, cd_type, bias_type, aux_type;
    epi_info epi;
};

/* The checks the heuristic and cublasLtMatmul share: everything the
 * descriptors say (no pointer but bias and aux, whose alignment the
 * heuristic reads from their values). */
cublasStatus_t check_problem(const char *fn, cublasLtHandle_t h, cublasLtMatmulDesc_t opd,
                             cublasLtMatrixLayout_t ad, cublasLtMatrixLayout_t bd,
                             cublasLtMatrixLayout_t cd, cublasLtMatrixLayout_t dd, problem *p) {
    if (!get_obj<lt_context>(h, K_HANDLE))
        return refuse(CUBLAS_STATUS_NOT_INITIALIZED, fn, "not a live cuBLASLt handle");
    p->op = get_obj<op_desc>(opd, K_DESC);
    p->a = get_obj<layout>(ad, K_LAYOUT);
    p->b = get_obj<layout>(bd, K_LAYOUT);
    p->c = get_obj<layout>(cd, K_LAYOUT);
    p->d = get_obj<layout>(dd, K_LAYOUT);
    if (!p->op) return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "not a live matmul descriptor");
    if (!p->a || !p->b || !p->c || !p->d)
        return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "Adesc, Bdesc, Cdesc or Ddesc is not a "
                      "live matrix layout");
    const op_desc &o = *p->op;
    const layout &A = *p->a, &B = *p->b, &C = *p->c, &D = *p->d;

    /* shapes: op(A) is m x k, op(B) k x n, C and D m x n */
    bool ta = o.transa != CUBLAS_OP_N, tb = o.transb != CUBLAS_OP_N;
    p->m = D.rows;
    p->n = D.cols;
    p->k = ta ? A.rows : A.cols;
    uint64_t am = ta ? A.cols : A.rows;
    uint64_t bk = tb ? B.cols : B.rows, bn = tb ? B.rows : B.cols;
    if (am != p->m || bk != p->k || bn != p->n || C.rows != D.rows || C.cols != D.cols)
        return refuse(CUBLAS_STATUS_INVALID_VALUE, fn,
                      "shapes do not chain: op%c(A) %llux%llu, op%c(B) %llux%llu, C %llux%llu, "
                      "D %llux%llu",
                      ta ? 'T' : 'N', (unsigned long long)am, (unsigned long long)p->k,
                      tb ? 'T' : 'N', (unsigned long long)bk, (unsigned long long)bn,
                      (unsigned long long)C.rows, (unsigned long long)C.cols,
                      (unsigned long long)D.rows, (unsigned long long)D.cols);
    const layout *ls[4] = {&A, &B, &C, &D};
    const char *names = "ABCD";
    for (int i = 0; i < 4; i++) {
        const layout &l = *ls[i];
        if (l.rows > INT32_MAX || l.cols > INT32_MAX)
            return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn, "%c has %llux%llu: beyond int32",
                          names[i], (unsigned long long)l.rows, (unsigned long long)l.cols);
        /* cublasLt.h, CUBLASLT_MATRIX_LAYOUT_LD: ld >= rows for column order */
        if (l.ld < 1 || (uint64_t)l.ld < l.rows)
            return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "%c: ld %lld < rows %llu", names[i],
                          (long long)l.ld, (unsigned long long)l.rows);
    }

    /* types: CUBLAS_COMPUTE_32F with fp32 scale; A, B one type */
    if (o.compute != CUBLAS_COMPUTE_32F && o.compute != CUBLAS_COMPUTE_32F_PEDANTIC)
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                      "compute type %d is not emulated (only CUBLAS_COMPUTE_32F)", (int)o.compute);
    if (o.scale != CUDA_R_32F)
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                      "scale type %s with CUBLAS_COMPUTE_32F", type_name(o.scale));
    if (o.pointer_mode != CUBLASLT_POINTER_MODE_HOST)
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                      "pointer mode %d is not emulated (host only)", (int)o.pointer_mode);
    if (o.transc != CUBLAS_OP_N)
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn, "TRANSC must be CUBLAS_OP_N");
    if (o.fill != CUBLAS_FILL_MODE_FULL)
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn, "fill mode %d is not emulated",
                      (int)o.fill);
    if (o.unemulated)
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn, "attribute %s is not emulated",
                      o.unemulated);
    p->ab_type = A.type;
    p->cd_type = D.type;
    bool types_ok = A.type == B.type && C.type == D.type && elem_size(A.type) &&
                    (D.type == A.type || D.type == CUDA_R_32F);
    if (!types_ok)
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                      "type combination A %s, B %s, C %s, D %s with CUBLAS_COMPUTE_32F",
                      type_name(A.type), type_name(B.type), type_name(C.type), type_name(D.type));

    /* the epilogue */
    if (!known_epilogue(o.epilogue))
        return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "epilogue %u", o.epilogue);
    p->epi = epilogue_info(o.epilogue);
    if (!p->epi.emulated)
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn, "epilogue %u is not emulated",
                      o.epilogue);
    p->bias_type = o.bias_type == -1 ? D.type : o.bias_type;
    p->aux_type = o.aux_type == -1 ? D.type : o.aux_type;
    if (p->epi.bias) {
        if (!o.bias)
            return refuse(CUBLAS_STATUS_INVALID_VALUE, fn,
                          "epilogue %u adds a bias but BIAS_POINTER is NULL", o.epilogue);
        /* the bias has D's element type (cublasLt.h, BIAS_DATA_TYPE) */
        if (p->bias_type != D.type)
            return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn, "bias type %s with D %s",
                          type_name(p->bias_type), type_name(D.type));
        if (ptr_alignment(o.bias) < ALGO_ALIGN)
            return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                          "no algorithm for a bias pointer aligned to %u bytes",
                          ptr_alignment(o.bias));
    }
    if (p->epi.aux_in || p->epi.aux_out) {
        if (!o.aux)
            return refuse(CUBLAS_STATUS_INVALID_VALUE, fn,
                          "epilogue %u needs EPILOGUE_AUX_POINTER", o.epilogue);
        /* cublasLt.h, EPILOGUE_AUX_LD: divisible by 8, no less than D's rows */
        if (o.aux_ld < 1 || (uint64_t)o.aux_ld < D.rows || o.aux_ld % 8 != 0)
            return refuse(CUBLAS_STATUS_INVALID_VALUE, fn,
                          "EPILOGUE_AUX_LD %lld: must be a multiple of 8 and >= D's rows %llu",
                          (long long)o.aux_ld, (unsigned long long)D.rows);
        /* the GELU input has D's type (cublasLt.h, EPILOGUE_AUX_DATA_TYPE) */
        if (p->aux_type != D.type)
            return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn, "aux type %s with D %s",
                          type_name(p->aux_type), type_name(D.type));
        if (ptr_alignment(o.aux) < ALGO_ALIGN)
            return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                          "no algorithm for an aux pointer aligned to %u bytes",
                          ptr_alignment(o.aux));
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- the algo: a fingerprint of the problem it was chosen for --------------------- */

const uint64_t ALGO_MAGIC = 0x67746c74616c676full; /* "gtltalgo" */

struct fp_hash {
    uint64_t h = 1469598103934665603ull;
    void add(uint64_t v) {
        for (int i = 0; i < 8; i++) {
            h ^= (v >> (8 * i)) & 0xff;
            h *= 1099511628211ull;
        }
    }
};

/* Everything in the descriptors that selects an algorithm: all values,
 * and of the bias and aux pointers whether they are set and aligned. */
uint64_t fingerprint(const problem &p) {
    fp_hash f;
    const op_desc &o = *p.op;
    int64_t v[] = {o.compute,
                   o.scale,
                   o.pointer_mode,
                   o.transa,
                   o.transb,
                   o.transc,
                   o.fill,
                   (int64_t)o.epilogue,
                   o.bias != nullptr,
                   o.bias && ptr_alignment(o.bias) >= ALGO_ALIGN,
                   o.bias_type,
                   o.bias_batch_stride,
                   o.aux != nullptr,
                   o.aux && ptr_alignment(o.aux) >= ALGO_ALIGN,
                   o.aux_ld,
                   o.aux_batch_stride,
                   o.aux_type};
    for (int64_t x : v)
        f.add((uint64_t)x);
    const layout *ls[4] = {p.a, p.b, p.c, p.d};
    for (const layout *l : ls) {
        f.add((uint64_t)l->type);
        f.add(l->rows);
        f.add(l->cols);
        f.add((uint64_t)l->ld);
    }
    return f.h;
}

/* algo.data: [0] magic, [1] fingerprint, [2] workspace bytes needed,
 * [3] pointer alignment needed, [4] ~fingerprint (a check), rest 0. */
void algo_make(cublasLtMatmulAlgo_t *a, uint64_t fp) {
    memset(a, 0, sizeof *a);
    a->data[0] = ALGO_MAGIC;
    a->data[1] = fp;
    a->data[2] = 0;
    a->data[3] = ALGO_ALIGN;
    a->data[4] = ~fp;
}

/* ---- device memory checks --------------------------------------------------------- */

size_t extent_bytes(uint64_t rows, uint64_t cols, int64_t ld, size_t es) {
    if (!rows || !cols) return 0;
    return ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * es;
}

bool is_device(const void *p) {
    cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, p) != cudaSuccess) return false;
    return at.type == cudaMemoryTypeDevice;
}

/* The first and the last byte a matrix spans both in emulated device
 * memory (an allocation the emulator's cudaMalloc made). */
bool in_device(const void *p, size_t bytes) {
    if (!bytes) return true;
    return is_device(p) && is_device((const char *)p + bytes - 1);
}

struct span {
    const char *p;
    size_t bytes;
    bool tight; /* ld == rows: the span holds only the matrix's elements */
};

/* Byte ranges overlap. Only claimed when both matrices are tight: a
 * strided matrix may interleave with another in the same range. */
bool overlap(const span &x, const span &y) {
    if (!x.bytes || !y.bytes || !x.tight || !y.tight) return false;
    return x.p < y.p + y.bytes && y.p < x.p + x.bytes;
}

/* ---- the arithmetic ---------------------------------------------------------------- */

inline float load(int32_t t, const void *p, size_t i) {
    switch (t) {
    case CUDA_R_16BF:
        return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case CUDA_R_16F:
        return __half2float(((const __half *)p)[i]);
    default:
        return ((const float *)p)[i];
    }
}

inline void store(int32_t t, void *p, size_t i, float v) {
    switch (t) {
    case CUDA_R_16BF:
        ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
        break;
    case CUDA_R_16F:
        ((__half *)p)[i] = __float2half_rn(v);
        break;
    default:
        ((float *)p)[i] = v;
        break;
    }
}

/* GELU, tanh approximation, and its derivative, fp32. */
const float GELU_K = 0.7978845608028654f; /* sqrt(2/pi) */
const float GELU_C = 0.044715f;

inline float gelu(float x) {
    return 0.5f * x * (1.0f + tanhf(GELU_K * (x + GELU_C * x * x * x)));
}

inline float gelu_grad(float x) {
    float t = tanhf(GELU_K * (x + GELU_C * x * x * x));
    return 0.5f * (1.0f + t) +
           0.5f * x * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * GELU_C * x * x);
}

/* op(X) widened to fp32, column-major rows x cols with ld = rows: from the
 * stored matrix X (ld ldx), transposed when `t`. */
void widen(int32_t type, const void *x, int64_t ldx, bool t, uint64_t rows, uint64_t cols,
           float *out) {
    if (!t) {
        for (uint64_t j = 0; j < cols; j++)
            for (uint64_t i = 0; i < rows; i++)
                out[j * rows + i] = load(type, x, j * (uint64_t)ldx + i);
    } else {
        /* op(X)(i,j) = X(j,i), X stored cols x rows */
        for (uint64_t i = 0; i < rows; i++)
            for (uint64_t j = 0; j < cols; j++)
                out[j * rows + i] = load(type, x, i * (uint64_t)ldx + j);
    }
}

/* D's rows per block: a block's acc and its rows of op(A) (ROW_BLOCK x k
 * floats) stay in cache while every column of D passes. */
const uint64_t ROW_BLOCK = 128;
/* D's columns per pass over a row block: the register tile's width. */
const uint64_t COL_TILE = 4;

/* Four floats in a vector register (SSE on x86-64), loaded and stored
 * unaligned; element-wise * and + round each result as the scalar
 * operations do. */
typedef float v4f __attribute__((vector_size(16), aligned(4)));

/* ac (ld ROW_BLOCK) columns 0..COL_TILE) rows [i, i + 8) = sum over kk in
 * order of a(i.., kk) * b(kk, j): 8 rows x 4 columns of accumulators stay in
 * registers while k passes, so each element of op(A) is loaded once per 4
 * columns instead of once per column. Every accumulator still sums in k
 * order, a product then an add, as dot_cols does. */
void tile_8x4(float *__restrict__ ac, const float *__restrict__ a, uint64_t lda,
              const float *__restrict__ b, uint64_t ldb, uint64_t k) {
    v4f c[COL_TILE][2] = {};
    for (uint64_t kk = 0; kk < k; kk++) {
        const v4f a0 = *(const v4f *)(a + kk * lda), a1 = *(const v4f *)(a + kk * lda + 4);
        for (uint64_t j = 0; j < COL_TILE; j++) {
            const float x = b[j * ldb + kk];
            c[j][0] = c[j][0] + a0 * x;
            c[j][1] = c[j][1] + a1 * x;
        }
    }
    for (uint64_t j = 0; j < COL_TILE; j++) {
        *(v4f *)(ac + j * ROW_BLOCK) = c[j][0];
        *(v4f *)(ac + j * ROW_BLOCK + 4) = c[j][1];
    }
}

/* ac[0..rows) = sum over kk in order of a(i, kk) * bcol[kk], a column-major
 * with ld lda. R != 0: rows == R, a constant, so that -O2's cheap
 * vectoriser takes the inner loop (each ac[i] still sums in k order: the
 * same bits as the scalar loop). */
template <uint64_t R>
void dot_cols(float *__restrict__ ac, const float *__restrict__ a, uint64_t lda,
              const float *__restrict__ bcol, uint64_t k, uint64_t rows) {
    const uint64_t cnt = R ? R : rows;
    for (uint64_t i = 0; i < cnt; i++)
        ac[i] = 0.0f;
    for (uint64_t kk = 0; kk < k; kk++) {
        /* no skipping of b == 0: 0 * Inf must give NaN as on a GPU */
        const float b = bcol[kk];
        const float *__restrict__ acol = a + kk * lda;
        for (uint64_t i = 0; i < cnt; i++)
            ac[i] += acol[i] * b;
    }
}

void gemm(const problem &p, float alpha, const void *A, const void *B, float beta, const void *C,
          void *D) {
    const op_desc &o = *p.op;
    uint64_t m = p.m, n = p.n, k = p.k;
    if (!m || !n) return;
    std::vector<float> fa(m * k), fb(k * n), acc(ROW_BLOCK * COL_TILE), pa(ROW_BLOCK * k);
    widen(p.ab_type, A, p.a->ld, o.transa != CUBLAS_OP_N, m, k, fa.data());
    widen(p.ab_type, B, p.b->ld, o.transb != CUBLAS_OP_N, k, n, fb.data());
    uint64_t ldc = (uint64_t)p.c->ld, ldd = (uint64_t)p.d->ld, ldx = (uint64_t)o.aux_ld;
    void *aux = (void *)o.aux;
    for (uint64_t i0 = 0; i0 < m; i0 += ROW_BLOCK) {
        uint64_t rb = m - i0 < ROW_BLOCK ? m - i0 : ROW_BLOCK;
        /* D's columns in tiles of COL_TILE, their rows in register tiles of
         * 8; the rows past the last multiple of 8, and the columns past the
         * last whole tile, by dot_cols a column at a time */
        uint64_t r8 = rb & ~(uint64_t)7;
        /* the register tiles' rows of op(A) packed: 8 rows x k, k-major, one
         * tile after another, so the tiles stream through memory */
        for (uint64_t r = 0; r < r8; r += 8)
            for (uint64_t kk = 0; kk < k; kk++)
                memcpy(&pa[r * k + kk * 8], &fa[kk * m + i0 + r], 8 * sizeof(float));
        for (uint64_t j0 = 0; j0 < n; j0 += COL_TILE) {
            uint64_t nc = n - j0 < COL_TILE ? n - j0 : COL_TILE;
            const float *a = fa.data() + i0;
            if (nc == COL_TILE) {
                for (uint64_t r = 0; r < r8; r += 8)
                    tile_8x4(acc.data() + r, pa.data() + r * k, 8, fb.data() + j0 * k, k, k);
                for (uint64_t c = 0; r8 < rb && c < nc; c++)
                    dot_cols<0>(acc.data() + c * ROW_BLOCK + r8, a + r8, m,
                                fb.data() + (j0 + c) * k, k, rb - r8);
            } else {
                for (uint64_t c = 0; c < nc; c++) {
                    float *ac = acc.data() + c * ROW_BLOCK;
                    const float *bcol = fb.data() + (j0 + c) * k;
                    if (rb == ROW_BLOCK)
                        dot_cols<ROW_BLOCK>(ac, a, m, bcol, k, rb);
                    else
                        dot_cols<0>(ac, a, m, bcol, k, rb);
                }
            }
            for (uint64_t c = 0; c < nc; c++) {
                const uint64_t j = j0 + c;
                const float *ac = acc.data() + c * ROW_BLOCK;
                for (uint64_t i = 0; i < rb; i++) {
                    uint64_t r = i0 + i;
                    float v = alpha * ac[i];
                    if (beta != 0.0f) v += beta * load(p.cd_type, C, j * ldc + r);
                    if (p.epi.bias) v += load(p.bias_type, o.bias, r);
                    if (p.epi.aux_out) store(p.aux_type, aux, j * ldx + r, v);
                    switch (p.epi.act) {
                    case 1:
                        v = v > 0.0f ? v : 0.0f;
                        break;
                    case 2:
                        v = gelu(v);
                        break;
                    case 3:
                        v = gelu_grad(load(p.aux_type, aux, j * ldx + r)) * v;
                        break;
                    default:
                        break;
                    }
                    store(p.cd_type, D, j * ldd + r, v);
                }
            }
        }
    }
}

} // namespace

/* ---- the API ------------------------------------------------------------------------ */

extern "C" {

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t *lightHandle) {
    if (!lightHandle) return refuse(CUBLAS_STATUS_INVALID_VALUE, __func__, "lightHandle is NULL");
    lt_context *c = create_obj<lt_context>(K_HANDLE);
    *lightHandle = (cublasLtHandle_t)c;
    return c ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t lightHandle) {
    /* unlike the descriptors, a NULL handle is "not initialized" */
    if (!lightHandle) return refuse(CUBLAS_STATUS_NOT_INITIALIZED, __func__, "NULL handle");
    cublasStatus_t s = destroy_obj<lt_context>(lightHandle, K_HANDLE);
    if (s != CUBLAS_STATUS_SUCCESS)
        return refuse(CUBLAS_STATUS_NOT_INITIALIZED, __func__, "not a live cuBLASLt handle");
    return s;
}

const char *CUBLASWINAPI cublasLtGetStatusName(cublasStatus_t status) {
    switch (status) {
    case CUBLAS_STATUS_SUCCESS:
        return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
        return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
        return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
        return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
        return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
        return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
        return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
        return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

const char *CUBLASWINAPI cublasLtGetStatusString(cublasStatus_t status) {
    switch (status) {
    case CUBLAS_STATUS_SUCCESS:
        return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
        return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
        return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH:
        return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR:
        return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR:
        return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED:
        return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR:
        return "the functionality requested requires some license";
    }
    return "unknown cuBLAS status";
}

/* ---- matmul descriptor ---- */

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
                                                     cublasComputeType_t computeType,
                                                     cudaDataType_t scaleType) {
    if (!matmulDesc) return refuse(CUBLAS_STATUS_INVALID_VALUE, __func__, "matmulDesc is NULL");
    op_desc *o = create_obj<op_desc>(K_DESC);
    *matmulDesc = (cublasLtMatmulDesc_t)o;
    if (!o) return CUBLAS_STATUS_ALLOC_FAILED;
    count(C_DESC);
    o->compute = computeType;
    o->scale = scaleType;
    o->pointer_mode = CUBLASLT_POINTER_MODE_HOST;
    o->transa = o->transb = o->transc = CUBLAS_OP_N;
    o->fill = CUBLAS_FILL_MODE_FULL;
    o->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    o->bias_type = -1;
    o->aux_type = -1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
    cublasStatus_t s = destroy_obj<op_desc>(matmulDesc, K_DESC);
    if (s != CUBLAS_STATUS_SUCCESS)
        return refuse(s, __func__, "not a live matmul descriptor (destroyed twice?)");
    return s;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                           cublasLtMatmulDescAttributes_t attr,
                                                           const void *buf, size_t sizeInBytes) {
    const char *fn = __func__;
    op_desc *o = get_obj<op_desc>(matmulDesc, K_DESC);
    if (!o) return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "not a live matmul descriptor");
    if (!buf) return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "attribute %d: buf is NULL", attr);
    /* the size each attribute's storage has (cublasLt.h) */
    size_t want = 0;
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB:
    case CUBLASLT_MATMUL_DESC_TRANSC:
    case CUBLASLT_MATMUL_DESC_FILL_MODE:
    case CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET:
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE:
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
    case CUBLASLT_MATMUL_DESC_A_SCALE_MODE:
    case CUBLASLT_MATMUL_DESC_B_SCALE_MODE:
    case CUBLASLT_MATMUL_DESC_C_SCALE_MODE:
    case CUBLASLT_MATMUL_DESC_D_SCALE_MODE:
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE:
    case CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE:
        want = 4; /* int32_t */
        break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
        want = 4; /* uint32_t */
        break;
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE:
    case CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE:
        want = 8; /* int64_t */
        break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_C_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_D_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_AMAX_D_POINTER:
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER:
    case CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER:
    case CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR:
        want = sizeof(void *);
        break;
    case CUBLASLT_MATMUL_DESC_FAST_ACCUM:
        want = 1; /* int8_t */
        break;
    default:
        return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "unknown matmul attribute %d", attr);
    }
    if (sizeInBytes != want)
        return refuse(CUBLAS_STATUS_INVALID_VALUE, fn,
                      "attribute %d: sizeInBytes %zu, the attribute's storage is %zu bytes", attr,
                      sizeInBytes, want);
    int32_t i32 = 0;
    int64_t i64 = 0;
    const void *ptr = nullptr;
    if (want == 4) memcpy(&i32, buf, 4);
    if (want == 8 && attr != CUBLASLT_MATMUL_DESC_BIAS_POINTER &&
        attr != CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER)
        memcpy(&i64, buf, 8);
    if (want == sizeof(void *)) memcpy(&ptr, buf, sizeof ptr);
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
        o->compute = i32;
        break;
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
        o->scale = i32;
        break;
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
        if (i32 < 0 || i32 > CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST)
            return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "pointer mode %d", i32);
        o->pointer_mode = i32;
        break;
    case CUBLASLT_MATMUL_DESC_TRANSA:
    case CUBLASLT_MATMUL_DESC_TRANSB:
    case CUBLASLT_MATMUL_DESC_TRANSC:
        if (i32 != CUBLAS_OP_N && i32 != CUBLAS_OP_T && i32 != CUBLAS_OP_C)
            return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "transpose %d is not a "
                          "cublasOperation_t", i32);
        if (attr == CUBLASLT_MATMUL_DESC_TRANSA) o->transa = i32;
        else if (attr == CUBLASLT_MATMUL_DESC_TRANSB) o->transb = i32;
        else o->transc = i32;
        break;
    case CUBLASLT_MATMUL_DESC_FILL_MODE:
        if (i32 < CUBLAS_FILL_MODE_LOWER || i32 > CUBLAS_FILL_MODE_FULL)
            return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "fill mode %d", i32);
        o->fill = i32;
        break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
        if (!known_epilogue((uint32_t)i32))
            return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "epilogue %u is not a "
                          "cublasLtEpilogue_t", (uint32_t)i32);
        o->epilogue = (uint32_t)i32;
        break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
        o->bias = ptr;
        break;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
        o->bias_type = i32;
        break;
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
        o->bias_batch_stride = i64;
        break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
        o->aux = ptr;
        break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
        if (i64 < 0)
            return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "EPILOGUE_AUX_LD %lld",
                          (long long)i64);
        o->aux_ld = i64;
        break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE:
        o->aux_batch_stride = i64;
        break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE:
        o->aux_type = i32;
        break;
    case CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET:
        /* a performance hint only */
        if (i32 < 0) return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "SM_COUNT_TARGET %d", i32);
        break;
    default: {
        /* scaling, amax, fast accumulation, emulation: only their defaults
         * (0 / NULL) are emulated */
        bool is_default = want == 4 ? i32 == 0
                          : want == 1 ? *(const int8_t *)buf == 0
                          : want == 8 && attr == CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE
                              ? i64 == 0
                              : ptr == nullptr;
        if (!is_default) o->unemulated = "(scaling, amax, fast accumulation or emulation)";
        break;
    }
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- matrix layouts ---- */

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout,
                                                       cudaDataType type, uint64_t rows,
                                                       uint64_t cols, int64_t ld) {
    if (!matLayout) return refuse(CUBLAS_STATUS_INVALID_VALUE, __func__, "matLayout is NULL");
    layout *l = create_obj<layout>(K_LAYOUT);
    *matLayout = (cublasLtMatrixLayout_t)l;
    if (!l) return CUBLAS_STATUS_ALLOC_FAILED;
    count(C_LAYOUT);
    /* checked against the problem by the heuristic and cublasLtMatmul */
    l->type = type;
    l->rows = rows;
    l->cols = cols;
    l->ld = ld;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
    cublasStatus_t s = destroy_obj<layout>(matLayout, K_LAYOUT);
    if (s != CUBLAS_STATUS_SUCCESS)
        return refuse(s, __func__, "not a live matrix layout (destroyed twice?)");
    return s;
}

/* ---- preferences ---- */

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
    if (!p) return refuse(CUBLAS_STATUS_INVALID_VALUE, __func__, "pref is NULL");
    pref *o = create_obj<pref>(K_PREF);
    *p = (cublasLtMatmulPreference_t)o;
    if (!o) return CUBLAS_STATUS_ALLOC_FAILED;
    count(C_PREF);
    o->search_mode = CUBLASLT_SEARCH_BEST_FIT;
    o->max_workspace = 0;
    o->reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
    for (int i = 0; i < 4; i++)
        o->align[i] = 256;
    o->impl_mask = ~0ull;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
    cublasStatus_t s = destroy_obj<pref>(p, K_PREF);
    if (s != CUBLAS_STATUS_SUCCESS)
        return refuse(s, __func__, "not a live preference (destroyed twice?)");
    return s;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
    size_t sizeInBytes) {
    const char *fn = __func__;
    pref *o = get_obj<pref>(p, K_PREF);
    if (!o) return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "not a live preference");
    if (!buf) return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "attribute %d: buf is NULL", attr);
    size_t want = 0;
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE:
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
        want = 4; /* uint32_t */
        break;
    case CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT:
        want = sizeof(float);
        break;
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
    case CUBLASLT_MATMUL_PREF_IMPL_MASK:
        want = 8; /* uint64_t */
        break;
    default:
        return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "unknown preference attribute %d", attr);
    }
    if (sizeInBytes != want)
        return refuse(CUBLAS_STATUS_INVALID_VALUE, fn,
                      "attribute %d: sizeInBytes %zu, the attribute's storage is %zu bytes", attr,
                      sizeInBytes, want);
    uint32_t u32 = 0;
    uint64_t u64 = 0;
    if (want == 4) memcpy(&u32, buf, 4);
    if (want == 8) memcpy(&u64, buf, 8);
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE:
        if (u32 > CUBLASLT_SEARCH_LIMITED_BY_ALGO_ID)
            return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "search mode %u", u32);
        o->search_mode = u32;
        break;
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK:
        if (u32 & ~(uint32_t)CUBLASLT_REDUCTION_SCHEME_MASK)
            return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "reduction scheme mask 0x%x", u32);
        o->reduction_mask = u32;
        break;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
        o->align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES] = u32;
        break;
    case CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT:
        memcpy(&o->max_waves, buf, sizeof(float));
        break;
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
        o->max_workspace = u64;
        break;
    case CUBLASLT_MATMUL_PREF_IMPL_MASK:
        o->impl_mask = u64;
        break;
    default:
        break;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- heuristic and matmul ---- */

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
    cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc,
    cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int *returnAlgoCount) {
    const char *fn = __func__;
    count(C_HEURISTIC); /* every query, answered or refused */
    if (returnAlgoCount) *returnAlgoCount = 0;
    if (requestedAlgoCount <= 0)
        return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "requestedAlgoCount %d",
                      requestedAlgoCount);
    if (!heuristicResultsArray || !returnAlgoCount)
        return refuse(CUBLAS_STATUS_INVALID_VALUE, fn,
                      "heuristicResultsArray or returnAlgoCount is NULL");
    problem p;
    cublasStatus_t s =
        check_problem(fn, lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, &p);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    const pref *pr = get_obj<pref>(preference, K_PREF);
    if (!pr) return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "not a live preference");
    if (pr->search_mode != CUBLASLT_SEARCH_BEST_FIT)
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn, "search mode %u is not emulated",
                      pr->search_mode);
    /* the emulated algorithm: no split-K reduction (scheme NONE, always
     * allowed), FMA-based, no workspace, 16-byte accesses everywhere */
    if (!(pr->impl_mask & CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA))
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn, "IMPL_MASK 0x%llx excludes FMA",
                      (unsigned long long)pr->impl_mask);
    for (int i = 0; i < 4; i++)
        if (pr->align[i] < ALGO_ALIGN)
            return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn,
                          "no algorithm for %c aligned to %u bytes (MIN_ALIGNMENT_%c_BYTES)",
                          "ABCD"[i], pr->align[i], "ABCD"[i]);
    /* The first answer needs no workspace. A caller asking for more than one
     * (the kernels suite timing the library's best) also gets a second
     * algorithm when the preference allows its 1 MiB of workspace: the same
     * loops, so the same bits, but cublasLtMatmul then checks that the
     * caller passes each algorithm its workspace. */
    const uint64_t second_ws = 1u << 20;
    int n = requestedAlgoCount >= 2 && pr->max_workspace >= second_ws ? 2 : 1;
    for (int i = 0; i < n; i++) {
        cublasLtMatmulHeuristicResult_t &r = heuristicResultsArray[i];
        algo_make(&r.algo, fingerprint(p));
        r.algo.data[2] = i ? second_ws : 0;
        r.workspaceSize = i ? second_ws : 0;
        r.state = CUBLAS_STATUS_SUCCESS;
        r.wavesCount = 1.0f;
        memset(r.reserved, 0, sizeof r.reserved);
    }
    *returnAlgoCount = n;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t lightHandle,
                                           cublasLtMatmulDesc_t computeDesc, const void *alpha,
                                           const void *A, cublasLtMatrixLayout_t Adesc,
                                           const void *B, cublasLtMatrixLayout_t Bdesc,
                                           const void *beta, const void *C,
                                           cublasLtMatrixLayout_t Cdesc, void *D,
                                           cublasLtMatrixLayout_t Ddesc,
                                           const cublasLtMatmulAlgo_t *algo, void *workspace,
                                           size_t workspaceSizeInBytes, cudaStream_t stream) {
    const char *fn = __func__;
    count(C_MATMUL);
    (void)stream; /* every emulated stream is the null stream: this runs now */
    problem p;
    cublasStatus_t s = check_problem(fn, lightHandle, computeDesc, Adesc, Bdesc, Cdesc, Ddesc, &p);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    uint64_t need_ws = 0;
    if (algo) {
        if (algo->data[0] != ALGO_MAGIC || algo->data[4] != ~algo->data[1])
            return refuse(CUBLAS_STATUS_INVALID_VALUE, fn,
                          "algo was not returned by cublasLtMatmulAlgoGetHeuristic");
        if (algo->data[1] != fingerprint(p))
            return refuse(CUBLAS_STATUS_INVALID_VALUE, fn,
                          "algo was chosen for other descriptor contents (types, shapes, "
                          "ld, transposes, epilogue, bias/aux) than these");
        need_ws = algo->data[2];
    }
    if (workspaceSizeInBytes < need_ws)
        return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "workspace %zu bytes < the algo's %llu",
                      workspaceSizeInBytes, (unsigned long long)need_ws);
    if (workspaceSizeInBytes && (!workspace || !in_device(workspace, workspaceSizeInBytes)))
        return refuse(CUBLAS_STATUS_INVALID_VALUE, fn,
                      "workspace %p (%zu bytes) is not device memory", workspace,
                      workspaceSizeInBytes);
    if (!alpha || !beta) return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "alpha or beta is NULL");
    float al, be;
    memcpy(&al, alpha, sizeof al); /* CUBLASLT_POINTER_MODE_HOST, fp32 scale */
    memcpy(&be, beta, sizeof be);

    /* the pointers: present, aligned as the algorithm needs, in device memory */
    const op_desc &o = *p.op;
    size_t es_ab = elem_size(p.ab_type), es_cd = elem_size(p.cd_type);
    bool read_c = be != 0.0f;
    struct operand {
        char name;
        const void *ptr;
        size_t bytes;
        bool used;
        bool tight;
    } ops[6] = {
        {'A', A, extent_bytes(p.a->rows, p.a->cols, p.a->ld, es_ab), true,
         (uint64_t)p.a->ld == p.a->rows},
        {'B', B, extent_bytes(p.b->rows, p.b->cols, p.b->ld, es_ab), true,
         (uint64_t)p.b->ld == p.b->rows},
        {'C', C, extent_bytes(p.c->rows, p.c->cols, p.c->ld, es_cd), read_c,
         (uint64_t)p.c->ld == p.c->rows},
        {'D', D, extent_bytes(p.d->rows, p.d->cols, p.d->ld, es_cd), true,
         (uint64_t)p.d->ld == p.d->rows},
        {'b', o.bias, p.epi.bias ? p.m * elem_size(p.bias_type) : 0, p.epi.bias, true},
        {'x', o.aux,
         (p.epi.aux_in || p.epi.aux_out)
             ? extent_bytes(p.m, p.n, o.aux_ld, elem_size(p.aux_type))
             : 0,
         p.epi.aux_in || p.epi.aux_out, (uint64_t)o.aux_ld == p.m},
    };
    const char *names[6] = {"A", "B", "C", "D", "the bias", "the aux matrix"};
    if (p.k == 0) ops[0].used = ops[1].used = false; /* nothing of A, B is read */
    for (int i = 0; i < 6; i++) {
        const operand &q = ops[i];
        if (!q.used || !q.bytes) continue;
        if (!q.ptr) return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "%s is NULL", names[i]);
        /* with an algo: chosen for 16-byte alignment (the heuristic was told
         * so) and handed less; without one, the library's own heuristic
         * sees the pointers and finds no algorithm */
        if (ptr_alignment(q.ptr) < ALGO_ALIGN && algo)
            return refuse(CUBLAS_STATUS_INVALID_VALUE, fn,
                          "%s (%p) is aligned to %u bytes; the algo needs %u (the heuristic "
                          "was told otherwise)",
                          names[i], q.ptr, ptr_alignment(q.ptr), ALGO_ALIGN);
        if (ptr_alignment(q.ptr) < ALGO_ALIGN)
            return refuse(CUBLAS_STATUS_NOT_SUPPORTED, fn, "no algorithm for %s aligned to %u "
                          "bytes", names[i], ptr_alignment(q.ptr));
        if (!in_device(q.ptr, q.bytes))
            return refuse(CUBLAS_STATUS_INVALID_VALUE, fn,
                          "%s (%p, %zu bytes) is not inside one device allocation", names[i],
                          q.ptr, q.bytes);
    }
    /* in-place C == D needs one layout (the cuBLAS guide, cublasLtMatmul) */
    if (read_c && C == D && p.c->ld != p.d->ld)
        return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "C == D with ldc %lld != ldd %lld",
                      (long long)p.c->ld, (long long)p.d->ld);
    /* outputs must not overlap inputs (C == D in place aside) */
    span sp[6];
    for (int i = 0; i < 6; i++)
        sp[i] = span{(const char *)ops[i].ptr, ops[i].used ? ops[i].bytes : 0, ops[i].tight};
    int outs[2] = {3, p.epi.aux_out ? 5 : -1};
    for (int w : outs) {
        if (w < 0) continue;
        for (int i = 0; i < 6; i++) {
            if (i == w || (w == 3 && i == 2 && C == D)) continue;
            if (overlap(sp[w], sp[i]))
                return refuse(CUBLAS_STATUS_INVALID_VALUE, fn, "output %s overlaps %s",
                              names[w], names[i]);
        }
    }
    gemm(p, al, A, B, be, C, D);
    return CUBLAS_STATUS_SUCCESS;
}

/* Emulator only (no such function in cuBLASLt): how many calls the stand-in
 * has answered in this process, for tests of the backend's descriptor and
 * heuristic cache (kernels.matmul_lt_cache.cuda): out[0] heuristic queries
 * (cublasLtMatmulAlgoGetHeuristic, refused ones included), out[1] matmul
 * descriptors, out[2] matrix layouts, out[3] preferences created, out[4]
 * cublasLtMatmul calls. */
void gt_emu_cublaslt_counts(unsigned long long out[5]) {
    for (int i = 0; i < C_COUNT; i++)
        out[i] = counts[i].load(std::memory_order_relaxed);
}

} // extern "C"
