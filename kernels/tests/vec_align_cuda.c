/* kernels.vec_align.cuda: the cuda backend's memory-bound kernels take
 * 16-byte vector accesses where their arrays are 16-byte aligned and go one
 * element at a time where they are not (kernels/cuda/vec.cuh); both paths
 * must give the same bits. Every changed op (gelu, residual, adamw, cast,
 * encoder, layernorm, classifier_bwd, the nccl avg's divide) runs on the
 * same data, odd lengths, three ways:
 *   aligned   every array at a 256-byte aligned start (vectors + a tail);
 *   shifted   every array one element further (a scalar head, vectors where
 *             the arrays line up again, a tail; row kernels: all scalar);
 *   staggered array j shifted by j + 1 elements (no common aligned start:
 *             all scalar);
 * and the outputs of the last two must equal the first bitwise. On the
 * emulator the test also counts the 16-byte accesses (gt_emu_vec_accesses)
 * so that it fails when the aligned call did not take the vector path or
 * the staggered one did. Exit 77: no GPU. */
#include "gt_config.h"
#include "kernels/tests/testutil.h"

#if GT_CUDA_EMULATOR
unsigned long long gt_emu_vec_accesses(void);
#endif
#if GT_HAVE_CUDA
int gt_cuda_comm_divide(void *buf, size_t n, int dtype, int ranks, void *stream);
#endif

#define MAXA 8
#define SLACK 16 /* elements of room for the shifts */

enum { F_RANDN, F_RANDU, F_IDS, F_BITS };

/* One array of a case: n elements of dt, filled by `fill`, compared after
 * the call when `out`. */
typedef struct va_arr {
    gt_dtype dt;
    size_t n;
    int fill; /* F_*: normal(0,1) / uniform [0.5, 2) rounded to dt, ids in [0, range), random bits
               */
    int range;
    int out;
} va_arr;

typedef struct va_case va_case;
typedef gt_status (*va_run)(const va_case *c, const gt_kctx *k, void **p);
struct va_case {
    const char *name;
    gt_dtype dt; /* k->dt */
    int na;
    va_arr a[MAXA];
    va_run run;
    int sz[4];       /* shapes for run */
    int vec_shifted; /* the shifted layout keeps vectors (elementwise ops) */
};

/* ---- the calls ---- */
static gt_status r_gelu_fwd(const va_case *c, const gt_kctx *k, void **p) {
    return k->be->ops->gelu_fwd(k, p[0], p[1], c->a[0].n);
}
static gt_status r_gelu_bwd(const va_case *c, const gt_kctx *k, void **p) {
    return k->be->ops->gelu_bwd(k, p[0], p[1], p[2], c->a[0].n);
}
static gt_status r_res_fwd(const va_case *c, const gt_kctx *k, void **p) {
    return k->be->ops->residual_fwd(k, p[0], p[1], p[2], c->a[0].n);
}
static gt_status r_res_bwd(const va_case *c, const gt_kctx *k, void **p) {
    return k->be->ops->residual_bwd(k, p[0], p[1], p[2], c->a[0].n);
}
static gt_status r_adamw(const va_case *c, const gt_kctx *k, void **p) {
    return k->be->ops->adamw(k, p[0], p[1], p[2], p[3], c->a[0].n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f,
                             0.5f, 3);
}
static gt_status r_cast(const va_case *c, const gt_kctx *k, void **p) {
    return k->be->ops->cast(k, p[0], c->a[0].dt, p[1], c->a[1].dt, c->a[0].n);
}
static gt_status r_enc_fwd(const va_case *c, const gt_kctx *k, void **p) {
    return k->be->ops->encoder_fwd(k, p[0], p[1], p[2], p[3], c->sz[0], c->sz[1], c->sz[2]);
}
static gt_status r_enc_bwd(const va_case *c, const gt_kctx *k, void **p) {
    return k->be->ops->encoder_bwd(k, p[0], p[1], p[2], p[3], c->sz[0], c->sz[1], c->sz[2]);
}
static gt_status r_ln_fwd(const va_case *c, const gt_kctx *k, void **p) {
    return k->be->ops->layernorm_fwd(k, p[0], p[1], p[2], p[3], p[4], p[5], c->sz[0], c->sz[1],
                                     1e-5f);
}
static gt_status r_ln_bwd(const va_case *c, const gt_kctx *k, void **p) {
    return k->be->ops->layernorm_bwd(k, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], c->sz[0],
                                     c->sz[1]);
}
static gt_status r_cls_bwd(const va_case *c, const gt_kctx *k, void **p) {
    return k->be->ops->classifier_bwd(k, p[0], p[1], p[2], p[3], 1.0f / 3, c->sz[0], c->sz[1],
                                      c->sz[2]);
}
#if GT_HAVE_CUDA
static gt_status r_divide(const va_case *c, const gt_kctx *k, void **p) {
    int e = gt_cuda_comm_divide(p[0], c->a[0].n, c->a[0].dt, 7, NULL);
    (void)k;
    return e ? GT_ERR(GT_ERR_DEVICE, "gt_cuda_comm_divide: cudaError %d", e) : GT_OK;
}
#endif

/* ---- one layout ---- */
static void fill(const va_arr *a, void *h, uint64_t stream) {
    size_t es = gt_dtype_size(a->dt);
    if (a->fill == F_BITS) {
        for (size_t i = 0; i < a->n * es; i++)
            ((uint8_t *)h)[i] = (uint8_t)gt_rng_u32(TU_SEED, stream, i);
        return;
    }
    if (a->fill == F_IDS) {
        for (size_t i = 0; i < a->n; i++)
            ((int32_t *)h)[i] = (int32_t)(gt_rng_u32(TU_SEED, stream, i) % (uint32_t)a->range);
        return;
    }
    float *f = tu_xmalloc(a->n * sizeof(float));
    if (a->fill == F_RANDN)
        gt_rng_fill_normal(f, a->n, 0.0f, 1.0f, TU_SEED, stream, 0);
    else
        gt_rng_fill_uniform(f, a->n, 0.5f, 2.0f, TU_SEED, stream, 0);
    gt_convert(h, a->dt, f, GT_DTYPE_FP32, a->n);
    free(f);
}

/* Runs c with array j at element offset off[j]; *outs receives each output
 * array's bytes (malloc'd), *vec the 16-byte accesses made (emulator). */
static gt_status run_layout(gt_backend *be, const va_case *c, const int *off, void **outs,
                            unsigned long long *vec) {
    void *base[MAXA] = {0}, *p[MAXA];
    gt_status s = GT_OK;
    for (int j = 0; j < c->na && s == GT_OK; j++) {
        const va_arr *a = &c->a[j];
        size_t es = gt_dtype_size(a->dt), bytes = (a->n + SLACK) * es;
        void *h = tu_xmalloc(bytes);
        memset(h, 0, bytes);
        fill(a, (char *)h + (size_t)off[j] * es, 100 * (uint64_t)j + 7);
        base[j] = tu_upload_raw(be, h, bytes);
        free(h);
        p[j] = (char *)base[j] + (size_t)off[j] * es;
    }
    gt_kctx k = {be, c->dt};
#if GT_CUDA_EMULATOR
    unsigned long long v0 = gt_emu_vec_accesses();
#endif
    s = c->run(c, &k, p);
#if GT_CUDA_EMULATOR
    *vec = gt_emu_vec_accesses() - v0;
#else
    *vec = 0;
#endif
    for (int j = 0; j < c->na; j++) {
        const va_arr *a = &c->a[j];
        if (a->out && s == GT_OK) {
            size_t bytes = a->n * gt_dtype_size(a->dt);
            outs[j] = tu_xmalloc(bytes);
            s = be->copy_to_host(be, outs[j], p[j], bytes);
        }
        gt_backend_dealloc(be, base[j]);
    }
    return s;
}

static int check_case(gt_backend *be, const va_case *c) {
    static const char *lname[3] = {"aligned", "shifted", "staggered"};
    void *outs[3][MAXA] = {{0}};
    unsigned long long vec[3] = {0};
    int fails = 0;
    for (int l = 0; l < 3; l++) {
        int off[MAXA];
        for (int j = 0; j < c->na; j++)
            off[j] = l == 0 ? 0 : l == 1 ? 1 : j + 1;
        gt_status s = run_layout(be, c, off, outs[l], &vec[l]);
        if (s != GT_OK) {
            printf("  %-28s %-9s FAIL: %s: %s\n", c->name, lname[l], gt_status_name(s),
                   gt_last_error());
            fails++;
            continue;
        }
        if (l == 0) continue;
        for (int j = 0; j < c->na; j++) {
            if (!c->a[j].out || !outs[0][j]) continue;
            size_t es = gt_dtype_size(c->a[j].dt), bad = 0, first = 0;
            for (size_t i = 0; i < c->a[j].n; i++)
                if (memcmp((char *)outs[0][j] + i * es, (char *)outs[l][j] + i * es, es) && !bad++)
                    first = i;
            if (bad) {
                printf("  %-28s %-9s FAIL: output %d: %zu of %zu elements differ from the "
                       "aligned call, first [%zu]\n",
                       c->name, lname[l], j, bad, c->a[j].n, first);
                fails++;
            }
        }
    }
#if GT_CUDA_EMULATOR
    /* which path ran: vectors when aligned (and when shifted, for the
     * elementwise ops), never when staggered */
    int want1 = c->vec_shifted;
    if (vec[0] == 0 || (want1 && vec[1] == 0) || (!want1 && vec[1] != 0) || vec[2] != 0) {
        printf("  %-28s FAIL: 16-byte accesses aligned %llu, shifted %llu (want %s), staggered "
               "%llu (want 0)\n",
               c->name, vec[0], vec[1], want1 ? "> 0" : "0", vec[2]);
        fails++;
    }
#endif
    if (!fails)
        printf("  %-28s ok: shifted and staggered bitwise equal to aligned (16-byte accesses "
               "%llu / %llu / %llu)\n",
               c->name, vec[0], vec[1], vec[2]);
    for (int l = 0; l < 3; l++)
        for (int j = 0; j < MAXA; j++)
            free(outs[l][j]);
    return fails;
}

#define ARR(dt_, n_, fill_, out_)                                                                  \
    { (dt_), (size_t)(n_), (fill_), 0, (out_) }
#define IDS(n_, range_)                                                                            \
    { GT_DTYPE_INT32, (size_t)(n_), F_IDS, (range_), 0 }

int main(void) {
    gt_backend *be = tu_backend_or_skip("cuda", 0);
    static const gt_dtype dts[3] = {GT_DTYPE_FP32, GT_DTYPE_BF16, GT_DTYPE_FP16};
    static const gt_dtype cdt[4] = {GT_DTYPE_FP32, GT_DTYPE_FP64, GT_DTYPE_BF16, GT_DTYPE_FP16};
    const size_t n = 8 * 41 + 5; /* odd: a tail after the vectors */
    const int B = 3, T = 5, C = 8 * 37, V = 11, N = 3, CV = 1001, CVp = 1008;
    const int NL = 67; /* layernorm rows: two chunks of the dweight/dbias partials (LN_ROWS 64) */
    int fails = 0, cases = 0;
    char name[64];
    for (int d = 0; d < 3; d++) {
        gt_dtype t = dts[d];
        const char *dn = gt_dtype_name(t);
        va_case cs[] = {
            {"gelu_fwd", t, 2, {ARR(t, n, F_RANDN, 1), ARR(t, n, F_RANDN, 0)}, r_gelu_fwd, {0}, 1},
            {"gelu_bwd",
             t,
             3,
             {ARR(t, n, F_RANDN, 1), ARR(t, n, F_RANDN, 0), ARR(t, n, F_RANDN, 0)},
             r_gelu_bwd,
             {0},
             1},
            {"residual_fwd",
             t,
             3,
             {ARR(t, n, F_RANDN, 1), ARR(t, n, F_RANDN, 0), ARR(t, n, F_RANDN, 0)},
             r_res_fwd,
             {0},
             1},
            {"residual_bwd",
             t,
             3,
             {ARR(t, n, F_RANDN, 1), ARR(t, n, F_RANDN, 1), ARR(t, n, F_RANDN, 0)},
             r_res_bwd,
             {0},
             1},
            {"adamw",
             t,
             4,
             {ARR(GT_DTYPE_FP32, n, F_RANDN, 1), ARR(t, n, F_RANDN, 0),
              ARR(GT_DTYPE_FP32, n, F_RANDN, 1), ARR(GT_DTYPE_FP32, n, F_RANDU, 1)},
             r_adamw,
             {0},
             1},
            {"encoder_fwd",
             t,
             4,
             {ARR(t, B * T * C, F_RANDN, 1), IDS(B * T, V), ARR(t, V * C, F_RANDN, 0),
              ARR(t, T * C, F_RANDN, 0)},
             r_enc_fwd,
             {B, T, C},
             0},
            {"encoder_bwd",
             t,
             4,
             {ARR(t, V * C, F_RANDN, 1), ARR(t, T * C, F_RANDN, 1), ARR(t, B * T * C, F_RANDN, 0),
              IDS(B * T, V)},
             r_enc_bwd,
             {B, T, C},
             0},
            {"layernorm_fwd",
             t,
             6,
             {ARR(t, NL * C, F_RANDN, 1), ARR(GT_DTYPE_FP32, NL, F_RANDN, 1),
              ARR(GT_DTYPE_FP32, NL, F_RANDN, 1), ARR(t, NL * C, F_RANDN, 0), ARR(t, C, F_RANDN, 0),
              ARR(t, C, F_RANDN, 0)},
             r_ln_fwd,
             {NL, C},
             0},
            {"layernorm_bwd",
             t,
             8,
             {ARR(t, NL * C, F_RANDN, 1), ARR(t, C, F_RANDN, 1), ARR(t, C, F_RANDN, 1),
              ARR(t, NL * C, F_RANDN, 0), ARR(t, NL * C, F_RANDN, 0), ARR(t, C, F_RANDN, 0),
              ARR(GT_DTYPE_FP32, NL, F_RANDN, 0), ARR(GT_DTYPE_FP32, NL, F_RANDU, 0)},
             r_ln_bwd,
             {NL, C},
             0},
            {"classifier_bwd",
             t,
             4,
             {ARR(t, N * CVp, F_RANDN, 1), ARR(GT_DTYPE_FP32, N, F_RANDN, 1),
              ARR(t, N * CVp, F_RANDN, 0), IDS(N, CV)},
             r_cls_bwd,
             {N, CV, CVp},
             0},
        };
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            snprintf(name, sizeof name, "%s %s", cs[i].name, dn);
            cs[i].name = name;
            fails += check_case(be, &cs[i]);
            cases++;
        }
    }
    /* cast: every pair of different float dtypes, random bits (NaN, Inf,
     * subnormals); k->dt is ignored */
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++) {
            if (a == b) continue;
            va_case c = {
                name,   GT_DTYPE_FP32, 2, {ARR(cdt[b], n, F_BITS, 1), ARR(cdt[a], n, F_BITS, 0)},
                r_cast, {0},           1};
            snprintf(name, sizeof name, "cast %s -> %s", gt_dtype_name(cdt[a]),
                     gt_dtype_name(cdt[b]));
            fails += check_case(be, &c);
            cases++;
        }
#if GT_HAVE_CUDA
    /* the nccl communicator's avg divide: one array, so shifted and
     * staggered (one element) both keep vectors after a scalar head */
    {
        static const gt_dtype ddt[6] = {GT_DTYPE_FP32, GT_DTYPE_FP64,  GT_DTYPE_BF16,
                                        GT_DTYPE_FP16, GT_DTYPE_INT32, GT_DTYPE_INT64};
        for (int d = 0; d < 6; d++) {
            va_case c = {name, GT_DTYPE_FP32, 1, {ARR(ddt[d], n, F_BITS, 1)}, r_divide, {0}, 1};
            snprintf(name, sizeof name, "comm_divide %s", gt_dtype_name(ddt[d]));
            /* staggered = shifted for one array: checked as bits only */
            void *outs[2][MAXA] = {{0}};
            unsigned long long vec[2];
            int off0[1] = {0}, off1[1] = {1}, f = 0;
            gt_status s = run_layout(be, &c, off0, outs[0], &vec[0]);
            if (s == GT_OK) s = run_layout(be, &c, off1, outs[1], &vec[1]);
            size_t es = gt_dtype_size(ddt[d]), bad = 0;
            for (size_t i = 0; s == GT_OK && i < n; i++)
                bad += memcmp((char *)outs[0][0] + i * es, (char *)outs[1][0] + i * es, es) != 0;
#if GT_CUDA_EMULATOR
            f = s != GT_OK || bad || vec[0] == 0 || vec[1] == 0;
#else
            f = s != GT_OK || bad;
#endif
            printf("  %-28s %s (16-byte accesses %llu / %llu)\n", name,
                   s != GT_OK ? gt_last_error()
                   : bad      ? "FAIL: the shifted call differs"
                   : f        ? "FAIL: a call took no vector access"
                              : "ok: shifted bitwise equal to aligned",
                   vec[0], vec[1]);
            fails += f;
            cases++;
            free(outs[0][0]);
            free(outs[1][0]);
        }
    }
#endif
    printf("%d of %d cases failed\n", fails, cases);
    gt_backend_free(be);
    return fails ? 1 : 0;
}
