/* kernels_bench: per-op times of the cpu backend on the gpt2-124m training
 * shapes (L12 H12 C768 V50257/50304, B=4 T=64), and the estimated per-step
 * total. Not a test: a measuring tool (usage: kernels_bench [threads]). */
#include "engine/timer.h"
#include "gt_config.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/tests/testutil.h"

static double now(void) { return (double)gt_now_ns() * 1e-9; }

/* A timing of a failed call would be a timing of its error path: stop at the
 * first failure, naming the op and the backend's message. */
static void check_op(const char *label, gt_status s) {
    if (s == GT_OK) return;
    fprintf(stderr, "kernels_bench: %s failed: %s: %s\n", label, gt_status_name(s),
            gt_last_error());
    exit(1);
}

#define TIME(label, per_step, expr)                                                        \
    do {                                                                                   \
        check_op(label, (expr));                                                           \
        double t0_ = now();                                                                \
        int reps_ = 0;                                                                     \
        do {                                                                               \
            check_op(label, (expr));                                                       \
            reps_++;                                                                       \
        } while (now() - t0_ < 0.3);                                                       \
        double ms_ = (now() - t0_) / reps_ * 1e3;                                          \
        printf("  %-34s %9.3f ms  x%-3d = %8.1f ms/step\n", label, ms_, per_step,          \
               ms_ * (per_step));                                                          \
        total += ms_ * (per_step);                                                         \
    } while (0)

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    gt_backend_config cfg = {.threads = threads, .device = -1};
    gt_backend *be = NULL;
    gt_status st = gt_backend_new("cpu", &cfg, &be);
    if (st != GT_OK) tu_die("kernels_bench: the cpu backend", st);
    gt_kctx k = {be, GT_DTYPE_FP32};
    const gt_ops *o = be->ops;
    enum { L = 12, B = 4, T = 64, C = 768, NH = 12, V = 50257, Vp = 50304, N = B * T };
    size_t big = (size_t)Vp * C + 16;
    float *a = tu_xmalloc(big * 4), *b = tu_xmalloc(big * 4), *c = tu_xmalloc(big * 4);
    float *d = tu_xmalloc(big * 4), *e = tu_xmalloc(big * 4);
    gt_rng_fill_normal(a, big, 0, 1, 1, 1, 0);
    gt_rng_fill_normal(b, big, 0, 0.02f, 1, 2, 0);
    gt_rng_fill_normal(c, big, 0, 1, 1, 3, 0);
    memset(d, 0, big * 4);
    memset(e, 0, big * 4);
    size_t nparams = 124475904; /* gpt2-124m with Vp = 50304 */
    float *p = tu_xmalloc(nparams * 4), *g = tu_xmalloc(nparams * 4);
    float *m = tu_xmalloc(nparams * 4), *v = tu_xmalloc(nparams * 4);
    memset(m, 0, nparams * 4);
    memset(v, 0, nparams * 4);
    gt_rng_fill_normal(p, nparams, 0, 0.02f, 1, 4, 0);
    gt_rng_fill_normal(g, nparams, 0, 0.01f, 1, 5, 0);
    int32_t ids[N];
    for (int i = 0; i < N; i++) ids[i] = (int32_t)(gt_rng_u32(1, 6, i) % V);
    float mean[N], rstd[N];
    float *att = tu_xmalloc(gt_attention_state_floats(o, &k, B, T, C, NH) * 4);
    double total = 0.0, ss;
    printf("cpu backend: %s; gpt2-124m B=%d T=%d\n", be->describe(be), B, T);
    TIME("encoder_fwd", 1, o->encoder_fwd(&k, d, ids, b, b, B, T, C));
    TIME("encoder_bwd", 1, o->encoder_bwd(&k, e, e + (size_t)V * C, a, ids, B, T, C));
    TIME("layernorm_fwd (N256 C768)", 2 * L + 1, o->layernorm_fwd(&k, d, mean, rstd, a, b, c, N, C, 1e-5f));
    TIME("layernorm_bwd", 2 * L + 1, o->layernorm_bwd(&k, d, e, e + C, a, c, b, mean, rstd, N, C));
    TIME("matmul_fwd qkv (C768 OC2304)", L, o->matmul_fwd(&k, d, a, b, c, N, C, 3 * C));
    TIME("matmul_fwd attproj (768->768)", L, o->matmul_fwd(&k, d, a, b, c, N, C, C));
    /* gpt2 runs fc + GELU and fcproj's backward + GELU' fused (per-step 0 here) */
    TIME("matmul_fwd fc (768->3072)", 0, o->matmul_fwd(&k, d, a, b, c, N, C, 4 * C));
    TIME("matmul_gelu_fwd fc (768->3072)", L,
         o->matmul_gelu_fwd(&k, d, d + (size_t)N * 4 * C, a, b, c, N, C, 4 * C));
    TIME("matmul_fwd fcproj (3072->768)", L, o->matmul_fwd(&k, d, a, b, c, N, 4 * C, C));
    TIME("matmul_fwd lm_head (768->50304)", 1, o->matmul_fwd(&k, d, a, b, NULL, N, C, Vp));
    TIME("matmul_bwd qkv", L, o->matmul_bwd(&k, d, e, e, a, c, b, N, C, 3 * C));
    TIME("matmul_bwd attproj", L, o->matmul_bwd(&k, d, e, e, a, c, b, N, C, C));
    TIME("matmul_bwd fc", L, o->matmul_bwd(&k, d, e, e, a, c, b, N, C, 4 * C));
    TIME("matmul_bwd fcproj", 0, o->matmul_bwd(&k, d, e, e, a, c, b, N, 4 * C, C));
    TIME("matmul_dgelu_bwd fcproj", L,
         o->matmul_dgelu_bwd(&k, d, e, e, a, c, b, c + (size_t)N * 4 * C, N, 4 * C, C));
    TIME("matmul_bwd lm_head", 1, o->matmul_bwd(&k, d, e, NULL, a, c, b, N, C, Vp));
    TIME("attention_fwd (NH12 T64)", L, o->attention_fwd(&k, d, att, a, B, T, C, NH));
    TIME("attention_bwd", L, o->attention_bwd(&k, e, c, a, d, att, B, T, C, NH));
    TIME("gelu_fwd (N256 x 3072)", 0, o->gelu_fwd(&k, d, a, (size_t)N * 4 * C));
    TIME("gelu_bwd", 0, o->gelu_bwd(&k, d, a, c, (size_t)N * 4 * C));
    TIME("residual_fwd (N256 C768)", 2 * L, o->residual_fwd(&k, d, a, c, (size_t)N * C));
    TIME("residual_bwd", 2 * L, o->residual_bwd(&k, d, e, c, (size_t)N * C));
    TIME("classifier_fwd (N256 Vp50304)", 0, o->classifier_fwd(&k, mean, a, ids, N, V, Vp));
    TIME("classifier_bwd fused (in place)", 1, o->classifier_bwd(&k, d, mean, a, ids, 1.0f / N, N, V, Vp));
    TIME("adamw (124.5M params)", 1, o->adamw(&k, p, g, m, v, nparams, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.0f, 1.0f, 1));
    TIME("sumsq (124.5M)", 1, o->sumsq(&k, g, nparams, &ss));
    printf("  estimated step total (ops only): %.1f ms\n", total);
    total = 0.0;
    printf("own blocked SGEMM for comparison:\n");
    TIME("blocked fc fwd (256x3072x768)", 0, gt_cpu_sgemm_blocked(0, 1, N, 4 * C, C, a, C, b, C, 0.0f, d, 4 * C, NULL));
    TIME("blocked lm_head fwd (256x50304x768)", 0, gt_cpu_sgemm_blocked(0, 1, N, Vp, C, a, C, b, C, 0.0f, d, Vp, NULL));
    TIME("blocked dW fc (3072x768, K256)", 0, gt_cpu_sgemm_blocked(1, 0, 4 * C, C, N, a, 4 * C, c, C, 1.0f, d, C, NULL));
    TIME("blas fc fwd (256x3072x768)", 0, gt_cpu_sgemm(0, 1, N, 4 * C, C, a, C, b, C, 0.0f, d, 4 * C, NULL));
    gt_backend_free(be);
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
    free(p);
    free(g);
    free(m);
    free(v);
    free(att);
    return 0;
}
