/* kernels.attention_own_label.cuda: every figure the cuda backend's own
 * attention kernels produce is labelled as the untuned fallback. The own
 * kernels store B*NH*T^2 fp32 scores and read k rows uncoalesced; whenever
 * attention_fwd / attention_bwd run them, the backend's notes (which the
 * kernels suite's backend_notes and the train results carry) must say
 * "own attention (fallback: stores B*NH*T^2 fp32 scores, uncoalesced
 * reads; not tuned for speed)" for that op and shape:
 *   - fp32 (cuDNN's SDPA takes bf16/fp16 only), auto mode;
 *   - bf16 under GT_CUDA_ATTENTION=own;
 * and a bf16 call that cuDNN's path takes carries no such label (skipped
 * when cuDNN does not take it here: a build without cuDNN).
 * Exit 77: no GPU. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>

#include "kernels/tests/testutil.h"

#define LABEL "own attention (fallback: stores B*NH*T^2 fp32 scores, uncoalesced reads"

/* Runs attention fwd + bwd once on be for (dt, B, T, C, NH) on random data. */
static gt_status run_att(gt_backend *be, gt_dtype dt, int B, int T, int C, int NH) {
    size_t n3 = (size_t)B * T * 3 * C, n1 = (size_t)B * T * C;
    gt_kctx k = {be, dt};
    size_t af = gt_attention_state_floats(be->ops, &k, B, T, C, NH);
    float *h = tu_xmalloc(n3 * sizeof(float));
    gt_rng_fill_normal(h, n3, 0.0f, 1.0f, TU_SEED, 31, 0);
    void *qkv = tu_upload(be, dt, h, n3), *dqkv = tu_upload(be, dt, h, n3);
    void *dout = tu_upload(be, dt, h, n1), *out = NULL, *att = NULL;
    gt_status s = gt_backend_alloc(be, n1 * gt_dtype_size(dt), &out);
    if (s == GT_OK) s = gt_backend_alloc(be, af * sizeof(float), &att);
    if (s == GT_OK) s = be->ops->attention_fwd(&k, out, att, qkv, B, T, C, NH);
    if (s == GT_OK) s = be->ops->attention_bwd(&k, dqkv, dout, qkv, out, att, B, T, C, NH);
    gt_backend_dealloc(be, qkv);
    gt_backend_dealloc(be, dqkv);
    gt_backend_dealloc(be, dout);
    gt_backend_dealloc(be, out);
    gt_backend_dealloc(be, att);
    free(h);
    return s;
}

/* 1 when the notes hold "<op> B.. T.. NH.. hs.. <dt>: " + LABEL. */
static int labelled(const char *notes, const char *op, int B, int T, int NH, int hs, gt_dtype dt) {
    char want[256];
    snprintf(want, sizeof want, "%s B%d T%d NH%d hs%d %s: " LABEL, op, B, T, NH, hs,
             gt_dtype_name(dt));
    return notes && strstr(notes, want) != NULL;
}

static int check(const char *what, gt_backend *be, gt_dtype dt, int B, int T, int C, int NH,
                 int want) {
    gt_status s = run_att(be, dt, B, T, C, NH);
    if (s != GT_OK) {
        printf("  %-34s FAIL: %s: %s\n", what, gt_status_name(s), gt_last_error());
        return 1;
    }
    const char *notes = be->notes ? be->notes(be) : "";
    int f = labelled(notes, "attention_fwd", B, T, NH, C / NH, dt),
        b = labelled(notes, "attention_bwd", B, T, NH, C / NH, dt);
    int ok = want ? f && b : !f && !b;
    printf("  %-34s fwd %s, bwd %s (want %s)  %s\n", what, f ? "labelled" : "unlabelled",
           b ? "labelled" : "unlabelled", want ? "labelled" : "unlabelled", ok ? "ok" : "FAIL");
    if (!ok) printf("notes:\n%s\n", notes);
    return !ok;
}

int main(void) {
    int fails = 0;
    unsetenv("GT_CUDA_ATTENTION");
    gt_backend *be = tu_backend_or_skip("cuda", 0);
    fails += check("fp32, auto (own kernels)", be, GT_DTYPE_FP32, 2, 5, 12, 3, 1);
    /* bf16 at a shape cuDNN's SDPA takes: no label when it did */
    int B = 1, T = 128, C = 64, NH = 1;
    gt_status s = run_att(be, GT_DTYPE_BF16, B, T, C, NH);
    const char *notes = be->notes ? be->notes(be) : "";
    if (s == GT_OK && strstr(notes, "attention_fwd B1 T128 NH1 hs64 bf16: cudnn sdpa"))
        fails += check("bf16, auto (cuDNN SDPA)", be, GT_DTYPE_BF16, B, T, C, NH, 0);
    else
        printf("  %-34s skipped: cuDNN's SDPA did not take it here (%s)\n",
               "bf16, auto (cuDNN SDPA)", s != GT_OK ? gt_last_error() : "see the notes");
    gt_error_clear();
    gt_backend_free(be);

    setenv("GT_CUDA_ATTENTION", "own", 1);
    be = tu_backend_or_skip("cuda", 0);
    fails += check("bf16, GT_CUDA_ATTENTION=own", be, GT_DTYPE_BF16, 1, 7, 16, 2, 1);
    gt_backend_free(be);
    unsetenv("GT_CUDA_ATTENTION");
    printf("attention own label: %s\n", fails ? "FAILED" : "passed");
    return fails ? 1 : 0;
}
