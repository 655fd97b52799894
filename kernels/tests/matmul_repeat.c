/* kernels.matmul_repeat.cuda: the cuBLASLt GEMMs of gpt2-124m's backward at
 * their real size (B=16 T=1024, so N = 16384 rows; bf16), repeated from the
 * same inputs, give the same bits every time (issue 21: cuBLASLt may pick a
 * split-K algorithm for a long K, whose reduction must still be
 * reproducible). Through the backend's ops:
 *   fc:      matmul_bwd: dinp(16384,768) = dout(16384,3072) @ weight(3072,768),
 *            dweight(3072,768) += dout^T @ inp(16384,768) (K = 16384),
 *            dbias(3072) += column sums of dout;
 *            matmul_fwd: out(16384,3072) = inp @ weight^T + bias;
 *   lm_head: matmul_bwd: dinp(16384,768) = dout(16384,50304) @ wte(50304,768),
 *            dweight(50304,768) += dout^T @ inp (K = 16384), no bias.
 * Each repeat starts dweight and dbias from the same nonzero values; every
 * output is compared bytewise with the first repeat's, must have changed
 * (dweight, dbias) and must be finite.
 * Sizes: GT_TEST_MATMUL_REPEAT=full (the default on a GPU) or small (the
 * default on the CPU emulator, where the full sizes would take hours:
 * N 256, C 96, fc OC 384, lm_head OC 3144; the same code and calls). On an
 * H100 the full run is a few seconds of GEMMs (the lm_head's are 1.3 TFLOP
 * each) plus the host's input generation (2.5 GB of bf16).
 * Exit 77: no GPU. */
#include "gt_config.h"
#include "engine/timer.h"
#include "kernels/tests/testutil.h"

#if GT_HAVE_CUDA

#define REPEATS 3

static int g_fails;

static double now_s(void) {
    return (double)gt_now_ns() * 1e-9;
}

/* n bf16 values, uniform in [-scale, scale) truncated to bf16, from a
 * counter hash of (stream, i): cheap enough for 824M values. */
static uint16_t *gen_bf16(size_t n, uint64_t stream, float scale) {
    uint16_t *h = tu_xmalloc(n * 2);
    for (size_t i = 0; i < n; i++) {
        uint64_t z = (stream << 40) + i + 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        float f = ((float)(int32_t)(z >> 40) / 8388608.0f - 1.0f) * scale; /* 24 bits */
        uint32_t u;
        memcpy(&u, &f, 4);
        h[i] = (uint16_t)(u >> 16);
    }
    return h;
}

/* n bf16 on the device: h's values, or left as allocated (h NULL) */
static void *up(gt_backend *be, const uint16_t *h, size_t n) {
    if (h) return tu_upload_raw(be, h, n * 2);
    void *d = NULL;
    gt_status s = gt_backend_alloc(be, n * 2, &d);
    if (s != GT_OK) tu_die("alloc", s);
    return d;
}

static uint16_t *down(gt_backend *be, const void *d, size_t n) {
    return tu_download_raw(be, d, n * 2);
}

/* got (repeat r) against want (repeat 0); init: the values before the op
 * for an accumulated output (NULL: overwritten), which must change */
static void cmp(const char *what, int r, const uint16_t *want, const uint16_t *got,
                const uint16_t *init, size_t n) {
    size_t diff = 0, first = 0, nonfinite = 0, changed = 0;
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i] && diff++ == 0) first = i;
        if ((got[i] & 0x7f80) == 0x7f80) nonfinite++;
        if (init && got[i] != init[i]) changed++;
    }
    if (diff) {
        g_fails++;
        printf("FAIL %s repeat %d: %zu of %zu values differ from repeat 0 (first [%zu]: 0x%04x, "
               "repeat 0 0x%04x)\n",
               what, r, diff, n, first, got[first], want[first]);
    }
    if (nonfinite) {
        g_fails++;
        printf("FAIL %s repeat %d: %zu of %zu values not finite\n", what, r, nonfinite, n);
    }
    if (init && changed < n / 2) {
        g_fails++;
        printf("FAIL %s repeat %d: only %zu of %zu values changed by the op\n", what, r, changed,
               n);
    }
}

/* matmul_bwd (and with fwd, matmul_fwd) of one layer, REPEATS times. */
static void layer(gt_backend *be, const char *name, int N, int C, int OC, int bias, int fwd) {
    double t0 = now_s();
    gt_kctx k = {be, GT_DTYPE_BF16};
    size_t nin = (size_t)N * C, nw = (size_t)OC * C, nout = (size_t)N * OC;
    uint16_t *h_in = gen_bf16(nin, 1, 1.0f), *h_w = gen_bf16(nw, 2, 0.05f);
    uint16_t *h_dout = gen_bf16(nout, 3, 0.01f), *h_dw0 = gen_bf16(nw, 4, 0.1f);
    uint16_t *h_b = bias ? gen_bf16((size_t)OC, 5, 0.1f) : NULL;
    uint16_t *h_db0 = bias ? gen_bf16((size_t)OC, 6, 0.1f) : NULL;
    void *inp = up(be, h_in, nin), *w = up(be, h_w, nw), *dout = up(be, h_dout, nout);
    void *dinp = up(be, NULL, nin), *dw = up(be, NULL, nw);
    void *b = bias ? up(be, h_b, (size_t)OC) : NULL, *db = bias ? up(be, NULL, (size_t)OC) : NULL;
    void *out = fwd ? up(be, NULL, nout) : NULL;
    double t1 = now_s();
    uint16_t *ref[4] = {0};
    double gemm_s = 0.0;
    for (int r = 0; r < REPEATS; r++) {
        gt_status s = be->copy_to_device(be, dw, h_dw0, nw * 2);
        if (s == GT_OK && bias) s = be->copy_to_device(be, db, h_db0, (size_t)OC * 2);
        if (s != GT_OK) tu_die("copy_to_device", s);
        double g0 = now_s();
        s = be->ops->matmul_bwd(&k, dinp, dw, db, dout, inp, w, N, C, OC);
        if (s == GT_OK && fwd) s = be->ops->matmul_fwd(&k, out, inp, w, b, N, C, OC);
        uint16_t *got[4] = {down(be, dinp, nin), down(be, dw, nw),
                            bias ? down(be, db, (size_t)OC) : NULL,
                            fwd ? down(be, out, nout) : NULL};
        gemm_s += now_s() - g0; /* the download waits for the stream */
        if (s != GT_OK) {
            char what[96];
            snprintf(what, sizeof what, "%s N%d C%d OC%d", name, N, C, OC);
            tu_die(what, s);
        }
        const char *names[4] = {"dinp", "dweight", "dbias", "out"};
        const uint16_t *init[4] = {NULL, h_dw0, h_db0, NULL};
        size_t ns[4] = {nin, nw, (size_t)OC, nout};
        for (int j = 0; j < 4; j++) {
            if (!got[j]) continue;
            char what[96];
            snprintf(what, sizeof what, "%s %s(%s)", name, j == 3 ? "matmul_fwd" : "matmul_bwd",
                     names[j]);
            if (r == 0) {
                cmp(what, r, got[j], got[j], init[j], ns[j]);
                ref[j] = got[j];
            } else {
                cmp(what, r, ref[j], got[j], init[j], ns[j]);
                free(got[j]);
            }
        }
    }
    printf("%s: N %d C %d OC %d bf16, %d repeats bitwise %s (inputs %.1f s, ops + downloads "
           "%.1f s)\n",
           name, N, C, OC, REPEATS, g_fails ? "CHECKED, failures above" : "equal", t1 - t0, gemm_s);
    for (int j = 0; j < 4; j++)
        free(ref[j]);
    void *dev[] = {inp, w, dout, dinp, dw, b, db, out};
    for (size_t j = 0; j < sizeof dev / sizeof dev[0]; j++)
        if (dev[j]) gt_backend_dealloc(be, dev[j]);
    free(h_in);
    free(h_w);
    free(h_dout);
    free(h_dw0);
    free(h_b);
    free(h_db0);
}

#endif /* GT_HAVE_CUDA */

int main(void) {
#if !GT_HAVE_CUDA
    printf("skipped: built without the cuda backend\n");
    return 77;
#else
    const char *m = getenv("GT_TEST_MATMUL_REPEAT");
    int full = !GT_CUDA_EMULATOR;
    if (m && strcmp(m, "full") == 0)
        full = 1;
    else if (m && strcmp(m, "small") == 0)
        full = 0;
    else if (m && *m) {
        fprintf(stderr, "GT_TEST_MATMUL_REPEAT=%s: use full or small\n", m);
        return 2;
    }
    gt_backend *be = tu_backend_or_skip("cuda", 0);
    printf("%s (%s sizes)\n", be->describe ? be->describe(be) : "cuda", full ? "full" : "small");
    int N = full ? 16 * 1024 : 256, C = full ? 768 : 96;
    layer(be, "fc", N, C, full ? 3072 : 384, 1, 1);
    layer(be, "lm_head", N, C, full ? 50304 : 3144, 0, 0);
    gt_backend_free(be);
    if (g_fails) {
        printf("%d check(s) failed\n", g_fails);
        return 1;
    }
    printf("ok\n");
    return 0;
#endif
}
