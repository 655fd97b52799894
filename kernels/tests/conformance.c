/* kernels.conformance.<backend>: every op of the table, forward and
 * backward, on the backend under test against the ref backend, over a grid
 * of shapes from tiny and odd to GPT-2 sized: the shape grid's rows marked
 * for the tests (kernels/conformance/grid.c, shared with the kernels
 * suite).
 *
 * usage: conformance <backend> <dtype> [op-prefix,...]
 *
 * With a third argument only the ops whose names start with one of its
 * comma-separated prefixes run (e.g. "matmul": the GEMM ops, for the
 * emulator runs that force cuBLASLt's fallbacks); a list that selects no op
 * is an error.
 *
 * The cases themselves (seeded inputs, the call on both backends, the
 * per-op tolerances and their reasons) are the ops' descriptors in
 * kernels/conformance/, run by kernels/conformance.c, which the kernels
 * suite shares with the grid; this program is the selection and the report.
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

    /* Every op over the shared grid's rows for the tests
     * (kernels/conformance/grid.c), in op order. */
    for (int op = 0; op < GT_OP_COUNT; op++) {
        const gt_kgrid_row *row;
        for (size_t i = 0; (row = gt_kgrid_row_at((gt_op)op, i)); i++)
            if (row->test) one(&t, (gt_op)op, row->sh);
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
