/* kernels.attention_cudnn_faults.cuda: what the cuda backend's attention
 * does when cuDNN fails on a first run, shown with the emulator's cuDNN
 * stand-in's fault injection (docs/cuda-emulator.md, "Injected cuDNN
 * faults"), in bf16 at small shapes:
 *   - cudnnCreate fails (GT_EMU_CUDNN_CREATE_STATUS): the backend is still
 *     created, its notes name cuDNN's reason; auto mode runs the own
 *     kernels (bitwise what GT_CUDA_ATTENTION=own gives) and notes why;
 *     GT_CUDA_ATTENTION=cudnn fails with GT_ERR_DEVICE naming the reason;
 *   - every execution plan's finalize fails with a status that is not
 *     NOT_SUPPORTED (GT_EMU_CUDNN_PLAN_STATUS), and the operation graph's
 *     finalize fails (GT_EMU_CUDNN_GRAPH_STATUS): the same two behaviours;
 *     the decision is cached (clearing the fault later changes nothing
 *     for that backend);
 *   - every engine noted NONDETERMINISTIC (GT_EMU_CUDNN_NONDET=note): cuDNN
 *     still runs (no filter on the notes), the notes record it, results
 *     are bitwise those without the note and bitwise equal run to run;
 *   - a really nondeterministic engine (GT_EMU_CUDNN_NONDET=engine0): the
 *     bitwise repeat comparison of kernels.attention_cudnn*.cuda sees it
 *     (what makes "determinism proven by repeats" a check that can fail);
 *   - cuDNN 9.15 (GT_EMU_CUDNN_VERSION=91500): T 17 is refused for the
 *     version (auto: own kernels with the reason; cudnn: GT_ERR_UNSUPPORTED
 *     saying "cuDNN version 91500", a skip), T 128 runs cuDNN.
 * Exit 77: not the CUDA emulator (the injection variables are the
 * stand-in's; a GPU's cuDNN ignores them), or no cuDNN compiled in. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "gt_config.h"
#include "kernels/tests/testutil.h"

#if GT_HAVE_CUDNN && GT_CUDA_EMULATOR
typedef struct shape {
    int B, T, C, NH;
} shape;

static const gt_dtype DT = GT_DTYPE_BF16;
static int fails;

static void check(int ok, const char *what) {
    printf("  %-74s %s\n", what, ok ? "ok" : "FAIL");
    fails += !ok;
}

/* A backend with GT_CUDA_ATTENTION=mode; NULL (and the status in *st) when
 * creation fails. */
static gt_backend *mk(const char *mode, gt_status *st) {
    setenv("GT_CUDA_ATTENTION", mode, 1);
    gt_backend_config cfg = {.threads = 0, .device = -1};
    gt_backend *be = NULL;
    *st = gt_backend_new("cuda", &cfg, &be);
    unsetenv("GT_CUDA_ATTENTION");
    if (*st != GT_OK)
        printf("  gt_backend_new(cuda, %s): %s: %s\n", mode, gt_status_name(*st), gt_last_error());
    return be;
}

typedef struct result {
    gt_status st;
    char msg[1024];   /* the error when st != GT_OK */
    size_t natt;      /* attention_state_floats */
    void *out, *dqkv; /* storage bytes of out and dqkv (from zero) */
    size_t out_b, dq_b;
} result;

static void result_free(result *r) {
    free(r->out);
    free(r->dqkv);
    memset(r, 0, sizeof *r);
}

/* attention_fwd then attention_bwd (dqkv from zero) on seeded inputs. */
static result run(gt_backend *be, shape s) {
    result r = {0};
    gt_kctx k = {be, DT};
    size_t n3 = (size_t)s.B * s.T * 3 * s.C, n1 = (size_t)s.B * s.T * s.C, es = gt_dtype_size(DT);
    float *qkv_h = tu_xmalloc(n3 * 4), *dout_h = tu_xmalloc(n1 * 4);
    gt_rng_fill_normal(qkv_h, n3, 0.0f, 1.0f, TU_SEED, 1, 0);
    gt_rng_fill_normal(dout_h, n1, 0.0f, 1.0f, TU_SEED, 2, 0);
    tu_round(qkv_h, n3, DT);
    tu_round(dout_h, n1, DT);
    r.natt = gt_attention_state_floats(be->ops, &k, s.B, s.T, s.C, s.NH);
    void *qkv = tu_upload(be, DT, qkv_h, n3), *dout = tu_upload(be, DT, dout_h, n1);
    void *out = NULL, *att = NULL, *dqkv = NULL;
    gt_status st = gt_backend_alloc(be, n1 * es, &out);
    if (st == GT_OK) st = gt_backend_alloc(be, r.natt * sizeof(float), &att);
    if (st == GT_OK) st = gt_backend_alloc(be, n3 * es, &dqkv);
    if (st == GT_OK) st = be->memset_zero(be, dqkv, n3 * es);
    if (st == GT_OK) st = be->ops->attention_fwd(&k, out, att, qkv, s.B, s.T, s.C, s.NH);
    if (st == GT_OK)
        st = be->ops->attention_bwd(&k, dqkv, dout, qkv, out, att, s.B, s.T, s.C, s.NH);
    r.st = st;
    if (st != GT_OK) {
        snprintf(r.msg, sizeof r.msg, "%s", gt_last_error());
        gt_error_clear();
    } else {
        r.out_b = n1 * es, r.dq_b = n3 * es;
        r.out = tu_xmalloc(r.out_b);
        r.dqkv = tu_xmalloc(r.dq_b);
        gt_status c = be->copy_to_host(be, r.out, out, r.out_b);
        if (c == GT_OK) c = be->copy_to_host(be, r.dqkv, dqkv, r.dq_b);
        if (c != GT_OK) tu_die("copy_to_host", c);
    }
    gt_backend_dealloc(be, dqkv);
    gt_backend_dealloc(be, att);
    gt_backend_dealloc(be, out);
    gt_backend_dealloc(be, dout);
    gt_backend_dealloc(be, qkv);
    free(qkv_h);
    free(dout_h);
    return r;
}

static int same(const result *a, const result *b) {
    return a->st == GT_OK && b->st == GT_OK && a->out_b == b->out_b && a->dq_b == b->dq_b &&
           !memcmp(a->out, b->out, a->out_b) && !memcmp(a->dqkv, b->dqkv, a->dq_b);
}

static const char *notes_of(gt_backend *be) {
    return be && be->notes ? be->notes(be) : "";
}

/* auto: runs, bitwise the own kernels' result, the own path noted with
 * `reason`; cudnn: GT_ERR_DEVICE naming `reason`. */
static void fallback_and_loud(const char *label, shape s, const result *own, const char *reason) {
    char what[160];
    gt_status st;
    gt_backend *a = mk("auto", &st);
    snprintf(what, sizeof what, "%s: auto backend created", label);
    check(a != NULL, what);
    if (a) {
        result r = run(a, s);
        if (r.st != GT_OK) printf("    %s: %s\n", gt_status_name(r.st), r.msg);
        snprintf(what, sizeof what, "%s: auto runs, bitwise the own kernels' out and dqkv", label);
        check(same(&r, own), what);
        snprintf(what, sizeof what, "%s: auto keeps the own path's state (B*NH*T*T floats)", label);
        check(r.natt == (size_t)s.B * s.NH * s.T * s.T, what);
        const char *n = notes_of(a);
        snprintf(what, sizeof what, "%s: notes: own kernel, cuDNN failed, and why", label);
        check(strstr(n, "attention_fwd") && strstr(n, "own kernel (fallback, cuDNN failed: ") &&
                  strstr(n, reason) && !strstr(n, ": cudnn sdpa"),
              what);
        printf("    notes:\n%s\n", n);
        result_free(&r);
        gt_backend_free(a);
    }
    gt_backend *c = mk("cudnn", &st);
    snprintf(what, sizeof what, "%s: cudnn backend created", label);
    check(c != NULL, what);
    if (c) {
        result r = run(c, s);
        printf("    cudnn: %s: %s\n", gt_status_name(r.st), r.msg);
        snprintf(what, sizeof what, "%s: GT_CUDA_ATTENTION=cudnn fails (GT_ERR_DEVICE) naming it",
                 label);
        check(r.st == GT_ERR_DEVICE && strstr(r.msg, reason) && strstr(r.msg, "cuDNN FAILED"),
              what);
        result_free(&r);
        gt_backend_free(c);
    }
}

#endif

int main(void) {
#if !GT_HAVE_CUDNN
    printf("skipped: cuDNN is not compiled in\n");
    return 77;
#elif !GT_CUDA_EMULATOR
    printf("skipped: the injected cuDNN faults are the CUDA emulator's stand-in's (a GPU's cuDNN "
           "ignores GT_EMU_CUDNN_*)\n");
    return 77;
#else
    static const shape s17 = {1, 17, 32, 4}, s128 = {1, 128, 32, 2};
    gt_status st;
    gt_backend *own = mk("own", &st), *plain = mk("auto", &st);
    if (!own || !plain) tu_die("gt_backend_new(cuda)", st);
    result own17 = run(own, s17), own128 = run(own, s128), dnn17 = run(plain, s17);
    if (own17.st != GT_OK || own128.st != GT_OK || dnn17.st != GT_OK) {
        printf("FAIL: the runs without faults: %s\n", own17.msg[0] ? own17.msg : dnn17.msg);
        return 1;
    }
    check(strstr(notes_of(plain), "attention_bwd B1 T17 NH4 hs8 bf16: cudnn sdpa") != NULL,
          "without faults: auto takes cuDNN at T 17");
    check(!same(&own17, &dnn17), "without faults: cuDNN's bits differ from the own kernels'");

    printf(
        "cudnnCreate fails (GT_EMU_CUDNN_CREATE_STATUS=CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED)\n");
    setenv("GT_EMU_CUDNN_CREATE_STATUS", "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED", 1);
    {
        gt_backend *a = mk("auto", &st);
        const char *n = notes_of(a);
        check(a && strstr(n, "cuDNN unavailable") &&
                  strstr(n, "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED") &&
                  strstr(n, "cannot open shared object file"),
              "create: the backend is created, its notes say why cuDNN is off");
        gt_backend_free(a);
    }
    fallback_and_loud("create", s17, &own17, "cannot open shared object file");
    unsetenv("GT_EMU_CUDNN_CREATE_STATUS");

    printf("plan finalize fails "
           "(GT_EMU_CUDNN_PLAN_STATUS=CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED)\n");
    setenv("GT_EMU_CUDNN_PLAN_STATUS", "CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED", 1);
    fallback_and_loud("plan", s17, &own17, "CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED");
    unsetenv("GT_EMU_CUDNN_PLAN_STATUS");

    printf(
        "operation graph finalize fails (GT_EMU_CUDNN_GRAPH_STATUS=CUDNN_STATUS_INTERNAL_ERROR)\n");
    setenv("GT_EMU_CUDNN_GRAPH_STATUS", "CUDNN_STATUS_INTERNAL_ERROR", 1);
    fallback_and_loud("graph", s17, &own17, "GT_EMU_CUDNN_GRAPH_STATUS");
    {
        /* cached: the fault cleared after the first call changes nothing */
        gt_backend *a = mk("auto", &st);
        result r1 = a ? run(a, s17) : (result){.st = st};
        unsetenv("GT_EMU_CUDNN_GRAPH_STATUS");
        result r2 = a ? run(a, s17) : (result){.st = st};
        check(same(&r1, &own17) && same(&r2, &own17) && !strstr(notes_of(a), ": cudnn sdpa"),
              "graph: the failed shape stays on the own kernels for the backend (cached)");
        result_free(&r1);
        result_free(&r2);
        gt_backend_free(a);
    }
    unsetenv("GT_EMU_CUDNN_GRAPH_STATUS");

    printf("every engine noted NONDETERMINISTIC (GT_EMU_CUDNN_NONDET=note)\n");
    setenv("GT_EMU_CUDNN_NONDET", "note", 1);
    {
        gt_backend *a = mk("auto", &st);
        result r1 = a ? run(a, s17) : (result){.st = st}, r2 = a ? run(a, s17) : (result){.st = st};
        const char *n = notes_of(a);
        check(same(&r1, &dnn17) && same(&r2, &dnn17),
              "note: cuDNN runs, bitwise as without the note, run to run");
        check(strstr(n, "attention_fwd B1 T17 NH4 hs8 bf16: cudnn sdpa") &&
                  strstr(n, "numerical notes: NONDETERMINISTIC") && !strstr(n, "own kernel"),
              "note: the notes record the engine's NONDETERMINISTIC note");
        printf("    notes:\n%s\n", n);
        result_free(&r1);
        result_free(&r2);
        gt_backend_free(a);
    }
    check(!strstr(notes_of(plain), "NONDETERMINISTIC") &&
              strstr(notes_of(plain), "numerical notes: none"),
          "without faults: the notes say the engine has no numerical note");

    printf("a really nondeterministic engine 0 (GT_EMU_CUDNN_NONDET=engine0)\n");
    setenv("GT_EMU_CUDNN_NONDET", "engine0", 1);
    {
        gt_backend *a = mk("cudnn", &st);
        const shape s2 = {2, 128, 128, 2}; /* hs 64: enough sums for the order to show */
        result r1 = a ? run(a, s2) : (result){.st = st}, r2 = a ? run(a, s2) : (result){.st = st};
        if (r1.st != GT_OK || r2.st != GT_OK) printf("    %s %s\n", r1.msg, r2.msg);
        check(r1.st == GT_OK && r2.st == GT_OK && !same(&r1, &r2),
              "engine0: two runs differ: bitwise repeats catch a nondeterministic engine");
        result_free(&r1);
        result_free(&r2);
        gt_backend_free(a);
    }
    unsetenv("GT_EMU_CUDNN_NONDET");

    printf("cuDNN 9.15 (GT_EMU_CUDNN_VERSION=91500)\n");
    setenv("GT_EMU_CUDNN_VERSION", "91500", 1);
    {
        gt_backend *a = mk("auto", &st), *c = mk("cudnn", &st);
        result ra = a ? run(a, s17) : (result){.st = st};
        check(same(&ra, &own17) &&
                  strstr(notes_of(a), "own kernel (cuDNN version 91500: before 9.16"),
              "version: auto, T 17: the own kernels, the version in the notes");
        result rc = c ? run(c, s17) : (result){.st = st};
        printf("    cudnn T 17: %s: %s\n", gt_status_name(rc.st), rc.msg);
        check(rc.st == GT_ERR_UNSUPPORTED && strstr(rc.msg, "cuDNN version 91500"),
              "version: cudnn, T 17: GT_ERR_UNSUPPORTED naming the version (a skip)");
        result rc128 = c ? run(c, s128) : (result){.st = st};
        check(rc128.st == GT_OK && !same(&rc128, &own128) &&
                  strstr(notes_of(c), "attention_bwd B1 T128 NH2 hs16 bf16: cudnn sdpa") &&
                  strstr(notes_of(c), "cuDNN 91500"),
              "version: cudnn, T 128: cuDNN runs");
        result_free(&ra);
        result_free(&rc);
        result_free(&rc128);
        gt_backend_free(a);
        gt_backend_free(c);
    }
    unsetenv("GT_EMU_CUDNN_VERSION");

    result_free(&own17);
    result_free(&own128);
    result_free(&dnn17);
    gt_backend_free(own);
    gt_backend_free(plain);
    printf("attention cudnn faults: %s\n", fails ? "FAILED" : "passed");
    return fails ? 1 : 0;
#endif
}
