/* reports.predict_layout.host: the layout model (reports/predict_layout.h).
 * Its formulas against values worked by hand below (gpt2-tiny's shape:
 * 120,576 parameters, L 2, C 64, 2 heads, vocabulary 256, seq 64, global
 * batch 8 in micro-batches of 2); then reports of layouts whose steps the
 * model itself made from a known work per token: the fit must find that
 * work again, the check predict each layout within rounding, the ranking
 * put the fastest that fits first, and a memory no layout fits is refused
 * with the smallest need. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tests/check.h"
#include "reports/predict_layout.h"
#include "reports/read.h"

static gt_layout_shape tiny(void) {
    gt_layout_shape s = {.params = 120576,
                         .layers = 2,
                         .channels = 64,
                         .heads = 2,
                         .vocab = 256,
                         .seq = 64,
                         .global_batch = 8,
                         .micro_batch = 2};
    return s;
}

/* intra-node 5 us, 2 GB/s; inter-node 100 us, 0.1 GB/s */
static gt_layout_net net2(void) {
    gt_layout_net n = {.alpha_s = {5e-6, 1e-4}, .beta_bps = {2e9, 1e8}};
    return n;
}

static void formulas(void) {
    CHECK_NEAR(gt_layout_bubble(2, 4), 0.2, 1e-15);
    CHECK_NEAR(gt_layout_bubble(4, 8), 3.0 / 11, 1e-15);
    CHECK(gt_layout_bubble(1, 8) == 0, "no stages, no bubble");
    CHECK(gt_layout_tp_allreduces(2) == 12, "4L + 4 at L 2: %d", gt_layout_tp_allreduces(2));
    /* docs/distributed.md's measured tp=2: 4 micro-batches of 2 x 64 tokens,
     * 1,323,008 bytes a step = 4 x (10 x 128 x 64 x 4 + 24 x 128) */
    CHECK_NEAR(gt_layout_tp_bytes(2, 128, 64), 330752, 1e-9);
    CHECK_NEAR(4 * gt_layout_tp_bytes(2, 128, 64), 1323008, 1e-9);
    CHECK_NEAR(gt_layout_pp_send_bytes(128, 64), 32768, 1e-9);

    gt_layout_shape s = tiny();
    CHECK(gt_layout_micro_batches(&s, (gt_layout){2, 1, 1}) == 2, "8 / 2 replicas / 2");
    CHECK(gt_layout_micro_batches(&s, (gt_layout){8, 1, 1}) == 1, "a share of 1: one of 1");
    CHECK(gt_layout_micro_batches(&s, (gt_layout){3, 1, 1}) == 0, "8 / 3 is no share");
    char why[200];
    CHECK(gt_layout_invalid(&s, (gt_layout){2, 2, 1}, why, sizeof why) == NULL, "dp2 tp2 runs");
    CHECK(gt_layout_invalid(&s, (gt_layout){1, 1, 3}, why, sizeof why) && strstr(why, "blocks"),
          "pp 3 > 2 blocks: %s", why);
    CHECK(gt_layout_invalid(&s, (gt_layout){1, 4, 1}, why, sizeof why) && strstr(why, "heads"),
          "tp 4 and 2 heads: %s", why);
    CHECK(gt_layout_invalid(&s, (gt_layout){16, 1, 1}, why, sizeof why) != NULL,
          "16 replicas of 8 sequences");

    gt_layout_net n = net2();
    CHECK_NEAR(gt_layout_net_time(&n, 0, GT_PREDICT_ALLREDUCE, 1e6, 4), 3e-5 + 7.5e-4, 1e-15);
    CHECK_NEAR(gt_layout_net_time(&n, 0, GT_PREDICT_REDUCE_SCATTER, 1e6, 4), 1.5e-5 + 3.75e-4,
               1e-15);
    CHECK_NEAR(gt_layout_net_time(&n, 1, GT_PREDICT_SEND, 1e6, 2), 1e-4 + 1e-2, 1e-15);

    double sz[] = {gt_layout_parse_size("64MiB"), gt_layout_parse_size("1.5G"),
                   gt_layout_parse_size("1048576"), gt_layout_parse_size("12KB"),
                   gt_layout_parse_size("2 GiB")};
    double want[] = {67108864, 1610612736, 1048576, 12288, 2147483648.0};
    for (int i = 0; i < 5; i++)
        CHECK_NEAR(sz[i], want[i], 0);
    const char *bad[] = {"x", "-1", "5Q", "", "0", "3MiBs"};
    for (int i = 0; i < 6; i++)
        CHECK(gt_layout_parse_size(bad[i]) < 0, "'%s' is no size", bad[i]);
}

static void memory(void) {
    gt_layout_shape s = tiny();
    gt_layout_memory m;
    /* dp=2,tp=2: 60,288 parameters a rank; one micro-batch (2 x 64 tokens)
     * in flight: a block 4 (4C + 4 + 12C/2) + 4 (1 head) 64 = 2,832 bytes a
     * token, the rest 4 (4C + 5 + 256/2 + 12C/2) = 3,092; 128 (2 x 2,832 +
     * 3,092) = 1,120,768 */
    gt_layout_memory_of(&s, (gt_layout){2, 2, 1}, &m);
    CHECK_NEAR(m.parameters, 241152, 1e-6);
    CHECK_NEAR(m.gradients, 241152, 1e-6);
    CHECK_NEAR(m.optimizer, 482304, 1e-6);
    CHECK_NEAR(m.activations, 1120768, 1e-6);
    CHECK_NEAR(m.total, 241152 * 2 + 482304 + 1120768, 1e-6);
    s.zero = 3; /* parameters, gradients, AdamW over the 2 replicas */
    gt_layout_memory_of(&s, (gt_layout){2, 2, 1}, &m);
    CHECK_NEAR(m.parameters, 120576, 1e-6);
    CHECK_NEAR(m.gradients, 120576, 1e-6);
    CHECK_NEAR(m.optimizer, 241152, 1e-6);
    s.zero = 1;
    gt_layout_memory_of(&s, (gt_layout){2, 2, 1}, &m);
    CHECK_NEAR(m.parameters, 241152, 1e-6);
    CHECK_NEAR(m.optimizer, 241152, 1e-6);
    /* pp=2 (one block a stage), tp=1, 4 micro-batches: a micro-batch is
     * 128 (4 (4C + 4 + 12C) + 4 x 2 x 64 + 4 (4C + 5 + 256 + 12C)) =
     * 128 (4,624 + 5,140) = 1,249,792; GPipe keeps 4, 1F1B 2 */
    s = tiny();
    s.gpipe = 1;
    gt_layout_memory_of(&s, (gt_layout){1, 1, 2}, &m);
    CHECK_NEAR(m.activations, 4 * 1249792.0, 1e-6);
    CHECK_NEAR(m.parameters, 4 * 60288.0, 1e-6);
    s.gpipe = 0;
    gt_layout_memory_of(&s, (gt_layout){1, 1, 2}, &m);
    CHECK_NEAR(m.activations, 2 * 1249792.0, 1e-6);
}

static void step(void) {
    gt_layout_shape s = tiny();
    gt_layout_net n = net2();
    gt_layout_step st;
    /* tp=2,pp=2 on 4-rank nodes, 0.1 core-ms a token, 1 core: compute
     * 0.1 x 512 / 4 = 12.8 ms; M = 4; the last stage's 5 all-reduces of
     * 32,768 bytes (1e-5 + 1.6384e-5 s each) and the loss's 1,024 and 2,048
     * (2e-5 + 1.536e-6 s) a micro-batch: 0.613824 ms; 8 sends of 32,768
     * bytes (5e-6 + 1.6384e-5 s): 0.171072 ms; the 5 slots of 4 micro-
     * batches: (12.8 + 0.613824 + 0.171072) x 5 / 4 */
    gt_layout_step_of(&s, (gt_layout){1, 2, 2}, 4, 0.1, 1, &n, &st);
    CHECK(st.micro_batches == 4 && !st.tp_inter && !st.pp_inter, "M %d", st.micro_batches);
    CHECK_NEAR(st.compute_ms, 12.8, 1e-12);
    CHECK_NEAR(st.tp_ms, 0.613824, 1e-12);
    CHECK_NEAR(st.pp_ms, 0.171072, 1e-12);
    CHECK_NEAR(st.bubble, 0.2, 1e-15);
    CHECK_NEAR(st.step_ms, 13.584896 * 5 / 4, 1e-9);
    CHECK_NEAR(st.bubble_ms, 13.584896 / 4, 1e-9);
    CHECK_NEAR(gt_layout_work_of(&s, (gt_layout){1, 2, 2}, 4, st.step_ms, 1, &n), 0.1, 1e-12);
    /* 2-rank nodes: the stages on two nodes, the sends inter-node
     * (1e-4 + 32,768 / 1e8 s each) */
    gt_layout_step_of(&s, (gt_layout){1, 2, 2}, 2, 0.1, 1, &n, &st);
    CHECK(!st.tp_inter && st.pp_inter, "tp inside, pp across");
    CHECK_NEAR(st.pp_ms, 8 * (1e-4 + 32768 / 1e8) * 1e3, 1e-12);
    /* dp=4 on 2-rank nodes: the all-reduce of 482,304 gradient bytes across
     * 4 ranks inter-node, 6 x 1e-4 + 482,304 x 6 / 4 / 1e8 s, after 12.8 ms */
    gt_layout_step_of(&s, (gt_layout){4, 1, 1}, 2, 0.1, 1, &n, &st);
    CHECK(st.dp_inter && st.micro_batches == 1, "dp across, M %d", st.micro_batches);
    CHECK_NEAR(st.dp_ms, 7.83456, 1e-9);
    CHECK_NEAR(st.step_ms, 12.8 + 7.83456, 1e-9);
    /* ZeRO-3: a reduce-scatter and two all-gathers, each 3 x 1e-4 +
     * 482,304 x 3 / 4 / 1e8 s */
    s.zero = 3;
    gt_layout_step_of(&s, (gt_layout){4, 1, 1}, 2, 0.1, 1, &n, &st);
    CHECK_NEAR(st.dp_ms, 3 * (3e-4 + 482304 * 0.75 / 1e8) * 1e3, 1e-9);
}

/* ---- reports made by the model itself ------------------------------------ */

static char g_buf[1 << 16];
static size_t g_len;
static void add(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    g_len += (size_t)vsnprintf(g_buf + g_len, sizeof g_buf - g_len, fmt, ap);
    va_end(ap);
}

#define WORK 0.05 /* core-ms per token */

/* a train result of layout l on one node of 64 cores, 1 thread a rank,
 * its step what the model gives at WORK */
static void train(int first, gt_layout l, int m) {
    gt_layout_shape s = tiny();
    s.micro_batch = s.global_batch / l.dp / m;
    gt_layout_net n = net2();
    gt_layout_step st;
    int ranks = l.dp * l.tp * l.pp;
    gt_layout_step_of(&s, l, ranks, WORK, 1, &n, &st);
    add("%s{\"suite\": \"train\", \"case\": \"gpt2-tiny\", \"topology\": \"%d\", \"layout\": "
        "\"1x%d\", \"backend\": \"cpu\", \"status\": \"pass\", \"params\": {\"model\": "
        "\"gpt2-tiny\", \"layers\": 2, \"heads\": 2, \"channels\": 64, \"padded_vocab\": 256, "
        "\"seq\": 64, \"batch\": 8, \"threads\": 1, \"num_params\": 120576, \"ranks\": %d, "
        "\"zero\": 0, \"grid\": \"dp=%d,tp=%d,pp=%d\", \"micro_batches\": %d, \"schedule\": "
        "\"1f1b\"}, \"checks\": [], \"metrics\": {\"ms_per_step\": {\"value\": %.12g, "
        "\"better\": \"lower\"}}}",
        first ? "" : ",", ranks, ranks, ranks, l.dp, l.tp, l.pp, m, st.step_ms);
}

static gt_report_doc *make(void) {
    g_len = 0;
    add("{\"schema_version\": 1, \"run\": {\"id\": \"t\"}, \"env\": {\"cpu\": {\"logical\": 64}},"
        " \"results\": [");
    train(1, (gt_layout){1, 2, 1}, 4);
    train(0, (gt_layout){1, 1, 2}, 4);
    train(0, (gt_layout){2, 2, 1}, 2);
    train(0, (gt_layout){1, 2, 2}, 4);
    add("]}");
    gt_report_doc *d = NULL;
    CHECK_OK(gt_report_read_text("layouts.json", NULL, g_buf, g_len, &d));
    return d;
}

static void from_reports(void) {
    gt_report_doc *d = make();
    if (!d) return;
    gt_predict_options po = gt_predict_defaults();
    po.intra_alpha_us = po.inter_alpha_us = 5;
    po.intra_beta_gbps = po.inter_beta_gbps = 2;
    gt_layout_options lo = gt_layout_defaults();
    lo.check = 1;
    lo.memory_per_rank = 4 * 1048576.0;
    gt_layout_prediction *p = NULL;
    CHECK_OK(gt_layout_predict(&d, 1, &po, &lo, &p));
    if (p) {
        int checked;
        double worst;
        gt_layout_check_counts(p, &checked, &worst);
        CHECK(checked == 4, "4 layouts checked, %d", checked);
        CHECK(worst < 1e-9, "each layout predicted from the others' work: worst error %g", worst);
        static char text[1 << 15];
        FILE *f = tmpfile();
        size_t len = 0;
        if (f) {
            gt_layout_prediction_print(p, f);
            rewind(f);
            len = fread(text, 1, sizeof text - 1, f);
            fclose(f);
        }
        text[len] = '\0';
        CHECK(strstr(text, "64 ranks") && strstr(text, "512 ranks") && strstr(text, "4096 ranks"),
              "the three rank counts: %s", text);
        CHECK(strstr(text, "<- fastest that fits") && strstr(text, "advice: dp="), "the advice: %s",
              text);
        CHECK(strstr(text, "0.05 core-ms per token"), "the fitted work: %s", text);
        gt_layout_prediction_free(p);
    }
    /* a memory nothing fits: the smallest need named */
    lo.memory_per_rank = 1024;
    p = NULL;
    CHECK_STATUS(gt_layout_predict(&d, 1, &po, &lo, &p), GT_ERR_INVALID);
    CHECK(p == NULL && strstr(gt_last_error(), "smallest need"), "%s", gt_last_error());
    /* no links: said what to run */
    gt_predict_options none = gt_predict_defaults();
    CHECK_STATUS(gt_layout_predict(&d, 1, &none, &lo, &p), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "gauntlet run collectives"), "%s", gt_last_error());
    gt_report_doc_free(d);
}

int main(void) {
    formulas();
    memory();
    step();
    from_reports();
    return check_done("reports.predict_layout.host");
}
