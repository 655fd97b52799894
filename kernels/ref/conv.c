/* ref conv2d: direct loops over torch.nn.Conv2d's definition (NCHW, weights
 * (OC, C, KH, KW), zero padding, one stride, no dilation or groups), every
 * output and every gradient element a single fp64 sum:
 *   out[n,o,y,x]   = bias[o] + sum_{c,i,j} inp[n,c, y s - p + i, x s - p + j] w[o,c,i,j]
 *   dinp[n,c,h,v] += sum_{o,i,j : (h + p - i) / s = y, (v + p - j) / s = x exact, in range}
 *                    dout[n,o,y,x] w[o,c,i,j]
 *   dw[o,c,i,j]   += sum_{n,y,x} dout[n,o,y,x] inp[n,c, y s - p + i, x s - p + j]
 *   dbias[o]      += sum_{n,y,x} dout[n,o,y,x]
 * dinp is a gather (each element sums its own terms) rather than a scatter,
 * so that it too is one fp64 sum rounded once. Storage fp32, bf16 or fp16:
 * each element loaded to fp64, each result (the accumulated old value one
 * more term of its sum) rounded once on store. */
#include "kernels/ref/ref.h"

/* GT_OK when s describes a convolution ops.h accepts; OH, OW out. */
static gt_status conv_shape(const char *op, const gt_conv2d_shape *s, int *OH, int *OW) {
    if (!s) return GT_ERR(GT_ERR_INVALID, "%s: shape is NULL", op);
    *OH = gt_conv2d_out_h(s);
    *OW = gt_conv2d_out_w(s);
    if (s->N < 0 || s->C < 1 || s->OC < 1 || *OH < 1 || *OW < 1)
        return GT_ERR(GT_ERR_INVALID,
                      "%s: N=%d C=%d H=%d W=%d OC=%d KH=%d KW=%d stride=%d pad=%d gives "
                      "OH=%d OW=%d (need N >= 0, C, OC, stride >= 1, pad >= 0 and a kernel "
                      "no larger than the padded input)",
                      op, s->N, s->C, s->H, s->W, s->OC, s->KH, s->KW, s->stride, s->pad, *OH,
                      *OW);
    return GT_OK;
}

gt_status gt_ref_conv2d_fwd(const gt_kctx *k, void *out, const void *inp, const void *w,
                            const void *bias, const gt_conv2d_shape *s) {
    GT_REF_CHECK_DT_ANY(k);
    int OH, OW;
    GT_TRY(conv_shape("conv2d_fwd", s, &OH, &OW));
    gt_dtype dt = k->dt; // out (N, OC, OH, OW), inp (N, C, H, W), w (OC, C, KH, KW)
                         // bias (OC) or NULL
    int C = s->C, H = s->H, W = s->W, KH = s->KH, KW = s->KW, st = s->stride, pad = s->pad;
    /* the operands in fp64, each element converted once (gt_ref_staged):
     * the same sums in the same order */
    double *in = gt_ref_staged(inp, dt, (size_t)s->N * C * H * W, 1, 0);
    double *wt = gt_ref_staged(w, dt, (size_t)s->OC * C * KH * KW, 1, 0);
    if (!in || !wt) {
        free(in);
        free(wt);
        return GT_ERR(GT_ERR_OOM, "ref conv2d_fwd: no host memory for its fp64 operands");
    }
    for (int n = 0; n < s->N; n++)
        for (int o = 0; o < s->OC; o++)
            for (int y = 0; y < OH; y++)
                for (int x = 0; x < OW; x++) {
                    double acc = bias ? gt_ref_ld(bias, dt, o) : 0.0;
                    for (int c = 0; c < C; c++)
                        for (int i = 0; i < KH; i++) {
                            int h = y * st - pad + i;
                            if (h < 0 || h >= H) continue;
                            for (int j = 0; j < KW; j++) {
                                int v = x * st - pad + j;
                                if (v < 0 || v >= W) continue;
                                acc += in[(((size_t)n * C + c) * H + h) * W + v] *
                                       wt[(((size_t)o * C + c) * KH + i) * KW + j];
                            }
                        }
                    gt_ref_st(out, dt, (((size_t)n * s->OC + o) * OH + y) * OW + x, acc);
                }
    free(in);
    free(wt);
    return GT_OK;
}

gt_status gt_ref_conv2d_bwd(const gt_kctx *k, void *dinp, void *dw, void *db, const void *dout,
                            const void *inp, const void *w, const gt_conv2d_shape *s) {
    GT_REF_CHECK_DT_ANY(k);
    int OH, OW;
    GT_TRY(conv_shape("conv2d_bwd", s, &OH, &OW));
    gt_dtype dt = k->dt; // dinp, dw, db as inp, w, (OC); dinp, db may be NULL
    int N = s->N, C = s->C, H = s->H, W = s->W, OC = s->OC, KH = s->KH, KW = s->KW;
    int st = s->stride, pad = s->pad;
    /* the operands in fp64, each element converted once (gt_ref_staged):
     * the same sums in the same order */
    double *go = gt_ref_staged(dout, dt, (size_t)N * OC * OH * OW, 1, 0);
    double *in = gt_ref_staged(inp, dt, (size_t)N * C * H * W, 1, 0);
    double *wt = gt_ref_staged(w, dt, (size_t)OC * C * KH * KW, 1, 0);
    if (!go || !in || !wt) {
        free(go);
        free(in);
        free(wt);
        return GT_ERR(GT_ERR_OOM, "ref conv2d_bwd: no host memory for its fp64 operands");
    }
#define DOUT(n, o, y, x) go[(((size_t)(n) * OC + (o)) * OH + (y)) * OW + (x)]
    if (db)
        for (int o = 0; o < OC; o++) {
            double acc = gt_ref_ld(db, dt, o);
            for (int n = 0; n < N; n++)
                for (int y = 0; y < OH; y++)
                    for (int x = 0; x < OW; x++) acc += DOUT(n, o, y, x);
            gt_ref_st(db, dt, o, acc);
        }
    for (int o = 0; o < OC; o++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < KH; i++)
                for (int j = 0; j < KW; j++) {
                    size_t d = (((size_t)o * C + c) * KH + i) * KW + j;
                    double acc = gt_ref_ld(dw, dt, d);
                    for (int n = 0; n < N; n++)
                        for (int y = 0; y < OH; y++) {
                            int h = y * st - pad + i;
                            if (h < 0 || h >= H) continue;
                            for (int x = 0; x < OW; x++) {
                                int v = x * st - pad + j;
                                if (v < 0 || v >= W) continue;
                                acc += DOUT(n, o, y, x) * in[(((size_t)n * C + c) * H + h) * W + v];
                            }
                        }
                    gt_ref_st(dw, dt, d, acc);
                }
    if (dinp)
        for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++)
                for (int h = 0; h < H; h++)
                    for (int v = 0; v < W; v++) {
                        size_t d = (((size_t)n * C + c) * H + h) * W + v;
                        double acc = gt_ref_ld(dinp, dt, d);
                        for (int o = 0; o < OC; o++)
                            for (int i = 0; i < KH; i++) {
                                int ys = h + pad - i; /* = y * stride */
                                if (ys < 0 || ys % st || ys / st >= OH) continue;
                                for (int j = 0; j < KW; j++) {
                                    int xs = v + pad - j;
                                    if (xs < 0 || xs % st || xs / st >= OW) continue;
                                    size_t e = (((size_t)o * C + c) * KH + i) * KW + j;
                                    acc += DOUT(n, o, ys / st, xs / st) * wt[e];
                                }
                            }
                        gt_ref_st(dinp, dt, d, acc);
                    }
#undef DOUT
    free(go);
    free(in);
    free(wt);
    return GT_OK;
}
