/* cpu conv2d: im2col + SGEMM (gt_cpu_sgemm: OpenBLAS or the own blocked
 * kernel), forward and backward, NCHW, weights (OC, C, KH, KW) seen as the
 * matrix Wm (OC, CKK), CKK = C KH KW, and OHW = OH OW.
 *
 *   forward   col (CKK, g OHW) = im2col of g images side by side
 *             tmp (OC, g OHW)  = Wm @ col              (+ bias, prefilled)
 *             out[n] (OC, OHW) = the image's columns of tmp
 *   dweight   Wm (OC, CKK)    += dout_g (OC, g OHW) @ col^T
 *   dinp      dcol (CKK, g OHW) = Wm^T @ dout_g ;  dinp += col2im(dcol)
 *   dbias     (OC)            += sums of dout, one output channel per thread
 *
 * g images go into one GEMM (the group) so that the deep layers' small
 * images (8x8: OHW 64) still give GEMMs wide enough to run near peak; g is
 * the most images whose col fits KC_COL_FLOATS (at least 1, at most N), a
 * function of the shape only. With g = 1 the GEMM writes out[n] directly.
 * 1x1 convolutions with stride 1 and pad 0 skip im2col: the image itself
 * (C, HW) is col, one GEMM per image, no workspace.
 *
 * Determinism: each GEMM element is summed in the SGEMM's fixed order;
 * dweight accumulates the groups in image order; col2im runs a fixed run
 * of (n, c) planes per work item, each element receiving its KH KW taps in
 * a fixed order; dbias one channel per work item. Nothing depends on the
 * thread count.
 *
 * Workspace (col, tmp, dcol, dout_g) comes from the backend's allocator
 * per call and is returned before the call ends. Bound: GEMM FLOP/s
 * (2 N OC OH OW CKK per GEMM; the backward is two). */
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/sgemm.h"

/* Floats of col per group: 4 MiB, enough for GEMMs near peak, small enough
 * to stay in the last-level cache with its GEMM output. */
#define KC_COL_FLOATS ((size_t)1 << 20)

typedef struct conv_geom {
    int N, C, H, W, OC, KH, KW, st, pad, OH, OW;
    int CKK, OHW, HW;
    int g; /* images per group */
} conv_geom;

static gt_status conv_geom_of(const char *op, const gt_kctx *k, const gt_conv2d_shape *s,
                              conv_geom *q) {
    if (!s) return GT_ERR(GT_ERR_INVALID, "%s: shape is NULL", op);
    int OH = gt_conv2d_out_h(s), OW = gt_conv2d_out_w(s);
    if (s->N < 0 || s->C < 1 || s->OC < 1 || OH < 1 || OW < 1)
        return GT_ERR(GT_ERR_INVALID,
                      "%s: N=%d C=%d H=%d W=%d OC=%d KH=%d KW=%d stride=%d pad=%d gives "
                      "OH=%d OW=%d (need N >= 0, C, OC, stride >= 1, pad >= 0 and a kernel "
                      "no larger than the padded input)",
                      op, s->N, s->C, s->H, s->W, s->OC, s->KH, s->KW, s->stride, s->pad, OH, OW);
    /* The GEMM dimensions are ints: refuse what would overflow one. */
    double ckk = (double)s->C * s->KH * s->KW, ohw = (double)OH * OW;
    if (ckk > 1 << 30 || ohw > 1 << 30 || (double)s->H * s->W > 1 << 30)
        return GT_ERR(GT_ERR_INVALID, "%s: C KH KW = %.0f or OH OW = %.0f is too large for the "
                      "cpu backend's GEMMs (limit 2^30)", op, ckk, ohw);
    if (!k->be)
        return GT_ERR(GT_ERR_INVALID, "%s: the kernel context has no backend (the cpu conv2d "
                      "takes its workspace from the backend's allocator)", op);
    *q = (conv_geom){.N = s->N, .C = s->C, .H = s->H, .W = s->W, .OC = s->OC, .KH = s->KH,
                     .KW = s->KW, .st = s->stride, .pad = s->pad, .OH = OH, .OW = OW};
    q->CKK = s->C * s->KH * s->KW;
    q->OHW = OH * OW;
    q->HW = s->H * s->W;
    size_t per = (size_t)q->CKK * q->OHW;
    size_t g = per >= KC_COL_FLOATS ? 1 : KC_COL_FLOATS / per;
    if (g > (size_t)(1 << 30) / (size_t)q->OHW) g = (size_t)(1 << 30) / (size_t)q->OHW;
    q->g = s->N < 1 ? 1 : (g > (size_t)s->N ? s->N : (int)g);
    return GT_OK;
}

/* 1x1, stride 1, pad 0: the input image is already the col matrix. */
static int conv_is_pointwise(const conv_geom *q) {
    return q->KH == 1 && q->KW == 1 && q->st == 1 && q->pad == 0;
}

/* The outputs o in [0, n) whose input index o st + off lies in [0, len):
 * [*lo, *hi), contiguous because o st + off is increasing in o. Computed
 * per kernel offset so that the copy loops below carry no per-element
 * bounds test; the numerators are non-negative, so / rounds down. Strides 1
 * and 2 (all that the model presets use) divide by a constant: col2im
 * computes two spans a tap, for small planes a cost next to the tap's adds. */
static int div_stride(int a, int st) {
    return st == 1 ? a : st == 2 ? a / 2 : a / st;
}
static void conv_span(int n, int st, int off, int len, int *lo, int *hi) {
    int a = off < 0 ? div_stride(-off + st - 1, st) : 0;
    int z = len - 1 - off < 0 ? 0 : div_stride(len - 1 - off, st) + 1;
    if (z > n) z = n;
    if (a > z) a = z;
    *lo = a;
    *hi = z;
}

/* Copies, fills and adds with restrict parameters, so that the loops
 * vectorize without aliasing checks (col and dcol never overlap the
 * images). copy_f32 and zero_f32 go in blocks of 16 (then 4) floats, the
 * last block overlapping its predecessor instead of a scalar tail (writing
 * the same values twice is harmless): the lengths here run from a few
 * floats to a few KiB, where the compiler's alternative, a memmove /
 * memset call, measured slower (docs/performance.md). copy_f32_s2
 * (stride 2) likewise in blocks of 8: rows of 7 or 8 outputs would
 * otherwise miss the vector loop and run scalar. */
static void copy_f32_blk(float *restrict d, const float *restrict s, size_t n, size_t B) {
    size_t x = 0;
    for (; x + B <= n; x += B)
        for (size_t k = 0; k < B; k++) d[x + k] = s[x + k];
    if (x < n)
        for (size_t k = 0; k < B; k++) d[n - B + k] = s[n - B + k];
}
static void copy_f32(float *restrict d, const float *restrict s, size_t n) {
    if (n >= 16) copy_f32_blk(d, s, n, 16);
    else if (n >= 4) copy_f32_blk(d, s, n, 4);
    else
        for (size_t x = 0; x < n; x++) d[x] = s[x];
}
static void zero_f32_blk(float *d, size_t n, size_t B) {
    size_t x = 0;
    for (; x + B <= n; x += B)
        for (size_t k = 0; k < B; k++) d[x + k] = 0.0f;
    if (x < n)
        for (size_t k = 0; k < B; k++) d[n - B + k] = 0.0f;
}
static void zero_f32(float *d, size_t n) {
    if (n >= 16) zero_f32_blk(d, n, 16);
    else if (n >= 4) zero_f32_blk(d, n, 4);
    else
        for (size_t x = 0; x < n; x++) d[x] = 0.0f;
}
static void copy_f32_s2_blk(float *restrict d, const float *restrict s, size_t n, size_t B) {
    size_t x = 0;
    for (; x + B <= n; x += B)
        for (size_t k = 0; k < B; k++) d[x + k] = s[2 * (x + k)];
    if (x < n)
        for (size_t k = 0; k < B; k++) d[n - B + k] = s[2 * (n - B + k)];
}
static void copy_f32_s2(float *restrict d, const float *restrict s, size_t n) {
    if (n >= 8) copy_f32_s2_blk(d, s, n, 8);
    else if (n >= 4) copy_f32_s2_blk(d, s, n, 4);
    else
        for (size_t x = 0; x < n; x++) d[x] = s[2 * x];
}
static void copy_f32_strided(float *restrict d, const float *restrict s, size_t n, int st) {
    for (size_t x = 0; x < n; x++) d[x] = s[x * st];
}
static void add_f32(float *restrict d, const float *restrict s, size_t n) {
    for (size_t x = 0; x < n; x++) d[x] += s[x];
}
static void add_f32_strided(float *restrict d, const float *restrict s, size_t n, int st) {
    for (size_t x = 0; x < n; x++) d[x * st] += s[x];
}

/* col (CKK, g OHW) from images n0 .. n0+g of inp: row (c, i, j), column
 * (image, y, x) holds inp[n, c, y s - p + i, x s - p + j], 0 outside.
 * Per row the in-bounds (y, x) form the rectangle [y0, y1) x [x0, x1)
 * (conv_span): the rows outside it are a zero fill, the inside a copy, its
 * left and right columns zero. With stride 1 and OW == W (odd KW, pad
 * (KW - 1) / 2: "same" convolutions) the whole rectangle is one shifted
 * copy of the image: it runs from (y0, x0) to (y1 - 1, x1 - 1) flat, its
 * reads all inside the plane, and the border columns it crosses are zeroed
 * after it. Only the copy pattern differs from an element-wise test, not
 * the values. */
static void im2col(const conv_geom *q, const float *inp, int n0, int g, float *col) {
    int ld = g * q->OHW, KK = q->KH * q->KW, st = q->st, OW = q->OW;
    int flat = st == 1 && OW == q->W;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((size_t)q->CKK * ld > 32768)
#endif
    for (int r = 0; r < q->CKK; r++) {
        int c = r / KK, i = r % KK / q->KW, j = r % q->KW;
        int y0, y1, x0, x1;
        conv_span(q->OH, st, i - q->pad, q->H, &y0, &y1);
        conv_span(OW, st, j - q->pad, q->W, &x0, &x1);
        size_t nx = (size_t)(x1 - x0);
        for (int b = 0; b < g; b++) {
            const float *img = inp + ((size_t)(n0 + b) * q->C + c) * q->HW;
            float *dst = col + (size_t)r * ld + (size_t)b * q->OHW;
            zero_f32(dst, (size_t)y0 * OW);
            zero_f32(dst + (size_t)y1 * OW, (size_t)(q->OH - y1) * OW);
            if (y0 == y1 || nx == 0) {
                zero_f32(dst + (size_t)y0 * OW, (size_t)(y1 - y0) * OW);
                continue;
            }
            /* the input element of output (y, x0), row h = y s - p + i */
#define SRC_AT(y) (img + (size_t)((y) * st - q->pad + i) * q->W + (x0 * st - q->pad + j))
            if (flat)
                copy_f32(dst + (size_t)y0 * OW + x0, SRC_AT(y0), (size_t)(y1 - y0 - 1) * OW + nx);
            else
                for (int y = y0; y < y1; y++) {
                    float *d = dst + (size_t)y * OW + x0;
                    if (st == 1) copy_f32(d, SRC_AT(y), nx);
                    else if (st == 2) copy_f32_s2(d, SRC_AT(y), nx);
                    else copy_f32_strided(d, SRC_AT(y), nx, st);
                }
            /* the border columns, column by column: row by row the compiler
             * turns these few stores into a memset call per row */
            for (int x = 0; x < OW; x++) {
                if (x == x0) x = x1;
                if (x == OW) break;
                for (int y = y0; y < y1; y++) dst[(size_t)y * OW + x] = 0.0f;
            }
#undef SRC_AT
        }
    }
}

/* dinp of images n0 .. n0+g += col2im(dcol): a work item is a run of
 * (image, channel) planes, each plane adding its KH KW rows of dcol tap by
 * tap in a fixed order. A tap reaches each input element at most once, so
 * visiting only its in-bounds rectangle (conv_span, as in im2col) leaves
 * every element's sequence of additions, taps in increasing order,
 * unchanged; so does taking the run's planes in turn within each tap
 * rather than tap by tap within each plane: the planes are disjoint. That
 * order measured faster on small planes (docs/performance.md): a tap no longer
 * reloads at once what the previous tap has just stored, at shifted,
 * overlapping addresses that store forwarding cannot serve; and the spans
 * are computed once a run.
 * With stride 1 and OW == W the rectangle is added as one flat span as in
 * im2col; the gap elements between its rows, which the flat add would
 * wrongly change, are saved before and put back after (COL2IM_KEEP floats
 * at a time). The run length changes nothing but speed: at most 16 planes
 * and COL2IM_RUN_FLOATS floats of dinp (it stays in L1), at least 64 runs
 * where there are the planes (work for every thread). */
#define COL2IM_KEEP 256
#define COL2IM_RUN_FLOATS 1024
static void col2im_add(const conv_geom *q, const float *dcol, int n0, int g, float *dinp) {
    int ld = g * q->OHW, KK = q->KH * q->KW, st = q->st, OW = q->OW;
    int flat = st == 1 && OW == q->W;
    long planes = (long)g * q->C;
    long run = q->HW >= COL2IM_RUN_FLOATS ? 1 : COL2IM_RUN_FLOATS / q->HW;
    if (run > 16) run = 16;
    if (run > planes / 64) run = planes / 64 > 0 ? planes / 64 : 1;
    long runs = (planes + run - 1) / run;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((size_t)q->CKK * ld > 32768)
#endif
    for (long ru = 0; ru < runs; ru++) {
        long pe = (ru + 1) * run < planes ? (ru + 1) * run : planes;
        for (int t = 0; t < KK; t++) {
            int i = t / q->KW, j = t % q->KW;
            int y0, y1, x0, x1;
            conv_span(q->OH, st, i - q->pad, q->H, &y0, &y1);
            conv_span(OW, st, j - q->pad, q->W, &x0, &x1);
            size_t nx = (size_t)(x1 - x0), gap = (size_t)OW - nx;
            if (y0 == y1 || nx == 0) continue;
            /* the input element of output (y, x0), row h = y s - p + i */
            size_t at0 = (size_t)(y0 * st - q->pad + i) * q->W + (size_t)(x0 * st - q->pad + j);
            for (long pl = ru * run; pl < pe; pl++) {
                int b = (int)(pl / q->C), c = (int)(pl % q->C);
                float *d = dinp + ((size_t)(n0 + b) * q->C + c) * q->HW + at0;
                const float *s = dcol + ((size_t)c * KK + t) * ld + (size_t)b * q->OHW +
                                 (size_t)y0 * OW + x0;
                if (flat && gap <= COL2IM_KEEP) {
                    /* R rows at a time: save the gaps, add flat, put back;
                     * the gaps go column by column, as im2col's borders */
                    int R = gap ? (int)(COL2IM_KEEP / gap) : y1 - y0;
                    float keep[COL2IM_KEEP];
                    for (int y = y0; y < y1; y += R) {
                        if (y > y0) d += (size_t)R * OW, s += (size_t)R * OW;
                        size_t rows = (size_t)(y1 - y < R ? y1 - y : R) - 1;
                        for (size_t x = 0; x < gap; x++)
                            for (size_t yy = 0; yy < rows; yy++)
                                keep[x * rows + yy] = d[yy * OW + nx + x];
                        add_f32(d, s, rows * OW + nx);
                        for (size_t x = 0; x < gap; x++)
                            for (size_t yy = 0; yy < rows; yy++)
                                d[yy * OW + nx + x] = keep[x * rows + yy];
                    }
                } else
                    for (int y = y0; y < y1; y++) {
                        if (y > y0) d += (size_t)st * q->W, s += OW;
                        if (st == 1) add_f32(d, s, nx);
                        else add_f32_strided(d, s, nx, st);
                    }
            }
        }
    }
}

/* dst (OC, cols) = bias[o] on row o, or 0 without a bias. */
static void fill_bias(float *dst, const float *bias, int OC, size_t cols) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((size_t)OC * cols > 32768)
#endif
    for (int o = 0; o < OC; o++) {
        float v = bias ? bias[o] : 0.0f;
        float *r = dst + (size_t)o * cols;
        for (size_t x = 0; x < cols; x++) r[x] = v;
    }
}

gt_status gt_cpu_conv2d_fwd(const gt_kctx *k, void *out_, const void *inp_, const void *weight_,
                            const void *bias_, const gt_conv2d_shape *s) {
    GT_CPU_CHECK_DT(k);
    conv_geom q;
    GT_TRY(conv_geom_of("conv2d_fwd", k, s, &q));
    float *out = out_;                       // (N, OC, OH, OW)
    const float *inp = inp_, *w = weight_;   // (N, C, H, W), (OC, CKK)
    const float *bias = bias_;               // (OC) or NULL
    size_t img_out = (size_t)q.OC * q.OHW;
    if (conv_is_pointwise(&q)) {
        /* out[n] (OC, HW) = bias + Wm (OC, C) @ inp[n] (C, HW) */
        for (int n = 0; n < q.N; n++) {
            float *o = out + (size_t)n * img_out;
            fill_bias(o, bias, q.OC, q.OHW);
            GT_TRY(gt_cpu_sgemm(0, 0, q.OC, q.OHW, q.C, w, q.C, inp + (size_t)n * q.C * q.HW,
                                q.HW, 1.0f, o, q.OHW, NULL));
        }
        return GT_OK;
    }
    size_t ld = (size_t)q.g * q.OHW;
    float *col = NULL, *tmp = NULL;
    gt_status st = gt_backend_alloc(k->be, (size_t)q.CKK * ld * sizeof(float), (void **)&col);
    if (st == GT_OK && q.g > 1)
        st = gt_backend_alloc(k->be, (size_t)q.OC * ld * sizeof(float), (void **)&tmp);
    for (int n0 = 0; n0 < q.N && st == GT_OK; n0 += q.g) {
        int g = q.N - n0 < q.g ? q.N - n0 : q.g;
        size_t cols = (size_t)g * q.OHW;
        im2col(&q, inp, n0, g, col);
        /* g == 1: the image's output is the GEMM's C itself. A group's
         * matrices are packed at its own width `cols` (the last may be
         * narrower than ld). */
        float *dst = g == 1 ? out + (size_t)n0 * img_out : tmp;
        fill_bias(dst, bias, q.OC, cols);
        st = gt_cpu_sgemm(0, 0, q.OC, (int)cols, q.CKK, w, q.CKK, col, (int)cols, 1.0f, dst,
                          (int)cols, NULL);
        if (st != GT_OK || g == 1) continue;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((size_t)q.OC * cols > 32768)
#endif
        for (long r = 0; r < (long)g * q.OC; r++) { /* (image, channel) rows */
            int b = (int)(r / q.OC), o = (int)(r % q.OC);
            const float *src = tmp + (size_t)o * cols + (size_t)b * q.OHW;
            float *d = out + (size_t)(n0 + b) * img_out + (size_t)o * q.OHW;
            for (int x = 0; x < q.OHW; x++) d[x] = src[x];
        }
    }
    gt_backend_dealloc(k->be, col);
    gt_backend_dealloc(k->be, tmp);
    return st;
}

gt_status gt_cpu_conv2d_bwd(const gt_kctx *k, void *dinp_, void *dweight_, void *dbias_,
                            const void *dout_, const void *inp_, const void *weight_,
                            const gt_conv2d_shape *s) {
    GT_CPU_CHECK_DT(k);
    conv_geom q;
    GT_TRY(conv_geom_of("conv2d_bwd", k, s, &q));
    float *dinp = dinp_, *dw = dweight_, *db = dbias_; // as inp, (OC, CKK), (OC); dinp, db may be NULL
    const float *dout = dout_, *inp = inp_, *w = weight_;
    size_t img_out = (size_t)q.OC * q.OHW, img_in = (size_t)q.C * q.HW;

    if (db) {
        /* one channel per work item, images in order, 8 fp32 lanes per row */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((size_t)q.N * img_out > 32768)
#endif
        for (int o = 0; o < q.OC; o++) {
            float l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (int n = 0; n < q.N; n++) {
                const float *r = dout + (size_t)n * img_out + (size_t)o * q.OHW;
                int x = 0;
                for (; x + 8 <= q.OHW; x += 8)
                    for (int j = 0; j < 8; j++) l[j] += r[x + j];
                for (; x < q.OHW; x++) l[x & 7] += r[x];
            }
            db[o] += ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
        }
    }

    if (conv_is_pointwise(&q)) {
        for (int n = 0; n < q.N; n++) {
            const float *dy = dout + (size_t)n * img_out, *x = inp + (size_t)n * img_in;
            /* (OC, C) += dout[n] (OC, HW) @ inp[n]^T */
            GT_TRY(gt_cpu_sgemm(0, 1, q.OC, q.C, q.HW, dy, q.HW, x, q.HW, 1.0f, dw, q.C, NULL));
            /* dinp[n] (C, HW) += Wm^T (C, OC) @ dout[n] */
            if (dinp)
                GT_TRY(gt_cpu_sgemm(1, 0, q.C, q.HW, q.OC, w, q.C, dy, q.HW, 1.0f,
                                    dinp + (size_t)n * img_in, q.HW, NULL));
        }
        return GT_OK;
    }

    size_t ld = (size_t)q.g * q.OHW;
    float *col = NULL, *dyg = NULL, *dcol = NULL;
    gt_status st = gt_backend_alloc(k->be, (size_t)q.CKK * ld * sizeof(float), (void **)&col);
    if (st == GT_OK && q.g > 1)
        st = gt_backend_alloc(k->be, (size_t)q.OC * ld * sizeof(float), (void **)&dyg);
    if (st == GT_OK && dinp)
        st = gt_backend_alloc(k->be, (size_t)q.CKK * ld * sizeof(float), (void **)&dcol);
    for (int n0 = 0; n0 < q.N && st == GT_OK; n0 += q.g) {
        int g = q.N - n0 < q.g ? q.N - n0 : q.g;
        size_t cols = (size_t)g * q.OHW;
        /* dout of the group as (OC, cols): the image's own (OC, OHW) when g == 1;
         * every matrix of a group is packed at the group's width cols */
        const float *dy = dout + (size_t)n0 * img_out;
        size_t ldy = q.OHW;
        if (g > 1) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((size_t)q.OC * cols > 32768)
#endif
            for (long r = 0; r < (long)g * q.OC; r++) {
                int b = (int)(r / q.OC), o = (int)(r % q.OC);
                const float *src = dout + (size_t)(n0 + b) * img_out + (size_t)o * q.OHW;
                float *d = dyg + (size_t)o * cols + (size_t)b * q.OHW;
                for (int x = 0; x < q.OHW; x++) d[x] = src[x];
            }
            dy = dyg;
            ldy = cols;
        }
        im2col(&q, inp, n0, g, col);
        /* (OC, CKK) += dy (OC, cols) @ col (CKK, cols)^T */
        st = gt_cpu_sgemm(0, 1, q.OC, q.CKK, (int)cols, dy, (int)ldy, col, (int)cols, 1.0f, dw,
                          q.CKK, NULL);
        if (st != GT_OK || !dinp) continue;
        /* dcol (CKK, cols) = Wm^T (CKK, OC) @ dy (OC, cols) */
        st = gt_cpu_sgemm(1, 0, q.CKK, (int)cols, q.OC, w, q.CKK, dy, (int)ldy, 0.0f, dcol,
                          (int)cols, NULL);
        if (st == GT_OK) col2im_add(&q, dcol, n0, g, dinp);
    }
    gt_backend_dealloc(k->be, col);
    gt_backend_dealloc(k->be, dyg);
    gt_backend_dealloc(k->be, dcol);
    return st;
}
