/* The pipeline part's state, shared by pipeline.c (set-up, layout, norm,
 * the end of a run) and pipe_schedule.c (GPipe, 1F1B). Not for callers. */
#ifndef GT_SUITE_PIPELINE_H
#define GT_SUITE_PIPELINE_H

#include <stdint.h>

#include "suites/trainer/train_impl.h"

/* Sends a slot can have in flight: the output activation (or the last
 * stage's dlogits and head input) and the input's gradient. */
enum { GT_PIPE_SENDS = 4 };
/* Message tags: 4 per micro-batch; the tied weights after the update and
 * the head's summed gradient of them use the last two. */
enum { GT_PIPE_TAG_ACT = 0, GT_PIPE_TAG_GRAD, GT_PIPE_TAG_DLOGITS, GT_PIPE_TAG_HEAD };
#define GT_PIPE_TAG_TIED GT_COMM_TAG_MAX
#define GT_PIPE_TAG_HEADSUM (GT_COMM_TAG_MAX - 1)

struct gt_train_pipe {
    gt_comm *comm;     /* t->pp_comm (borrowed): rank s is stage s */
    gt_model_stage st; /* this rank's blocks */
    int P, stage, M;
    size_t *lo, *hi;           /* (P) every stage's parameter range, internal layout; the
                                * last stage's norm range runs on to the padding's end */
    size_t tied_lo, tied_hi;   /* the tied head weights (wte), the first stage's */
    int nslots;                /* micro-batches in flight on this stage */
    gt_comm_request **pending; /* (nslots, GT_PIPE_SENDS) sends in flight */
    uint64_t idle_ns;          /* this step: waiting on a neighbour (receives, sends) */
    double *bubble;            /* (steps) this rank's idle fraction of each step's schedule */
    void *chunk_buf;           /* one norm chunk in the gradient dtype (backend memory) */
    int exact_head;            /* --deterministic: the first stage computes the tied head's
                                * dwte per micro-batch from the last stage's dlogits (one
                                * rank's bits); else the last stage's sum comes once a step */
    void *head_grad;           /* first stage, default mode: that sum (gradient dtype) */
};

/* Stage s's blocks of L over P stages: L / P each, the first L % P stages
 * one more. */
void gt_pipe_blocks(int L, int P, int s, int *b0, int *b1);

#endif
