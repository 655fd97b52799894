/* Tensor-parallel gpt2 (gpt2.h, "Tensor parallelism") against one rank, one
 * forward and backward, on 2 mpi ranks: the seeded initialisation's slices,
 * gathered, are one rank's parameters bitwise; the loss and every tensor's
 * gathered gradients are within the per-op bound of docs/distributed.md
 * ("Tensor parallelism"): delta = (2L + 2) * 2 * K * u, K = max(4C, Vp),
 * u = 2^-24, relative (||g_tp - g_one|| <= delta ||g_one|| per tensor). The
 * measured figures are printed.
 *
 * Usage: mpiexec -np 2 test_models_gpt2_tp_grads [BACKEND]  (77: not 2 ranks,
 * or the backend is absent)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/comm.h"
#include "engine/rng.h"
#include "engine/tests/check.h"
#include "models/gpt2/gpt2.h"
#include "models/tests/backend_or_skip.h"

enum { B = 2, T = 64 };

/* The group's arrays of n floats each gathered into the whole model's. */
static gt_status gathered(gt_gpt2 *m, gt_comm *c, const float *mine, size_t n, float *full) {
    float *all = malloc(2 * n * sizeof(float));
    if (!all) return GT_ERR(GT_ERR_OOM, "gather buffer");
    gt_status s = gt_comm_allgather(c, mine, all, n, GT_DTYPE_FP32, NULL);
    if (s == GT_OK) gt_gpt2_tp_gather(m, all, full);
    free(all);
    return s;
}

/* Per tensor: ||a - b|| / ||a|| within delta; returns the largest. */
static double compare_grads(const gt_gpt2 *one, const float *a, const float *b, double delta,
                            int rank) {
    size_t off = 0;
    double worst = 0;
    for (int i = 0; i < GT_GPT2_NUM_TENSORS; i++) {
        size_t n = gt_gpt2_tensor_size(one, i);
        double d2 = 0, a2 = 0;
        for (size_t j = 0; j < n; j++) {
            double d = (double)a[off + j] - b[off + j];
            d2 += d * d;
            a2 += (double)a[off + j] * a[off + j];
        }
        off += n;
        double rel = a2 > 0 ? sqrt(d2 / a2) : sqrt(d2);
        if (rank == 0) printf("  d%-9s ||g_tp - g_one|| / ||g_one|| %.3e\n", gt_gpt2_tensor_name(i), rel);
        CHECK(rel <= delta, "d%s: relative difference %.3e above the bound %.3e",
              gt_gpt2_tensor_name(i), rel, delta);
        if (rel > worst) worst = rel;
    }
    return worst;
}

static void run(gt_backend *be, gt_comm *c, int rank) {
    gt_gpt2_config cfg;
    CHECK_OK(gt_gpt2_preset("gpt2-tiny", &cfg));
    gt_gpt2 *one = NULL, *tp = NULL;
    gt_gpt2_tp grp = {.size = 2, .rank = rank, .comm = c};
    CHECK_OK(gt_gpt2_new(be, &cfg, B, T, &one));
    CHECK_OK(gt_gpt2_new_tp(be, &cfg, GT_DTYPE_FP32, GT_MODEL_RECOMPUTE_NONE, &grp, B, T, &tp));
    if (!one || !tp) goto done;
    CHECK_OK(gt_gpt2_init_random(one, 1337));
    CHECK_OK(gt_gpt2_init_random(tp, 1337));
    size_t np = gt_gpt2_num_params(one), nl = gt_gpt2_num_params(tp);
    CHECK(2 * nl < np + 2 * (size_t)cfg.max_seq_len * cfg.channels,
          "a rank holds %zu of %zu parameters", nl, np);
    float *p1 = malloc(np * sizeof(float)), *p2 = malloc(np * sizeof(float));
    float *mine = malloc(nl * sizeof(float));
    int32_t tok[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int32_t)(gt_rng_u32(7, 0, (uint64_t)i) % (uint32_t)cfg.vocab_size);
        tgt[i] = (int32_t)(gt_rng_u32(7, 1, (uint64_t)i) % (uint32_t)cfg.vocab_size);
    }
    CHECK_OK(gt_gpt2_get_params(one, p1));
    CHECK_OK(gt_gpt2_get_params(tp, mine));
    CHECK_OK(gathered(tp, c, mine, nl, p2));
    CHECK(memcmp(p1, p2, np * sizeof(float)) == 0, "the slices gathered are not one rank's init");
    float l1 = 0, l2 = 0, dloss = 1.0f / (B * T);
    CHECK_OK(gt_gpt2_zero_grad(one));
    CHECK_OK(gt_gpt2_zero_grad(tp));
    CHECK_OK(gt_gpt2_forward_backward(one, tok, tgt, B, T, dloss, &l1));
    CHECK_OK(gt_gpt2_forward_backward(tp, tok, tgt, B, T, dloss, &l2));
    double delta = (2.0 * cfg.num_layers + 2) * 2.0 *
                   fmax(4.0 * cfg.channels, cfg.padded_vocab_size) * ldexp(1.0, -24);
    CHECK(fabs(l1 - l2) <= delta * fabs(l1), "loss %.9g vs %.9g", l1, l2);
    CHECK_OK(gt_gpt2_get_grads(one, p1));
    CHECK_OK(gt_gpt2_get_grads(tp, mine));
    CHECK_OK(gathered(tp, c, mine, nl, p2));
    double worst = compare_grads(one, p1, p2, delta, rank);
    if (rank == 0)
        printf("loss %.9g vs %.9g (relative %.3e); the gradients' largest relative "
               "difference %.3e, bound delta %.3e\n",
               l1, l2, fabs(l1 - l2) / fabs(l1), worst, delta);
    free(p1);
    free(p2);
    free(mine);
done:
    gt_gpt2_free(one);
    gt_gpt2_free(tp);
}

int main(int argc, char **argv) {
    gt_comm_config cc = gt_comm_defaults();
    gt_comm *c = NULL;
    if (gt_comm_world(&cc, &c) != GT_OK || gt_comm_size(c) != 2) {
        fprintf(stderr, "skipped: needs 2 ranks under mpiexec\n");
        gt_comm_free(c);
        return 77;
    }
    gt_backend *be = mt_backend_or_skip(argc > 1 ? argv[1] : "cpu", 1);
    run(be, c, gt_comm_rank(c));
    gt_backend_free(be);
    /* every rank's verdict: a failure on one fails the test on all */
    int fails = g_check_failures;
    gt_comm_allreduce(c, &fails, &fails, 1, GT_DTYPE_INT32, GT_REDOP_SUM, NULL);
    g_check_failures = fails;
    gt_comm_free(c);
    return check_done("models.gpt2_tp_grads");
}
