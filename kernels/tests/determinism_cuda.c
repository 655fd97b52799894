/* kernels.determinism.cuda: every op of the cuda backend's table, run twice
 * from the same seeded inputs (fresh buffers each time), gives bitwise
 * identical outputs, in fp32, bf16 and fp16 storage, on shapes large
 * enough for multi-block grids, split-K GEMMs and (bf16/fp16, head size
 * 64) the cuDNN attention path. Every case runs aligned and again with
 * each tensor one element past an aligned allocation ("off1": 2-byte
 * aligned in bf16/fp16), as a parameter at an odd offset of a flat store
 * is: the library algorithms chosen for such pointers (cuBLASLt, cuDNN)
 * or the staging around them must be deterministic too. Ops the table
 * lacks, or that decline a dtype, are reported as skipped; any other error
 * fails.
 * Exit 77: no GPU. */
#include "kernels/tests/testutil.h"

#define MAXB 24
#define MAXO 6

typedef struct run {
    gt_backend *be;
    gt_dtype dt;
    int off;          /* elements every tensor starts past its allocation */
    void *bufs[MAXB]; /* device buffers (allocations) to free */
    int nbufs;
    const void *outs[MAXO]; /* device outputs to fetch */
    size_t out_bytes[MAXO];
    int nouts;
    void *host[MAXO]; /* fetched outputs */
    double d;         /* sumsq */
} run;

static void track(run *r, void *base) {
    if (r->nbufs == MAXB) {
        fprintf(stderr, "determinism_cuda: more than %d buffers\n", MAXB);
        exit(2);
    }
    r->bufs[r->nbufs++] = base;
}

/* n elements of es bytes, r->off elements into a fresh allocation, from
 * host bytes h (NULL: zeroed). */
static void *place(run *r, size_t es, size_t n, const void *h) {
    void *base = NULL;
    size_t lead = (size_t)r->off * es;
    gt_status s = gt_backend_alloc(r->be, lead + n * es, &base);
    if (s != GT_OK) tu_die("alloc", s);
    track(r, base);
    s = r->be->memset_zero(r->be, base, lead + n * es);
    if (s != GT_OK) tu_die("memset_zero", s);
    void *d = (char *)base + lead;
    if (h && n) {
        s = r->be->copy_to_device(r->be, d, h, n * es);
        if (s != GT_OK) tu_die("copy_to_device", s);
    }
    return d;
}

/* n seeded values in dtype dt: normal(mean, std), or |normal| + mean when
 * positive (variances, rstd). */
/* The fp32 values of each stream, generated once: every case runs twice,
 * aligned and off1, in three dtypes, from the same inputs (the generation
 * took half of this test's time on the CUDA emulator). */
enum { NSTREAMS = 128 };
static struct {
    float *h;
    size_t n;
    float mean, std;
    int positive;
} cache[NSTREAMS];

static const float *values(size_t n, uint64_t stream, float mean, float std, int positive) {
    if (stream >= NSTREAMS) {
        fprintf(stderr, "determinism_cuda: stream %llu >= %d\n", (unsigned long long)stream,
                NSTREAMS);
        exit(2);
    }
    if (cache[stream].h && cache[stream].n == n && cache[stream].mean == mean &&
        cache[stream].std == std && cache[stream].positive == positive)
        return cache[stream].h;
    free(cache[stream].h);
    float *h = tu_xmalloc(n * sizeof(float) + 1);
    gt_rng_fill_normal(h, n, positive ? 0.0f : mean, std, TU_SEED, stream, 0);
    if (positive)
        for (size_t i = 0; i < n; i++)
            h[i] = fabsf(h[i]) + mean;
    cache[stream].h = h;
    cache[stream].n = n;
    cache[stream].mean = mean;
    cache[stream].std = std;
    cache[stream].positive = positive;
    return h;
}

static void *arr(run *r, gt_dtype dt, size_t n, uint64_t stream, float mean, float std,
                 int positive) {
    const float *h = values(n, stream, mean, std, positive);
    void *t = tu_xmalloc(n * gt_dtype_size(dt) + 1);
    gt_convert(t, dt, h, GT_DTYPE_FP32, n);
    void *d = place(r, gt_dtype_size(dt), n, t);
    free(t);
    return d;
}

static void *ids(run *r, size_t n, int range, uint64_t stream) {
    int32_t *h = tu_xmalloc(n * sizeof(int32_t));
    for (size_t i = 0; i < n; i++)
        h[i] = (int32_t)(gt_rng_u32(TU_SEED, stream, i) % (uint32_t)range);
    void *d = place(r, sizeof(int32_t), n, h);
    free(h);
    return d;
}

static void *out(run *r, gt_dtype dt, size_t n) { return place(r, gt_dtype_size(dt), n, NULL); }

static void *fetch(run *r, void *d, gt_dtype dt, size_t n) {
    r->outs[r->nouts] = d;
    r->out_bytes[r->nouts++] = n * gt_dtype_size(dt);
    return d;
}

static gt_status run_op(run *r, gt_op op) {
    enum { B = 4, T = 64, C = 768, NH = 12, V = 4000, Vp = 4032, N = B * T, OC = 3 * C };
    const gt_ops *o = r->be->ops;
    gt_kctx k = {r->be, r->dt};
    gt_dtype dt = r->dt, F = GT_DTYPE_FP32;
    size_t nbig = (size_t)3 * C * C + 5; /* odd length */
    if (!gt_ops_slot(o, op)) return GT_ERR(GT_ERR_UNSUPPORTED, "empty slot");
    gt_status s = GT_OK;
    switch (op) {
    case GT_OP_ENCODER_FWD:
        s = o->encoder_fwd(&k, fetch(r, out(r, dt, (size_t)N * C), dt, (size_t)N * C),
                           ids(r, N, 300, 1), arr(r, dt, 300 * C, 2, 0, 1, 0),
                           arr(r, dt, T * C, 3, 0, 1, 0), B, T, C);
        break;
    case GT_OP_ENCODER_BWD:
        /* 2B x T = 512 positions: two tiles of the scan for each token's next
         * occurrence, so a token's chain crosses from one block to another */
        s = o->encoder_bwd(&k, fetch(r, arr(r, dt, 300 * C, 4, 0, 1, 0), dt, 300 * C),
                           fetch(r, arr(r, dt, T * C, 5, 0, 1, 0), dt, T * C),
                           arr(r, dt, (size_t)2 * N * C, 6, 0, 1, 0), ids(r, 2 * N, 300, 7), 2 * B,
                           T, C);
        break;
    case GT_OP_LAYERNORM_FWD:
        s = o->layernorm_fwd(&k, fetch(r, out(r, dt, (size_t)N * C), dt, (size_t)N * C),
                             fetch(r, out(r, F, N), F, N), fetch(r, out(r, F, N), F, N),
                             arr(r, dt, (size_t)N * C, 8, 0, 1, 0), arr(r, dt, C, 9, 1, 0.1f, 0),
                             arr(r, dt, C, 10, 0, 0.1f, 0), N, C, 1e-5f);
        break;
    case GT_OP_LAYERNORM_BWD:
        s = o->layernorm_bwd(
            &k, fetch(r, arr(r, dt, (size_t)N * C, 11, 0, 1, 0), dt, (size_t)N * C),
            fetch(r, arr(r, dt, C, 12, 0, 1, 0), dt, C),
            fetch(r, arr(r, dt, C, 13, 0, 1, 0), dt, C), arr(r, dt, (size_t)N * C, 14, 0, 1, 0),
            arr(r, dt, (size_t)N * C, 15, 0, 1, 0), arr(r, dt, C, 16, 1, 0.1f, 0),
            arr(r, F, N, 17, 0, 0.1f, 0), arr(r, F, N, 18, 0.5f, 0.2f, 1), N, C);
        break;
    case GT_OP_MATMUL_FWD:
        s = o->matmul_fwd(&k, fetch(r, out(r, dt, (size_t)N * OC), dt, (size_t)N * OC),
                          arr(r, dt, (size_t)N * C, 19, 0, 1, 0),
                          arr(r, dt, (size_t)OC * C, 20, 0, 0.05f, 0), arr(r, dt, OC, 21, 0, 1, 0),
                          N, C, OC);
        break;
    case GT_OP_MATMUL_BWD:
        s = o->matmul_bwd(&k, fetch(r, arr(r, dt, (size_t)N * C, 22, 0, 1, 0), dt, (size_t)N * C),
                          fetch(r, arr(r, dt, (size_t)OC * C, 23, 0, 1, 0), dt, (size_t)OC * C),
                          fetch(r, arr(r, dt, OC, 24, 0, 1, 0), dt, OC),
                          arr(r, dt, (size_t)N * OC, 25, 0, 1, 0),
                          arr(r, dt, (size_t)N * C, 26, 0, 1, 0),
                          arr(r, dt, (size_t)OC * C, 27, 0, 0.05f, 0), N, C, OC);
        break;
    case GT_OP_MATMUL_GELU_FWD: /* gpt2's fc: the GELU_AUX_BIAS epilogue in bf16/fp16 */
        s = o->matmul_gelu_fwd(&k, fetch(r, out(r, dt, (size_t)N * 4 * C), dt, (size_t)N * 4 * C),
                               fetch(r, out(r, dt, (size_t)N * 4 * C), dt, (size_t)N * 4 * C),
                               arr(r, dt, (size_t)N * C, 80, 0, 1, 0),
                               arr(r, dt, (size_t)4 * C * C, 81, 0, 0.05f, 0),
                               arr(r, dt, 4 * C, 82, 0, 1, 0), N, C, 4 * C);
        break;
    case GT_OP_MATMUL_DGELU_BWD: /* gpt2's fcproj: the DGELU epilogue in bf16/fp16 */
        s = o->matmul_dgelu_bwd(
            &k, fetch(r, arr(r, dt, (size_t)N * 4 * C, 83, 0, 1, 0), dt, (size_t)N * 4 * C),
            fetch(r, arr(r, dt, (size_t)C * 4 * C, 84, 0, 1, 0), dt, (size_t)C * 4 * C),
            fetch(r, arr(r, dt, C, 85, 0, 1, 0), dt, C), arr(r, dt, (size_t)N * C, 86, 0, 1, 0),
            arr(r, dt, (size_t)N * 4 * C, 87, 0, 1, 0),
            arr(r, dt, (size_t)C * 4 * C, 88, 0, 0.05f, 0),
            arr(r, dt, (size_t)N * 4 * C, 89, 0, 2, 0), N, 4 * C, C);
        break;
    case GT_OP_ATTENTION_FWD: {
        /* att: exactly the state the backend asks for (its cuDNN path keeps
         * the row logsumexp, B*NH*T floats, compared like any output) */
        size_t na = gt_attention_state_floats(o, &k, B, T, C, NH);
        s = o->attention_fwd(&k, fetch(r, out(r, dt, (size_t)N * C), dt, (size_t)N * C),
                             fetch(r, out(r, F, na), F, na),
                             arr(r, dt, (size_t)N * 3 * C, 28, 0, 1, 0), B, T, C, NH);
        break;
    }
    case GT_OP_ATTENTION_BWD: {
        void *qkv = arr(r, dt, (size_t)N * 3 * C, 29, 0, 1, 0);
        void *att = out(r, F, gt_attention_state_floats(o, &k, B, T, C, NH));
        void *o_fwd = out(r, dt, (size_t)N * C);
        s = o->attention_fwd(&k, o_fwd, att, qkv, B, T, C, NH);
        if (s == GT_OK)
            s = o->attention_bwd(
                &k, fetch(r, arr(r, dt, (size_t)N * 3 * C, 30, 0, 1, 0), dt, (size_t)N * 3 * C),
                arr(r, dt, (size_t)N * C, 31, 0, 1, 0), qkv, o_fwd, att, B, T, C, NH);
        break;
    }
    case GT_OP_GELU_FWD:
        s = o->gelu_fwd(&k, fetch(r, out(r, dt, nbig), dt, nbig), arr(r, dt, nbig, 32, 0, 1, 0),
                        nbig);
        break;
    case GT_OP_GELU_BWD:
        s = o->gelu_bwd(&k, fetch(r, arr(r, dt, nbig, 33, 0, 1, 0), dt, nbig),
                        arr(r, dt, nbig, 34, 0, 1, 0), arr(r, dt, nbig, 35, 0, 1, 0), nbig);
        break;
    case GT_OP_RESIDUAL_FWD:
        s = o->residual_fwd(&k, fetch(r, out(r, dt, nbig), dt, nbig), arr(r, dt, nbig, 36, 0, 1, 0),
                            arr(r, dt, nbig, 37, 0, 1, 0), nbig);
        break;
    case GT_OP_RESIDUAL_BWD:
        s = o->residual_bwd(&k, fetch(r, arr(r, dt, nbig, 38, 0, 1, 0), dt, nbig),
                            fetch(r, arr(r, dt, nbig, 39, 0, 1, 0), dt, nbig),
                            arr(r, dt, nbig, 40, 0, 1, 0), nbig);
        break;
    case GT_OP_CLASSIFIER_FWD:
        s = o->classifier_fwd(&k, fetch(r, out(r, F, N), F, N),
                              arr(r, dt, (size_t)N * Vp, 41, 0, 2, 0), ids(r, N, V, 42), N, V, Vp);
        break;
    case GT_OP_CLASSIFIER_BWD:
        s = o->classifier_bwd(&k, fetch(r, out(r, dt, (size_t)N * Vp), dt, (size_t)N * Vp),
                              fetch(r, out(r, F, N), F, N), arr(r, dt, (size_t)N * Vp, 43, 0, 2, 0),
                              ids(r, N, V, 44), 1.0f / N, N, V, Vp);
        break;
    case GT_OP_ADAMW:
        s = o->adamw(&k, fetch(r, arr(r, F, nbig, 45, 0, 0.05f, 0), F, nbig),
                     arr(r, dt, nbig, 46, 0, 1, 0),
                     fetch(r, arr(r, F, nbig, 47, 0, 0.1f, 0), F, nbig),
                     fetch(r, arr(r, F, nbig, 48, 0, 0.1f, 1), F, nbig), nbig, 1e-3f, 0.9f, 0.95f,
                     1e-8f, 0.1f, 1.0f, 3);
        break;
    case GT_OP_SUMSQ:
        s = o->sumsq(&k, arr(r, dt, nbig, 49, 0, 1, 0), nbig, &r->d);
        break;
    case GT_OP_CONV2D_FWD:
    case GT_OP_CONV2D_BWD: {
        gt_conv2d_shape cs = {
            .N = 4, .C = 16, .H = 17, .W = 17, .OC = 32, .KH = 3, .KW = 3, .stride = 2, .pad = 1};
        size_t ni = (size_t)cs.N * cs.C * cs.H * cs.W, nw = (size_t)cs.OC * cs.C * cs.KH * cs.KW;
        size_t no = (size_t)cs.N * cs.OC * gt_conv2d_out_h(&cs) * gt_conv2d_out_w(&cs);
        if (op == GT_OP_CONV2D_FWD)
            s = o->conv2d_fwd(&k, fetch(r, out(r, dt, no), dt, no), arr(r, dt, ni, 50, 0, 1, 0),
                              arr(r, dt, nw, 51, 0, 0.2f, 0), arr(r, dt, cs.OC, 52, 0, 1, 0), &cs);
        else
            s = o->conv2d_bwd(&k, fetch(r, arr(r, dt, ni, 53, 0, 1, 0), dt, ni),
                              fetch(r, arr(r, dt, nw, 54, 0, 1, 0), dt, nw),
                              fetch(r, arr(r, dt, cs.OC, 55, 0, 1, 0), dt, cs.OC),
                              arr(r, dt, no, 56, 0, 1, 0), arr(r, dt, ni, 57, 0, 1, 0),
                              arr(r, dt, nw, 58, 0, 0.2f, 0), &cs);
        break;
    }
    case GT_OP_BATCHNORM_FWD: {
        enum { BN = 8, BC = 32, HW = 65 };
        size_t n = (size_t)BN * BC * HW;
        s = o->batchnorm_fwd(&k, fetch(r, out(r, dt, n), dt, n), fetch(r, out(r, F, BC), F, BC),
                             fetch(r, out(r, F, BC), F, BC),
                             fetch(r, arr(r, F, BC, 59, 0, 0.1f, 0), F, BC),
                             fetch(r, arr(r, F, BC, 60, 1, 0.1f, 1), F, BC),
                             arr(r, dt, n, 61, 0.5f, 1, 0), arr(r, dt, BC, 62, 1, 0.1f, 0),
                             arr(r, dt, BC, 63, 0, 0.1f, 0), BN, BC, HW, 1e-5f, 0.1f, 1);
        break;
    }
    case GT_OP_BATCHNORM_BWD: {
        enum { BN = 8, BC = 32, HW = 65 };
        size_t n = (size_t)BN * BC * HW;
        s = o->batchnorm_bwd(&k, fetch(r, arr(r, dt, n, 64, 0, 1, 0), dt, n),
                             fetch(r, arr(r, dt, BC, 65, 0, 1, 0), dt, BC),
                             fetch(r, arr(r, dt, BC, 66, 0, 1, 0), dt, BC),
                             arr(r, dt, n, 67, 0, 1, 0), arr(r, dt, n, 68, 0, 1, 0),
                             arr(r, dt, BC, 69, 1, 0.1f, 0), arr(r, F, BC, 70, 0, 0.1f, 0),
                             arr(r, F, BC, 71, 0.5f, 0.2f, 1), BN, BC, HW);
        break;
    }
    case GT_OP_RELU_FWD:
        s = o->relu_fwd(&k, fetch(r, out(r, dt, nbig), dt, nbig), arr(r, dt, nbig, 72, 0, 1, 0),
                        nbig);
        break;
    case GT_OP_RELU_BWD:
        s = o->relu_bwd(&k, fetch(r, arr(r, dt, nbig, 73, 0, 1, 0), dt, nbig),
                        arr(r, dt, nbig, 74, 0, 1, 0), arr(r, dt, nbig, 75, 0, 1, 0), nbig);
        break;
    case GT_OP_AVGPOOL_FWD:
        s = o->avgpool_fwd(&k, fetch(r, out(r, dt, 8 * 64), dt, 8 * 64),
                           arr(r, dt, 8 * 64 * 49, 76, 0, 1, 0), 8, 64, 49);
        break;
    case GT_OP_AVGPOOL_BWD:
        s = o->avgpool_bwd(&k, fetch(r, arr(r, dt, 8 * 64 * 49, 77, 0, 1, 0), dt, 8 * 64 * 49),
                           arr(r, dt, 8 * 64, 78, 0, 1, 0), 8, 64, 49);
        break;
    case GT_OP_CAST: {
        /* fp32 -> dt (fp32 -> bf16 when dt is fp32), and back */
        gt_dtype to = dt == F ? GT_DTYPE_BF16 : dt;
        void *src = arr(r, F, nbig, 79, 0, 1, 0), *mid = fetch(r, out(r, to, nbig), to, nbig);
        s = o->cast(&k, mid, to, src, F, nbig);
        if (s == GT_OK) s = o->cast(&k, fetch(r, out(r, F, nbig), F, nbig), F, mid, to, nbig);
        break;
    }
    default:
        s = GT_ERR(GT_ERR_INVALID, "determinism_cuda: op %d has no case here", (int)op);
        break;
    }
    if (s == GT_OK) s = r->be->synchronize(r->be);
    for (int i = 0; s == GT_OK && i < r->nouts; i++) {
        r->host[i] = tu_xmalloc(r->out_bytes[i]);
        s = r->be->copy_to_host(r->be, r->host[i], r->outs[i], r->out_bytes[i]);
    }
    for (int i = 0; i < r->nbufs; i++)
        gt_backend_dealloc(r->be, r->bufs[i]);
    r->nbufs = 0;
    return s;
}

static void run_free(run *r) {
    for (int i = 0; i < MAXO; i++)
        free(r->host[i]);
}

int main(void) {
    gt_backend *be = tu_backend_or_skip("cuda", 0);
    printf("determinism: cuda ops run twice, %s\n", be->describe(be));
    static const gt_dtype dts[] = {GT_DTYPE_FP32, GT_DTYPE_BF16, GT_DTYPE_FP16};
    int fails = 0, skips = 0;
    for (size_t di = 0; di < 3 * 2; di++) {
        for (int op = 0; op < GT_OP_COUNT; op++) {
            gt_dtype dt = dts[di % 3];
            int off = (int)(di / 3);
            run r1 = {.be = be, .dt = dt, .off = off}, r2 = {.be = be, .dt = dt, .off = off};
            gt_status s1 = run_op(&r1, (gt_op)op);
            gt_status s2 = s1 == GT_OK ? run_op(&r2, (gt_op)op) : s1;
            const char *name = gt_op_name((gt_op)op);
            char dn[16];
            snprintf(dn, sizeof dn, "%s%s", gt_dtype_name(dt), off ? " off1" : "");
            if (s1 == GT_ERR_UNSUPPORTED) {
                printf("  %-15s %-10s skipped: %s\n", name, dn, gt_last_error());
                skips++;
            } else if (s2 != GT_OK) {
                printf("  %-15s %-10s FAIL: %s: %s\n", name, dn, gt_status_name(s2),
                       gt_last_error());
                fails++;
            } else {
                int same = memcmp(&r1.d, &r2.d, sizeof r1.d) == 0 && r1.nouts == r2.nouts;
                size_t bytes = 0;
                for (int i = 0; same && i < r1.nouts; i++) {
                    bytes += r1.out_bytes[i];
                    same = memcmp(r1.host[i], r2.host[i], r1.out_bytes[i]) == 0;
                }
                printf("  %-15s %-10s %zu bytes%s: %s\n", name, dn, bytes,
                       op == GT_OP_SUMSQ ? " (+ fp64 sum)" : "",
                       same ? "bitwise identical" : "DIFFERENT  FAIL");
                fails += !same;
            }
            run_free(&r1);
            run_free(&r2);
        }
    }
    const char *notes = be->notes ? be->notes(be) : "";
    if (notes && *notes) printf("notes:\n%s\n", notes);
    gt_backend_free(be);
    for (int i = 0; i < NSTREAMS; i++) free(cache[i].h);
    printf("determinism cuda: %s (%d skipped)\n", fails ? "FAILED" : "all bitwise identical",
           skips);
    return fails ? 1 : 0;
}
