/* The pipeline schedules (train_impl.h, gt_train_schedule): GPipe and 1F1B
 * over this rank's stage, the activations and their gradients sent point
 * to point in the pipeline group (Megatron-LM's p2p_communication and
 * schedules, for one model chunk per stage).
 *
 * What goes where, per micro-batch j (tags 4j + kind, pipeline.h):
 *   forward:  stage s -> s+1  the output activation (B,T,C)
 *             last -> first   --deterministic: dlogits (B,T,Vp) and the head
 *                             input (B,T,C): the first stage adds the tied
 *                             head's part of dwte itself, with one rank's
 *                             call and order
 *   backward: stage s -> s-1  the gradient of its input (B,T,C)
 * and once a step in the default mode the last stage's summed gradient of
 * the tied wte to the first (head_sum).
 * Sends are non-blocking (a send waits for nothing, so two neighbours
 * never wait on each other's send), completed before their slot is used
 * again and at the end of the step; receives block. The time a stage waits
 * in either is its idle time: the bubble.
 *
 * Deterministic mode: as plain accumulation, each micro-batch's gradients
 * alone, summed by the same binary tree (schedule.c), in micro-batch order:
 * both schedules run the backwards in that order on every stage. */
#include "suites/trainer/pipeline.h"

#include "engine/timer.h"

static int tag(int j, int kind) {
    return 4 * j + kind;
}

static void *buffer(gt_trainer *t, int slot, gt_model_stage_buf which, size_t *n) {
    return gt_model_stage_buffer(t->model, &t->pipe->st, slot, which, n);
}

/* The slot's sends done: its buffers may be written again. */
static gt_status slot_wait(gt_trainer *t, int slot) {
    gt_train_pipe *p = t->pipe;
    gt_comm_request **q = p->pending + (size_t)slot * GT_PIPE_SENDS;
    uint64_t w0 = gt_now_ns();
    for (int i = 0; i < GT_PIPE_SENDS; i++) {
        gt_comm_request *r = q[i];
        q[i] = NULL;
        if (r) GT_TRY(gt_comm_wait(p->comm, r));
    }
    p->idle_ns += gt_now_ns() - w0;
    return GT_OK;
}

static gt_status pipe_send(gt_trainer *t, int slot, gt_model_stage_buf which, int peer, int tg) {
    gt_train_pipe *p = t->pipe;
    size_t n = 0;
    void *buf = buffer(t, slot, which, &n);
    gt_comm_request **q = p->pending + (size_t)slot * GT_PIPE_SENDS;
    int i = 0;
    while (i < GT_PIPE_SENDS && q[i])
        i++;
    if (!buf || i == GT_PIPE_SENDS)
        return GT_ERR(GT_ERR_INVALID, "pipeline: stage %d has no buffer %d to send on slot %d",
                      p->stage, (int)which, slot);
    return gt_comm_send(p->comm, buf, n, gt_model_dtype(t->model), peer, tg, &q[i]);
}

static gt_status pipe_recv(gt_trainer *t, int slot, gt_model_stage_buf which, int peer, int tg) {
    gt_train_pipe *p = t->pipe;
    size_t n = 0;
    void *buf = buffer(t, slot, which, &n);
    if (!buf)
        return GT_ERR(GT_ERR_INVALID, "pipeline: stage %d has no buffer %d to receive on slot %d",
                      p->stage, (int)which, slot);
    uint64_t w0 = gt_now_ns();
    gt_status s = gt_comm_recv(p->comm, buf, n, gt_model_dtype(t->model), peer, tg, NULL);
    p->idle_ns += gt_now_ns() - w0;
    return s;
}

/* Forward of micro-batch j on this stage. */
static gt_status fwd(gt_trainer *t, gt_train_step *s, int j) {
    gt_train_pipe *p = t->pipe;
    int slot = j % p->nslots, me = p->stage;
    GT_TRY(slot_wait(t, slot));
    if (!p->st.first)
        GT_TRY(pipe_recv(t, slot, GT_MODEL_STAGE_IN, me - 1, tag(j, GT_PIPE_TAG_ACT)));
    gt_batch mb = gt_train_micro_batch(t, s, j);
    GT_TRY(gt_model_stage_forward(t->model, &p->st, slot, &mb, s->dloss,
                                  p->st.last ? &t->mb_loss[j] : NULL));
    if (!p->st.last) return pipe_send(t, slot, GT_MODEL_STAGE_OUT, me + 1, tag(j, GT_PIPE_TAG_ACT));
    if (!p->exact_head) return GT_OK;
    GT_TRY(pipe_send(t, slot, GT_MODEL_STAGE_DLOGITS, 0, tag(j, GT_PIPE_TAG_DLOGITS)));
    return pipe_send(t, slot, GT_MODEL_STAGE_HEAD_IN, 0, tag(j, GT_PIPE_TAG_HEAD));
}

/* Backward of micro-batch j on this stage. */
static gt_status bwd(gt_trainer *t, int j) {
    gt_train_pipe *p = t->pipe;
    int slot = j % p->nslots, me = p->stage;
    int det = t->cfg->deterministic, tree = det && t->k_local > 1;
    if (det && j > 0) GT_TRY(gt_model_zero_grad(t->model));
    if (p->st.first && p->exact_head) { /* the tied head's part of dwte first, as one rank */
        GT_TRY(pipe_recv(t, slot, GT_MODEL_STAGE_DLOGITS, p->P - 1, tag(j, GT_PIPE_TAG_DLOGITS)));
        GT_TRY(pipe_recv(t, slot, GT_MODEL_STAGE_HEAD_IN, p->P - 1, tag(j, GT_PIPE_TAG_HEAD)));
        GT_TRY(gt_model_stage_head_grad(t->model, slot));
    }
    if (!p->st.last)
        GT_TRY(pipe_recv(t, slot, GT_MODEL_STAGE_DOUT, me + 1, tag(j, GT_PIPE_TAG_GRAD)));
    GT_TRY(gt_model_stage_backward(t->model, &p->st, slot));
    if (!p->st.first)
        GT_TRY(pipe_send(t, slot, GT_MODEL_STAGE_DIN, me - 1, tag(j, GT_PIPE_TAG_GRAD)));
    if (tree) GT_TRY(gt_train_tree_push(t->be, &t->tree, gt_model_grads_buffer(t->model)));
    return GT_OK;
}

/* Default mode (Megatron-LM's embedding group): the last stage's gradient
 * of the tied wte, summed over the step's micro-batches by its head's
 * backward, added to the first stage's once a step: one message of Vp x C
 * instead of dlogits per micro-batch, at the price of another order of
 * additions than one rank's (within rounding of it). */
static gt_status head_sum(gt_trainer *t) {
    gt_train_pipe *p = t->pipe;
    gt_dtype dt = t->cfg->precision;
    size_t n = p->tied_hi - p->tied_lo;
    char *g = (char *)gt_model_grads_buffer(t->model) + p->tied_lo * gt_dtype_size(dt);
    uint64_t w0 = gt_now_ns();
    gt_status s = GT_OK;
    if (p->st.last)
        s = gt_comm_send(p->comm, g, n, dt, 0, GT_PIPE_TAG_HEADSUM, NULL);
    else if (p->st.first)
        s = gt_comm_recv(p->comm, p->head_grad, n, dt, p->P - 1, GT_PIPE_TAG_HEADSUM, NULL);
    p->idle_ns += gt_now_ns() - w0;
    if (s != GT_OK || !p->st.first) return s;
    gt_kctx k = {.be = t->be, .dt = dt};
    return t->be->ops->residual_fwd(&k, g, g, p->head_grad, n);
}

/* Every send done; the tree's sum in the gradients; the last stage's
 * micro-batch losses to every stage (health.c reads them); the step's
 * bubble: idle time over the schedule's. */
static gt_status pipe_end(gt_trainer *t) {
    gt_train_pipe *p = t->pipe;
    for (int slot = 0; slot < p->nslots; slot++)
        GT_TRY(slot_wait(t, slot));
    if (t->cfg->deterministic && t->k_local > 1)
        GT_TRY(gt_train_tree_pop(t->be, &t->tree, gt_model_grads_buffer(t->model)));
    if (!p->exact_head) GT_TRY(head_sum(t));
    uint64_t w0 = gt_now_ns();
    GT_TRY(
        gt_comm_broadcast(p->comm, t->mb_loss, (size_t)t->k_local, GT_DTYPE_FP32, p->P - 1, NULL));
    p->idle_ns += gt_now_ns() - w0;
    return GT_OK;
}

static void record_bubble(gt_trainer *t, const gt_train_step *s, uint64_t t0) {
    gt_train_pipe *p = t->pipe;
    double span = (double)(gt_now_ns() - t0);
    if (s->i >= 0 && s->i < t->cfg->steps) p->bubble[s->i] = span > 0 ? p->idle_ns / span : 0;
}

/* GPipe: every micro-batch's forward, then every backward. */
static gt_status gpipe(gt_trainer *t, gt_train_step *s) {
    uint64_t t0 = gt_now_ns();
    t->pipe->idle_ns = 0;
    GT_TRY(gt_model_zero_grad(t->model));
    for (int j = 0; j < t->k_local; j++)
        GT_TRY(fwd(t, s, j));
    for (int j = 0; j < t->k_local; j++)
        GT_TRY(bwd(t, j));
    GT_TRY(pipe_end(t));
    record_bubble(t, s, t0);
    return GT_OK;
}

/* 1F1B: a warm-up of P - stage - 1 forwards, then one forward and one
 * backward in turn, then the backwards left (the cool-down). At most
 * P - stage micro-batches are in flight on a stage. */
static gt_status one_f_one_b(gt_trainer *t, gt_train_step *s) {
    gt_train_pipe *p = t->pipe;
    int M = t->k_local, warm = p->P - p->stage - 1;
    if (warm > M) warm = M;
    uint64_t t0 = gt_now_ns();
    p->idle_ns = 0;
    GT_TRY(gt_model_zero_grad(t->model));
    for (int j = 0; j < warm; j++)
        GT_TRY(fwd(t, s, j));            /* warm-up */
    for (int j = 0; j < M - warm; j++) { /* steady */
        GT_TRY(fwd(t, s, warm + j));
        GT_TRY(bwd(t, j));
    }
    for (int j = M - warm; j < M; j++)
        GT_TRY(bwd(t, j)); /* cool-down */
    GT_TRY(pipe_end(t));
    record_bubble(t, s, t0);
    return GT_OK;
}

gt_train_schedule gt_train_pipe_schedule(const gt_trainer *t) {
    return t->cfg->schedule == GT_TRAIN_PP_GPIPE ? gpipe : one_f_one_b;
}
