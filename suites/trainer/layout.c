/* Where parameters, gradients and optimizer state live across the ranks of
 * the data-parallel group (train_impl.h, gt_train_layout): one entry per
 * layout, chosen once by gt_train_layout_for.
 *
 *   replicated  every rank holds the parameters, the summed gradients and
 *               the whole AdamW state, and updates everything itself
 *   zero1       ZeRO-1: the summed gradients and AdamW's m and v of a
 *               shard per rank; each rank updates its shard and the fp32
 *               masters are all-gathered after the step
 *   zero2       ZeRO-2: as zero1, and the gradients reach each rank as its
 *               shard's sums only (a reduce per bucket, started during the
 *               backward, instead of an all-reduce); in memory a unit's
 *               gradients live from its backward to its reduce only
 *               (gradunits.c)
 *   zero3       ZeRO-3 (FSDP): as zero2, and the weights too: a rank keeps
 *               the fp32 masters of its shard only, each unit (gpt2: a
 *               block, the embeddings, the final LayerNorm) is gathered
 *               into a buffer of its own before its forward and again
 *               before its backward, and freed after (zero3.c); nothing
 *               is gathered after the update, the masters are made whole
 *               only while every parameter is read
 */
#include "suites/trainer/train_impl.h"

/* The model's buffer padded to the gradient sync's shards, and the
 * optimizer range the sync gives this rank (the whole buffer unless the
 * sync shards it). */
static gt_status place_by_shard(gt_trainer *t) {
    gt_dp_shard(t->dp, &t->lo, &t->hi);
    GT_TRY(gt_model_pad(t->model, gt_dp_padded(t->dp)));
    return gt_model_set_opt_range(t->model, t->lo, t->hi);
}

/* Every rank made the same update of everything: nothing to exchange. */
static gt_status replicated_updated(gt_trainer *t) {
    (void)t;
    return GT_OK;
}

/* The other ranks' shards arrive as fp32 masters; the compute copy (bf16,
 * fp16) of what this rank did not update follows them. */
static gt_status zero1_updated(gt_trainer *t) {
    /* the sync's slice: the whole buffer, or a pipeline stage's (sync_off on) */
    size_t off = t->sync_off;
    GT_TRY(gt_dp_gather_params(t->dp, gt_model_params_buffer(t->model) + off));
    if (t->R == 1) return GT_OK;
    GT_TRY(gt_model_sync_weights(t->model, off, t->lo));
    return gt_model_sync_weights(t->model, t->hi, off + gt_dp_padded(t->dp));
}

/* ZeRO-3: nothing is gathered after the update (each unit is, before its
 * next use); the units must all be released. */
static gt_status zero3_updated(gt_trainer *t) { return gt_train_units_updated(t); }

gt_status gt_train_params_whole(gt_trainer *t) {
    if (!t->layout || !t->layout->params_whole) return GT_OK;
    return t->layout->params_whole(t);
}

gt_status gt_train_params_sharded(gt_trainer *t) {
    if (!t->layout || !t->layout->params_sharded) return GT_OK;
    return t->layout->params_sharded(t);
}

static const gt_train_layout layouts[] = {
    {.name = "replicated", .zero = 0, .place = place_by_shard,
     .params_updated = replicated_updated},
    {.name = "zero1", .zero = 1, .place = place_by_shard, .params_updated = zero1_updated},
    {.name = "zero2", .zero = 2, .place = place_by_shard, .params_updated = zero1_updated},
    {.name = "zero3", .zero = 3, .place = place_by_shard, .params_updated = zero3_updated,
     .params_whole = gt_train_units_whole, .params_sharded = gt_train_units_reshard},
};

const gt_train_layout *gt_train_layout_for(int zero) {
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i].zero == zero) return &layouts[i];
    return NULL;
}
