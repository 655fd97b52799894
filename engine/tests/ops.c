/* engine.ops.host: the op list (GT_OP_LIST, engine/ops.h) against the names
 * and order reports and profiles record, written out here once more by hand:
 * each op's value, its name (gt_op_name) and the slot of struct gt_ops that
 * gt_ops_slot reads for it. */
#include <stddef.h>
#include <string.h>

#include "check.h"
#include "engine/ops.h"

static const struct {
    gt_op op;
    const char *name;
    size_t offset; /* of its slot in struct gt_ops */
} g_expect[] = {
#define E(ENUM, slot) {GT_OP_##ENUM, #slot, offsetof(gt_ops, slot)}
    E(ENCODER_FWD, encoder_fwd),         E(ENCODER_BWD, encoder_bwd),
    E(LAYERNORM_FWD, layernorm_fwd),     E(LAYERNORM_BWD, layernorm_bwd),
    E(MATMUL_FWD, matmul_fwd),           E(MATMUL_BWD, matmul_bwd),
    E(ATTENTION_FWD, attention_fwd),     E(ATTENTION_BWD, attention_bwd),
    E(GELU_FWD, gelu_fwd),               E(GELU_BWD, gelu_bwd),
    E(RESIDUAL_FWD, residual_fwd),       E(RESIDUAL_BWD, residual_bwd),
    E(CLASSIFIER_FWD, classifier_fwd),   E(CLASSIFIER_BWD, classifier_bwd),
    E(ADAMW, adamw),                     E(SUMSQ, sumsq),
    E(CONV2D_FWD, conv2d_fwd),           E(CONV2D_BWD, conv2d_bwd),
    E(BATCHNORM_FWD, batchnorm_fwd),     E(BATCHNORM_BWD, batchnorm_bwd),
    E(RELU_FWD, relu_fwd),               E(RELU_BWD, relu_bwd),
    E(AVGPOOL_FWD, avgpool_fwd),         E(AVGPOOL_BWD, avgpool_bwd),
    E(CAST, cast),                       E(MATMUL_GELU_FWD, matmul_gelu_fwd),
    E(MATMUL_DGELU_BWD, matmul_dgelu_bwd),
#undef E
};
#define N_EXPECT (sizeof g_expect / sizeof g_expect[0])

static void dummy_op(void) {}

int main(void) {
    CHECK(GT_OP_COUNT == N_EXPECT, "GT_OP_COUNT %d, %zu ops expected", (int)GT_OP_COUNT,
          N_EXPECT);
    for (size_t i = 0; i < N_EXPECT; i++) {
        CHECK((size_t)g_expect[i].op == i, "GT_OP_ value of %s is %d, want %zu",
              g_expect[i].name, (int)g_expect[i].op, i);
        CHECK(strcmp(gt_op_name(g_expect[i].op), g_expect[i].name) == 0,
              "gt_op_name(%zu) = \"%s\", want \"%s\"", i, gt_op_name(g_expect[i].op),
              g_expect[i].name);
    }
    CHECK(strcmp(gt_op_name(GT_OP_COUNT), "unknown_op") == 0, "gt_op_name(GT_OP_COUNT)");
    CHECK(strcmp(gt_op_name((gt_op)-1), "unknown_op") == 0, "gt_op_name(-1)");

    /* one slot filled at a time: gt_ops_slot must find it under its own op
     * and no other */
    void (*fn)(void) = dummy_op;
    for (size_t i = 0; i < N_EXPECT; i++) {
        gt_ops ops;
        memset(&ops, 0, sizeof ops);
        memcpy((char *)&ops + g_expect[i].offset, &fn, sizeof fn);
        for (size_t j = 0; j < N_EXPECT; j++) {
            const void *got = gt_ops_slot(&ops, g_expect[j].op);
            if (i == j)
                CHECK(got == (const void *)fn, "gt_ops_slot(%s) misses its slot",
                      g_expect[j].name);
            else
                CHECK(got == NULL, "gt_ops_slot(%s) sees the slot of %s", g_expect[j].name,
                      g_expect[i].name);
        }
    }
    CHECK(gt_ops_slot(NULL, GT_OP_MATMUL_FWD) == NULL, "gt_ops_slot(NULL)");
    return check_done("engine.ops.host");
}
