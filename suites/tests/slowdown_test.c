/* suites.slowdown.host: the --inject-slowdown list (suites/suite.h) with
 * nothing run: every form parses (op, case prefix, collective, class, a
 * list of them), a bad item is refused with a message that names it and
 * lists the forms, each case is slowed by its most specific item, and the
 * one-item form (gt_parse_slowdown) still answers as before. Also the
 * class families' names. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/status.h"
#include "suites/suite.h"
#include "suites/tests/expect.h"

/* spec is refused, and the message holds each of the NULL-terminated needles. */
static void refused(const char *spec, const char *const *needles) {
    gt_slowdown sl;
    gt_status s = gt_slowdown_parse(spec, &sl);
    const char *msg = gt_last_error();
    EXPECT(s == GT_ERR_INVALID, "'%s': status %s, expected invalid", spec, gt_status_name(s));
    for (int i = 0; needles[i]; i++)
        EXPECT(msg && strstr(msg, needles[i]), "'%s': message lacks \"%s\": %s", spec, needles[i],
               msg ? msg : "(none)");
    gt_error_clear();
}

static void test_parse(void) {
    gt_slowdown sl;
    EXPECT(gt_slowdown_parse("matmul_fwd:1.2", &sl) == GT_OK && sl.n == 1 &&
               !strcmp(sl.item[0].name, "matmul_fwd") && sl.item[0].factor == 1.2 &&
               sl.item[0].group == -1,
           "one op: %s", gt_last_error());
    EXPECT(gt_slowdown_parse(" matmul_fwd:1.2 , conv2d_bwd:1.3,gemm:1.1,collective:2,"
                             "matmul_fwd/fp32/N64_C768_OC768:5,AllReduce:1.5",
                             &sl) == GT_OK &&
               sl.n == 6,
           "a list of every form: %s", gt_last_error());
    if (sl.n == 6) {
        EXPECT(!strcmp(sl.item[0].text, "matmul_fwd:1.2"), "item 0 trimmed: '%s'", sl.item[0].text);
        EXPECT(sl.item[1].factor == 1.3, "item 1's own factor: %g", sl.item[1].factor);
        EXPECT(sl.item[2].group == GT_GROUP_GEMM, "gemm is a class: %d", sl.item[2].group);
        EXPECT(sl.item[3].group == GT_GROUP_COLLECTIVE, "collective is a class");
        EXPECT(!strcmp(sl.item[5].name, "allreduce"), "a collective in its spelling: '%s'",
               sl.item[5].name);
    }

    static const char *const item[] = {"'nosuchop:1.2'", "of 'matmul_fwd:1.2,nosuchop:1.2'",
                                       "names nothing",  "gemm, memory, collective",
                                       "gauntlet list",  NULL};
    refused("matmul_fwd:1.2,nosuchop:1.2", item);
    static const char *const factor[] = {"'gemm:0.5'", "0.5 is not above 1", NULL};
    refused("gemm:0.5", factor);
    static const char *const one[] = {"'matmul_fwd:1'", "not above 1 and at most 100", NULL};
    refused("matmul_fwd:1", one);
    static const char *const big[] = {"'gemm:101'", NULL};
    refused("gemm:101", big);
    static const char *const nan_[] = {"'gemm:nan'", NULL};
    refused("gemm:nan", nan_);
    static const char *const form[] = {"'gemm'", "expected NAME:FACTOR", NULL};
    refused("relu_fwd:2,gemm", form);
    static const char *const empty[] = {"an empty item", NULL};
    refused("relu_fwd:2,,gemm:2", empty);
    refused("relu_fwd:2,", empty);
    static const char *const none[] = {"empty", NULL};
    refused("", none);
    static const char *const twice[] = {"'matmul_fwd' is named twice", NULL};
    refused("matmul_fwd:1.2,gemm:1.1,matmul_fwd:1.5", twice);
    static const char *const coll_case[] = {"'allreduce/fp32' names nothing", NULL};
    refused("allreduce/fp32:2", coll_case);
    char many[1024] = "";
    for (int i = 0; i <= GT_SLOWDOWN_MAX; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%srelu_fwd/fp32/n%d:2",
                 i ? "," : "", i);
    static const char *const lots[] = {"more than", NULL};
    refused(many, lots);
}

static void test_match(void) {
    gt_slowdown sl;
    EXPECT(gt_slowdown_parse("gemm:1.1,matmul_fwd:1.5,matmul_fwd/fp32:2,"
                             "matmul_fwd/fp32/N64_C768_OC768:3,memory:1.05,collective:1.2,"
                             "reduce:4",
                             &sl) == GT_OK,
           "%s", gt_last_error());
    const unsigned gemm = GT_GROUP_BIT(GT_GROUP_GEMM), mem = GT_GROUP_BIT(GT_GROUP_MEMORY),
                   coll = GT_GROUP_BIT(GT_GROUP_COLLECTIVE);
    const gt_slowdown_item *it;
    it = gt_slowdown_match(&sl, "matmul_fwd/fp32/N64_C768_OC768", gemm);
    EXPECT(it && it->factor == 3, "the case itself over its prefix, op and class: %s",
           it ? it->text : "none");
    it = gt_slowdown_match(&sl, "matmul_fwd/fp32/N3_C7_OC17", gemm);
    EXPECT(it && it->factor == 2, "the dtype prefix over the op: %s", it ? it->text : "none");
    it = gt_slowdown_match(&sl, "matmul_fwd/bf16/N3_C7_OC17", gemm);
    EXPECT(it && it->factor == 1.5, "the op over the class: %s", it ? it->text : "none");
    it = gt_slowdown_match(&sl, "conv2d_bwd/fp32/N1_C1_H1_W1_OC1_K1_s1_p0", gemm);
    EXPECT(it && it->factor == 1.1, "another gemm op: the class: %s", it ? it->text : "none");
    it = gt_slowdown_match(&sl, "relu_fwd/fp32/n65", mem);
    EXPECT(it && it->factor == 1.05, "a memory-bound op: memory: %s", it ? it->text : "none");
    it = gt_slowdown_match(&sl, "reduce", coll);
    EXPECT(it && it->factor == 4, "the collective over its class: %s", it ? it->text : "none");
    it = gt_slowdown_match(&sl, "reduce_scatter", coll);
    EXPECT(it && it->factor == 1.2, "reduce is no prefix of reduce_scatter: %s",
           it ? it->text : "none");
    it = gt_slowdown_match(&sl, "matmul_fwd_x/fp32/n1", 0);
    EXPECT(!it, "a prefix ends at a '/': %s", it ? it->text : "none");
    EXPECT(!gt_slowdown_match(&sl, "relu_fwd/fp32/n65", 0), "no class, no name: not slowed");

    EXPECT(gt_slowdown_parse("memory:1.5,gemm:1.1", &sl) == GT_OK, "%s", gt_last_error());
    it = gt_slowdown_match(&sl, "x", gemm | mem);
    EXPECT(it && it->factor == 1.5, "between classes the first listed: %s", it ? it->text : "none");
    EXPECT(!gt_slowdown_match(NULL, "x", gemm), "no list: nothing");
}

static void test_one_item(void) {
    char name[64];
    double f = 0;
    EXPECT(gt_parse_slowdown("matmul_bwd:3", name, sizeof name, &f) == GT_OK &&
               !strcmp(name, "matmul_bwd") && f == 3,
           "one item: %s %g", name, f);
    EXPECT(gt_parse_slowdown("relu_fwd:2,gemm:1.5", name, sizeof name, &f) == GT_OK &&
               !strcmp(name, "relu_fwd") && f == 2,
           "a list: its first item, %s %g", name, f);
    EXPECT(gt_parse_slowdown("relu_fwd:2,nope:2", name, sizeof name, &f) == GT_ERR_INVALID,
           "a list with a bad item later: refused");
    gt_error_clear();
    EXPECT(gt_parse_slowdown("matmul_fwd/fp32/N64_C768_OC768:5", name, 8, &f) == GT_ERR_INVALID,
           "a name longer than the room: refused");
    gt_error_clear();
}

static void test_groups(void) {
    EXPECT(!strcmp(gt_group_name(GT_GROUP_GEMM), "gemm") &&
               !strcmp(gt_group_name(GT_GROUP_MEMORY), "memory") &&
               !strcmp(gt_group_name(GT_GROUP_COLLECTIVE), "collective"),
           "the groups' names");
    EXPECT(gt_group_name(GT_GROUP_COUNT) == NULL, "past the end: NULL");
    EXPECT(gt_group_find("memory") == GT_GROUP_MEMORY && gt_group_find("Gemm") == GT_GROUP_COUNT &&
               gt_group_find(NULL) == GT_GROUP_COUNT,
           "find");
}

int main(void) {
    test_parse();
    test_match();
    test_one_item();
    test_groups();
    if (g_fails)
        fprintf(stderr, "%d failed\n", g_fails);
    else
        printf("ok\n");
    return g_fails ? 1 : 0;
}
