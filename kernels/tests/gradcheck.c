/* kernels.gradcheck.ref: every backward op of the ref backend against central
 * finite differences of fp64 forward formulas written here, independently of
 * the ref forward. Scalar loss L = sum(out * R) for a seeded R (= dout), so
 * dL/dx is what the backward computes. h = 1e-5 in fp64: truncation ~h^2,
 * cancellation ~1e-16 |L| / h, both far below the 1e-4 relative tolerance,
 * while a wrong sign or missing term is an O(1) error. */
#include "kernels/tests/testutil.h"

#define FD_H 1e-5
#define MAXA 6

/* Inputs: float arrays (what the ref op sees) and the fp64 loss over them. */
typedef struct gc {
    float *x[MAXA];
    size_t n[MAXA];
    const char *name[MAXA];
    int na;
    double (*loss)(struct gc *g, const double *const *xd);
    const float *R; /* upstream gradient */
    const int32_t *ids;
    int i1, i2, i3, i4, i5; /* shape */
    gt_conv2d_shape cs;     /* conv2d's shape */
    int fails, checks;
} gc;

/* dL/d x[a][j] by central differences in fp64. */
static double fd(gc *g, int a, size_t j) {
    double *xd[MAXA];
    for (int i = 0; i < g->na; i++) {
        xd[i] = tu_xmalloc(g->n[i] * sizeof(double));
        for (size_t e = 0; e < g->n[i]; e++) xd[i][e] = g->x[i][e];
    }
    double x0 = xd[a][j];
    xd[a][j] = x0 + FD_H;
    double lp = g->loss(g, (const double *const *)xd);
    xd[a][j] = x0 - FD_H;
    double lm = g->loss(g, (const double *const *)xd);
    for (int i = 0; i < g->na; i++) free(xd[i]);
    return (lp - lm) / (2 * FD_H);
}

static void cmp(gc *g, const char *op, int a, const float *grad) {
    double worst = 0.0;
    size_t bad = 0, n = g->n[a];
    size_t stride = n > 200 ? n / 97 : 1; /* a spread sample of big arrays */
    for (size_t j = 0; j < n; j += stride) {
        double f = fd(g, a, j), e = fabs(grad[j] - f);
        double lim = 1e-5 + 1e-4 * fabs(f);
        if (e / lim > worst) worst = e / lim;
        if (!(e <= lim)) {
            if (!bad) printf("    d%s[%zu]: backward %.8g, finite difference %.8g\n", g->name[a], j, grad[j], f);
            bad++;
        }
    }
    g->checks++;
    printf("  %-15s d%-8s %s (worst %.3f of tolerance)\n", op, g->name[a], bad ? "FAIL" : "ok", worst);
    if (bad) g->fails++;
}

static float *rnd(size_t n, float mean, float std, uint64_t stream) {
    float *x = tu_xmalloc(n * sizeof(float));
    gt_rng_fill_normal(x, n, mean, std, TU_SEED, stream, 0);
    return x;
}

static const gt_kctx K = {NULL, GT_DTYPE_FP32};

/* ---- encoder: out = wte[ids] + wpe[t] ---- */
static double l_encoder(gc *g, const double *const *x) {
    int B = g->i1, T = g->i2, C = g->i3;
    double L = 0;
    for (int bt = 0; bt < B * T; bt++)
        for (int c = 0; c < C; c++)
            L += g->R[(size_t)bt * C + c] * (x[0][(size_t)g->ids[bt] * C + c] + x[1][(size_t)(bt % T) * C + c]);
    return L;
}

/* ---- layernorm ---- */
static double l_layernorm(gc *g, const double *const *x) {
    int N = g->i1, C = g->i2;
    double L = 0;
    for (int i = 0; i < N; i++) {
        const double *r = x[0] + (size_t)i * C;
        double m = 0, v = 0;
        for (int c = 0; c < C; c++) m += r[c];
        m /= C;
        for (int c = 0; c < C; c++) v += (r[c] - m) * (r[c] - m);
        v /= C;
        double s = 1.0 / sqrt(v + 1e-5);
        for (int c = 0; c < C; c++) L += g->R[(size_t)i * C + c] * ((r[c] - m) * s * x[1][c] + x[2][c]);
    }
    return L;
}

/* ---- matmul ---- */
static double l_matmul(gc *g, const double *const *x) {
    int N = g->i1, C = g->i2, OC = g->i3;
    double L = 0;
    for (int i = 0; i < N; i++)
        for (int o = 0; o < OC; o++) {
            double acc = x[2][o];
            for (int c = 0; c < C; c++) acc += x[0][(size_t)i * C + c] * x[1][(size_t)o * C + c];
            L += g->R[(size_t)i * OC + o] * acc;
        }
    return L;
}

/* ---- GELU then a linear layer: L = sum R * (gelu(pre) @ W^T + b), the
 * function matmul_dgelu_bwd differentiates ---- */
static double l_gelu_matmul(gc *g, const double *const *x) {
    int N = g->i1, C = g->i2, OC = g->i3;
    double L = 0;
    for (int i = 0; i < N; i++)
        for (int o = 0; o < OC; o++) {
            double acc = x[2][o];
            for (int c = 0; c < C; c++) {
                double p = x[0][(size_t)i * C + c];
                double a = 0.5 * p * (1 + tanh(0.7978845608028654 * (p + 0.044715 * p * p * p)));
                acc += a * x[1][(size_t)o * C + c];
            }
            L += g->R[(size_t)i * OC + o] * acc;
        }
    return L;
}

/* ---- attention ---- */
static double l_attention(gc *g, const double *const *x) {
    int B = g->i1, T = g->i2, C = g->i3, NH = g->i4, hs = C / NH;
    double L = 0, p[64];
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const double *q = x[0] + ((size_t)b * T + t) * 3 * C + h * hs;
                double mx = -1e300, sum = 0;
                for (int t2 = 0; t2 <= t; t2++) {
                    const double *k = x[0] + ((size_t)b * T + t2) * 3 * C + C + h * hs;
                    double d = 0;
                    for (int i = 0; i < hs; i++) d += q[i] * k[i];
                    p[t2] = d / sqrt((double)hs);
                    if (p[t2] > mx) mx = p[t2];
                }
                for (int t2 = 0; t2 <= t; t2++) sum += (p[t2] = exp(p[t2] - mx));
                for (int i = 0; i < hs; i++) {
                    double o = 0;
                    for (int t2 = 0; t2 <= t; t2++)
                        o += p[t2] / sum * x[0][((size_t)b * T + t2) * 3 * C + 2 * C + h * hs + i];
                    L += g->R[((size_t)b * T + t) * C + h * hs + i] * o;
                }
            }
    return L;
}

/* ---- gelu, residual ---- */
static double l_gelu(gc *g, const double *const *x) {
    double L = 0;
    for (size_t i = 0; i < g->n[0]; i++) {
        double v = x[0][i];
        L += g->R[i] * 0.5 * v * (1 + tanh(0.7978845608028654 /* sqrt(2/pi) */ * (v + 0.044715 * v * v * v)));
    }
    return L;
}
static double l_residual(gc *g, const double *const *x) {
    double L = 0;
    for (size_t i = 0; i < g->n[0]; i++) L += g->R[i] * (x[0][i] + x[1][i]);
    return L;
}

/* ---- classifier: L = dloss * sum_i (lse(row[:V]) - row[target]) ---- */
static double l_classifier(gc *g, const double *const *x) {
    int N = g->i1, V = g->i2, Vp = g->i3;
    double L = 0;
    for (int i = 0; i < N; i++) {
        const double *r = x[0] + (size_t)i * Vp;
        double mx = -1e300, s = 0;
        for (int j = 0; j < V; j++) mx = r[j] > mx ? r[j] : mx;
        for (int j = 0; j < V; j++) s += exp(r[j] - mx);
        L += (mx + log(s) - r[g->ids[i]]) / N;
    }
    return L;
}

/* ---- conv2d: out = bias + cross-correlation (torch.nn.Conv2d) ---- */
static double l_conv2d(gc *g, const double *const *x) {
    const gt_conv2d_shape *s = &g->cs;
    int OH = gt_conv2d_out_h(s), OW = gt_conv2d_out_w(s);
    double L = 0;
    for (int n = 0; n < s->N; n++)
        for (int o = 0; o < s->OC; o++)
            for (int y = 0; y < OH; y++)
                for (int xo = 0; xo < OW; xo++) {
                    double acc = x[2][o];
                    for (int c = 0; c < s->C; c++)
                        for (int i = 0; i < s->KH; i++)
                            for (int j = 0; j < s->KW; j++) {
                                int h = y * s->stride - s->pad + i, v = xo * s->stride - s->pad + j;
                                if (h >= 0 && h < s->H && v >= 0 && v < s->W)
                                    acc += x[0][(((size_t)n * s->C + c) * s->H + h) * s->W + v] *
                                           x[1][(((size_t)o * s->C + c) * s->KH + i) * s->KW + j];
                            }
                    L += g->R[(((size_t)n * s->OC + o) * OH + y) * OW + xo] * acc;
                }
    return L;
}

/* ---- batchnorm, training mode: batch statistics over (N, HW) per channel ---- */
static double l_batchnorm(gc *g, const double *const *x) {
    int N = g->i1, C = g->i2, HW = g->i3;
    double L = 0, cnt = (double)N * HW;
    for (int c = 0; c < C; c++) {
        double m = 0, v = 0;
        for (int n = 0; n < N; n++)
            for (int p = 0; p < HW; p++) m += x[0][((size_t)n * C + c) * HW + p];
        m /= cnt;
        for (int n = 0; n < N; n++)
            for (int p = 0; p < HW; p++) {
                double d = x[0][((size_t)n * C + c) * HW + p] - m;
                v += d * d;
            }
        v /= cnt;
        for (int n = 0; n < N; n++)
            for (int p = 0; p < HW; p++) {
                size_t i = ((size_t)n * C + c) * HW + p;
                L += g->R[i] * ((x[0][i] - m) / sqrt(v + 1e-5) * x[1][c] + x[2][c]);
            }
    }
    return L;
}

/* ---- relu, avgpool ---- */
static double l_relu(gc *g, const double *const *x) {
    double L = 0;
    for (size_t i = 0; i < g->n[0]; i++) L += g->R[i] * (x[0][i] > 0 ? x[0][i] : 0.0);
    return L;
}
static double l_avgpool(gc *g, const double *const *x) {
    int NC = g->i1 * g->i2, HW = g->i3;
    double L = 0;
    for (int r = 0; r < NC; r++) {
        double m = 0;
        for (int p = 0; p < HW; p++) m += x[0][(size_t)r * HW + p];
        L += g->R[r] * m / HW;
    }
    return L;
}

/* batchnorm_fwd's state against torch's formulas written out here: in
 * training the saved mean/rstd (biased variance) and the running
 * statistics blended with momentum using the UNBIASED variance (running
 * variance unchanged at a count of 1); in eval mode the output from the
 * running statistics, which stay as they are. Returns the failures. */
static int bn_state_check(const gt_kctx *k, int N, int C, int HW, int *checks) {
    size_t n = (size_t)N * C * HW;
    float *x = rnd(n, 0.5f, 2.0f, 40), *w = rnd(C, 1, 0.3f, 41), *b = rnd(C, 0, 0.3f, 42);
    float *out = calloc(n, 4), *mean = calloc(C, 4), *rstd = calloc(C, 4);
    float *rm = rnd(C, 0.2f, 0.5f, 43), *rv = calloc(C, 4), *rm0 = calloc(C, 4), *rv0 = calloc(C, 4);
    for (int c = 0; c < C; c++) rv[c] = 0.5f + 0.25f * c, rm0[c] = rm[c], rv0[c] = rv[c];
    const double mom = 0.25, eps = 1e-3, cnt = (double)N * HW;
    double worst = 0;
    int bad = 0;
#define BN_NEAR(got, want, what, c)                                                        \
    do {                                                                                   \
        double e_ = fabs((double)(got) - (want)), l_ = 1e-6 + 1e-5 * fabs(want);           \
        if (e_ / l_ > worst) worst = e_ / l_;                                              \
        if (!(e_ <= l_) && !bad++)                                                         \
            printf("    %s[%d]: got %.9g, want %.9g\n", what, c, (double)(got), (double)(want)); \
    } while (0)
    gt_status st = gt_ops_ref.batchnorm_fwd(k, out, mean, rstd, rm, rv, x, w, b, N, C, HW,
                                            (float)eps, (float)mom, 1);
    if (st != GT_OK) tu_die("batchnorm_fwd (training)", st);
    for (int c = 0; c < C; c++) {
        double m = 0, v = 0;
        for (int i = 0; i < N; i++)
            for (int p = 0; p < HW; p++) m += x[((size_t)i * C + c) * HW + p];
        m /= cnt;
        for (int i = 0; i < N; i++)
            for (int p = 0; p < HW; p++) v += pow(x[((size_t)i * C + c) * HW + p] - m, 2);
        double vb = v / cnt; /* biased: normalises */
        BN_NEAR(mean[c], m, "mean", c);
        BN_NEAR(rstd[c], 1.0 / sqrt(vb + eps), "rstd", c);
        BN_NEAR(rm[c], (1 - mom) * rm0[c] + mom * m, "running_mean", c);
        double rv_want = cnt > 1 ? (1 - mom) * rv0[c] + mom * v / (cnt - 1) : rv0[c];
        BN_NEAR(rv[c], rv_want, "running_var", c);
        for (int i = 0; i < N; i++)
            for (int p = 0; p < HW; p++) {
                size_t e = ((size_t)i * C + c) * HW + p;
                BN_NEAR(out[e], (x[e] - m) / sqrt(vb + eps) * w[c] + b[c], "out(train)", c);
            }
    }
    /* eval: normalise with the running statistics; mean/rstd may be NULL */
    for (int c = 0; c < C; c++) rm0[c] = rm[c], rv0[c] = rv[c];
    st = gt_ops_ref.batchnorm_fwd(k, out, NULL, NULL, rm, rv, x, w, b, N, C, HW, (float)eps,
                                  (float)mom, 0);
    if (st != GT_OK) tu_die("batchnorm_fwd (eval)", st);
    for (int c = 0; c < C; c++) {
        if (rm[c] != rm0[c] || rv[c] != rv0[c]) {
            if (!bad++) printf("    eval mode changed the running statistics of channel %d\n", c);
        }
        for (int i = 0; i < N; i++)
            for (int p = 0; p < HW; p++) {
                size_t e = ((size_t)i * C + c) * HW + p;
                BN_NEAR(out[e], (x[e] - (double)rm0[c]) / sqrt((double)rv0[c] + eps) * w[c] + b[c],
                        "out(eval)", c);
            }
    }
#undef BN_NEAR
    (*checks)++;
    printf("  %-15s N%d C%d HW%d %s (worst %.3f of tolerance)\n", "batchnorm_fwd", N, C, HW,
           bad ? "FAIL" : "ok", worst);
    free(x), free(w), free(b), free(out), free(mean), free(rstd);
    free(rm), free(rv), free(rm0), free(rv0);
    return bad ? 1 : 0;
}

int main(void) {
    gt_backend *ref;
    if (gt_backend_new("ref", NULL, &ref) != GT_OK) tu_die("ref", GT_ERR_INVALID);
    gt_kctx k = K;
    k.be = ref;
    int fails = 0, checks = 0;
    printf("gradcheck: ref backward ops vs fp64 central differences\n");
    int32_t ids[64];
    for (int i = 0; i < 64; i++) ids[i] = (int32_t)(gt_rng_u32(TU_SEED, 9, i) % 5);
    {   /* encoder B2 T3 C4 V5 */
        gc g = {.na = 2, .loss = l_encoder, .ids = ids, .i1 = 2, .i2 = 3, .i3 = 4};
        g.x[0] = rnd(20, 0, 1, 1), g.n[0] = 20, g.name[0] = "wte";
        g.x[1] = rnd(12, 0, 1, 2), g.n[1] = 12, g.name[1] = "wpe";
        float *R = rnd(24, 0, 1, 3), *dwte = calloc(20, 4), *dwpe = calloc(12, 4);
        g.R = R;
        gt_ops_ref.encoder_bwd(&k, dwte, dwpe, R, ids, 2, 3, 4);
        cmp(&g, "encoder_bwd", 0, dwte);
        cmp(&g, "encoder_bwd", 1, dwpe);
        fails += g.fails, checks += g.checks;
    }
    {   /* layernorm N3 C7 */
        int N = 3, C = 7;
        gc g = {.na = 3, .loss = l_layernorm, .i1 = N, .i2 = C};
        g.x[0] = rnd(N * C, 0.5f, 1.5f, 4), g.n[0] = N * C, g.name[0] = "inp";
        g.x[1] = rnd(C, 1, 0.3f, 5), g.n[1] = C, g.name[1] = "weight";
        g.x[2] = rnd(C, 0, 0.3f, 6), g.n[2] = C, g.name[2] = "bias";
        float *R = rnd(N * C, 0, 1, 7), *out = calloc(N * C, 4), mean[3], rstd[3];
        float *di = calloc(N * C, 4), *dw = calloc(C, 4), *db = calloc(C, 4);
        g.R = R;
        gt_ops_ref.layernorm_fwd(&k, out, mean, rstd, g.x[0], g.x[1], g.x[2], N, C, 1e-5f);
        gt_ops_ref.layernorm_bwd(&k, di, dw, db, R, g.x[0], g.x[1], mean, rstd, N, C);
        cmp(&g, "layernorm_bwd", 0, di);
        cmp(&g, "layernorm_bwd", 1, dw);
        cmp(&g, "layernorm_bwd", 2, db);
        fails += g.fails, checks += g.checks;
    }
    {   /* matmul N3 C5 OC4 */
        int N = 3, C = 5, OC = 4;
        gc g = {.na = 3, .loss = l_matmul, .i1 = N, .i2 = C, .i3 = OC};
        g.x[0] = rnd(N * C, 0, 1, 8), g.n[0] = N * C, g.name[0] = "inp";
        g.x[1] = rnd(OC * C, 0, 1, 9), g.n[1] = OC * C, g.name[1] = "weight";
        g.x[2] = rnd(OC, 0, 1, 10), g.n[2] = OC, g.name[2] = "bias";
        float *R = rnd(N * OC, 0, 1, 11), *di = calloc(N * C, 4), *dw = calloc(OC * C, 4), *db = calloc(OC, 4);
        g.R = R;
        gt_ops_ref.matmul_bwd(&k, di, dw, db, R, g.x[0], g.x[1], N, C, OC);
        cmp(&g, "matmul_bwd", 0, di);
        cmp(&g, "matmul_bwd", 1, dw);
        cmp(&g, "matmul_bwd", 2, db);
        fails += g.fails, checks += g.checks;
    }
    {   /* GELU then linear, N3 C5 OC4: dpre, dweight, dbias of matmul_dgelu_bwd; dpre
         * starts as garbage (overwritten), dweight/dbias at zero */
        int N = 3, C = 5, OC = 4;
        gc g = {.na = 3, .loss = l_gelu_matmul, .i1 = N, .i2 = C, .i3 = OC};
        g.x[0] = rnd(N * C, 0, 2, 60), g.n[0] = N * C, g.name[0] = "pre";
        g.x[1] = rnd(OC * C, 0, 1, 61), g.n[1] = OC * C, g.name[1] = "weight";
        g.x[2] = rnd(OC, 0, 1, 62), g.n[2] = OC, g.name[2] = "bias";
        float *R = rnd(N * OC, 0, 1, 63), *act = calloc(N * C, 4);
        float *dp = rnd(N * C, 0, 9, 64), *dw = calloc(OC * C, 4), *db = calloc(OC, 4);
        g.R = R;
        for (int i = 0; i < N * C; i++) { /* inp = gelu(pre), as the forward left it */
            double p = g.x[0][i];
            act[i] = (float)(0.5 * p * (1 + tanh(0.7978845608028654 * (p + 0.044715 * p * p * p))));
        }
        gt_status st =
            gt_ops_ref.matmul_dgelu_bwd(&k, dp, dw, db, R, act, g.x[1], g.x[0], N, C, OC);
        if (st != GT_OK) tu_die("matmul_dgelu_bwd", st);
        cmp(&g, "matmul_dgelu_bwd", 0, dp);
        cmp(&g, "matmul_dgelu_bwd", 1, dw);
        cmp(&g, "matmul_dgelu_bwd", 2, db);
        fails += g.fails, checks += g.checks;
        free(act);
    }
    {   /* attention B2 T5 C6 NH2 */
        int B = 2, T = 5, C = 6, NH = 2;
        size_t n = (size_t)B * T * 3 * C;
        gc g = {.na = 1, .loss = l_attention, .i1 = B, .i2 = T, .i3 = C, .i4 = NH};
        g.x[0] = rnd(n, 0, 1, 12), g.n[0] = n, g.name[0] = "qkv";
        float *R = rnd((size_t)B * T * C, 0, 1, 13), *out = calloc(B * T * C, 4);
        float *att = calloc(B * NH * T * T, 4), *dq = calloc(n, 4);
        g.R = R;
        gt_ops_ref.attention_fwd(&k, out, att, g.x[0], B, T, C, NH);
        gt_ops_ref.attention_bwd(&k, dq, R, g.x[0], out, att, B, T, C, NH);
        cmp(&g, "attention_bwd", 0, dq);
        fails += g.fails, checks += g.checks;
    }
    {   /* gelu, residual n 40 */
        gc g = {.na = 1, .loss = l_gelu};
        g.x[0] = rnd(40, 0, 2, 14), g.n[0] = 40, g.name[0] = "inp";
        float *R = rnd(40, 0, 1, 15), *di = calloc(40, 4);
        g.R = R;
        gt_ops_ref.gelu_bwd(&k, di, g.x[0], R, 40);
        cmp(&g, "gelu_bwd", 0, di);
        gc r = {.na = 2, .loss = l_residual, .R = R};
        r.x[0] = g.x[0], r.n[0] = 40, r.name[0] = "a";
        r.x[1] = rnd(40, 0, 1, 16), r.n[1] = 40, r.name[1] = "b";
        float *da = calloc(40, 4), *db = calloc(40, 4);
        gt_ops_ref.residual_bwd(&k, da, db, R, 40);
        cmp(&r, "residual_bwd", 0, da);
        cmp(&r, "residual_bwd", 1, db);
        fails += g.fails + r.fails, checks += g.checks + r.checks;
    }
    {   /* classifier N3 V7 Vp9: padding columns must get 0 gradient too */
        int N = 3, V = 7, Vp = 9;
        gc g = {.na = 1, .loss = l_classifier, .ids = ids, .i1 = N, .i2 = V, .i3 = Vp};
        g.x[0] = rnd(N * Vp, 0, 2, 17), g.n[0] = N * Vp, g.name[0] = "logits";
        float *dl = rnd(N * Vp, 0, 1, 18), losses[3];
        gt_ops_ref.classifier_bwd(&k, dl, losses, g.x[0], ids, 1.0f / N, N, V, Vp);
        cmp(&g, "classifier_bwd", 0, dl);
        fails += g.fails, checks += g.checks;
    }
    /* conv2d: stride 2 with pad 1 on odd sizes; a 2x3 kernel, pad 2 */
    static const char *const conv_names[] = {"conv2d_bwd s2p1", "conv2d_bwd 2x3p2"};
    static const gt_conv2d_shape convs[] = {
        {.N = 2, .C = 3, .H = 5, .W = 6, .OC = 4, .KH = 3, .KW = 3, .stride = 2, .pad = 1},
        {.N = 1, .C = 2, .H = 4, .W = 5, .OC = 3, .KH = 2, .KW = 3, .stride = 1, .pad = 2},
    };
    for (size_t t = 0; t < sizeof convs / sizeof convs[0]; t++) {
        gc g = {.na = 3, .loss = l_conv2d, .cs = convs[t]};
        const gt_conv2d_shape *cs = &convs[t];
        size_t nin = (size_t)cs->N * cs->C * cs->H * cs->W, nw = (size_t)cs->OC * cs->C * cs->KH * cs->KW;
        size_t nout = (size_t)cs->N * cs->OC * gt_conv2d_out_h(cs) * gt_conv2d_out_w(cs);
        g.x[0] = rnd(nin, 0, 1, 20 + 4 * t), g.n[0] = nin, g.name[0] = "inp";
        g.x[1] = rnd(nw, 0, 0.5f, 21 + 4 * t), g.n[1] = nw, g.name[1] = "weight";
        g.x[2] = rnd(cs->OC, 0, 1, 22 + 4 * t), g.n[2] = cs->OC, g.name[2] = "bias";
        float *R = rnd(nout, 0, 1, 23 + 4 * t), *di = calloc(nin, 4), *dw = calloc(nw, 4);
        float *db = calloc(cs->OC, 4);
        g.R = R;
        gt_status st = gt_ops_ref.conv2d_bwd(&k, di, dw, db, R, g.x[0], g.x[1], cs);
        if (st != GT_OK) tu_die("conv2d_bwd", st);
        cmp(&g, conv_names[t], 0, di);
        cmp(&g, conv_names[t], 1, dw);
        cmp(&g, conv_names[t], 2, db);
        fails += g.fails, checks += g.checks;
    }
    /* batchnorm (training): N3 C4 HW5 (BatchNorm2d), N6 C3 HW1 (BatchNorm1d) */
    static const char *const bn_names[] = {"batchnorm_bwd 2d", "batchnorm_bwd 1d"};
    static const int bns[][3] = {{3, 4, 5}, {6, 3, 1}};
    for (size_t t = 0; t < sizeof bns / sizeof bns[0]; t++) {
        int N = bns[t][0], C = bns[t][1], HW = bns[t][2];
        size_t n = (size_t)N * C * HW;
        gc g = {.na = 3, .loss = l_batchnorm, .i1 = N, .i2 = C, .i3 = HW};
        g.x[0] = rnd(n, 0.5f, 1.5f, 30 + 4 * t), g.n[0] = n, g.name[0] = "inp";
        g.x[1] = rnd(C, 1, 0.3f, 31 + 4 * t), g.n[1] = C, g.name[1] = "weight";
        g.x[2] = rnd(C, 0, 0.3f, 32 + 4 * t), g.n[2] = C, g.name[2] = "bias";
        float *R = rnd(n, 0, 1, 33 + 4 * t), *out = calloc(n, 4), *di = calloc(n, 4);
        float *mean = calloc(C, 4), *rstd = calloc(C, 4), *rm = calloc(C, 4), *rv = calloc(C, 4);
        float *dw = calloc(C, 4), *db = calloc(C, 4);
        g.R = R;
        gt_status st = gt_ops_ref.batchnorm_fwd(&k, out, mean, rstd, rm, rv, g.x[0], g.x[1],
                                                g.x[2], N, C, HW, 1e-5f, 0.1f, 1);
        if (st == GT_OK)
            st = gt_ops_ref.batchnorm_bwd(&k, di, dw, db, R, g.x[0], g.x[1], mean, rstd, N, C, HW);
        if (st != GT_OK) tu_die("batchnorm", st);
        cmp(&g, bn_names[t], 0, di);
        cmp(&g, bn_names[t], 1, dw);
        cmp(&g, bn_names[t], 2, db);
        fails += g.fails, checks += g.checks;
    }
    fails += bn_state_check(&k, 3, 4, 5, &checks);
    fails += bn_state_check(&k, 1, 3, 1, &checks); /* count 1: running variance unchanged */
    {   /* relu n 40, avgpool N2 C3 HW5 */
        gc g = {.na = 1, .loss = l_relu};
        g.x[0] = rnd(40, 0, 1, 50), g.n[0] = 40, g.name[0] = "inp";
        float *R = rnd(40, 0, 1, 51), *out = calloc(40, 4), *di = calloc(40, 4);
        g.R = R;
        gt_ops_ref.relu_fwd(&k, out, g.x[0], 40);
        gt_ops_ref.relu_bwd(&k, di, out, R, 40);
        cmp(&g, "relu_bwd", 0, di);
        gc a = {.na = 1, .loss = l_avgpool, .i1 = 2, .i2 = 3, .i3 = 5};
        a.x[0] = rnd(30, 0, 1, 52), a.n[0] = 30, a.name[0] = "inp";
        float *Ra = rnd(6, 0, 1, 53), *da = calloc(30, 4);
        a.R = Ra;
        gt_ops_ref.avgpool_bwd(&k, da, Ra, 2, 3, 5);
        cmp(&a, "avgpool_bwd", 0, da);
        fails += g.fails + a.fails, checks += g.checks + a.checks;
    }
    printf("gradcheck: %d checks, %d failed\n", checks, fails);
    gt_backend_free(ref);
    return fails ? 1 : 0;
}
