/* The shape grid: one list of shapes per op family, shared by the
 * conformance tests (kernels/tests/conformance.c: the rows marked for the
 * tests, on every backend and dtype they run) and the kernels suite
 * (suites/kernels.c: QUICK rows at every effort, DEFAULT from default
 * effort, FULL at full). The op descriptors
 * (kernels/conformance/<family>.c) name their family's list.
 *
 * Each family has tiny and odd shapes for the edges (1, primes,
 * non-multiples of any vector width), the model presets' own layers (mlp,
 * convnet, resnet), arrays at odd element offsets ("_off<k>": where a
 * model's parameters and gradients sit in its flat buffers, 2-byte aligned
 * in bf16/fp16), and GPT-2 124M's shapes (C 768, NH 12, V 50257 padded to
 * 50304, B 4 T 64, N = B T = 256) for speed. The tests check every shape
 * the ref oracle checks in well under a second; the GPT-2-sized ones,
 * which would make every conformance test run take minutes on ref, only
 * the suite runs. `huge`: too slow to time in a quick run. */
#include "kernels/conformance/kc.h"

/* Who runs a row (its first argument): */
#define TS GT_KTIER_NONE, 1     /* the tests only */
#define Q GT_KTIER_QUICK, 1     /* the tests, and the suite at every effort */
#define DT GT_KTIER_DEFAULT, 1  /* the tests, and the suite from default effort */
#define D GT_KTIER_DEFAULT, 0   /* the suite from default effort */
#define F GT_KTIER_FULL, 0      /* the suite at full effort */
#define KC_N(a) (sizeof a / sizeof a[0])

/* B, T, C, V; last, more positions (400) than cuda's encoder_bwd scans in
 * one shared-memory tile (256), with tokens repeating across tiles */
#define EN(t, b, tt, c, v) {t, 0, {.B = b, .T = tt, .C = c, .V = v}}
static const gt_kgrid_row encoder_rows[] = {
    EN(Q, 1, 1, 1, 1),    EN(TS, 2, 3, 7, 5),         EN(Q, 3, 17, 65, 11),
    EN(TS, 4, 64, 768, 50), EN(Q, 4, 64, 768, 1024), EN(D, 4, 64, 768, 50257),
    EN(TS, 2, 200, 8, 5),
};
const kc_grid kc_grid_encoder = {encoder_rows, KC_N(encoder_rows)};

/* N, C */
#define LN(t, n, c) {t, 0, {.N = n, .C = c}}
static const gt_kgrid_row layernorm_rows[] = {
    LN(Q, 1, 1),     LN(TS, 3, 7),     LN(TS, 17, 64),    LN(Q, 17, 65),
    LN(TS, 65, 65),   LN(Q, 256, 768), LN(D, 1024, 768),
};
const kc_grid kc_grid_layernorm = {layernorm_rows, KC_N(layernorm_rows)};

/* N, C, OC, bias, offset */
#define MM(t, n, c, oc, b, off) {t, 0, {.N = n, .C = c, .OC = oc, .bias = b, .offset = off}}
static const gt_kgrid_row matmul_rows[] = {
    MM(TS, 1, 1, 1, 1, 0),       MM(Q, 3, 7, 17, 1, 0),     MM(Q, 17, 64, 65, 0, 0),
    MM(TS, 65, 33, 7, 1, 0),     MM(TS, 7, 300, 129, 1, 0),  MM(Q, 64, 768, 768, 1, 0),
    MM(Q, 256, 128, 320, 0, 0), /* a second gated shape in a quick run: the op pools as a family */
    /* gpt2-124m at B 4 T 64: attproj, qkv, fc, fcproj */
    MM(D, 256, 768, 768, 1, 0), MM(D, 256, 768, 2304, 1, 0), MM(D, 256, 768, 3072, 1, 0),
    MM(D, 256, 3072, 768, 1, 0),
    {F, 1, {.N = 256, .C = 768, .OC = 50304}}, /* lm_head */
    /* the dense models' layers: mlp-tiny's first (C = in_dim 16) and head
     * (K = 8), convnet-tiny's fc (16 -> 4, also at a micro-batch of 2),
     * resnet-small's (64 -> 10) */
    MM(TS, 64, 16, 64, 1, 0),    MM(DT, 64, 64, 8, 1, 0),    MM(TS, 32, 16, 4, 1, 0),
    MM(TS, 2, 16, 4, 1, 0),      MM(DT, 16, 64, 10, 1, 0),
    /* at odd element offsets */
    MM(TS, 32, 16, 4, 1, 1),     MM(TS, 16, 64, 10, 1, 1),   MM(TS, 64, 64, 8, 1, 3),
    MM(TS, 3, 7, 17, 0, 1),
};
const kc_grid kc_grid_matmul = {matmul_rows, KC_N(matmul_rows)};

/* linear + GELU (matmul_gelu_fwd, matmul_dgelu_bwd): N = 1, OC (the
 * forward's aux ld) or C (the backward's) not a multiple of 8 (cuda's
 * fallback), multiples of 8 (cuda's cuBLASLt epilogues in bf16/fp16), no
 * bias, gpt2's fc and fcproj at N 32 and, for speed, at B 4 T 64. Then
 * mlp-tiny's: its first layer (16 -> 64: both epilogues in bf16/fp16), the
 * head's backward through GELU' (C 64, OC = K 8 or 10, or 4 at a
 * micro-batch of 2), and the same at odd offsets (a bias not 16-byte
 * aligned, and a pre/aux pointer that is only 2-byte aligned in bf16/fp16:
 * whatever cuBLASLt's heuristic makes of it). N, C, OC, bias, offset. */
static const gt_kgrid_row matmul_gelu_rows[] = {
    MM(TS, 1, 1, 1, 1, 0),         MM(TS, 1, 16, 8, 0, 0),        MM(Q, 3, 7, 17, 1, 0),
    MM(Q, 17, 64, 65, 0, 0),      MM(TS, 65, 40, 24, 1, 0),      MM(TS, 7, 300, 129, 1, 0),
    MM(Q, 64, 256, 1024, 1, 0),   MM(TS, 32, 768, 3072, 1, 0),   MM(TS, 32, 3072, 768, 1, 0),
    MM(Q, 256, 128, 320, 0, 0), /* a second gated shape in a quick run: the op pools as a family */
    MM(D, 256, 768, 3072, 1, 0), /* fc forward (768 -> 3072 with GELU) */
    MM(D, 256, 3072, 768, 1, 0), /* fcproj's backward through GELU' */
    MM(DT, 64, 16, 64, 1, 0),      MM(DT, 64, 64, 8, 1, 0),       MM(TS, 64, 64, 10, 1, 0),
    MM(TS, 2, 64, 4, 1, 0),
    MM(TS, 64, 16, 64, 1, 1),      MM(TS, 64, 64, 8, 1, 1),       MM(TS, 17, 64, 16, 0, 3),
};
const kc_grid kc_grid_matmul_gelu = {matmul_gelu_rows, KC_N(matmul_gelu_rows)};

/* B, T, C, NH; a head size of 200 (cuda's own kernels keep up to 8 values
 * of a row per lane: d = lane + 32 i, the last i partial) */
#define AT(t, h, b, tt, c, nh) {t, h, {.B = b, .T = tt, .C = c, .NH = nh}}
static const gt_kgrid_row attention_rows[] = {
    AT(Q, 0, 1, 1, 4, 1),     AT(Q, 0, 2, 7, 12, 3),      AT(TS, 0, 1, 17, 32, 4),
    AT(TS, 0, 2, 64, 128, 2),  AT(TS, 0, 1, 65, 256, 4),    AT(TS, 0, 3, 3, 3, 3),
    AT(TS, 0, 1, 33, 200, 1),  AT(Q, 0, 4, 64, 768, 12),   AT(D, 0, 4, 256, 768, 12),
    AT(F, 1, 4, 1024, 768, 12),
};
const kc_grid kc_grid_attention = {attention_rows, KC_N(attention_rows)};

/* gelu, residual, relu, cast: n, offset; at odd offsets too (cast: the
 * compute copy of master weights [lo, hi) at any lo) */
#define PW(t, nn, off) {t, 0, {.n = nn, .offset = off}}
static const gt_kgrid_row pointwise_rows[] = {
    PW(Q, 1, 0),         PW(TS, 7, 0),    PW(Q, 65, 0), PW(Q, 100003, 0),
    PW(Q, 256 * 3072, 0), /* gelu of the fc layer, N256 */
    PW(D, 1024 * 3072, 0),
    PW(TS, 1001, 1),      PW(TS, 65, 3),
};
const kc_grid kc_grid_pointwise = {pointwise_rows, KC_N(pointwise_rows)};

/* N, V, Vp, offset; the dense models' heads, V = Vp = K (mlp-tiny 8,
 * mlp-small 16, convnet-tiny 4, resnet-small 10: rows that are not a
 * multiple of any vector width), and at odd offsets */
#define CL(t, n, v, vp, off) {t, 0, {.N = n, .V = v, .Vp = vp, .offset = off}}
static const gt_kgrid_row classifier_rows[] = {
    CL(Q, 1, 1, 1, 0),           CL(TS, 3, 7, 16, 0),          CL(Q, 17, 65, 65, 0),
    CL(TS, 8, 1000, 1024, 0),     CL(TS, 4, 50257, 50304, 0),   CL(Q, 32, 50257, 50304, 0),
    CL(D, 256, 50257, 50304, 0),
    CL(TS, 64, 8, 8, 0),          CL(TS, 64, 16, 16, 0),
    CL(DT, 32, 4, 4, 0), /* convnet-tiny's head */
    CL(DT, 16, 10, 10, 0), /* resnet-small's head */
    CL(TS, 2, 10, 10, 0),         CL(TS, 32, 4, 4, 1),          CL(TS, 5, 10, 10, 3),
};
const kc_grid kc_grid_classifier = {classifier_rows, KC_N(classifier_rows)};

/* adamw, sumsq: n, step, offset; AdamW over a run of tensors and sumsq
 * over a range that start at an odd element (update_range, sharded
 * optimizer state) */
#define OP(t, h, nn, st, off) {t, h, {.n = nn, .step = st, .offset = off}}
static const gt_kgrid_row optim_rows[] = {
    OP(TS, 0, 0, 10, 0),        OP(Q, 0, 1, 1, 0),       OP(Q, 0, 17, 10, 0),
    OP(TS, 0, 100003, 1, 0),    OP(Q, 0, 1000003, 10, 0), OP(D, 0, 10000000, 1, 0),
    OP(F, 1, 124475904, 1, 0), /* every parameter of gpt2-124m */
    OP(TS, 0, 1088, 1, 1),      OP(TS, 0, 65, 10, 3),
};
const kc_grid kc_grid_optim = {optim_rows, KC_N(optim_rows)};

/* conv2d: N, C, H, W, OC, KH, KW, stride, pad, bias, offset. 1x1 images,
 * kernels 1/3/5/7 and 3x1, pad 0..3, stride 2 on odd sizes, the 1x1
 * stride-1 pad-0 path and its stride-2 sibling, ResNet-ish blocks, and
 * shapes whose im2col spans one image or a partial group of images on
 * cpu. Then a CIFAR ResNet's stages at batch 32 (16 channels 32x32, 32 at
 * 16x16, 64 at 8x8), its 1x1 shortcut and stride-2 downsampling; every
 * convolution of convnet-tiny (stem 3 -> 8, 8 -> 8, 8 -> 16 stride 2,
 * 16 -> 16 and the 1x1 stride-2 projection; batch 32, and micro-batches of
 * 2 and 1), resnet-small's stem (3 -> 16 on 32x32, batch 16) and a
 * projection; from full effort the ImageNet stem (7x7 stride 2 on 224x224)
 * and the last stage. Then odd offsets (the weights and their gradient at
 * an odd parameter offset: 2-byte aligned in bf16/fp16), and paths of
 * cpu's im2col/col2im that only some shapes take: "same" convolutions
 * taller than the rows col2im adds flat at a time (256 rows for a 3x3 pad
 * 1, 85 for a 7x7 pad 3); one image per group with a plane count (131)
 * that col2im's runs of 2 planes do not divide; 1x1 with padding and 1x3
 * without, which must not take the 1x1 stride-1 pad-0 path. */
#define CV(t, h, n, c, hh, w, oc, kh, kw, s, p, b, off)                                    \
    {t, h, {.N = n, .C = c, .H = hh, .W = w, .OC = oc, .KH = kh, .KW = kw, .stride = s,      \
            .pad = p, .bias = b, .offset = off}}
static const gt_kgrid_row conv2d_rows[] = {
    CV(Q, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0),
    CV(TS, 0, 1, 1, 1, 1, 2, 3, 3, 1, 1, 1, 0),
    CV(Q, 0, 2, 3, 7, 7, 5, 3, 3, 2, 1, 1, 0),
    CV(TS, 0, 1, 2, 9, 7, 3, 3, 3, 2, 0, 0, 0),
    CV(TS, 0, 2, 3, 8, 8, 4, 5, 5, 1, 2, 1, 0),
    CV(TS, 0, 2, 3, 11, 11, 4, 7, 7, 2, 2, 1, 0),
    CV(TS, 0, 1, 3, 15, 13, 8, 7, 7, 2, 3, 0, 0),
    CV(TS, 0, 3, 5, 6, 4, 7, 3, 1, 1, 1, 1, 0),
    CV(TS, 0, 2, 16, 8, 8, 32, 1, 1, 1, 0, 1, 0),
    CV(TS, 0, 2, 16, 9, 9, 32, 1, 1, 2, 0, 0, 0),
    CV(TS, 0, 4, 16, 16, 16, 16, 3, 3, 1, 1, 1, 0),
    CV(Q, 0, 4, 16, 16, 16, 16, 3, 3, 1, 1, 0, 0),
    CV(Q, 0, 4, 16, 16, 16, 32, 3, 3, 2, 1, 0, 0), /* a second gated shape in a quick run */
    CV(TS, 0, 8, 64, 8, 8, 64, 3, 3, 1, 1, 0, 0),
    CV(TS, 0, 3, 32, 36, 36, 4, 3, 3, 1, 1, 1, 0),
    CV(TS, 0, 2, 64, 32, 32, 8, 3, 3, 1, 1, 1, 0),
    /* a CIFAR ResNet at batch 32 */
    CV(D, 0, 32, 3, 32, 32, 16, 3, 3, 1, 1, 0, 0),
    CV(D, 0, 32, 16, 32, 32, 16, 3, 3, 1, 1, 0, 0),
    CV(D, 0, 32, 32, 16, 16, 64, 3, 3, 2, 1, 0, 0),
    CV(D, 0, 32, 64, 8, 8, 64, 3, 3, 1, 1, 0, 0),
    CV(D, 0, 32, 32, 16, 16, 64, 1, 1, 2, 0, 0, 0),
    CV(D, 0, 32, 64, 8, 8, 128, 1, 1, 1, 0, 0, 0),
    /* convnet-tiny, resnet-small */
    CV(DT, 0, 32, 3, 8, 8, 8, 3, 3, 1, 1, 0, 0),
    CV(TS, 0, 32, 8, 8, 8, 8, 3, 3, 1, 1, 0, 0),
    CV(DT, 0, 32, 8, 8, 8, 16, 3, 3, 2, 1, 0, 0),
    CV(TS, 0, 32, 16, 4, 4, 16, 3, 3, 1, 1, 0, 0),
    CV(TS, 0, 32, 8, 8, 8, 16, 1, 1, 2, 0, 0, 0),
    CV(TS, 0, 2, 16, 4, 4, 16, 3, 3, 1, 1, 0, 0),
    CV(TS, 0, 1, 8, 8, 8, 16, 1, 1, 2, 0, 0, 0),
    CV(TS, 0, 16, 3, 32, 32, 16, 3, 3, 1, 1, 0, 0),
    CV(TS, 0, 16, 16, 16, 16, 32, 1, 1, 2, 0, 0, 0),
    /* the ImageNet stem, the last stage */
    CV(F, 1, 8, 3, 224, 224, 64, 7, 7, 2, 3, 0, 0),
    CV(F, 1, 8, 512, 7, 7, 512, 3, 3, 1, 1, 0, 0),
    /* odd offsets; cpu's im2col/col2im paths */
    CV(TS, 0, 2, 3, 8, 8, 8, 3, 3, 1, 1, 0, 1),
    CV(TS, 0, 2, 8, 8, 8, 16, 1, 1, 2, 0, 0, 1),
    CV(TS, 0, 2, 8, 8, 8, 16, 3, 3, 2, 1, 1, 3),
    CV(TS, 0, 1, 2, 260, 4, 3, 3, 3, 1, 1, 1, 0),
    CV(TS, 0, 1, 2, 90, 7, 3, 7, 7, 1, 3, 0, 0),
    CV(TS, 0, 2, 131, 22, 22, 2, 3, 3, 1, 1, 1, 0),
    CV(TS, 0, 2, 3, 5, 4, 4, 1, 1, 1, 1, 1, 0),
    CV(TS, 0, 2, 4, 6, 9, 5, 1, 3, 1, 0, 1, 0),
};
const kc_grid kc_grid_conv2d = {conv2d_rows, KC_N(conv2d_rows)};

/* batchnorm, avgpool: N, C, H, W, train, offset. A row with train 1 runs
 * avgpool and batchnorm in training mode (batch statistics), forward and
 * backward; a row with train 0 is batchnorm_fwd's eval mode (running
 * statistics), and only that. 1x1 images, N = 1, C = 1, odd sizes, a
 * BatchNorm1d shape (HW 1) and counts N HW of 1 (running variance
 * unchanged) and 2; then a CIFAR ResNet's maps, convnet-tiny's (8 channels
 * 8x8, 16 at 4x4, at batch 32 and at a micro-batch of 2), resnet-small's
 * last (64 at 8x8, batch 16), from full effort the maps after the ImageNet
 * stem; odd offsets (BatchNorm weight and bias at odd parameter offsets).
 * Last, maps of 2 to 15 values (3x3, 2x3) in more channels than cpu's
 * batchnorm blocks (32 channels a work item below HW 16, a partial last
 * block), HW 9 on its 8-lane sums with a tail, HW 6 on its scalar ones and
 * on avgpool's scalar rows (HW < 8), and a channel of 3267 values, which
 * cuda's batchnorm cuts into 2 chunks (more than 2048 values, few
 * channels), the last one shorter: the chunks' merge. */
#define IM(t, h, n, c, hh, w, tr, off)                                                     \
    {t, h, {.N = n, .C = c, .H = hh, .W = w, .train = tr, .offset = off}}
/* both modes */
#define IM2(t, n, c, hh, w, off)                                                            \
    {t, 0, {.N = n, .C = c, .H = hh, .W = w, .train = 1, .offset = off}},                   \
        {t, 0, {.N = n, .C = c, .H = hh, .W = w, .train = 0, .offset = off}}
static const gt_kgrid_row image_rows[] = {
    IM(Q, 0, 1, 1, 1, 1, 1, 0),
    IM(TS, 0, 1, 1, 1, 1, 0, 0),
    IM2(TS, 2, 1, 1, 1, 0),
    IM2(Q, 1, 3, 7, 5, 0),
    IM2(TS, 3, 17, 1, 1, 0),
    IM2(TS, 4, 16, 8, 8, 0),
    IM(Q, 0, 4, 16, 16, 16, 1, 0),
    IM(Q, 0, 64, 256, 1, 1, 1, 0), /* BatchNorm1d of an MLP */
    IM(TS, 0, 64, 256, 1, 1, 0, 0),
    IM2(TS, 8, 64, 16, 16, 0),
    IM2(TS, 2, 512, 4, 4, 0),
    IM(D, 0, 32, 16, 32, 32, 1, 0),
    IM2(D, 32, 64, 8, 8, 0),
    IM(DT, 0, 32, 8, 8, 8, 1, 0), /* convnet-tiny's first maps */
    IM(TS, 0, 32, 8, 8, 8, 0, 0),
    IM2(TS, 32, 16, 4, 4, 0),
    IM2(TS, 2, 16, 4, 4, 0),
    IM2(TS, 16, 64, 8, 8, 0),
    IM(F, 1, 32, 64, 112, 112, 1, 0), /* after the ImageNet stem */
    IM2(TS, 2, 8, 8, 8, 1),
    IM2(TS, 3, 16, 4, 4, 3),
    IM2(TS, 4, 40, 3, 3, 0),
    IM2(TS, 5, 36, 2, 3, 0),
    IM2(TS, 3, 2, 33, 33, 0),
    /* BatchNorm in training mode on inputs whose mean drifts along each
     * channel (conformance.h): cuda cuts a channel of 3267 values into 2
     * chunks, one of 5120 into 3, whose means lie far apart; the merge of
     * their statistics needs Chan's between-chunk term d^2 n_a n_b / n
     * (iid inputs give chunks of nearly equal means and hide it). Not
     * avgpool's. */
    {TS, 0, {.N = 3, .C = 2, .H = 33, .W = 33, .train = 1, .drift = 1}},
    {TS, 0, {.N = 2, .C = 1, .H = 64, .W = 40, .train = 1, .drift = 1}},
};
const kc_grid kc_grid_image = {image_rows, KC_N(image_rows)};
