/* Causal self-attention through cuDNN's fused flash attention (SDPA), forward
 * and backward, for bf16 and fp16 storage; the own kernels of attention.cu
 * stay the fp32 path and the fallback.
 *
 * cuDNN 9's graph (backend) API, in plain calls: each graph is the one
 * cudnn-frontend's composite SDPA nodes build (scaled_dot_product_flash_
 * attention.h, the pre-"unified" lowering that every cuDNN 9 engine
 * recognises), so that the engines' pattern matcher takes it:
 *   fwd: S = Q @ K^T (fp32), S *= scale (by-value scalar), causal mask
 *        (GEN_INDEX rows/cols as int32, CMP_GE -> bool, BINARY_SELECT
 *        against the lowest float), softmax as max / sub / exp / sum /
 *        div with Stats = max + log(sum) (the logsumexp, fp32, B,NH,T,1)
 *        written out, P in the storage type, O = P @ V.
 *   bwd: softmax_sum = rowsum(dO * O) * 1 (fp32, a non-virtual tensor in
 *        our scratch), S recomputed, masked, E = exp(S - Stats),
 *        dV = E^T @ dO (E^T a RESHAPE view in the storage type),
 *        dP = dO @ V^T, dS = (dP - softmax_sum) * E * scale,
 *        dK = dS^T @ Q, dQ = dS @ K (K a RESHAPE view of K^T).
 *        dQ is written by its matmul directly, with no fp32 dQ_accum
 *        tensor: that is the frontend's deterministic graph
 *        (set_deterministic_algorithm, "use_dp_workspace": dP goes
 *        through a B*NH*T*T*2-byte workspace instead of atomically
 *        accumulated dQ partials). Engines are NOT filtered on their
 *        numerical notes (cudnn-frontend and llm.c do not either: an SDPA
 *        engine's NONDETERMINISTIC note is about the dQ_accum graph);
 *        the notes are recorded in the backend's notes and determinism is
 *        proven by bitwise repeats (kernels.attention_cudnn.cuda,
 *        kernels.attention_cudnn_repeat.cuda). Blackwell (sm_100+) needs
 *        engine 5 or 17 pinned with knobs for determinism: not
 *        implemented, those GPUs take the own kernels.
 * Layout: qkv (B,T,3C) packed, head h at columns h*hs: Q, K, V are strided
 *      4-D tensors (B,NH,T,hs) with strides (T*3C, hs, 3C, 1) over the same
 *      buffer (K^T swaps the last two dims and strides); out/dout (B,T,C)
 *      are (B,NH,T,hs) with strides (T*C, hs, C, 1).
 * State: att holds Stats (B,NH,T) fp32 and nothing else: B*NH*T floats,
 *      what attention_state_floats promises for this path. The backward
 *      reads O from the `out` that attention_bwd receives.
 * Path: sdpa_decide() alone says whether a (dtype, shape) takes cuDNN;
 *      attention_state_floats, attention_fwd and attention_bwd all ask it,
 *      and its answer never changes for a backend (plans are cached, the
 *      mode is read at creation), so the backward reads att the way the
 *      forward wrote it and the caller's att is never too small.
 *      Pointers are not part of the decision: a qkv, out, dout or att that
 *      is not 16-byte aligned is staged through aligned scratch (device
 *      copies), the same plan runs and the result is bitwise the same.
 * Accumulation: cuDNN overwrites dQ/dK/dV; they go to a (B,T,3C) scratch
 *      and one kernel adds them to dqkv (fp32 add, one rounding).
 * Plans: built on the first call of a shape (B,T,NH,hs,dtype), forward and
 *      backward together (a forward taken by cuDNN must have a backward),
 *      cached in the impl until the backend is freed. A shape cuDNN cannot
 *      take is cached too, with its reason and its kind: GT_ERR_UNSUPPORTED
 *      for a limit by design (head size, GPU, a cuDNN version limit, no
 *      engine supports the graph), GT_ERR_DEVICE (or another) for a
 *      failure while building (any cuDNN status but NOT_SUPPORTED, no
 *      handle because cudnnCreate failed). GT_CUDA_ATTENTION=auto runs the
 *      own kernels for both and notes why; =cudnn returns that status with
 *      the reason, so a real failure is never mistaken for a skip.
 * Bound: FLOP/s: 4*B*NH*T^2*hs forward (half of it masked: flash skips
 *      the masked tiles), 2.5x that backward, on the tensor cores.
 * Determinism: forward engines are deterministic; the backward graph and
 *      engine choice above are; both are checked run to run by
 *      kernels.attention_cudnn.cuda.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/common.cuh"

static const char *dt_name(gt_dtype dt) {
    return gt_dtype_name(dt);
}

typedef struct sdpa_plan *sdpa_plan_ref; /* always NULL without cuDNN */

#if GT_HAVE_CUDNN

#define SDPA_MAX_DESC 192
#define SDPA_MAX_OPS 40
#define SDPA_MAX_CFGS 16

typedef struct sdpa_graph {
    cudnnBackendDescriptor_t desc[SDPA_MAX_DESC]; /* everything, freed together */
    int ndesc;
    cudnnBackendDescriptor_t ops[SDPA_MAX_OPS];
    int nops;
    int64_t next_uid;              /* virtual tensors */
    cudnnBackendDescriptor_t plan; /* NULL until built */
    int64_t workspace;             /* bytes */
    int64_t engine;                /* global index */
    char numnotes[96];             /* the engine's numerical notes, for the backend's notes */
} sdpa_graph;

typedef struct sdpa_plan {
    int B, T, NH, hs;
    gt_dtype dt;
    int usable;        /* both graphs built */
    gt_status refusal; /* !usable: GT_ERR_UNSUPPORTED (a limit) or the build failure's status */
    char reason[480];
    sdpa_graph fwd, bwd;
    struct sdpa_plan *next;
} sdpa_plan;

#endif

struct gt_cuda_sdpa {
    sdpa_plan_ref plans;
};

#if GT_HAVE_CUDNN

static gt_status sdpa_state(gt_cuda_impl *im, struct gt_cuda_sdpa **out) {
    if (!im->sdpa) {
        im->sdpa = (struct gt_cuda_sdpa *)calloc(1, sizeof *im->sdpa);
        if (!im->sdpa) return GT_ERR(GT_ERR_OOM, "cuda attention: out of host memory");
    }
    *out = im->sdpa;
    return GT_OK;
}

/* ---- cuDNN status -> gt_status ------------------------------------------------------ */

/* NOT_SUPPORTED (any sub-code) means "this graph or engine is not for this
 * shape/GPU": GT_ERR_UNSUPPORTED (a limit); anything else is a failure
 * (GT_ERR_DEVICE). Both name the step and the call, with cuDNN's own
 * last-error text. While building, both make auto mode fall back (plan_get). */
static gt_status sdpa_err(cudnnStatus_t cs, const char *step, const char *call) {
    char detail[256] = "";
    cudnnGetLastErrorString(detail, sizeof detail);
    gt_status st = CUDNN_STATUS_CATEGORY(cs) == CUDNN_STATUS_NOT_SUPPORTED ? GT_ERR_UNSUPPORTED
                                                                           : GT_ERR_DEVICE;
    return GT_ERR(st, "cuDNN SDPA %s: %s failed: %s (%d)%s%s", step, call, cudnnGetErrorString(cs),
                  (int)cs, detail[0] ? ": " : "", detail);
}

#define SDPA_TRY(step, stmt)                                                                       \
    do {                                                                                           \
        cudnnStatus_t sdpa_cs_ = (stmt);                                                           \
        if (sdpa_cs_ != CUDNN_STATUS_SUCCESS) return sdpa_err(sdpa_cs_, (step), #stmt);            \
    } while (0)

/* Sets a descriptor-valued attribute (the statement, with the attribute's
 * name, is in the error message as with SDPA_TRY). */
#define SDPA_SET_DESC(step, desc, attr, value)                                                     \
    SDPA_TRY(step, cudnnBackendSetAttribute(desc, attr, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &(value)))

/* ---- graph building ----------------------------------------------------------------- */

static gt_status g_new(sdpa_graph *g, cudnnBackendDescriptorType_t type, const char *step,
                       cudnnBackendDescriptor_t *out) {
    if (g->ndesc == SDPA_MAX_DESC)
        return GT_ERR(GT_ERR_DEVICE, "cuDNN SDPA %s: more than %d descriptors (internal limit)",
                      step, SDPA_MAX_DESC);
    cudnnBackendDescriptor_t d = NULL;
    *out = NULL;
    SDPA_TRY(step, cudnnBackendCreateDescriptor(type, &d));
    g->desc[g->ndesc++] = d;
    *out = d;
    return GT_OK;
}

static void g_free(sdpa_graph *g) {
    for (int i = g->ndesc - 1; i >= 0; i--)
        (void)cudnnBackendDestroyDescriptor(g->desc[i]);
    memset(g, 0, sizeof *g);
}

static gt_status g_op(sdpa_graph *g, cudnnBackendDescriptor_t op, const char *step) {
    if (g->nops == SDPA_MAX_OPS)
        return GT_ERR(GT_ERR_DEVICE, "cuDNN SDPA %s: more than %d operations (internal limit)",
                      step, SDPA_MAX_OPS);
    g->ops[g->nops++] = op;
    return GT_OK;
}

/* A 4-D tensor; uid < 0: a virtual one with the next internal uid. */
static gt_status g_tensor(sdpa_graph *g, const char *name, int64_t uid, cudnnDataType_t dt,
                          const int64_t dim[4], const int64_t stride[4], bool by_value,
                          cudnnBackendDescriptor_t *out) {
    cudnnBackendDescriptor_t t = NULL;
    GT_TRY(g_new(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, name, &t));
    bool is_virtual = uid < 0;
    if (is_virtual) uid = g->next_uid++;
    int64_t align = 16;
    SDPA_TRY(name, cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
                                            &dt));
    SDPA_TRY(name,
             cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim));
    SDPA_TRY(name,
             cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, stride));
    SDPA_TRY(name,
             cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    SDPA_TRY(name, cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64,
                                            1, &align));
    SDPA_TRY(name, cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1,
                                            &is_virtual));
    if (by_value)
        SDPA_TRY(name, cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE,
                                                CUDNN_TYPE_BOOLEAN, 1, &by_value));
    SDPA_TRY(name, cudnnBackendFinalize(t));
    *out = t;
    return GT_OK;
}

/* y = mode(x [, b [, t]]) computed in `prec`; axis >= 0 for GEN_INDEX. */
static gt_status g_pointwise(sdpa_graph *g, const char *name, cudnnPointwiseMode_t mode,
                             cudnnDataType_t prec, int64_t axis, cudnnBackendDescriptor_t x,
                             cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t t,
                             cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t pw = NULL, op = NULL;
    GT_TRY(g_new(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, name, &pw));
    SDPA_TRY(name, cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MODE,
                                            CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
    SDPA_TRY(name, cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MATH_PREC,
                                            CUDNN_TYPE_DATA_TYPE, 1, &prec));
    if (axis >= 0)
        SDPA_TRY(name, cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1,
                                                &axis));
    SDPA_TRY(name, cudnnBackendFinalize(pw));
    GT_TRY(g_new(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, name, &op));
    SDPA_SET_DESC(name, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
    SDPA_SET_DESC(name, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    if (b)
        SDPA_SET_DESC(name, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
    if (t)
        SDPA_SET_DESC(name, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t);
    SDPA_SET_DESC(name, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    SDPA_TRY(name, cudnnBackendFinalize(op));
    return g_op(g, op, name);
}

/* c = a @ b (batched over the first two dims), fp32 compute. */
static gt_status g_matmul(sdpa_graph *g, const char *name, cudnnBackendDescriptor_t a,
                          cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) {
    cudnnBackendDescriptor_t mm = NULL, op = NULL;
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    GT_TRY(g_new(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR, name, &mm));
    SDPA_TRY(name, cudnnBackendSetAttribute(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE,
                                            1, &comp));
    SDPA_TRY(name, cudnnBackendFinalize(mm));
    GT_TRY(g_new(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, name, &op));
    SDPA_SET_DESC(name, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
    SDPA_SET_DESC(name, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
    SDPA_SET_DESC(name, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
    SDPA_SET_DESC(name, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
    SDPA_TRY(name, cudnnBackendFinalize(op));
    return g_op(g, op, name);
}

/* y = reduce(x) over the dims where y has extent 1, fp32. */
static gt_status g_reduce(sdpa_graph *g, const char *name, cudnnReduceTensorOp_t rop,
                          cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t rd = NULL, op = NULL;
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    GT_TRY(g_new(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, name, &rd));
    SDPA_TRY(name, cudnnBackendSetAttribute(rd, CUDNN_ATTR_REDUCTION_OPERATOR,
                                            CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &rop));
    SDPA_TRY(name, cudnnBackendSetAttribute(rd, CUDNN_ATTR_REDUCTION_COMP_TYPE,
                                            CUDNN_TYPE_DATA_TYPE, 1, &comp));
    SDPA_TRY(name, cudnnBackendFinalize(rd));
    GT_TRY(g_new(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, name, &op));
    SDPA_SET_DESC(name, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
    SDPA_SET_DESC(name, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
    SDPA_SET_DESC(name, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, rd);
    SDPA_TRY(name, cudnnBackendFinalize(op));
    return g_op(g, op, name);
}

/* y = x seen with y's dims and strides (a transpose view). */
static gt_status g_reshape(sdpa_graph *g, const char *name, cudnnBackendDescriptor_t x,
                           cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t op = NULL;
    GT_TRY(g_new(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, name, &op));
    SDPA_SET_DESC(name, op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x);
    SDPA_SET_DESC(name, op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y);
    SDPA_TRY(name, cudnnBackendFinalize(op));
    return g_op(g, op, name);
}

/* Names of the numerical notes an engine carries ("none" for none). */
static void numnotes_str(const cudnnBackendNumericalNote_t *notes, int64_t nn, char *out,
                         size_t cap) {
    static const char *const names[] = {"TENSOR_CORE",
                                        "DOWN_CONVERT_INPUTS",
                                        "REDUCED_PRECISION_REDUCTION",
                                        "FFT",
                                        "NONDETERMINISTIC",
                                        "WINOGRAD",
                                        "WINOGRAD_TILE_4x4",
                                        "WINOGRAD_TILE_6x6",
                                        "WINOGRAD_TILE_13x13",
                                        "STRICT_NAN_PROP"};
    size_t used = 0;
    out[0] = '\0';
    for (int64_t j = 0; j < nn && j < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; j++) {
        int v = (int)notes[j];
        char one[32];
        if (v >= 0 && v < (int)(sizeof names / sizeof names[0]))
            snprintf(one, sizeof one, "%s", names[v]);
        else
            snprintf(one, sizeof one, "note %d", v);
        int w = snprintf(out + used, cap - used, "%s%s", used ? "," : "", one);
        if (w < 0 || (size_t)w >= cap - used) break;
        used += (size_t)w;
    }
    if (!out[0]) snprintf(out, cap, "none");
}

/* The operation graph, heuristics mode A, and the first engine config whose
 * plan finalizes: g->plan, ->engine, ->workspace, ->numnotes. Numerical
 * notes are recorded, not filtered on (the top of the file). No engine
 * config finalizes: GT_ERR_UNSUPPORTED when every one said NOT_SUPPORTED
 * (or the heuristics offer none), GT_ERR_DEVICE when one failed with
 * another status (a build failure, not a limit). */
static gt_status g_plan(gt_cuda_impl *im, sdpa_graph *g, const char *what) {
    cudnnBackendDescriptor_t og = NULL, heur = NULL;
    GT_TRY(g_new(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, what, &og));
    SDPA_TRY(what, cudnnBackendSetAttribute(og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE,
                                            1, &im->cudnn));
    SDPA_TRY(what, cudnnBackendSetAttribute(og, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, g->nops, g->ops));
    SDPA_TRY(what, cudnnBackendFinalize(og));

    GT_TRY(g_new(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, what, &heur));
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    SDPA_SET_DESC(what, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, og);
    SDPA_TRY(what, cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE,
                                            1, &mode));
    SDPA_TRY(what, cudnnBackendFinalize(heur));
    int64_t count = 0;
    SDPA_TRY(what, cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL));
    if (count <= 0)
        return GT_ERR(GT_ERR_UNSUPPORTED, "cuDNN SDPA %s: heuristics (mode A) offer no engine",
                      what);
    if (count > SDPA_MAX_CFGS) count = SDPA_MAX_CFGS;
    cudnnBackendDescriptor_t cfgs[SDPA_MAX_CFGS];
    for (int64_t i = 0; i < count; i++)
        GT_TRY(g_new(g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, what, &cfgs[i]));
    int64_t got = 0;
    SDPA_TRY(what, cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, cfgs));

    int declined = 0, hard = 0; /* configs that failed; of those, not NOT_SUPPORTED */
    char first_fail[256] = ""; /* the first config that failed to finalize, and why */
    for (int64_t i = 0; i < got; i++) {
        cudnnBackendDescriptor_t eng = NULL;
        int64_t n = 0, gidx = -1;
        GT_TRY(g_new(g, CUDNN_BACKEND_ENGINE_DESCRIPTOR, what, &eng));
        SDPA_TRY(what, cudnnBackendGetAttribute(cfgs[i], CUDNN_ATTR_ENGINECFG_ENGINE,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng));
        SDPA_TRY(what, cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                                CUDNN_TYPE_INT64, 1, &n, &gidx));
        cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
        int64_t nn = 0;
        SDPA_TRY(what, cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                                CUDNN_TYPE_NUMERICAL_NOTE,
                                                CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &nn, notes));
        cudnnBackendDescriptor_t plan = NULL;
        GT_TRY(g_new(g, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, what, &plan));
        SDPA_TRY(what, cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                                CUDNN_TYPE_HANDLE, 1, &im->cudnn));
        SDPA_TRY(what, cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]));
        /* Any failure here (not only NOT_SUPPORTED: a runtime-compiled
         * engine can fail to build) rules out this config, not the graph:
         * the next one is tried, as cudnn-frontend's check_support does. */
        cudnnStatus_t cs = cudnnBackendFinalize(plan);
        if (cs != CUDNN_STATUS_SUCCESS) {
            hard += CUDNN_STATUS_CATEGORY(cs) != CUDNN_STATUS_NOT_SUPPORTED;
            if (!first_fail[0]) {
                char detail[160] = "";
                cudnnGetLastErrorString(detail, sizeof detail);
                snprintf(first_fail, sizeof first_fail, "; the first, engine %lld: %s (%d)%s%s",
                         (long long)gidx, cudnnGetErrorString(cs), (int)cs, detail[0] ? ": " : "",
                         detail);
            }
            declined++;
            continue;
        }
        int64_t ws = 0;
        SDPA_TRY(what, cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                CUDNN_TYPE_INT64, 1, &n, &ws));
        g->plan = plan;
        g->engine = gidx;
        g->workspace = ws;
        numnotes_str(notes, nn, g->numnotes, sizeof g->numnotes);
        return GT_OK;
    }
    return GT_ERR(hard ? GT_ERR_DEVICE : GT_ERR_UNSUPPORTED,
                  "cuDNN SDPA %s: none of the %lld engine configs usable (%d failed to finalize, "
                  "%d of them with a status other than NOT_SUPPORTED%s)",
                  what, (long long)got, declined, hard, first_fail);
}

/* Tensor uids of both graphs. */
enum {
    UID_Q = 1,
    UID_K,
    UID_V,
    UID_O,
    UID_STATS,
    UID_SCALE,
    UID_NEGINF,
    UID_ONE,
    UID_DO,
    UID_DQ,
    UID_DK,
    UID_DV,
    UID_SSUM,
    UID_VIRTUAL = 100
};

struct sdpa_dims {
    int64_t q[4], sq[4];   /* Q, V, dQ, dK, dV: (B,NH,T,hs) over the packed (B,T,3C) */
    int64_t kt[4], skt[4]; /* K^T, V^T: (B,NH,hs,T) */
    int64_t so[4];         /* O, dO: (B,NH,T,hs) over (B,T,C) */
    int64_t s[4], ss[4];   /* scores (B,NH,T,T) */
    int64_t st[4];         /* the transposed view of scores, same dims */
    int64_t r[4], sr[4];   /* row stats (B,NH,T,1) */
    int64_t one[4];        /* scalars (1,1,1,1) */
};

static void sdpa_dims_of(struct sdpa_dims *d, int B, int T, int NH, int hs) {
    int64_t C = (int64_t)NH * hs, C3 = 3 * C, Tl = T;
    int64_t q[4] = {B, NH, Tl, hs}, sq[4] = {Tl * C3, hs, C3, 1};
    int64_t kt[4] = {B, NH, hs, Tl}, skt[4] = {Tl * C3, hs, 1, C3};
    int64_t so[4] = {Tl * C, hs, C, 1};
    int64_t s[4] = {B, NH, Tl, Tl}, ss[4] = {NH * Tl * Tl, Tl * Tl, Tl, 1};
    int64_t st[4] = {NH * Tl * Tl, Tl * Tl, 1, Tl};
    int64_t r[4] = {B, NH, Tl, 1}, sr[4] = {NH * Tl, Tl, 1, 1};
    memcpy(d->q, q, sizeof q);
    memcpy(d->sq, sq, sizeof sq);
    memcpy(d->kt, kt, sizeof kt);
    memcpy(d->skt, skt, sizeof skt);
    memcpy(d->so, so, sizeof so);
    memcpy(d->s, s, sizeof s);
    memcpy(d->ss, ss, sizeof ss);
    memcpy(d->st, st, sizeof st);
    memcpy(d->r, r, sizeof r);
    memcpy(d->sr, sr, sizeof sr);
    for (int i = 0; i < 4; i++)
        d->one[i] = 1;
}

/* scale, causal mask: the shared front of both graphs. *masked = the
 * masked, scaled scores (fp32, virtual). */
static gt_status g_scale_mask(sdpa_graph *g, const struct sdpa_dims *d,
                              cudnnBackendDescriptor_t scores, cudnnBackendDescriptor_t scale,
                              cudnnBackendDescriptor_t neginf, cudnnBackendDescriptor_t *masked) {
    const cudnnDataType_t F = CUDNN_DATA_FLOAT, I = CUDNN_DATA_INT32, Bo = CUDNN_DATA_BOOLEAN;
    cudnnBackendDescriptor_t scaled = NULL, row = NULL, col = NULL, keep = NULL;
    GT_TRY(g_tensor(g, "attn_scale out", -1, F, d->s, d->ss, false, &scaled));
    GT_TRY(g_pointwise(g, "attn_scale", CUDNN_POINTWISE_MUL, F, -1, scores, scale, NULL, scaled));
    GT_TRY(g_tensor(g, "gen_row_index out", -1, I, d->s, d->ss, false, &row));
    GT_TRY(
        g_pointwise(g, "gen_row_index", CUDNN_POINTWISE_GEN_INDEX, I, 2, scaled, NULL, NULL, row));
    GT_TRY(g_tensor(g, "gen_col_index out", -1, I, d->s, d->ss, false, &col));
    GT_TRY(
        g_pointwise(g, "gen_col_index", CUDNN_POINTWISE_GEN_INDEX, I, 3, scaled, NULL, NULL, col));
    GT_TRY(g_tensor(g, "row_greater_than_col out", -1, Bo, d->s, d->ss, false, &keep));
    GT_TRY(g_pointwise(g, "row_greater_than_col", CUDNN_POINTWISE_CMP_GE, Bo, -1, row, col, NULL,
                       keep));
    GT_TRY(g_tensor(g, "causal select out", -1, F, d->s, d->ss, false, masked));
    /* y = keep ? scaled : lowest float */
    return g_pointwise(g, "causal binary_select", CUDNN_POINTWISE_BINARY_SELECT, F, -1, scaled,
                       neginf, keep, *masked);
}

static gt_status build_fwd(gt_cuda_impl *im, sdpa_graph *g, int B, int T, int NH, int hs,
                           cudnnDataType_t io) {
    const cudnnDataType_t F = CUDNN_DATA_FLOAT;
    struct sdpa_dims d;
    sdpa_dims_of(&d, B, T, NH, hs);
    g->next_uid = UID_VIRTUAL;
    cudnnBackendDescriptor_t Q = NULL, KT = NULL, V = NULL, O = NULL, stats = NULL, scale = NULL,
                             neginf = NULL;
    GT_TRY(g_tensor(g, "fwd Q", UID_Q, io, d.q, d.sq, false, &Q));
    GT_TRY(g_tensor(g, "fwd K^T", UID_K, io, d.kt, d.skt, false, &KT));
    GT_TRY(g_tensor(g, "fwd V", UID_V, io, d.q, d.sq, false, &V));
    GT_TRY(g_tensor(g, "fwd O", UID_O, io, d.q, d.so, false, &O));
    GT_TRY(g_tensor(g, "fwd Stats", UID_STATS, F, d.r, d.sr, false, &stats));
    GT_TRY(g_tensor(g, "fwd attn_scale", UID_SCALE, F, d.one, d.one, true, &scale));
    GT_TRY(g_tensor(g, "fwd mask value", UID_NEGINF, F, d.one, d.one, true, &neginf));

    cudnnBackendDescriptor_t S = NULL, Sm = NULL, mx = NULL, sub = NULL, ex = NULL, sum = NULL,
                             lg = NULL, P = NULL;
    GT_TRY(g_tensor(g, "bmm1 out", -1, F, d.s, d.ss, false, &S));
    GT_TRY(g_matmul(g, "bmm1 Q@K^T", Q, KT, S));
    GT_TRY(g_scale_mask(g, &d, S, scale, neginf, &Sm));
    GT_TRY(g_tensor(g, "softmax max", -1, F, d.r, d.sr, false, &mx));
    GT_TRY(g_reduce(g, "softmax max", CUDNN_REDUCE_TENSOR_MAX, Sm, mx));
    GT_TRY(g_tensor(g, "softmax sub", -1, F, d.s, d.ss, false, &sub));
    GT_TRY(g_pointwise(g, "softmax sub", CUDNN_POINTWISE_SUB, F, -1, Sm, mx, NULL, sub));
    GT_TRY(g_tensor(g, "softmax exp", -1, F, d.s, d.ss, false, &ex));
    GT_TRY(g_pointwise(g, "softmax exp", CUDNN_POINTWISE_EXP, F, -1, sub, NULL, NULL, ex));
    GT_TRY(g_tensor(g, "softmax sum", -1, F, d.r, d.sr, false, &sum));
    GT_TRY(g_reduce(g, "softmax sum", CUDNN_REDUCE_TENSOR_ADD, ex, sum));
    GT_TRY(g_tensor(g, "softmax log", -1, F, d.r, d.sr, false, &lg));
    GT_TRY(g_pointwise(g, "softmax log", CUDNN_POINTWISE_LOG, F, -1, sum, NULL, NULL, lg));
    GT_TRY(g_pointwise(g, "softmax stats", CUDNN_POINTWISE_ADD, F, -1, mx, lg, NULL, stats));
    /* P in the storage type: bmm2's A must be the I/O type */
    GT_TRY(g_tensor(g, "softmax div out", -1, io, d.s, d.ss, false, &P));
    GT_TRY(g_pointwise(g, "softmax div", CUDNN_POINTWISE_DIV, F, -1, ex, sum, NULL, P));
    GT_TRY(g_matmul(g, "bmm2 P@V", P, V, O));
    return g_plan(im, g, "forward graph");
}

static gt_status build_bwd(gt_cuda_impl *im, sdpa_graph *g, int B, int T, int NH, int hs,
                           cudnnDataType_t io) {
    const cudnnDataType_t F = CUDNN_DATA_FLOAT;
    struct sdpa_dims d;
    sdpa_dims_of(&d, B, T, NH, hs);
    g->next_uid = UID_VIRTUAL;
    int64_t C = (int64_t)NH * hs;
    cudnnBackendDescriptor_t Q = NULL, KT = NULL, VT = NULL, O = NULL, dO = NULL, stats = NULL,
                             dQ = NULL, dK = NULL, dV = NULL, scale = NULL, neginf = NULL,
                             one = NULL, ssum = NULL;
    GT_TRY(g_tensor(g, "bwd Q", UID_Q, io, d.q, d.sq, false, &Q));
    GT_TRY(g_tensor(g, "bwd K^T", UID_K, io, d.kt, d.skt, false, &KT));
    GT_TRY(g_tensor(g, "bwd V^T", UID_V, io, d.kt, d.skt, false, &VT));
    GT_TRY(g_tensor(g, "bwd O", UID_O, io, d.q, d.so, false, &O));
    GT_TRY(g_tensor(g, "bwd dO", UID_DO, io, d.q, d.so, false, &dO));
    GT_TRY(g_tensor(g, "bwd Stats", UID_STATS, F, d.r, d.sr, false, &stats));
    GT_TRY(g_tensor(g, "bwd dQ", UID_DQ, io, d.q, d.sq, false, &dQ));
    GT_TRY(g_tensor(g, "bwd dK", UID_DK, io, d.q, d.sq, false, &dK));
    GT_TRY(g_tensor(g, "bwd dV", UID_DV, io, d.q, d.sq, false, &dV));
    GT_TRY(g_tensor(g, "bwd attn_scale", UID_SCALE, F, d.one, d.one, true, &scale));
    GT_TRY(g_tensor(g, "bwd mask value", UID_NEGINF, F, d.one, d.one, true, &neginf));
    GT_TRY(g_tensor(g, "bwd one", UID_ONE, F, d.one, d.one, true, &one));
    GT_TRY(g_tensor(g, "bwd softmax_sum", UID_SSUM, F, d.r, d.sr, false, &ssum));

    /* softmax_sum = rowsum(dO * O) * 1 (the frontend's dO*O chain; the
     * product's strides are the frontend's, it is virtual) */
    int64_t sdo[4] = {(int64_t)NH * T * hs, (int64_t)T * hs, C, 1};
    cudnnBackendDescriptor_t doo = NULL, red = NULL;
    GT_TRY(g_tensor(g, "mul_dO_O out", -1, F, d.q, sdo, false, &doo));
    GT_TRY(g_pointwise(g, "mul_dO_O", CUDNN_POINTWISE_MUL, F, -1, dO, O, NULL, doo));
    GT_TRY(g_tensor(g, "reduce_dO_O out", -1, F, d.r, d.sr, false, &red));
    GT_TRY(g_reduce(g, "reduce_dO_O", CUDNN_REDUCE_TENSOR_ADD, doo, red));
    GT_TRY(g_pointwise(g, "softmax_sum", CUDNN_POINTWISE_MUL, F, -1, red, one, NULL, ssum));

    /* E = exp(mask(scale * Q K^T) - Stats); dV = E^T dO */
    cudnnBackendDescriptor_t S = NULL, Sm = NULL, sub = NULL, E = NULL, ET = NULL;
    GT_TRY(g_tensor(g, "matmul_Q_KT out", -1, F, d.s, d.ss, false, &S));
    GT_TRY(g_matmul(g, "matmul_Q_KT", Q, KT, S));
    GT_TRY(g_scale_mask(g, &d, S, scale, neginf, &Sm));
    GT_TRY(g_tensor(g, "sub_s_m out", -1, F, d.s, d.ss, false, &sub));
    GT_TRY(g_pointwise(g, "sub_s_m", CUDNN_POINTWISE_SUB, F, -1, Sm, stats, NULL, sub));
    GT_TRY(g_tensor(g, "exp_s out", -1, F, d.s, d.ss, false, &E));
    GT_TRY(g_pointwise(g, "exp_s", CUDNN_POINTWISE_EXP, F, -1, sub, NULL, NULL, E));
    GT_TRY(g_tensor(g, "reshape_p out", -1, io, d.s, d.st, false, &ET));
    GT_TRY(g_reshape(g, "reshape_p", E, ET));
    GT_TRY(g_matmul(g, "matmul_pT_dO", ET, dO, dV));

    /* dS = (dO V^T - softmax_sum) * E * scale; dK = dS^T Q */
    cudnnBackendDescriptor_t dP = NULL, x1 = NULL, x2 = NULL, dS = NULL, dST = NULL;
    GT_TRY(g_tensor(g, "matmul_dO_VT out", -1, F, d.s, d.ss, false, &dP));
    GT_TRY(g_matmul(g, "matmul_dO_VT", dO, VT, dP));
    GT_TRY(g_tensor(g, "sub_dP_softmax_sum out", -1, F, d.s, d.ss, false, &x1));
    GT_TRY(g_pointwise(g, "sub_dP_softmax_sum", CUDNN_POINTWISE_SUB, F, -1, dP, ssum, NULL, x1));
    GT_TRY(g_tensor(g, "mul_dP_exp_s out", -1, F, d.s, d.ss, false, &x2));
    GT_TRY(g_pointwise(g, "mul_dP_exp_s", CUDNN_POINTWISE_MUL, F, -1, x1, E, NULL, x2));
    GT_TRY(g_tensor(g, "mul_dS_attn_scale out", -1, F, d.s, d.ss, false, &dS));
    GT_TRY(g_pointwise(g, "mul_dS_attn_scale", CUDNN_POINTWISE_MUL, F, -1, x2, scale, NULL, dS));
    GT_TRY(g_tensor(g, "reshape_dS out", -1, io, d.s, d.st, false, &dST));
    GT_TRY(g_reshape(g, "reshape_dS", dS, dST));
    GT_TRY(g_matmul(g, "matmul_dST_Q", dST, Q, dK));

    /* dQ = dS K, K a view of K^T; straight into dQ (deterministic graph).
     * The view is fp32 like every virtual tensor whose type the frontend
     * leaves unset (it takes the graph's intermediate type). */
    cudnnBackendDescriptor_t K = NULL;
    GT_TRY(g_tensor(g, "reshape_k out", -1, F, d.q, d.sq, false, &K));
    GT_TRY(g_reshape(g, "reshape_k", KT, K));
    GT_TRY(g_matmul(g, "matmul_dS_K", dS, K, dQ));
    return g_plan(im, g, "backward graph");
}

static void plan_free(sdpa_plan *p) {
    g_free(&p->fwd);
    g_free(&p->bwd);
    free(p);
}

/* The plan of this shape, built on first use and cached whatever the
 * outcome: p->usable, or p->refusal and p->reason saying why the own
 * kernel must run (the top of the file). Only host memory for the plan
 * record itself is an error here. */
static gt_status plan_get(gt_cuda_impl *im, struct gt_cuda_sdpa *s, int B, int T, int NH, int hs,
                          gt_dtype dt, sdpa_plan **out) {
    for (sdpa_plan *p = s->plans; p; p = p->next)
        if (p->B == B && p->T == T && p->NH == NH && p->hs == hs && p->dt == dt) {
            *out = p;
            return GT_OK;
        }
    sdpa_plan *p = (sdpa_plan *)calloc(1, sizeof *p);
    if (!p) return GT_ERR(GT_ERR_OOM, "cuda attention: out of host memory");
    p->B = B, p->T = T, p->NH = NH, p->hs = hs, p->dt = dt;
    p->refusal = GT_ERR_UNSUPPORTED;
    size_t ver = cudnnGetVersion();
    if (!im->cudnn) {
        /* cudnnCreate failed when the backend was created: a failure, not a limit */
        p->refusal = GT_ERR_DEVICE;
        snprintf(p->reason, sizeof p->reason, "no cuDNN handle: %s",
                 im->cudnn_reason[0] ? im->cudnn_reason : "cudnnCreate failed");
    } else if (hs > 128 || hs % 8 != 0)
        snprintf(p->reason, sizeof p->reason,
                 "head size %d: cuDNN flash attention needs hs <= 128, a multiple of 8", hs);
    else if (im->sm < 80)
        snprintf(p->reason, sizeof p->reason, "sm_%d: cuDNN flash attention needs sm_80+", im->sm);
    else if (im->sm >= 100)
        snprintf(p->reason, sizeof p->reason,
                 "sm_%d: a deterministic cuDNN SDPA backward on Blackwell needs a pinned engine "
                 "and knobs, not implemented",
                 im->sm);
    /* the two version limits: their reasons start "cuDNN version N:" (the
     * tests recognise a version skip by it) */
    else if (ver == 91000 || ver == 91001)
        snprintf(p->reason, sizeof p->reason,
                 "cuDNN version %zu: fp16/bf16 SDPA has known bugs in 9.10.0/9.10.1 "
                 "(cudnn-frontend refuses it); use 9.10.2 or newer",
                 ver);
    else if (ver < 91600 && T % 128 != 0)
        snprintf(p->reason, sizeof p->reason,
                 "cuDNN version %zu: before 9.16 the SDPA backward needs T a multiple of 128 or "
                 "cudnn-frontend's padding-mask workaround (not implemented); T %d",
                 ver, T);
    else {
        cudnnDataType_t io = dt == GT_DTYPE_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
        gt_status st = build_fwd(im, &p->fwd, B, T, NH, hs, io);
        if (st == GT_OK) st = build_bwd(im, &p->bwd, B, T, NH, hs, io);
        if (st == GT_OK) {
            p->usable = 1;
        } else {
            /* any status: cached as unusable with cuDNN's reason (a build
             * failure on a first run must not end the run in auto mode) */
            p->refusal = st;
            snprintf(p->reason, sizeof p->reason, "%s", gt_last_error());
            gt_error_clear();
            g_free(&p->fwd);
            g_free(&p->bwd);
        }
    }
    p->next = s->plans;
    s->plans = p;
    *out = p;
    return GT_OK;
}

/* Runs one plan; uids/ptrs pair up. */
static gt_status plan_run(const gt_kctx *k, gt_cuda_impl *im, sdpa_graph *g, const char *what,
                          int n, const int64_t *uids, void **ptrs) {
    void *ws = NULL;
    if (g->workspace > 0) GT_TRY(gt_cuda_scratch(k, (size_t)g->workspace, &ws));
    cudnnBackendDescriptor_t vp = NULL;
    cudnnStatus_t cs = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
    const char *call = "cudnnBackendCreateDescriptor(variant pack)";
    if (cs == CUDNN_STATUS_SUCCESS) {
        call = "cudnnBackendSetAttribute(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS)";
        cs = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n,
                                      uids);
    }
    if (cs == CUDNN_STATUS_SUCCESS) {
        call = "cudnnBackendSetAttribute(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS)";
        cs = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                      CUDNN_TYPE_VOID_PTR, n, ptrs);
    }
    if (cs == CUDNN_STATUS_SUCCESS) {
        call = "cudnnBackendSetAttribute(CUDNN_ATTR_VARIANT_PACK_WORKSPACE)";
        cs = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                                      &ws);
    }
    if (cs == CUDNN_STATUS_SUCCESS) {
        call = "cudnnBackendFinalize(variant pack)";
        cs = cudnnBackendFinalize(vp);
    }
    if (cs == CUDNN_STATUS_SUCCESS) {
        call = "cudnnBackendExecute";
        cs = cudnnBackendExecute(im->cudnn, g->plan, vp);
    }
    if (vp) (void)cudnnBackendDestroyDescriptor(vp);
    gt_cuda_scratch_free(k, ws); /* one stream: later users are ordered after the plan */
    if (cs != CUDNN_STATUS_SUCCESS) {
        (void)sdpa_err(cs, what, call); /* the message; a built plan failing is a failure */
        return gt_error_wrap(GT_ERR_DEVICE,
                             "executing a built plan (GT_CUDA_ATTENTION=own runs the own kernels "
                             "instead)");
    }
    return GT_OK;
}

/* The forward plan: out(B,T,C) and Stats into att (B*NH*T fp32). */
static gt_status run_fwd(const gt_kctx *k, gt_cuda_impl *im, sdpa_plan *p, void *out, float *att,
                         const void *qkv) {
    size_t es = gt_dtype_size(p->dt), C = (size_t)p->NH * p->hs;
    size_t nq = (size_t)p->B * p->T * 3 * C, no = (size_t)p->B * p->T * C;
    size_t nr = (size_t)p->B * p->NH * p->T;
    /* the plans declare 16-byte alignment: less aligned arrays are staged */
    gt_cuda_stage sg = gt_cuda_stage_begin(k, im);
    void *q = NULL, *o = NULL, *st = NULL;
    gt_status r = gt_cuda_stage_ptr(&sg, qkv, nq * es, 1, 0, &q);
    if (r == GT_OK) r = gt_cuda_stage_ptr(&sg, out, no * es, 0, 1, &o);
    if (r == GT_OK) r = gt_cuda_stage_ptr(&sg, att, nr * sizeof(float), 0, 1, &st);
    if (r == GT_OK) {
        float scale = 1.0f / sqrtf((float)p->hs), neginf = -3.402823466e38f; /* lowest float */
        int64_t uids[7] = {UID_Q, UID_K, UID_V, UID_O, UID_STATS, UID_SCALE, UID_NEGINF};
        const char *base = (const char *)q;
        void *ptrs[7] = {(void *)base, (void *)(base + C * es), (void *)(base + 2 * C * es), o,
                         st, &scale, &neginf};
        r = plan_run(k, im, &p->fwd, "forward", 7, uids, ptrs);
    }
    return gt_cuda_unstage(&sg, r);
}

/* dqkv(n) += d(n) */
template <typename T>
__global__ void sdpa_accumulate_kernel(T *dqkv, const T *__restrict__ d, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        gt_st(dqkv, i, gt_ld(dqkv, i) + gt_ld(d, i));
}

template <typename T>
static gt_status accumulate_launch(gt_cuda_impl *im, void *dqkv, const void *d, size_t n) {
    sdpa_accumulate_kernel<T>
        <<<gt_cuda_grid_1d(n, 256), 256, 0, im->stream>>>((T *)dqkv, (const T *)d, n);
    GT_CUDA_LAUNCHED("sdpa_accumulate_kernel");
    return GT_OK;
}

/* The backward plan into a (B,T,3C) scratch, then dqkv += it. O is the
 * forward's out, Stats its att. */
static gt_status run_bwd(const gt_kctx *k, gt_cuda_impl *im, sdpa_plan *p, void *dqkv,
                         const void *dout, const void *qkv, const void *out, const float *att) {
    int B = p->B, T = p->T, NH = p->NH;
    size_t es = gt_dtype_size(p->dt), C = (size_t)NH * p->hs;
    size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nr = (size_t)B * NH * T;
    void *dscr = NULL, *ssum = NULL;
    gt_cuda_stage sg = gt_cuda_stage_begin(k, im); /* inputs only: dq/dk/dv go to dscr */
    void *q = NULL, *o = NULL, *dO = NULL, *st = NULL;
    gt_status r = gt_cuda_scratch(k, nq * es, &dscr);
    if (r == GT_OK) r = gt_cuda_scratch(k, nr * sizeof(float), &ssum);
    if (r == GT_OK) r = gt_cuda_stage_ptr(&sg, qkv, nq * es, 1, 0, &q);
    if (r == GT_OK) r = gt_cuda_stage_ptr(&sg, out, no * es, 1, 0, &o);
    if (r == GT_OK) r = gt_cuda_stage_ptr(&sg, dout, no * es, 1, 0, &dO);
    if (r == GT_OK) r = gt_cuda_stage_ptr(&sg, att, nr * sizeof(float), 1, 0, &st);
    if (r == GT_OK) {
        float scale = 1.0f / sqrtf((float)p->hs), neginf = -3.402823466e38f, one = 1.0f;
        const char *qb = (const char *)q;
        char *dq = (char *)dscr;
        int64_t uids[13] = {UID_Q,  UID_K,  UID_V,     UID_O,      UID_DO,  UID_STATS, UID_DQ,
                            UID_DK, UID_DV, UID_SCALE, UID_NEGINF, UID_ONE, UID_SSUM};
        void *ptrs[13] = {(void *)qb,
                          (void *)(qb + C * es),
                          (void *)(qb + 2 * C * es),
                          o,
                          dO,
                          st,
                          dq,
                          dq + C * es,
                          dq + 2 * C * es,
                          &scale,
                          &neginf,
                          &one,
                          ssum};
        r = plan_run(k, im, &p->bwd, "backward", 13, uids, ptrs);
    }
    if (r == GT_OK) r = GT_CUDA_DISPATCH(p->dt, accumulate_launch, im, dqkv, dscr, nq);
    r = gt_cuda_unstage(&sg, r);
    gt_cuda_scratch_free(k, ssum);
    gt_cuda_scratch_free(k, dscr);
    return r;
}

#endif /* GT_HAVE_CUDNN */

/* ---- the path decision and the entry points --------------------------------------------- */

/* THE decision (see the top): *p = the usable plan when (dt, shape) takes
 * cuDNN, else *p = NULL, *why says why the own kernels run and *kind is
 * GT_ERR_UNSUPPORTED for a limit, the failure's status for a cuDNN failure
 * (what GT_CUDA_ATTENTION=cudnn returns). Pointers play no part. Builds and
 * caches the plan on the first call of a shape, whatever the outcome. */
static gt_status sdpa_decide(gt_cuda_impl *im, gt_dtype dt, int B, int T, int C, int NH,
                             sdpa_plan_ref *p, const char **why, gt_status *kind) {
    *p = NULL;
    *why = NULL;
    *kind = GT_ERR_UNSUPPORTED;
    if (im->att_mode == GT_CUDA_ATT_OWN) {
        *why = "GT_CUDA_ATTENTION=own";
    } else if (dt != GT_DTYPE_BF16 && dt != GT_DTYPE_FP16) {
        *why = "cuDNN's fused attention needs bf16 or fp16 storage";
    } else {
#if !GT_HAVE_CUDNN
        (void)B, (void)T, (void)C, (void)NH;
        *why = "cuDNN is not compiled in";
#else
        struct gt_cuda_sdpa *s = NULL;
        GT_TRY(sdpa_state(im, &s));
        sdpa_plan *pl = NULL;
        GT_TRY(plan_get(im, s, B, T, NH, C / NH, dt, &pl));
        if (pl->usable) {
            *p = pl;
        } else {
            *why = pl->reason;
            *kind = pl->refusal;
        }
#endif
    }
    return GT_OK;
}

gt_status gt_cuda_sdpa_state_floats(gt_cuda_impl *im, gt_dtype dt, int B, int T, int C, int NH,
                                    size_t *floats) {
    sdpa_plan_ref p = NULL;
    const char *why = NULL;
    gt_status kind = GT_OK;
    *floats = (size_t)B * NH * T * T;
    GT_TRY(sdpa_decide(im, dt, B, T, C, NH, &p, &why, &kind));
    if (p) *floats = (size_t)B * NH * T; /* Stats only */
    return GT_OK;
}

/* The note naming the own path and why; when the user forced cuDNN, the
 * refusal's own status instead: GT_ERR_UNSUPPORTED for a limit (a skip),
 * the failure's (GT_ERR_DEVICE) for a cuDNN failure, loudly. */
static gt_status take_own(gt_cuda_impl *im, const char *op, int B, int T, int NH, int hs,
                          gt_dtype dt, const char *why, gt_status kind) {
    if (im->att_mode == GT_CUDA_ATT_CUDNN && kind == GT_ERR_UNSUPPORTED)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "%s B%d T%d NH%d hs%d %s: GT_CUDA_ATTENTION=cudnn, but cuDNN cannot run it: "
                      "%s (unset GT_CUDA_ATTENTION to fall back to the own kernel)",
                      op, B, T, NH, hs, dt_name(dt), why);
    if (im->att_mode == GT_CUDA_ATT_CUDNN)
        return GT_ERR(kind,
                      "%s B%d T%d NH%d hs%d %s: GT_CUDA_ATTENTION=cudnn, and cuDNN FAILED: %s "
                      "(CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=stderr shows cuDNN's log; unset "
                      "GT_CUDA_ATTENTION to fall back to the own kernel)",
                      op, B, T, NH, hs, dt_name(dt), why);
    gt_cuda_note(im, "%s B%d T%d NH%d hs%d %s: own kernel (%s%s)", op, B, T, NH, hs, dt_name(dt),
                 kind == GT_ERR_UNSUPPORTED ? "" : "fallback, cuDNN failed: ", why);
    return GT_OK;
}

gt_status gt_cuda_sdpa_fwd(const gt_kctx *k, gt_cuda_impl *im, void *out, float *att,
                           const void *qkv, int B, int T, int C, int NH, int *done) {
    *done = 0;
    int hs = C / NH;
    sdpa_plan_ref p = NULL;
    const char *why = NULL;
    gt_status kind = GT_OK;
    GT_TRY(sdpa_decide(im, k->dt, B, T, C, NH, &p, &why, &kind));
    if (!p) return take_own(im, "attention_fwd", B, T, NH, hs, k->dt, why, kind);
#if GT_HAVE_CUDNN
    GT_TRY(run_fwd(k, im, p, out, att, qkv));
    int staged = !gt_cuda_aligned(qkv) || !gt_cuda_aligned(out) || !gt_cuda_aligned(att);
    gt_cuda_note(im,
                 "attention_fwd B%d T%d NH%d hs%d %s: cudnn sdpa (engine %lld, cuDNN %zu, "
                 "numerical notes: %s%s)",
                 B, T, NH, hs, dt_name(k->dt), (long long)p->fwd.engine, cudnnGetVersion(),
                 p->fwd.numnotes, staged ? "; staged: qkv, out or att not 16-byte aligned" : "");
    *done = 1;
#else
    (void)out, (void)att, (void)qkv;
#endif
    return GT_OK;
}

gt_status gt_cuda_sdpa_bwd(const gt_kctx *k, gt_cuda_impl *im, void *dqkv, const void *dout,
                           const void *qkv, const void *out, const float *att, int B, int T,
                           int C, int NH, int *done) {
    *done = 0;
    int hs = C / NH;
    sdpa_plan_ref p = NULL;
    const char *why = NULL;
    gt_status kind = GT_OK;
    GT_TRY(sdpa_decide(im, k->dt, B, T, C, NH, &p, &why, &kind));
    if (!p) return take_own(im, "attention_bwd", B, T, NH, hs, k->dt, why, kind);
#if GT_HAVE_CUDNN
    if (!out)
        return GT_ERR(GT_ERR_INVALID,
                      "attention_bwd B%d T%d NH%d hs%d %s: out is NULL (the cuDNN backward reads "
                      "the forward's out)",
                      B, T, NH, hs, dt_name(k->dt));
    GT_TRY(run_bwd(k, im, p, dqkv, dout, qkv, out, att));
    int staged = !gt_cuda_aligned(qkv) || !gt_cuda_aligned(out) || !gt_cuda_aligned(dout) ||
                 !gt_cuda_aligned(att);
    gt_cuda_note(im,
                 "attention_bwd B%d T%d NH%d hs%d %s: cudnn sdpa (engine %lld, numerical notes: "
                 "%s; deterministic graph: dQ without an atomic fp32 accumulator%s)",
                 B, T, NH, hs, dt_name(k->dt), (long long)p->bwd.engine, p->bwd.numnotes,
                 staged ? "; staged: qkv, out, dout or att not 16-byte aligned" : "");
    *done = 1;
#else
    (void)dqkv, (void)dout, (void)qkv, (void)out, (void)att;
#endif
    return GT_OK;
}

void gt_cuda_sdpa_free(struct gt_cuda_sdpa *s) {
    if (!s) return;
#if GT_HAVE_CUDNN
    for (sdpa_plan *p = s->plans, *nx; p; p = nx) {
        nx = p->next;
        plan_free(p);
    }
#endif
    free(s);
}
