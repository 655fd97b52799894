/* ref matmul: out(N,OC) = inp(N,C) @ weight(OC,C)^T + bias, its backward
 * (dinp overwritten, dweight and dbias accumulated), and the same linear
 * layer fused with GELU (matmul_gelu_fwd, matmul_dgelu_bwd). One fp64 dot
 * product per output element, rounded once on store. Storage fp32, bf16 or
 * fp16. */
#include "kernels/ref/ref.h"

#include <stdlib.h>

/* The operands in fp64 (gt_ref_staged: each element converted once, laid
 * out so that every sum below reads both operands contiguously). The sums
 * keep their order (bias first, then the index ascending), and a product of
 * two values stored in 24 bits or fewer is exact in fp64 (fused or not), so
 * every bit is what the element-by-element loops gave. */

/* acc + sum_j a[j] b[j], j ascending. */
static double dot(const double *a, const double *b, size_t n, double acc) {
    for (size_t j = 0; j < n; j++) acc += a[j] * b[j];
    return acc;
}

/* The fp64 operands of one call, freed together. */
typedef struct {
    double *m[4];
} stage_set;

static void stage_free(stage_set *s) {
    for (int i = 0; i < 4; i++) free(s->m[i]);
}

static gt_status stage_oom(stage_set *s, const char *op, int n) {
    for (int i = 0; i < n; i++)
        if (!s->m[i]) {
            stage_free(s);
            return GT_ERR(GT_ERR_OOM, "ref %s: no host memory for its fp64 operands", op);
        }
    return GT_OK;
}

/* dweight(OC,C) += dout^T @ inp; dbias(OC) += column sums of dout (db may be
 * NULL); doutT (OC,N) and inpT (C,N) are the staged transposes. */
static void weight_grads(void *dw, void *db, const double *doutT, const double *inpT, gt_dtype dt,
                         int N, int C, int OC) {
    for (int o = 0; o < OC; o++)
        for (int c = 0; c < C; c++) {
            size_t d = (size_t)o * C + c;
            double acc = dot(doutT + (size_t)o * N, inpT + (size_t)c * N, (size_t)N, 0.0);
            gt_ref_st(dw, dt, d, gt_ref_ld(dw, dt, d) + acc);
        }
    if (db)
        for (int o = 0; o < OC; o++) {
            double acc = 0.0;
            for (int i = 0; i < N; i++) acc += doutT[(size_t)o * N + i];
            gt_ref_st(db, dt, o, gt_ref_ld(db, dt, o) + acc);
        }
}

/* The backward's operands: dout (N,OC) as is and transposed, weight
 * transposed (C,OC), inp transposed (C,N). */
static gt_status stage_bwd(stage_set *s, const char *op, const void *dout, const void *inp,
                           const void *w, gt_dtype dt, int N, int C, int OC) {
    s->m[0] = gt_ref_staged(dout, dt, (size_t)N, (size_t)OC, 0);
    s->m[1] = gt_ref_staged(dout, dt, (size_t)N, (size_t)OC, 1);
    s->m[2] = gt_ref_staged(w, dt, (size_t)OC, (size_t)C, 1);
    s->m[3] = gt_ref_staged(inp, dt, (size_t)N, (size_t)C, 1);
    return stage_oom(s, op, 4);
}

gt_status gt_ref_matmul_fwd(const gt_kctx *k, void *out, const void *inp, const void *w,
                            const void *bias, int N, int C, int OC) {
    GT_REF_CHECK_DT_ANY(k);
    if (N < 0 || C < 0 || OC < 0)
        return GT_ERR(GT_ERR_INVALID, "matmul_fwd: N=%d C=%d OC=%d", N, C, OC);
    gt_dtype dt = k->dt;
    stage_set s = {{gt_ref_staged(inp, dt, (size_t)N, (size_t)C, 0), gt_ref_staged(w, dt, (size_t)OC, (size_t)C, 0)}};
    GT_TRY(stage_oom(&s, "matmul_fwd", 2));
    for (int i = 0; i < N; i++)
        for (int o = 0; o < OC; o++)
            gt_ref_st(out, dt, (size_t)i * OC + o,
                      dot(s.m[0] + (size_t)i * C, s.m[1] + (size_t)o * C, (size_t)C,
                          bias ? gt_ref_ld(bias, dt, o) : 0.0));
    stage_free(&s);
    return GT_OK;
}

gt_status gt_ref_matmul_bwd(const gt_kctx *k, void *dinp, void *dw, void *db, const void *dout,
                            const void *inp, const void *w, int N, int C, int OC) {
    GT_REF_CHECK_DT_ANY(k);
    if (N < 0 || C < 0 || OC < 0)
        return GT_ERR(GT_ERR_INVALID, "matmul_bwd: N=%d C=%d OC=%d", N, C, OC);
    gt_dtype dt = k->dt;
    stage_set s = {{0}};
    GT_TRY(stage_bwd(&s, "matmul_bwd", dout, inp, w, dt, N, C, OC));
    if (dinp) /* overwritten: the old values are never read */
        for (int i = 0; i < N; i++)
            for (int c = 0; c < C; c++)
                gt_ref_st(dinp, dt, (size_t)i * C + c,
                          dot(s.m[0] + (size_t)i * OC, s.m[2] + (size_t)c * OC, (size_t)OC, 0.0));
    weight_grads(dw, db, s.m[1], s.m[3], dt, N, C, OC);
    stage_free(&s);
    return GT_OK;
}

gt_status gt_ref_matmul_gelu_fwd(const gt_kctx *k, void *out, void *pre, const void *inp,
                                 const void *w, const void *bias, int N, int C, int OC) {
    GT_REF_CHECK_DT_ANY(k);
    if (N < 0 || C < 0 || OC < 0)
        return GT_ERR(GT_ERR_INVALID, "matmul_gelu_fwd: N=%d C=%d OC=%d", N, C, OC);
    gt_dtype dt = k->dt;
    stage_set s = {{gt_ref_staged(inp, dt, (size_t)N, (size_t)C, 0), gt_ref_staged(w, dt, (size_t)OC, (size_t)C, 0)}};
    GT_TRY(stage_oom(&s, "matmul_gelu_fwd", 2));
    for (int i = 0; i < N; i++)
        for (int o = 0; o < OC; o++) {
            /* GELU of the exact pre-activation: one rounding per output */
            double p = dot(s.m[0] + (size_t)i * C, s.m[1] + (size_t)o * C, (size_t)C,
                           bias ? gt_ref_ld(bias, dt, o) : 0.0);
            size_t d = (size_t)i * OC + o;
            gt_ref_st(pre, dt, d, p);
            gt_ref_st(out, dt, d, gt_ref_gelu(p));
        }
    stage_free(&s);
    return GT_OK;
}

gt_status gt_ref_matmul_dgelu_bwd(const gt_kctx *k, void *dpre, void *dw, void *db,
                                  const void *dout, const void *inp, const void *w, const void *pre,
                                  int N, int C, int OC) {
    GT_REF_CHECK_DT_ANY(k);
    if (N < 0 || C < 0 || OC < 0)
        return GT_ERR(GT_ERR_INVALID, "matmul_dgelu_bwd: N=%d C=%d OC=%d", N, C, OC);
    gt_dtype dt = k->dt;
    stage_set s = {{0}};
    GT_TRY(stage_bwd(&s, "matmul_dgelu_bwd", dout, inp, w, dt, N, C, OC));
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++) {
            size_t d = (size_t)i * C + c;
            double g = dot(s.m[0] + (size_t)i * OC, s.m[2] + (size_t)c * OC, (size_t)OC, 0.0);
            gt_ref_st(dpre, dt, d, g * gt_ref_gelu_grad(gt_ref_ld(pre, dt, d)));
        }
    weight_grads(dw, db, s.m[1], s.m[3], dt, N, C, OC);
    stage_free(&s);
    return GT_OK;
}
