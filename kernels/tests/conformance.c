/* kernels.conformance.<backend>: every op of the table, forward and
 * backward, on the backend under test against the ref backend, over a grid
 * of shapes from tiny and odd to GPT-2 sized.
 *
 * usage: conformance <backend> <dtype> [op-prefix,...]
 *
 * With a third argument only the ops whose names start with one of its
 * comma-separated prefixes run (e.g. "matmul": the GEMM ops, for the
 * emulator runs that force cuBLASLt's fallbacks); a list that selects no op
 * is an error.
 *
 * The cases themselves (seeded inputs, the call on both backends, the
 * per-op tolerances and their reasons) live in kernels/conformance.c, which
 * the kernels suite shares; this program is the shape grid and the report.
 *
 * Coverage cannot go silently: an op whose slot is filled but that the grid
 * never reaches fails, and on the ref and cuda backends, which store fp32,
 * bf16 and fp16 for every op they have (ref.h, kernels/ops.h), a filled
 * slot that declines a case (GT_ERR_UNSUPPORTED: a dtype, or a shape or
 * alignment cuBLASLt/cuDNN has no algorithm for) fails too; an empty slot
 * (cuda built without cuDNN or cuBLASLt) and, on other backends, a declined
 * dtype are skips, printed and counted. Cases with an offset put every
 * array that many elements past an aligned allocation, and every array sits
 * between guard bands of sentinels: a write outside it fails the case with
 * a "guard" check naming the array (conformance.h).
 * Exit: 0 pass, 1 a check failed, 77 the backend is not available here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/conformance.h"
#include "kernels/registry.h"

typedef struct tc_ctx {
    gt_backend *be, *ref;
    gt_dtype dt;
    int no_skips; /* a declined case of a filled slot is a failure (ref, cuda) */
    int checks, fails, skips;
    int reached[GT_OP_COUNT]; /* cases of each op the grid ran */
    const char *only;         /* comma-separated op-name prefixes, or NULL: every op */
} tc_ctx;

/* Whether op is selected by t->only. */
static int selected(const tc_ctx *t, gt_op op) {
    if (!t->only) return 1;
    const char *name = gt_op_name(op), *p = t->only;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len && strncmp(name, p, len) == 0) return 1;
        p += len;
        if (*p == ',') p++;
    }
    return 0;
}

/* One op at one shape: an empty slot or a declined dtype is a skip (a
 * failure with no_skips), a failed run or an element outside the bound a
 * failure. */
static void one(tc_ctx *t, gt_op op, gt_kshape sh) {
    char lb[96];
    gt_kshape_label(op, &sh, lb, sizeof lb);
    gt_kcase *c = NULL;
    gt_kcheck ck[GT_KCHECK_MAX];
    int n = 0;
    if (!selected(t, op)) return;
    t->reached[op]++;
    gt_status s = gt_kcase_new(t->be, t->ref, t->dt, op, &sh, &c);
    if (s == GT_OK) s = gt_kcase_check(c, ck, &n);
    for (int i = 0; i < n; i++) {
        gt_kcheck *k = &ck[i];
        t->checks++;
        printf("  %-15s %-26s %-8s max_abs %.3e max_rel %.3e (rtol %.2g atol %.2g)%s",
               gt_op_name(op), lb, k->what, k->max_abs, k->max_rel, k->tol.rtol, k->tol.atol,
               k->bad ? "  FAIL" : "  ok");
        if (k->bad) {
            t->fails++;
            printf(" %zu bad, first [%zu] got %.9g want %.9g", k->bad, k->first_bad, k->got_first,
                   k->want_first);
        }
        printf("\n");
    }
    if (s == GT_ERR_UNSUPPORTED && t->no_skips && gt_ops_slot(t->be->ops, op)) {
        printf("  %-15s %-26s FAIL: skipped on %s, which must handle %s: %s\n", gt_op_name(op),
               lb, t->be->name, gt_dtype_name(t->dt), gt_last_error());
        t->fails++;
    } else if (s == GT_ERR_UNSUPPORTED) {
        printf("  %-15s %-26s skipped: %s\n", gt_op_name(op), lb, gt_last_error());
        t->skips++;
    } else if (s != GT_OK) {
        printf("  %-15s %-26s FAIL: %s: %s\n", gt_op_name(op), lb, gt_status_name(s),
               gt_last_error());
        t->fails++;
    }
    gt_kcase_free(c);
}

int main(int argc, char **argv) {
    const char *bname = argc > 1 ? argv[1] : "cpu";
    const char *dname = argc > 2 ? argv[2] : "fp32";
    tc_ctx t = {0};
    if (gt_dtype_parse(dname, &t.dt) != GT_OK) {
        fprintf(stderr, "unknown dtype '%s'\n", dname);
        return 2;
    }
    if (argc > 3) {
        t.only = argv[3];
        int any = 0;
        for (int op = 0; op < GT_OP_COUNT; op++) any |= selected(&t, (gt_op)op);
        if (!any) {
            fprintf(stderr, "conformance: no op name starts with any of '%s' (op names: "
                            "matmul_fwd, layernorm_bwd, ...: see kernels/ops.h)\n", t.only);
            return 2;
        }
    }
    gt_backend_config cfg = {.threads = 0, .device = -1};
    gt_status s = gt_backend_new(bname, &cfg, &t.be);
    if (s == GT_ERR_UNSUPPORTED) {
        printf("skipped: backend %s unavailable: %s\n", bname, gt_last_error());
        return 77;
    }
    if (s != GT_OK || (s = gt_backend_new("ref", &cfg, &t.ref)) != GT_OK) {
        fprintf(stderr, "gt_backend_new: %s: %s\n", gt_status_name(s), gt_last_error());
        return 2;
    }
    t.no_skips = strcmp(t.be->name, "ref") == 0 || strcmp(t.be->name, "cuda") == 0;
    printf("conformance: %s (%s) vs ref, storage %s%s%s%s\n", bname, t.be->describe(t.be),
           gt_dtype_name(t.dt), t.no_skips ? " (a filled slot that declines a case fails)" : "",
           t.only ? ", ops starting with " : "", t.only ? t.only : "");

    /* B, T, C, V; last, more positions (400) than cuda's encoder_bwd scans
     * in one shared-memory tile (256), with tokens repeating across tiles */
    static const int enc[][4] = {{1, 1, 1, 1},     {2, 3, 7, 5}, {3, 17, 65, 11},
                                 {4, 64, 768, 50}, {2, 200, 8, 5}};
    for (size_t i = 0; i < sizeof enc / sizeof enc[0]; i++) {
        gt_kshape sh = {.B = enc[i][0], .T = enc[i][1], .C = enc[i][2], .V = enc[i][3]};
        one(&t, GT_OP_ENCODER_FWD, sh);
        one(&t, GT_OP_ENCODER_BWD, sh);
    }
    static const int ln[][2] = {{1, 1}, {3, 7}, {17, 64}, {65, 65}, {256, 768}};
    for (size_t i = 0; i < sizeof ln / sizeof ln[0]; i++) {
        gt_kshape sh = {.N = ln[i][0], .C = ln[i][1]};
        one(&t, GT_OP_LAYERNORM_FWD, sh);
        one(&t, GT_OP_LAYERNORM_BWD, sh);
    }
    /* N, C, OC, bias, offset. Then the dense models' layers: mlp-tiny's
     * first (C = in_dim 16) and head (K = 8), convnet-tiny's fc (16 -> 4,
     * also at a micro-batch of 2), resnet-small's (64 -> 10); and at odd
     * element offsets, where a model's weights, bias and gradients sit in
     * its flat buffers (2-byte aligned in bf16/fp16). */
    static const int mm[][5] = {{1, 1, 1, 1},     {3, 7, 17, 1},    {17, 64, 65, 0},
                                {65, 33, 7, 1},   {7, 300, 129, 1}, {64, 768, 768, 1},
                                {256, 128, 320, 0},
                                {64, 16, 64, 1},  {64, 64, 8, 1},   {32, 16, 4, 1},
                                {2, 16, 4, 1},    {16, 64, 10, 1},
                                {32, 16, 4, 1, 1}, {16, 64, 10, 1, 1}, {64, 64, 8, 1, 3},
                                {3, 7, 17, 0, 1}};
    for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++) {
        gt_kshape sh = {.N = mm[i][0], .C = mm[i][1], .OC = mm[i][2], .bias = mm[i][3],
                        .offset = mm[i][4]};
        one(&t, GT_OP_MATMUL_FWD, sh);
        one(&t, GT_OP_MATMUL_BWD, sh);
    }
    /* linear + GELU: N = 1, OC (the forward's aux ld) or C (the backward's)
     * not a multiple of 8 (cuda's fallback), multiples of 8 (cuda's
     * cuBLASLt epilogues in bf16/fp16), no bias, gpt2's fc and fcproj */
    /* Then mlp-tiny's: its first layer (16 -> 64: both epilogues in
     * bf16/fp16), the head's backward through GELU' (C 64, OC = K 8 or 10,
     * or 4 at a micro-batch of 2), and the same at odd offsets (a bias not
     * 16-byte aligned, and a pre/aux pointer that is only 2-byte aligned
     * in bf16/fp16: whatever cuBLASLt's heuristic makes of it). */
    static const int mg[][5] = {{1, 1, 1, 1},     {1, 16, 8, 0},      {3, 7, 17, 1},
                                {17, 64, 65, 0},  {65, 40, 24, 1},    {7, 300, 129, 1},
                                {32, 768, 3072, 1}, {32, 3072, 768, 1}, {256, 128, 320, 0},
                                {64, 16, 64, 1},  {64, 64, 8, 1},     {64, 64, 10, 1},
                                {2, 64, 4, 1},
                                {64, 16, 64, 1, 1}, {64, 64, 8, 1, 1}, {17, 64, 16, 0, 3}};
    for (size_t i = 0; i < sizeof mg / sizeof mg[0]; i++) {
        gt_kshape sh = {.N = mg[i][0], .C = mg[i][1], .OC = mg[i][2], .bias = mg[i][3],
                        .offset = mg[i][4]};
        one(&t, GT_OP_MATMUL_GELU_FWD, sh);
        one(&t, GT_OP_MATMUL_DGELU_BWD, sh);
    }
    /* B, T, C, NH; last, a head size of 200 (cuda's own kernels keep up to
     * 8 values of a row per lane: d = lane + 32 i, the last i partial) */
    static const int at[][4] = {{1, 1, 4, 1},    {2, 7, 12, 3},   {1, 17, 32, 4},
                                {2, 64, 128, 2}, {1, 65, 256, 4}, {3, 3, 3, 3},
                                {1, 33, 200, 1}};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        gt_kshape sh = {.B = at[i][0], .T = at[i][1], .C = at[i][2], .NH = at[i][3]};
        one(&t, GT_OP_ATTENTION_FWD, sh);
        one(&t, GT_OP_ATTENTION_BWD, sh);
    }
    /* n, offset: the elementwise ops at odd offsets too (cast: the compute
     * copy of master weights [lo, hi) at any lo) */
    static const size_t pw[][2] = {{1, 0}, {7, 0}, {65, 0}, {100003, 0}, {1001, 1}, {65, 3}};
    for (size_t i = 0; i < sizeof pw / sizeof pw[0]; i++) {
        gt_kshape sh = {.n = pw[i][0], .offset = (int)pw[i][1]};
        one(&t, GT_OP_GELU_FWD, sh);
        one(&t, GT_OP_GELU_BWD, sh);
        one(&t, GT_OP_RESIDUAL_FWD, sh);
        one(&t, GT_OP_RESIDUAL_BWD, sh);
        one(&t, GT_OP_RELU_FWD, sh);
        one(&t, GT_OP_RELU_BWD, sh);
        one(&t, GT_OP_CAST, sh);
    }
    /* N, V, Vp, offset; then the dense models' heads, V = Vp = K (mlp-tiny
     * 8, mlp-small 16, convnet-tiny 4, resnet-small 10: rows that are not
     * a multiple of any vector width), and at odd offsets */
    static const int cl[][4] = {{1, 1, 1},   {3, 7, 16},   {17, 65, 65}, {8, 1000, 1024},
                                {4, 50257, 50304},
                                {64, 8, 8},  {64, 16, 16}, {32, 4, 4},   {16, 10, 10},
                                {2, 10, 10}, {32, 4, 4, 1}, {5, 10, 10, 3}};
    for (size_t i = 0; i < sizeof cl / sizeof cl[0]; i++) {
        gt_kshape sh = {.N = cl[i][0], .V = cl[i][1], .Vp = cl[i][2], .offset = cl[i][3]};
        one(&t, GT_OP_CLASSIFIER_FWD, sh);
        one(&t, GT_OP_CLASSIFIER_BWD, sh);
    }
    /* n, offset: AdamW over a run of tensors and sumsq over a range that
     * start at an odd element (update_range, sharded optimizer state) */
    static const size_t op[][2] = {{0, 0}, {1, 0}, {17, 0}, {100003, 0}, {1000003, 0},
                                   {1088, 1}, {65, 3}};
    for (size_t i = 0; i < sizeof op / sizeof op[0]; i++) {
        gt_kshape sh = {.n = op[i][0], .step = i % 2 ? 1 : 10, .offset = (int)op[i][1]};
        one(&t, GT_OP_ADAMW, sh);
        one(&t, GT_OP_SUMSQ, sh);
    }

    /* vision ops: N, C, H, W. 1x1 images, N = 1, C = 1, odd sizes, a
     * BatchNorm1d shape (HW 1), ResNet-ish stages; batchnorm in both modes,
     * with a count N HW of 1 (running variance unchanged) and of 2. */
    /* Then convnet-tiny's maps (8 channels 8x8, 16 at 4x4, at batch 32 and
     * at a micro-batch of 2), resnet-small's last (64 at 8x8, batch 16),
     * and odd offsets (BatchNorm weight and bias at odd parameter
     * offsets). Last, maps of 2 to 15 values (3x3, 2x3) in more channels
     * than cpu's batchnorm blocks (32 channels a work item below HW 16, a
     * partial last block), HW 9 on its 8-lane sums with a tail, HW 6 on
     * its scalar ones and on avgpool's scalar rows (HW < 8). Last, a channel
     * of 3267 values, which cuda's batchnorm cuts into 2 chunks (more than
     * 2048 values, few channels), the last one shorter: the chunks' merge.
     * N, C, H, W, offset. */
    static const int im[][5] = {{1, 1, 1, 1}, {2, 1, 1, 1},   {1, 3, 7, 5},
                                {3, 17, 1, 1}, {4, 16, 8, 8}, {64, 256, 1, 1},
                                {8, 64, 16, 16}, {2, 512, 4, 4},
                                {32, 8, 8, 8}, {32, 16, 4, 4}, {2, 16, 4, 4}, {16, 64, 8, 8},
                                {2, 8, 8, 8, 1}, {3, 16, 4, 4, 3},
                                {4, 40, 3, 3}, {5, 36, 2, 3}, {3, 2, 33, 33}};
    for (size_t i = 0; i < sizeof im / sizeof im[0]; i++) {
        gt_kshape sh = {.N = im[i][0], .C = im[i][1], .H = im[i][2], .W = im[i][3],
                        .offset = im[i][4]};
        one(&t, GT_OP_AVGPOOL_FWD, sh);
        one(&t, GT_OP_AVGPOOL_BWD, sh);
        sh.train = 1;
        one(&t, GT_OP_BATCHNORM_FWD, sh);
        one(&t, GT_OP_BATCHNORM_BWD, sh);
        sh.train = 0;
        one(&t, GT_OP_BATCHNORM_FWD, sh);
    }
    /* BatchNorm in training mode on inputs whose mean drifts along each
     * channel (conformance.h): cuda cuts a channel of 3267 values into 2
     * chunks, one of 5120 into 3, whose means lie far apart; the merge of
     * their statistics needs Chan's between-chunk term d^2 n_a n_b / n
     * (iid inputs give chunks of nearly equal means and hide it).
     * N, C, H, W. */
    static const int bd[][4] = {{3, 2, 33, 33}, {2, 1, 64, 40}};
    for (size_t i = 0; i < sizeof bd / sizeof bd[0]; i++) {
        gt_kshape sh = {.N = bd[i][0], .C = bd[i][1], .H = bd[i][2], .W = bd[i][3], .train = 1,
                        .drift = 1};
        one(&t, GT_OP_BATCHNORM_FWD, sh);
        one(&t, GT_OP_BATCHNORM_BWD, sh);
    }
    /* conv2d: N, C, H, W, OC, KH, KW, stride, pad, bias. 1x1 images, kernels
     * 1/3/5/7 and 3x1, pad 0..3, stride 2 on odd sizes, the 1x1 stride-1
     * pad-0 path and its stride-2 sibling, ResNet-ish blocks, and shapes
     * whose im2col spans one image or a partial group of images on cpu. */
    /* Then every convolution of convnet-tiny (stem 3 -> 8, 8 -> 8, 8 -> 16
     * stride 2, 16 -> 16 and the 1x1 stride-2 projection; batch 32, and
     * micro-batches of 2 and 1), resnet-small's stem (3 -> 16 on 32x32,
     * batch 16) and a projection, and odd offsets (the weights and their
     * gradient at an odd parameter offset: 2-byte aligned in bf16/fp16).
     * Then paths of cpu's im2col/col2im that only some shapes take: "same"
     * convolutions taller than the rows col2im adds flat at a time (256
     * rows for a 3x3 pad 1, 85 for a 7x7 pad 3); one image per group with
     * a plane count (131) that col2im's runs of 2 planes do not divide;
     * 1x1 with padding and 1x3 without, which must not take the 1x1
     * stride-1 pad-0 path. Last column: offset. */
    static const int cv[][11] = {
        {1, 1, 1, 1, 1, 1, 1, 1, 0, 1},      {1, 1, 1, 1, 2, 3, 3, 1, 1, 1},
        {2, 3, 7, 7, 5, 3, 3, 2, 1, 1},      {1, 2, 9, 7, 3, 3, 3, 2, 0, 0},
        {2, 3, 8, 8, 4, 5, 5, 1, 2, 1},      {2, 3, 11, 11, 4, 7, 7, 2, 2, 1},
        {1, 3, 15, 13, 8, 7, 7, 2, 3, 0},    {3, 5, 6, 4, 7, 3, 1, 1, 1, 1},
        {2, 16, 8, 8, 32, 1, 1, 1, 0, 1},    {2, 16, 9, 9, 32, 1, 1, 2, 0, 0},
        {4, 16, 16, 16, 16, 3, 3, 1, 1, 1},  {4, 16, 16, 16, 32, 3, 3, 2, 1, 0},
        {8, 64, 8, 8, 64, 3, 3, 1, 1, 0},    {3, 32, 36, 36, 4, 3, 3, 1, 1, 1},
        {2, 64, 32, 32, 8, 3, 3, 1, 1, 1},
        {32, 3, 8, 8, 8, 3, 3, 1, 1, 0},     {32, 8, 8, 8, 8, 3, 3, 1, 1, 0},
        {32, 8, 8, 8, 16, 3, 3, 2, 1, 0},    {32, 16, 4, 4, 16, 3, 3, 1, 1, 0},
        {32, 8, 8, 8, 16, 1, 1, 2, 0, 0},    {2, 16, 4, 4, 16, 3, 3, 1, 1, 0},
        {1, 8, 8, 8, 16, 1, 1, 2, 0, 0},     {16, 3, 32, 32, 16, 3, 3, 1, 1, 0},
        {16, 16, 16, 16, 32, 1, 1, 2, 0, 0},
        {2, 3, 8, 8, 8, 3, 3, 1, 1, 0, 1},   {2, 8, 8, 8, 16, 1, 1, 2, 0, 0, 1},
        {2, 8, 8, 8, 16, 3, 3, 2, 1, 1, 3},
        {1, 2, 260, 4, 3, 3, 3, 1, 1, 1},    {1, 2, 90, 7, 3, 7, 7, 1, 3, 0},
        {2, 131, 22, 22, 2, 3, 3, 1, 1, 1},  {2, 3, 5, 4, 4, 1, 1, 1, 1, 1},
        {2, 4, 6, 9, 5, 1, 3, 1, 0, 1}};
    for (size_t i = 0; i < sizeof cv / sizeof cv[0]; i++) {
        gt_kshape sh = {.N = cv[i][0], .C = cv[i][1], .H = cv[i][2], .W = cv[i][3],
                        .OC = cv[i][4], .KH = cv[i][5], .KW = cv[i][6], .stride = cv[i][7],
                        .pad = cv[i][8], .bias = cv[i][9], .offset = cv[i][10]};
        one(&t, GT_OP_CONV2D_FWD, sh);
        one(&t, GT_OP_CONV2D_BWD, sh);
    }

    for (int op = 0; op < GT_OP_COUNT; op++)
        if (gt_ops_slot(t.be->ops, (gt_op)op) && selected(&t, (gt_op)op) && !t.reached[op]) {
            printf("  %-15s FAIL: the backend has it, the shape grid never runs it\n",
                   gt_op_name((gt_op)op));
            t.fails++;
        }
    printf("conformance %s %s: %d checks, %d failed, %d skipped\n", bname, gt_dtype_name(t.dt),
           t.checks, t.fails, t.skips);
    gt_backend_free(t.ref);
    gt_backend_free(t.be);
    return t.fails ? 1 : 0;
}
