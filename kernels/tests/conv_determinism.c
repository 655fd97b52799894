/* kernels.conv_determinism.cuda: conv2d on cuda (cuDNN with algorithms
 * chosen among the deterministic ones, kernels/cuda/conv.cu) is bitwise
 * reproducible. Each case runs twice from the same seeded inputs: once on
 * one backend, once on a second backend (its own cuDNN handle, fresh
 * buffers at other addresses), for fp32, bf16 and fp16, over shapes that lead
 * cuDNN to different algorithms (odd sizes, strided, 1x1, 5x5, a ConvNet
 * layer). Per run: conv2d_fwd with a bias, conv2d_bwd twice into gradients
 * that start from random values (so beta = 1 accumulation is part of what
 * must reproduce), and conv2d_bwd with dinp and dbias NULL (a first layer).
 * Every output must be bitwise equal between the runs, must differ from
 * its initial values (the op did something), and the backend must have
 * noted a deterministic cuDNN algorithm for each direction.
 *
 * With the argument "fallback" (kernels.conv_fallback.cuda, the CUDA
 * emulator only): the same runs with the emulator's cuDNN stand-in told
 * to offer no usable deterministic candidate (GT_EMU_CUDNN_CONV_HEURISTIC,
 * docs/cuda-emulator.md), for the backward filter alone, then for every
 * direction: conv.cu must fall back to PyTorch's deterministic algorithms
 * (IMPLICIT_PRECOMP_GEMM, ALGO_1, ALGO_1) and say "fallback" in the
 * notes, bitwise reproducibly and within the conformance tolerance of the
 * ref backend (gt_kcase_check); a direction where the fallback is refused
 * too must give GT_ERR_UNSUPPORTED naming the candidates and the fallback.
 *
 * Exit: 0 pass, 1 a check failed, 77 no GPU or no conv2d on cuda (built
 * without cuDNN), or "fallback" on a real GPU (the injection is the
 * emulator's), 2 a setup error. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_config.h"

#include "engine/backend.h"
#include "engine/dtype.h"
#include "engine/rng.h"
#include "kernels/conformance.h"
#include "kernels/ops.h"
#include "kernels/registry.h"

#define SEED 20261121u

/* The outputs of one run, as raw bytes in the storage dtype. */
enum { OUT_FWD = 0, OUT_DINP, OUT_DWEIGHT, OUT_DBIAS, OUT_DWEIGHT_ONLY, OUT_COUNT };
static const char *const out_name[OUT_COUNT] = {"out", "dinp", "dweight", "dbias",
                                                "dweight (dinp, dbias NULL)"};

typedef struct run {
    void *bytes[OUT_COUNT];
    void *init[OUT_COUNT]; /* initial values (NULL for out) */
    size_t n[OUT_COUNT];
} run;

static void run_free(run *r) {
    for (int i = 0; i < OUT_COUNT; i++) {
        free(r->bytes[i]);
        free(r->init[i]);
    }
    memset(r, 0, sizeof *r);
}

/* n seeded values of `stream`, in dt (host memory, caller frees). */
static void *seeded(gt_dtype dt, size_t n, uint64_t stream, float std) {
    float *f = malloc((n ? n : 1) * sizeof *f);
    void *d = malloc((n ? n : 1) * gt_dtype_size(dt));
    if (!f || !d) {
        fprintf(stderr, "out of host memory\n");
        exit(2);
    }
    gt_rng_fill_normal(f, n, 0.0f, std, SEED, stream, 0);
    gt_convert(d, dt, f, GT_DTYPE_FP32, n);
    free(f);
    return d;
}

/* One run on `be`: every output of the top, downloaded into r. */
static gt_status one_run(gt_backend *be, gt_dtype dt, const gt_conv2d_shape *s, run *r) {
    size_t es = gt_dtype_size(dt);
    int OH = gt_conv2d_out_h(s), OW = gt_conv2d_out_w(s);
    size_t nx = (size_t)s->N * s->C * s->H * s->W, ny = (size_t)s->N * s->OC * OH * OW;
    size_t nw = (size_t)s->OC * s->C * s->KH * s->KW, nb = (size_t)s->OC;
    memset(r, 0, sizeof *r);
    r->n[OUT_FWD] = ny;
    r->n[OUT_DINP] = nx;
    r->n[OUT_DWEIGHT] = nw;
    r->n[OUT_DBIAS] = nb;
    r->n[OUT_DWEIGHT_ONLY] = nw;
    void *h_x = seeded(dt, nx, 1, 1.0f), *h_w = seeded(dt, nw, 2, 0.2f);
    void *h_b = seeded(dt, nb, 3, 0.5f), *h_dy = seeded(dt, ny, 4, 1.0f);
    r->init[OUT_DINP] = seeded(dt, nx, 5, 0.1f);
    r->init[OUT_DWEIGHT] = seeded(dt, nw, 6, 0.1f);
    r->init[OUT_DBIAS] = seeded(dt, nb, 7, 0.1f);
    r->init[OUT_DWEIGHT_ONLY] = seeded(dt, nw, 8, 0.1f);

    void *x = NULL, *w = NULL, *b = NULL, *dy = NULL, *y = NULL;
    void *g[OUT_COUNT] = {NULL};
    gt_status st = GT_OK;
    const size_t sizes[] = {nx, nw, nb, ny, ny};
    void **bufs[] = {&x, &w, &b, &dy, &y};
    for (int i = 0; i < 5 && st == GT_OK; i++) st = gt_backend_alloc(be, sizes[i] * es, bufs[i]);
    for (int i = OUT_DINP; i < OUT_COUNT && st == GT_OK; i++)
        st = gt_backend_alloc(be, r->n[i] * es, &g[i]);
    if (st == GT_OK) st = be->copy_to_device(be, x, h_x, nx * es);
    if (st == GT_OK) st = be->copy_to_device(be, w, h_w, nw * es);
    if (st == GT_OK) st = be->copy_to_device(be, b, h_b, nb * es);
    if (st == GT_OK) st = be->copy_to_device(be, dy, h_dy, ny * es);
    for (int i = OUT_DINP; i < OUT_COUNT && st == GT_OK; i++)
        st = be->copy_to_device(be, g[i], r->init[i], r->n[i] * es);

    gt_kctx k = {.be = be, .dt = dt};
    if (st == GT_OK) st = be->ops->conv2d_fwd(&k, y, x, w, b, s);
    for (int rep = 0; rep < 2 && st == GT_OK; rep++)
        st = be->ops->conv2d_bwd(&k, g[OUT_DINP], g[OUT_DWEIGHT], g[OUT_DBIAS], dy, x, w, s);
    if (st == GT_OK) st = be->ops->conv2d_bwd(&k, NULL, g[OUT_DWEIGHT_ONLY], NULL, dy, x, w, s);
    g[OUT_FWD] = y;
    for (int i = 0; i < OUT_COUNT && st == GT_OK; i++) {
        r->bytes[i] = malloc(r->n[i] * es);
        if (!r->bytes[i]) {
            fprintf(stderr, "out of host memory\n");
            exit(2);
        }
        st = be->copy_to_host(be, r->bytes[i], g[i], r->n[i] * es);
    }
    gt_backend_dealloc(be, x);
    gt_backend_dealloc(be, w);
    gt_backend_dealloc(be, b);
    gt_backend_dealloc(be, dy);
    for (int i = 0; i < OUT_COUNT; i++) gt_backend_dealloc(be, g[i]);
    free(h_x);
    free(h_w);
    free(h_b);
    free(h_dy);
    return st;
}

/* Elements of a and b (n elements of size es) whose bytes differ; *first
 * the index of the first. */
static size_t count_diff(const void *a, const void *b, size_t n, size_t es, size_t *first) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp((const char *)a + i * es, (const char *)b + i * es, es)) {
            if (!bad) *first = i;
            bad++;
        }
    return bad;
}

static int has_line_tag(const char *notes, const char *a, const char *b, const char *tag) {
    for (const char *p = notes; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        if (strstr(line, a) && strstr(line, b) && strstr(line, tag)) return 1;
        p = nl ? nl + 1 : p + len;
    }
    return 0;
}

/* A deterministic choice: the heuristic's, or the fallback (conv.cu),
 * which a GPU's cuDNN may need for some shapes. */
static int has_line(const char *notes, const char *a, const char *b) {
    return has_line_tag(notes, a, b, "(deterministic") ||
           has_line_tag(notes, a, b, "(fallback, deterministic");
}

static int fallback_main(void);

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "fallback") == 0) return fallback_main();
    if (argc > 1) {
        fprintf(stderr, "usage: %s [fallback]\n", argv[0]);
        return 2;
    }
    gt_backend_config cfg = {.threads = 0, .device = -1};
    gt_backend *be1 = NULL, *be2 = NULL;
    gt_status s = gt_backend_new("cuda", &cfg, &be1);
    if (s == GT_ERR_UNSUPPORTED) {
        printf("skipped: backend cuda unavailable: %s\n", gt_last_error());
        return 77;
    }
    if (s != GT_OK || (s = gt_backend_new("cuda", &cfg, &be2)) != GT_OK) {
        fprintf(stderr, "gt_backend_new(cuda): %s: %s\n", gt_status_name(s), gt_last_error());
        gt_backend_free(be1);
        return 2;
    }
    if (!be1->ops->conv2d_fwd || !be1->ops->conv2d_bwd) {
        printf("skipped: the cuda backend has no conv2d (built without cuDNN)\n");
        gt_backend_free(be1);
        gt_backend_free(be2);
        return 77;
    }
    printf("conv2d determinism on %s, two backends\n", be1->describe(be1));

    static const gt_conv2d_shape shapes[] = {
        {.N = 2, .C = 3, .H = 7, .W = 9, .OC = 5, .KH = 3, .KW = 3, .stride = 1, .pad = 1},
        {.N = 4, .C = 16, .H = 16, .W = 16, .OC = 32, .KH = 3, .KW = 3, .stride = 2, .pad = 1},
        {.N = 4, .C = 32, .H = 8, .W = 8, .OC = 16, .KH = 1, .KW = 1, .stride = 1, .pad = 0},
        {.N = 2, .C = 8, .H = 11, .W = 11, .OC = 8, .KH = 5, .KW = 5, .stride = 1, .pad = 2},
        {.N = 8, .C = 64, .H = 32, .W = 32, .OC = 64, .KH = 3, .KW = 3, .stride = 1, .pad = 1},
    };
    const gt_dtype dts[] = {GT_DTYPE_FP32, GT_DTYPE_BF16, GT_DTYPE_FP16};
    int checks = 0, fails = 0;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            const gt_conv2d_shape *sh = &shapes[i];
            gt_dtype dt = dts[d];
            size_t es = gt_dtype_size(dt);
            char lb[96];
            snprintf(lb, sizeof lb, "N%d C%d H%d W%d OC%d K%dx%d s%d p%d %s", sh->N, sh->C, sh->H,
                     sh->W, sh->OC, sh->KH, sh->KW, sh->stride, sh->pad, gt_dtype_name(dt));
            run a, b;
            gt_status sa = one_run(be1, dt, sh, &a);
            gt_status sb = sa == GT_OK ? one_run(be2, dt, sh, &b) : GT_OK;
            if (sa != GT_OK || sb != GT_OK) {
                printf("  %-36s FAIL: %s: %s\n", lb, gt_status_name(sa != GT_OK ? sa : sb),
                       gt_last_error());
                fails++;
                checks++;
                run_free(&a);
                if (sa == GT_OK) run_free(&b);
                continue;
            }
            for (int o = 0; o < OUT_COUNT; o++) {
                size_t first = 0, firstc = 0;
                size_t diff = count_diff(a.bytes[o], b.bytes[o], a.n[o], es, &first);
                size_t same = a.init[o] ? a.n[o] - count_diff(a.bytes[o], a.init[o], a.n[o], es,
                                                              &firstc)
                                        : 0;
                /* an output left (almost) as it started: the op did not run */
                int noop = a.init[o] && same > a.n[o] / 2;
                checks++;
                printf("  %-36s %-27s %zu elements, %zu differ between runs%s%s\n", lb,
                       out_name[o], a.n[o], diff, noop ? ", UNCHANGED by the op" : "",
                       diff || noop ? "  FAIL" : "  ok");
                if (diff)
                    printf("    first difference at [%zu]\n", first);
                if (diff || noop) fails++;
            }
            run_free(&a);
            run_free(&b);
            /* the choices were recorded */
            const char *notes = be1->notes ? be1->notes(be1) : NULL;
            char key[128];
            snprintf(key, sizeof key, "N%d C%d H%d W%d OC%d K%dx%d s%d p%d %s:", sh->N, sh->C,
                     sh->H, sh->W, sh->OC, sh->KH, sh->KW, sh->stride, sh->pad, gt_dtype_name(dt));
            static const char *const dirs[] = {"conv2d_fwd ", "conv2d_bwd data ",
                                               "conv2d_bwd filter "};
            for (int k = 0; k < 3; k++) {
                int ok = has_line(notes, dirs[k], key);
                checks++;
                if (!ok) {
                    printf("  %-36s no note '%s... %s cudnn ... (deterministic' in the backend's "
                           "notes  FAIL\n",
                           lb, dirs[k], key);
                    fails++;
                }
            }
        }
    const char *notes = be1->notes ? be1->notes(be1) : "";
    printf("backend notes:\n%s\n", notes && *notes ? notes : "(none)");
    printf("%d checks, %d failed\n", checks, fails);
    gt_backend_free(be1);
    gt_backend_free(be2);
    return fails ? 1 : 0;
}

/* ---- "fallback": no usable deterministic candidate (emulator injection) ---------------- */

#if GT_CUDA_EMULATOR

/* Runs of `sh` in dt on be1 and be2 (bitwise equal, every output changed),
 * conv2d_fwd and conv2d_bwd against ref within the conformance bound, and
 * the note of direction d on be1 containing want[d] (NULL: not checked).
 * Returns the failed checks; *checks counts them all. */
static int fallback_case(gt_backend *be1, gt_backend *be2, gt_backend *ref, gt_dtype dt,
                         const gt_conv2d_shape *sh, const char *const want[3], int *checks) {
    static const char *const dirs[] = {"conv2d_fwd ", "conv2d_bwd data ", "conv2d_bwd filter "};
    size_t es = gt_dtype_size(dt);
    int fails = 0;
    char lb[96], key[128];
    snprintf(lb, sizeof lb, "N%d C%d H%d W%d OC%d K%dx%d s%d p%d %s", sh->N, sh->C, sh->H, sh->W,
             sh->OC, sh->KH, sh->KW, sh->stride, sh->pad, gt_dtype_name(dt));
    snprintf(key, sizeof key, "%s:", lb);
    run a, b;
    gt_status sa = one_run(be1, dt, sh, &a);
    gt_status sb = sa == GT_OK ? one_run(be2, dt, sh, &b) : GT_OK;
    (*checks)++;
    if (sa != GT_OK || sb != GT_OK) {
        printf("  %-36s FAIL: %s: %s\n", lb, gt_status_name(sa != GT_OK ? sa : sb),
               gt_last_error());
        run_free(&a);
        if (sa == GT_OK) run_free(&b);
        return 1;
    }
    for (int o = 0; o < OUT_COUNT; o++) {
        size_t first = 0, firstc = 0;
        size_t diff = count_diff(a.bytes[o], b.bytes[o], a.n[o], es, &first);
        size_t same =
            a.init[o] ? a.n[o] - count_diff(a.bytes[o], a.init[o], a.n[o], es, &firstc) : 0;
        int noop = a.init[o] && same > a.n[o] / 2;
        if (o) (*checks)++;
        printf("  %-36s %-27s %zu differ between runs%s%s\n", lb, out_name[o], diff,
               noop ? ", UNCHANGED by the op" : "", diff || noop ? "  FAIL" : "  ok");
        if (diff || noop) fails++;
    }
    run_free(&a);
    run_free(&b);
    /* against the oracle: the fallback computes the convolution */
    static const gt_op ops[] = {GT_OP_CONV2D_FWD, GT_OP_CONV2D_BWD};
    for (int i = 0; i < 2; i++) {
        gt_kshape ks = {.N = sh->N, .C = sh->C, .H = sh->H, .W = sh->W, .OC = sh->OC,
                        .KH = sh->KH, .KW = sh->KW, .stride = sh->stride, .pad = sh->pad,
                        .bias = 1};
        gt_kcase *c = NULL;
        gt_kcheck ck[GT_KCHECK_MAX];
        int n = 0;
        gt_status st = gt_kcase_new(be1, ref, dt, ops[i], &ks, &c);
        if (st == GT_OK) st = gt_kcase_check(c, ck, &n);
        (*checks)++;
        if (st != GT_OK || n == 0) {
            printf("  %-36s %s against ref FAIL: %s: %s\n", lb, gt_op_name(ops[i]),
                   gt_status_name(st), st != GT_OK ? gt_last_error() : "nothing compared");
            fails++;
        }
        for (int j = 0; j < n; j++) {
            (*checks)++;
            printf("  %-36s %s %-8s against ref: max_abs %.3e (rtol %.2g atol %.2g)%s\n", lb,
                   gt_op_name(ops[i]), ck[j].what, ck[j].max_abs, ck[j].tol.rtol, ck[j].tol.atol,
                   ck[j].bad ? "  FAIL" : "  ok");
            if (ck[j].bad) {
                printf("    %zu bad, first [%zu] got %.9g want %.9g\n", ck[j].bad,
                       ck[j].first_bad, ck[j].got_first, ck[j].want_first);
                fails++;
            }
        }
        gt_kcase_free(c);
    }
    const char *notes = be1->notes ? be1->notes(be1) : NULL;
    for (int d = 0; d < 3; d++) {
        if (!want[d]) continue;
        (*checks)++;
        if (!has_line_tag(notes, dirs[d], key, want[d])) {
            printf("  %-36s no note '%s... %s ... %s' in the backend's notes  FAIL\n", lb, dirs[d],
                   key, want[d]);
            fails++;
        }
    }
    return fails;
}

static int fallback_main(void) {
    gt_backend_config cfg = {.threads = 0, .device = -1};
    gt_backend *be1 = NULL, *be2 = NULL, *ref = NULL;
    gt_status s = gt_backend_new("cuda", &cfg, &be1);
    if (s == GT_ERR_UNSUPPORTED) {
        printf("skipped: backend cuda unavailable: %s\n", gt_last_error());
        return 77;
    }
    if (s == GT_OK) s = gt_backend_new("cuda", &cfg, &be2);
    if (s == GT_OK) s = gt_backend_new("ref", &cfg, &ref);
    if (s != GT_OK) {
        fprintf(stderr, "gt_backend_new: %s: %s\n", gt_status_name(s), gt_last_error());
        gt_backend_free(be1);
        gt_backend_free(be2);
        return 2;
    }
    if (!be1->ops->conv2d_fwd || !be1->ops->conv2d_bwd) {
        printf("skipped: the cuda backend has no conv2d (built without cuDNN)\n");
        gt_backend_free(be1);
        gt_backend_free(be2);
        gt_backend_free(ref);
        return 77;
    }
    printf("conv2d fallback on %s, two backends, against ref\n", be1->describe(be1));
    /* Plans are cached per shape for the process: each injection has its
     * own shapes, chosen while it is set. A 3x3 stride-1 shape, whose
     * filter gradient the heuristic otherwise gives WINOGRAD_NONFUSED
     * (fp32, fp16) or ALGO_1 (bf16), and a strided one. */
    static const gt_conv2d_shape only_filter = {.N = 2, .C = 3, .H = 7, .W = 9, .OC = 5,
                                                .KH = 3, .KW = 3, .stride = 1, .pad = 1};
    static const gt_conv2d_shape every_dir = {.N = 2, .C = 4, .H = 9, .W = 8, .OC = 6,
                                              .KH = 3, .KW = 3, .stride = 2, .pad = 1};
    static const gt_conv2d_shape none = {.N = 1, .C = 2, .H = 6, .W = 6, .OC = 3,
                                         .KH = 3, .KW = 3, .stride = 1, .pad = 0};
    static const char *const want_filter[3] = {"(deterministic", "(deterministic",
                                               "cudnn ALGO_1 (fallback, "};
    static const char *const want_all[3] = {"cudnn IMPLICIT_PRECOMP_GEMM (fallback, ",
                                            "cudnn ALGO_1 (fallback, ",
                                            "cudnn ALGO_1 (fallback, "};
    const gt_dtype dts[] = {GT_DTYPE_FP32, GT_DTYPE_BF16, GT_DTYPE_FP16};
    int checks = 0, fails = 0;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        setenv("GT_EMU_CUDNN_CONV_HEURISTIC", "bwd_filter=nodet", 1);
        fails += fallback_case(be1, be2, ref, dts[d], &only_filter, want_filter, &checks);
        setenv("GT_EMU_CUDNN_CONV_HEURISTIC", "all=nodet", 1);
        fails += fallback_case(be1, be2, ref, dts[d], &every_dir, want_all, &checks);

        /* nothing deterministic runs the filter gradient: an error naming
         * the refused candidates and the fallback; the forward still runs */
        setenv("GT_EMU_CUDNN_CONV_HEURISTIC", "bwd_filter=unusable", 1);
        size_t es = gt_dtype_size(dts[d]);
        int OH = gt_conv2d_out_h(&none), OW = gt_conv2d_out_w(&none);
        size_t nx = (size_t)none.N * none.C * none.H * none.W;
        size_t nw = (size_t)none.OC * none.C * none.KH * none.KW;
        size_t ny = (size_t)none.N * none.OC * OH * OW;
        void *x = NULL, *w = NULL, *y = NULL, *dx = NULL, *dw = NULL;
        s = gt_backend_alloc(be1, nx * es, &x);
        if (s == GT_OK) s = gt_backend_alloc(be1, nw * es, &w);
        if (s == GT_OK) s = gt_backend_alloc(be1, ny * es, &y);
        if (s == GT_OK) s = gt_backend_alloc(be1, nx * es, &dx);
        if (s == GT_OK) s = gt_backend_alloc(be1, nw * es, &dw);
        void *hx = seeded(dts[d], nx, 1, 1.0f), *hw = seeded(dts[d], nw, 2, 0.2f);
        void *hy = seeded(dts[d], ny, 4, 1.0f);
        if (s == GT_OK) s = be1->copy_to_device(be1, x, hx, nx * es);
        if (s == GT_OK) s = be1->copy_to_device(be1, w, hw, nw * es);
        if (s == GT_OK) s = be1->copy_to_device(be1, dx, hx, nx * es);
        if (s == GT_OK) s = be1->copy_to_device(be1, dw, hw, nw * es);
        gt_kctx k = {.be = be1, .dt = dts[d]};
        if (s == GT_OK) s = be1->ops->conv2d_fwd(&k, y, x, w, NULL, &none);
        checks++;
        if (s != GT_OK) {
            printf("  unusable %s: conv2d_fwd FAIL: %s: %s\n", gt_dtype_name(dts[d]),
                   gt_status_name(s), gt_last_error());
            fails++;
        }
        if (s == GT_OK) s = be1->copy_to_device(be1, y, hy, ny * es);
        gt_status sb = s == GT_OK ? be1->ops->conv2d_bwd(&k, dx, dw, NULL, y, x, w, &none) : s;
        const char *msg = gt_last_error();
        int ok = sb == GT_ERR_UNSUPPORTED && strstr(msg, "no usable deterministic algorithm") &&
                 strstr(msg, "ALGO_0: non-deterministic") && strstr(msg, "fallback ALGO_1: ") &&
                 strstr(msg, "workspace size query failed");
        checks++;
        printf("  unusable %s: conv2d_bwd %s: %s%s\n", gt_dtype_name(dts[d]), gt_status_name(sb),
               msg, ok ? "  ok" : "  FAIL (want GT_ERR_UNSUPPORTED naming the candidates and "
                                  "the fallback)");
        if (!ok) fails++;
        free(hx);
        free(hw);
        free(hy);
        gt_backend_dealloc(be1, x);
        gt_backend_dealloc(be1, w);
        gt_backend_dealloc(be1, y);
        gt_backend_dealloc(be1, dx);
        gt_backend_dealloc(be1, dw);
    }
    unsetenv("GT_EMU_CUDNN_CONV_HEURISTIC");
    const char *notes = be1->notes ? be1->notes(be1) : "";
    printf("backend notes:\n%s\n", notes && *notes ? notes : "(none)");
    printf("%d checks, %d failed\n", checks, fails);
    gt_backend_free(be1);
    gt_backend_free(be2);
    gt_backend_free(ref);
    return fails ? 1 : 0;
}
#else
static int fallback_main(void) {
    printf("skipped: the injection (GT_EMU_CUDNN_CONV_HEURISTIC) is the CUDA emulator's cuDNN "
           "stand-in's; a real cuDNN's heuristic offers what it offers\n");
    return 77;
}
#endif
