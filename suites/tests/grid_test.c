/* The rank grid's parsing (--layout), its sizes on a job's ranks, where a
 * rank sits on it, and the division of blocks into pipeline stages:
 * nothing run, quick. */
#include <string.h>

#include "suites/tests/expect.h"
#include "suites/trainer/pipeline.h"
#include "suites/trainer/train.h"

static void parses(const char *s, int dp, int tp, int pp) {
    gt_train_grid g;
    gt_status st = gt_train_grid_parse(s, &g);
    EXPECT(st == GT_OK && g.dp == dp && g.tp == tp && g.pp == pp,
           "'%s': status %d, dp %d tp %d pp %d", s, (int)st, g.dp, g.tp, g.pp);
}

static void refuses(const char *s, gt_status want, const char *words) {
    gt_train_grid g;
    gt_status st = gt_train_grid_parse(s, &g);
    EXPECT(st == want && strstr(gt_last_error(), words), "'%s': status %d, message '%s'", s,
           (int)st, gt_last_error());
    gt_error_clear();
}

/* The grid of s on N ranks: every size filled in. */
static void sizes(const char *s, int N, int dp, int tp, int pp) {
    gt_train_grid g, out = {0};
    gt_status st = gt_train_grid_parse(s, &g);
    if (st == GT_OK) st = gt_train_grid_sizes(&g, N, &out);
    EXPECT(st == GT_OK && out.dp == dp && out.tp == tp && out.pp == pp,
           "'%s' on %d ranks: status %d, dp %d tp %d pp %d", s, N, (int)st, out.dp, out.tp,
           out.pp);
}

static void refuses_on(const char *s, int N, const char *words) {
    gt_train_grid g, out;
    gt_status st = gt_train_grid_parse(s, &g);
    if (st == GT_OK) st = gt_train_grid_sizes(&g, N, &out);
    EXPECT(st == GT_ERR_INVALID && strstr(gt_last_error(), words),
           "'%s' on %d ranks: status %d, message '%s'", s, N, (int)st, gt_last_error());
    gt_error_clear();
}

/* Tensor groups innermost (neighbouring ranks: one node first), then the
 * stages, replicas outermost; every (dp, tp, pp) exactly once. */
static void placed(void) {
    gt_train_grid g = {.dp = 2, .tp = 2, .pp = 2};
    int seen[2][2][2] = {{{0}}};
    for (int r = 0; r < 8; r++) {
        gt_train_grid at;
        gt_train_grid_coords(&g, r, &at);
        EXPECT(at.tp == r % 2 && at.pp == r / 2 % 2 && at.dp == r / 4,
               "rank %d: dp %d tp %d pp %d", r, at.dp, at.tp, at.pp);
        if (at.dp >= 0 && at.dp < 2 && at.tp >= 0 && at.tp < 2 && at.pp >= 0 && at.pp < 2)
            seen[at.dp][at.tp][at.pp]++;
    }
    for (int i = 0; i < 8; i++)
        EXPECT(seen[i / 4][i % 2][i / 2 % 2] == 1, "coordinate %d placed %d times", i,
               seen[i / 4][i % 2][i / 2 % 2]);
    gt_train_grid one = {.dp = 4, .tp = 1, .pp = 1}, at;
    gt_train_grid_coords(&one, 3, &at);
    EXPECT(at.dp == 3 && at.tp == 0 && at.pp == 0, "plain dp: rank 3 is replica %d", at.dp);
}

/* Every block in exactly one stage, in order, sizes differing by at most
 * one, the larger ones first. */
static void splits(int L, int P) {
    int next = 0, prev = L + 1;
    for (int s = 0; s < P; s++) {
        int b0, b1;
        gt_pipe_blocks(L, P, s, &b0, &b1);
        EXPECT(b0 == next && b1 > b0 && b1 - b0 <= prev && b1 - b0 >= L / P,
               "L %d P %d stage %d: [%d, %d)", L, P, s, b0, b1);
        next = b1;
        prev = b1 - b0;
    }
    EXPECT(next == L, "L %d P %d: the stages end at block %d", L, P, next);
}

/* The scaling suite's layout grid: exactly the layouts dp x tp x pp = N the
 * model allows, each once, in the documented order. `want` lists them as
 * "dp=D,tp=T,pp=P" separated by ';'. */
static void layouts(int N, int heads, int layers, int vocab, const char *want) {
    gt_train_grid g[32];
    int n = gt_train_grid_layouts(N, heads, layers, vocab, g, 32);
    char got[1024] = "", one[64];
    for (int i = 0; i < n && i < 32; i++) {
        gt_train_grid_format(&g[i], one, sizeof one);
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? ";" : "", one);
        EXPECT(g[i].dp * g[i].tp * g[i].pp == N, "N %d: %s is not %d ranks", N, one, N);
    }
    EXPECT(strcmp(got, want) == 0, "N %d heads %d layers %d: '%s', want '%s'", N, heads, layers,
           got, want);
    EXPECT(gt_train_grid_layouts(N, heads, layers, vocab, NULL, 0) == n,
           "N %d: the count without a buffer", N);
}

int main(void) {
    parses("pp=2", 0, 0, 2);
    parses("dp=2,pp=2", 2, 0, 2);
    parses("pp=4,dp=1", 1, 0, 4);
    parses("dp=2,tp=1,pp=2", 2, 1, 2);
    parses("tp=2", 0, 2, 0);
    parses("dp=2,tp=2", 2, 2, 0);
    parses("tp=2,pp=2", 0, 2, 2);
    parses("pp=2,tp=4,dp=1", 1, 4, 2);
    refuses("tp=0", GT_ERR_INVALID, "tp must be a whole number >= 1");
    refuses("tp=2,tp=2", GT_ERR_INVALID, "tp is given twice");
    sizes("tp=2", 2, 1, 2, 1);
    sizes("tp=2", 4, 2, 2, 1);
    sizes("tp=2,pp=2", 4, 1, 2, 2);
    sizes("dp=2,tp=2", 4, 2, 2, 1);
    sizes("pp=2", 8, 4, 1, 2);
    refuses_on("tp=3", 4, "tp=3 x pp=1 does not divide the job's 4 ranks");
    refuses_on("tp=2,pp=2", 2, "does not divide the job's 2 ranks");
    refuses_on("dp=2,tp=2", 2, "is 4 ranks, but the job has 2");
    placed();
    /* gpt2-3m: 4 heads, 4 blocks, vocabulary 256 */
    layouts(1, 4, 4, 256, "dp=1,tp=1,pp=1");
    layouts(2, 4, 4, 256, "dp=2,tp=1,pp=1;dp=1,tp=2,pp=1;dp=1,tp=1,pp=2");
    layouts(4, 4, 4, 256,
            "dp=4,tp=1,pp=1;dp=2,tp=2,pp=1;dp=2,tp=1,pp=2;dp=1,tp=4,pp=1;dp=1,tp=2,pp=2;"
            "dp=1,tp=1,pp=4");
    /* gpt2-tiny: 2 heads, 2 blocks: no tp=4, no pp=4 */
    layouts(4, 2, 2, 256, "dp=4,tp=1,pp=1;dp=2,tp=2,pp=1;dp=2,tp=1,pp=2;dp=1,tp=2,pp=2");
    /* 3 heads, 6 blocks, a vocabulary 3 does not divide: no tp=3 */
    layouts(3, 3, 6, 256, "dp=3,tp=1,pp=1;dp=1,tp=1,pp=3");
    layouts(0, 4, 4, 256, "");
    refuses("xx=2", GT_ERR_INVALID, "'xx=2' is not dp=N, tp=N or pp=N");
    refuses("pp=0", GT_ERR_INVALID, "pp must be a whole number >= 1");
    refuses("pp=2x", GT_ERR_INVALID, "whole number");
    refuses("pp=", GT_ERR_INVALID, "whole number");
    refuses("pp=2,pp=3", GT_ERR_INVALID, "pp is given twice");
    refuses("", GT_ERR_INVALID, "expected dp=D,tp=T,pp=P");
    gt_train_grid g = {.dp = 2, .pp = 2};
    char buf[64];
    gt_train_grid_format(&g, buf, sizeof buf);
    EXPECT(strcmp(buf, "dp=2,tp=1,pp=2") == 0, "format: %s", buf);
    gt_train_pp_schedule sch;
    EXPECT(gt_train_pp_schedule_parse("gpipe", &sch) == GT_OK && sch == GT_TRAIN_PP_GPIPE,
           "gpipe");
    EXPECT(gt_train_pp_schedule_parse("1f1b", &sch) == GT_OK && sch == GT_TRAIN_PP_1F1B, "1f1b");
    EXPECT(gt_train_pp_schedule_parse("interleaved", &sch) == GT_ERR_INVALID, "interleaved");
    gt_error_clear();
    for (int L = 1; L <= 13; L++)
        for (int P = 1; P <= L; P++) splits(L, P);
    int b0, b1;
    gt_pipe_blocks(12, 4, 3, &b0, &b1);
    EXPECT(b0 == 9 && b1 == 12, "12 blocks in 4: the last stage [%d, %d)", b0, b1);
    gt_pipe_blocks(5, 2, 0, &b0, &b1);
    EXPECT(b0 == 0 && b1 == 3, "5 blocks in 2: the first stage [%d, %d)", b0, b1);
    if (g_fails) fprintf(stderr, "%d failure(s)\n", g_fails);
    return g_fails ? 1 : 0;
}
