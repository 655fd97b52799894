/* The micro-batch schedule of a step (train_impl.h, gt_train_schedule):
 * plain gradient accumulation, the rank's micro-batches one after the
 * other; with pipeline stages the pipeline's schedule (GPipe, 1F1B:
 * pipe_schedule.c), chosen in gt_train_schedule_open. */
#include "suites/trainer/train_impl.h"

#include <string.h>

gt_status gt_train_tree_push(gt_backend *be, gt_train_tree *t, const void *g) {
    gt_kctx k = {.be = be, .dt = t->dt};
    size_t bytes = t->n * gt_dtype_size(t->dt);
    int l = 0;
    const void *carry = g;
    while (l < t->nslots && t->used[l]) {
        /* left operand: the earlier micro-batches */
        GT_TRY(be->ops->residual_fwd(&k, t->slot[l], t->slot[l], carry, t->n));
        t->used[l] = 0;
        carry = t->slot[l];
        l++;
    }
    if (l >= t->nslots) return GT_ERR(GT_ERR_INVALID, "micro-batch tree overflow");
    if (carry != t->slot[l]) GT_TRY(be->copy_device(be, t->slot[l], carry, bytes));
    t->used[l] = 1;
    return GT_OK;
}

/* The tree's root into the model's gradient buffer. */
gt_status gt_train_tree_pop(gt_backend *be, gt_train_tree *t, void *grads) {
    int top = t->nslots - 1;
    gt_status s = be->copy_device(be, grads, t->slot[top], t->n * gt_dtype_size(t->dt));
    t->used[top] = 0;
    return s;
}

/* Micro-batch j of this rank's samples (dense) or sequences (tokens). */
gt_batch gt_train_micro_batch(const gt_trainer *t, const gt_train_step *s, int j) {
    gt_batch mb = {.n = t->M, .T = t->T};
    if (t->dense) {
        mb.inputs = t->dense_x + (size_t)j * t->M * t->numel;
        mb.targets = t->dense_y + (size_t)j * t->M;
    } else {
        mb.tokens = s->inputs + (size_t)j * t->M * t->T;
        mb.targets = s->targets + (size_t)j * t->M * t->T;
    }
    return mb;
}

/* The gradients of the micro-batches add up in the model's buffer; the
 * last backward's hook starts the gradient sync's buckets. Deterministic:
 * each micro-batch's gradients alone, summed by the tree, and no overlap
 * (the rank tree needs the whole sum). */
static gt_status accumulate(gt_trainer *t, gt_train_step *s) {
    int det = t->cfg->deterministic, tree = det && t->k_local > 1;
    GT_TRY(gt_model_zero_grad(t->model));
    for (int j = 0; j < t->k_local; j++) {
        gt_batch mb = gt_train_micro_batch(t, s, j);
        int last = j == t->k_local - 1;
        if (det && j > 0) GT_TRY(gt_model_zero_grad(t->model));
        gt_train_sync_overlap(t, last && (!det || t->gunits)); /* gunits: no tree */
        GT_TRY(gt_model_forward_backward(t->model, &mb, s->dloss, &t->mb_loss[j]));
        if (tree) GT_TRY(gt_train_tree_push(t->be, &t->tree, gt_model_grads_buffer(t->model)));
    }
    gt_train_sync_overlap(t, 0);
    if (tree) GT_TRY(gt_train_tree_pop(t->be, &t->tree, gt_model_grads_buffer(t->model)));
    return GT_OK;
}

gt_status gt_train_schedule_open(gt_trainer *t) {
    t->schedule = t->pipe ? gt_train_pipe_schedule(t) : accumulate;
    if (!t->cfg->deterministic || t->k_local <= 1) return GT_OK;
    gt_train_tree *tr = &t->tree;
    tr->n = gt_model_num_params_padded(t->model);
    tr->dt = t->cfg->precision;
    while ((1 << tr->nslots) <= t->k_local) tr->nslots++;
    for (int l = 0; l < tr->nslots; l++)
        GT_TRY(gt_backend_alloc(t->be, tr->n * gt_dtype_size(tr->dt), &tr->slot[l]));
    return GT_OK;
}

void gt_train_schedule_close(gt_trainer *t) {
    for (int l = 0; l < t->tree.nslots; l++) gt_backend_dealloc(t->be, t->tree.slot[l]);
    memset(&t->tree, 0, sizeof t->tree);
}
