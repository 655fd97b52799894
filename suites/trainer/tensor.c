/* The tensor-parallel part (train_impl.h; docs/distributed.md, "Tensor
 * parallelism"): a group of tp ranks (grid.c) holds one model split
 * Megatron-style (the model's own layers and collectives: gpt2.h, "Tensor
 * parallelism"). Here: what it does not do yet, refused before any work;
 * the model made for this rank's place in the group; the global gradient
 * norm, whose replicated tensors every rank of a group holds alike and
 * which are counted once; the whole model's parameters gathered from the
 * slices (the digests compare the one-rank layout); the group's traffic
 * beside its formula (each tensor rank's part of the checkpoints is in
 * ckpt_parts.c). Data
 * parallelism (ZeRO included) over the replicas of a group and pipeline
 * stages of groups run as without it: their groups are split so that a
 * rank talks to the ranks of its own tensor rank only. */
#include "suites/trainer/train_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What tensor parallelism does not do yet, refused alike on every rank. */
static gt_status tp_check(const gt_trainer *t) {
    const gt_train_config *cfg = t->cfg;
    int tp = t->TP;
    if (t->dense)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "--layout tp=%d: %s has no tensor-parallel layers (only gpt2 does): "
                      "use tp=1",
                      tp, cfg->model_name);
    if (cfg->precision != GT_DTYPE_FP32)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "tp=%d with --precision %s is not done yet: use --precision fp32", tp,
                      gt_dtype_name(cfg->precision));
    if (t->be->device != GT_DEVICE_HOST || strcmp(gt_comm_backend_name(t->comm), "nccl") == 0)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "tp=%d runs on host backends (cpu, ref) over mpi for now; the %s "
                      "backend over %s is not done yet (its vocabulary-parallel loss "
                      "needs a kernel)",
                      tp, t->be->name, gt_comm_backend_name(t->comm));
    return GT_OK;
}

gt_status gt_train_tp_new_model(gt_trainer *t) {
    const gt_train_config *cfg = t->cfg;
    if (t->TP > 1) {
        gt_status s = tp_check(t);
        if (s != GT_OK) {
            t->st->collective_error = 1; /* every rank refuses alike: rank 0 says it */
            return s;
        }
    }
    gt_model_tp tp = {.size = t->TP, .rank = t->tp_rank, .comm = t->tp_comm};
    return gt_model_new_tp(t->be, cfg->model_name, cfg->model_options, cfg->precision,
                           cfg->recompute, t->M, t->T, &tp, &t->model);
}

/* The norm the sync computed is this rank's: its slices and the replicated
 * tensors. The group's: the slices of every rank and the replicated once
 * (from its rank 0), the replicated part over the pipeline's stages. */
gt_status gt_train_tp_norm(gt_trainer *t, gt_train_step *s) {
    if (t->TP <= 1) return GT_OK;
    size_t es = gt_dtype_size(t->cfg->precision);
    const char *base = (const char *)s->gshard - t->lo * es; /* gshard holds [lo, hi) */
    double rep = 0.0;
    GT_TRY(gt_model_tp_replicated_sumsq(t->model, base, t->lo, t->uhi, &rep));
    if (t->layout->zero && t->R > 1) /* ZeRO: each replica holds its shard's sums */
        GT_TRY(gt_comm_allreduce(t->comm, &rep, &rep, 1, GT_DTYPE_FP64, GT_REDOP_SUM, NULL));
    if (t->pp_comm)
        GT_TRY(gt_comm_allreduce(t->pp_comm, &rep, &rep, 1, GT_DTYPE_FP64, GT_REDOP_SUM, NULL));
    double ss = s->norm * s->norm - (t->tp_rank == 0 ? 0.0 : rep);
    /* the same bits on every rank of the group: the fixed tree where it applies */
    if ((t->TP & (t->TP - 1)) == 0) GT_TRY(gt_comm_allreduce_tree(t->tp_comm, &ss, 1, GT_DTYPE_FP64));
    else GT_TRY(gt_comm_allreduce(t->tp_comm, &ss, &ss, 1, GT_DTYPE_FP64, GT_REDOP_SUM, NULL));
    s->norm = sqrt(ss > 0 ? ss : 0);
    return GT_OK;
}

gt_status gt_train_full_params(gt_trainer *t, size_t extra, float **out, size_t *n) {
    size_t np = gt_model_num_params(t->model), full = gt_model_tp_full_params(t->model);
    int tp = t->TP > 1 ? t->TP : 1;
    *out = NULL;
    *n = full;
    float *whole = malloc((full + extra) * sizeof(float));
    /* tensor parallel: the group's slices side by side, then the whole */
    float *locals = tp > 1 ? malloc((size_t)tp * np * sizeof(float)) : whole;
    if (!whole || !locals) {
        free(whole);
        if (locals != whole) free(locals);
        return GT_ERR(GT_ERR_OOM, "no host memory for the final parameters");
    }
    float *mine = locals + (size_t)t->tp_rank * np;
    gt_status s = gt_model_get_params(t->model, mine);
    if (s == GT_OK && tp > 1)
        s = gt_comm_allgather(t->tp_comm, mine, locals, np, GT_DTYPE_FP32, NULL);
    if (s == GT_OK && tp > 1) s = gt_model_tp_gather(t->model, locals, whole);
    if (locals != whole) free(locals);
    if (s != GT_OK) {
        free(whole);
        return s;
    }
    *out = whole;
    return GT_OK;
}

/* Bytes one rank sends into its group's all-reduces per micro-batch, by
 * gpt2.h's count: 4 of N*C fp32 per block, one more where the embedding is
 * (its forward), one more and the loss's 3N doubles where the head is. */
static double tp_formula(const gt_trainer *t) {
    gt_model_arch a;
    if (gt_model_arch_of(t->cfg->model_name, t->cfg->model_options, &a) != GT_OK) return 0;
    double N = (double)t->M * t->T, C = a.fields[5];
    int L = a.fields[3], blocks = L, first = 1, last = 1;
    if (t->pipe) {
        int b0 = 0, b1 = L;
        gt_pipe_stage_blocks(t, &b0, &b1);
        blocks = b1 - b0;
        first = b0 == 0;
        last = b1 == L;
    }
    return (4.0 * blocks + first + last) * N * C * 4.0 + (last ? 24.0 * N : 0.0);
}

void gt_train_tp_record(gt_trainer *t) {
    gt_train_stats *st = t->st;
    if (t->TP <= 1 || !t->model || st->steps_done < 1) return;
    uint64_t calls = 0, bytes = 0;
    gt_model_tp_traffic(t->model, &calls, &bytes);
    st->tp_collectives = (double)calls / st->steps_done;
    st->tp_bytes = (double)bytes / st->steps_done;
    st->tp_bytes_formula = tp_formula(t) * t->k_local;
}
