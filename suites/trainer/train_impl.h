/* Shared by the training loop's files (suites/trainer/), not for its callers. */
#ifndef GT_SUITE_TRAIN_IMPL_H
#define GT_SUITE_TRAIN_IMPL_H

#include "engine/backend.h"
#include "engine/checkpoint.h"
#include "engine/comm.h"
#include "engine/data.h"
#include "engine/dp.h"
#include "engine/lossscale.h"
#include "engine/profile.h"
#include "models/model.h"
#include "models/tasks.h"
#include "suites/trainer/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 for mlp and convnet (dense samples from their synthetic task), 0 for
 * gpt2 (tokens). */
int gt_train_dense(const gt_train_config *cfg);

/* A check that can fail on one rank only (a file, a non-finite value) must
 * not let the other ranks walk into the next collective and hang there:
 * every rank learns the first failing rank's status and message, and all
 * return the same error together (*collective set when the exchange itself
 * failed). */
gt_status gt_train_agree(gt_comm *comm, gt_status s, int *collective);

/* What a run trains on beyond its config: the data stream as the loader sees
 * it and the rank layout. Recorded in every checkpoint and compared on
 * resume, so that a resumed run never trains on something else. */
typedef struct gt_train_run_id {
    int data_kind;      /* GT_CKPT_DATA_SYNTH / _FILE */
    int data_vocab;
    int64_t data_tokens;
    int64_t data_bytes; /* file size, 0 synthetic */
    uint32_t data_crc;  /* CRC32C of the tokens (files only: the synthetic stream is a
                         * function of its recorded parameters) */
    int synth_branch;
    int micro_batch;    /* sequences per forward/backward on a rank */
} gt_train_run_id;

/* The data stream of this run and its rank layout (M: micro-batch). */
gt_status gt_train_identify_data(const gt_train_config *cfg, const gt_tokens *tok, int M,
                                 gt_train_run_id *id);

/* A checkpoint of step `done`: one file (parameters, AdamW state, BatchNorm
 * state, the loss scaler), or with ZeRO-1 a folder with every rank's shard
 * of m and v and a MANIFEST rank 0 writes once all shards are on disk.
 * [lo, hi): this rank's optimizer range. Every rank returns the same status. */
gt_status gt_train_save_checkpoint(const gt_train_config *cfg, gt_model *model, gt_comm *comm,
                                   size_t lo, size_t hi, int done, const char *backend_desc,
                                   const gt_train_run_id *id, const gt_lossscale *ls,
                                   int *collective);
/* Loads cfg->resume: parameters, this rank's range [lo, hi) of m and v (from
 * whichever files hold it), state, the loss scaler and the step (*start),
 * after checking the checkpoint's run against this one (st records the
 * fields --resume-allow let differ). */
gt_status gt_train_load_checkpoint(const gt_train_config *cfg, gt_model *model, gt_comm *comm,
                                   const gt_train_run_id *id, gt_train_stats *st, size_t lo,
                                   size_t hi, gt_lossscale *ls, int64_t *start);

/* ---- one run, as parts ------------------------------------------------------------
 * gt_train_run (loop.c) is a composition of parts, each with one job and its
 * own file:
 *   setup.c      options checked, ranks, backend, model, data, starting parameters
 *   grid.c       the rank grid (--layout): the data-parallel and pipeline groups
 *   layout.c     where parameters, gradients and optimizer state live across ranks
 *   zero3.c      ZeRO-3's units: each gathered around its compute, prefetched
 *   gradunits.c  ZeRO-2/3's gradients in memory: a unit's buffer from its
 *                backward to the end of its reduce, never the whole buffer
 *   gradsync.c   the gradient reduction (bucketed, overlapped with the backward)
 *   schedule.c   the micro-batches of a step (gradient accumulation)
 *   pipeline.c   pipeline stages: their ranges, layout, the norm over stages
 *   pipe_schedule.c  the pipeline's schedules (GPipe, 1F1B) and its messages
 *   tensor.c     tensor parallelism: the model's slices, the norm over them, the
 *                whole model gathered for the digests
 *   health.c     the step's global loss, non-finite values, fp16 overflow; errors
 *                and parameter hashes every rank agrees on
 *   optimizer.c  the AdamW step on this rank's range
 *   traffic.c    bytes per step per collective kind, and the mode's formula
 *   eval.c       the held-out evaluation (mlp, convnet)
 *   record.c     the statistics a run returns
 *   faults.c     fault injection for the tests (GT_FAULT_*)
 *   checkpoint.c checkpoints written and resumed
 * A new parallelism mode is a new layout or a new schedule, chosen once in
 * the set-up; the step (loop.c, train_step) does not change. */

typedef struct gt_trainer gt_trainer;
typedef struct gt_train_units gt_train_units; /* zero3.c */
typedef struct gt_train_pipe gt_train_pipe; /* pipeline.c */
typedef struct gt_train_grad_units gt_train_grad_units; /* gradunits.c */

/* Where parameters, gradients and optimizer state live across the ranks of
 * the data-parallel group. Chosen once (gt_train_layout_for); the gradient
 * sync is configured from it, the optimizer updates the range it gives.
 * "replicated" (every rank holds everything), "zero1" (AdamW's m and v
 * sharded), "zero2" (the summed gradients too) and "zero3" (the weights
 * too: gathered unit by unit around their compute, zero3.c); each is an
 * entry with its own ops, not a branch in the step. */
typedef struct gt_train_layout {
    const char *name;
    int zero; /* the ZeRO stage: what the gradient sync leaves on each rank
               * (gt_dp_config.zero) and what a checkpoint records */
    /* After the model and the gradient sync exist: pads the model's one
     * buffer to the sync's shards and sets t->lo, t->hi, this rank's
     * optimizer range (the model keeps m and v for it only). */
    gt_status (*place)(gt_trainer *t);
    /* After the optimizer updated [t->lo, t->hi): every rank's parameters
     * (fp32 masters and the compute copy) are current again. */
    gt_status (*params_updated)(gt_trainer *t);
    /* Before something reads every parameter (a checkpoint, the cross-rank
     * hash, the final digests): the fp32 masters whole on every rank, until
     * params_sharded. NULL: they always are. */
    gt_status (*params_whole)(gt_trainer *t);
    gt_status (*params_sharded)(gt_trainer *t);
} gt_train_layout;

/* The layout's params_whole / params_sharded, when it has them. */
gt_status gt_train_params_whole(gt_trainer *t);
gt_status gt_train_params_sharded(gt_trainer *t);

/* The layout of --zero Z, NULL when there is none. */
const gt_train_layout *gt_train_layout_for(int zero);

/* Balanced binary tree over this rank's micro-batch gradients (deterministic
 * mode), kept as a stack of partial sums (a binary counter): slot l holds the
 * sum of 2^l consecutive micro-batches. With a power-of-two count it is the
 * same tree as any other split of the same leaves over ranks. */
typedef struct gt_train_tree {
    void *slot[32];
    int used[32];
    int nslots;
    size_t n;
    gt_dtype dt; /* the gradients' */
} gt_train_tree;

/* Fault injection for the tests (docs/reliability.md), read once. -1: off. */
typedef struct gt_train_faults {
    int stall_rank, stall_step;       /* GT_FAULT_STALL=RANK:STEP */
    int nan_rank, nan_step, nan_loss; /* GT_FAULT_NAN=RANK:STEP[:loss] */
    int overflow_step;                /* GT_FAULT_OVERFLOW=STEP */
} gt_train_faults;

/* What one step carries from part to part. */
typedef struct gt_train_step {
    int step;        /* global, 0-based */
    int i;           /* this run's index (statistics) */
    uint64_t t0;     /* start, gt_now_ns() */
    uint64_t wait;   /* ns waiting for data */
    const int32_t *inputs, *targets; /* gpt2: this rank's (B, T) tokens */
    float scale;     /* fp16: the loss scale of this backward, else 1 */
    float dloss;     /* the backward's starting gradient (scaled) */
    void *gshard;    /* summed gradients of this rank's shard (grad dtype) */
    double exposed;  /* s of the reduction the backward did not hide (ZeRO-3: and of
                        the weights' gathers the compute did not hide) */
    double norm;     /* global gradient norm (scaled until the optimizer step) */
    double loss;     /* global mean loss */
    int skip;        /* fp16 overflow: no optimizer update */
    float lr;
} gt_train_step;

/* The micro-batch schedule of a step: forward and backward of the rank's
 * micro-batches, leaving the rank's summed gradients in the model's
 * buffer and the micro-batch losses in t->mb_loss. Chosen once. */
typedef gt_status (*gt_train_schedule)(gt_trainer *t, gt_train_step *s);

/* One run's state, shared by the parts. */
struct gt_trainer {
    const gt_train_config *cfg;
    gt_train_stats *st;
    uint64_t run_start;
    /* ranks */
    gt_comm *comm;     /* cfg->comm, or own_comm */
    gt_comm *own_comm; /* one process without a communicator */
    int R, rank;
    /* shapes */
    int dense;   /* mlp, convnet: dense samples from the task; gpt2: tokens */
    int B;       /* sequences (samples) per rank per step */
    int M;       /* per micro-batch */
    int T;       /* predictions per sample */
    int k_local; /* micro-batches per rank */
    int fp16;
    gt_lossscale ls;
    /* backend, model, data */
    gt_backend *be;
    gt_profile *prof; /* st->profile, NULL when off */
    gt_model *model;
    gt_tokens tok;
    gt_loader *loader;
    gt_task *task;
    float *dense_x;   /* (B, numel) this rank's samples of a step */
    int32_t *dense_y; /* (B) their labels */
    size_t numel;
    gt_train_run_id rid;
    /* layout, gradient sync, schedule */
    const gt_train_layout *layout;
    size_t lo, hi; /* this rank's optimizer range of the padded buffer */
    size_t uhi;    /* hi clipped to the real parameters */
    gt_dp *dp;
    gt_train_units *units; /* ZeRO-3's units and their gathers (zero3.c), else NULL */
    gt_train_grad_units *gunits; /* gradients sharded by unit (gradunits.c), else NULL */
    gt_comm_stats traffic_mark;             /* traffic.c: the communicator's count at the mark */
    uint64_t traffic_step[GT_COLL_COUNT];   /* this step's bytes per kind so far */
    gt_comm_stats pp_mark;                  /* traffic.c: the pipeline group's count at the
                                             * end of the last step recorded */
    int pp_marked;
    gt_train_schedule schedule;
    gt_train_tree tree;
    /* steps */
    int64_t start; /* steps done before (resumed) */
    int end;       /* the step after which this run stops */
    float dloss;   /* 1 / global predictions */
    float *mb_loss;  /* (k_local + 1) this rank's micro-batch losses, then its norm flag */
    float *all_loss; /* (R, k_local + 1) every rank's */
    gt_train_faults faults;
    /* the rank grid (grid.c): with pp > 1 `comm` is this rank's data-parallel
     * group (the ranks of its stage) and R, rank are in it */
    gt_comm *dp_comm;  /* owned: the data-parallel group split from cfg->comm */
    gt_comm *pp_comm;  /* owned: this replica's pipeline group, NULL without pp */
    gt_comm *tp_comm;  /* owned: this stage's tensor-parallel group, NULL without tp */
    int P, stage;      /* pipeline stages and this rank's (1, 0 without) */
    int TP, tp_rank;   /* tensor-parallel ranks and this rank's (1, 0 without) */
    int nworld;        /* ranks of the job: R * P */
    int wrank;         /* this rank in the job (fault injection names it) */
    size_t sync_off;   /* the gradient sync's slice starts here (the stage's range) */
    /* checkpoints are written and resumed with *ck: cfg, or with pp or tp > 1 a copy
     * whose checkpoint_dir and resume name this rank's part (ckpt_parts.c) */
    const gt_train_config *ck;
    gt_train_config ck_cfg;
    char ck_dir[4096], ck_resume[4096];
    gt_train_pipe *pipe; /* pipeline.c, NULL without pp */
};

/* setup.c: everything before the first step; on error what was made is left
 * for gt_train_close. gt_train_close frees it all (t zeroed: nothing). */
gt_status gt_train_open(gt_trainer *t, const gt_train_config *cfg, gt_train_stats *st);
void gt_train_close(gt_trainer *t);

/* gradsync.c: the gt_dp of the run, configured by the layout. begin: a step
 * starts on the model's gradient buffer; overlap: the backward's hook
 * starts buckets as their gradients become final (on) or not (off);
 * finish: s->gshard and s->exposed (with ZeRO-3 the step's weight gathers'
 * waits too); norm: s->norm. */
gt_status gt_train_sync_open(gt_trainer *t);
gt_status gt_train_sync_begin(gt_trainer *t);
void gt_train_sync_overlap(gt_trainer *t, int on);
gt_status gt_train_sync_finish(gt_trainer *t, gt_train_step *s);
gt_status gt_train_sync_norm(gt_trainer *t, gt_train_step *s);

/* schedule.c: the schedule of cfg (plain gradient accumulation) and its
 * buffers (the deterministic tree); freed by gt_train_schedule_close. */
gt_status gt_train_schedule_open(gt_trainer *t);
void gt_train_schedule_close(gt_trainer *t);

/* health.c: every rank's micro-batch losses and norm flags gathered:
 * s->loss, and with fp16 the loss scaler's verdict (s->skip); a non-finite
 * loss or gradient is the same error on every rank. */
gt_status gt_train_step_health(gt_trainer *t, gt_train_step *s);
/* FNV-1a of every parameter tensor compared across ranks (step 0: after
 * initialisation). */
gt_status gt_train_check_consistency(gt_model *model, gt_comm *comm, int step);

/* optimizer.c: the lr of the step, the unscaled norm, and unless skipped the
 * AdamW update of this rank's range and the layout's parameter update. */
gt_status gt_train_optimizer_step(gt_trainer *t, gt_train_step *s);

/* eval.c: after a step when --eval-every says so (the curve, the target),
 * and after training. */
gt_status gt_train_eval_periodic(gt_trainer *t, const gt_train_step *s);
gt_status gt_train_eval_final(gt_trainer *t);

/* record.c: room for the statistics of cfg->steps steps; one step's
 * figures (and the on_step callback); the medians and MFU at the end; the
 * final parameter digests. */
gt_status gt_train_stats_open(gt_trainer *t);
void gt_train_record_step(gt_trainer *t, const gt_train_step *s, uint64_t t1);
void gt_train_summarize(gt_trainer *t);
/* st->mem_parts: the buffers held now, by kind, and the mode's formula. */
void gt_train_account_memory(gt_trainer *t);
gt_status gt_train_digests(gt_trainer *t);

/* zero3.c: ZeRO-3's units. cuts: with --zero 3 (refused for a model
 * without units) the units' starts, for the gradient buckets (owned by
 * t->units), else none; open: the masters cut to this rank's shard and the
 * model's unit hook installed (after the starting parameters are in
 * place); updated: after the optimizer step (every unit released, none in
 * flight); whole / reshard: the masters whole for a while (an all-gather),
 * then the shard again; peak: the most bytes of unit buffers held at once
 * so far; close frees them. */
gt_status gt_train_units_cuts(gt_trainer *t, const size_t **cuts, int *n);
gt_status gt_train_units_open(gt_trainer *t);
gt_status gt_train_units_updated(gt_trainer *t);
gt_status gt_train_units_whole(gt_trainer *t);
gt_status gt_train_units_reshard(gt_trainer *t);
size_t gt_train_units_peak_bytes(const gt_trainer *t);
/* Seconds spent in the units' need (the gathers the compute did not hide:
 * the profile's param_gather) since the last call; 0 without ZeRO-3. */
double gt_train_units_take_exposed(gt_trainer *t);
void gt_train_units_close(gt_trainer *t);
/* traffic.c: mark (step_start: the step's count zeroed) and take (the bytes
 * per kind since the mark added to the step's) bracket the parts whose
 * traffic a step counts; record: the step's into st->traffic with the
 * formula; formula: the mode's bytes per kind (0: none for this layout). */
void gt_train_traffic_mark(gt_trainer *t, int step_start);
void gt_train_traffic_take(gt_trainer *t);
int gt_train_traffic_formula(const gt_trainer *t, double f[GT_COLL_COUNT]);
void gt_train_traffic_record(gt_trainer *t, const gt_train_step *s);

/* gradunits.c: the gradients sharded in memory by unit. by_unit: whether this
 * run does it (ZeRO-2/3, several ranks, --deterministic only with one
 * micro-batch a rank, no pipeline, a model in units; after t->layout is set); cuts: then the units' starts
 * for the gradient buckets (owned by t->gunits), else none; open: after
 * the layout placed the buffer, the whole gradient buffer freed and the
 * sync reading the units' buffers; reduced: the buffers of the units from
 * `frontier` on whose buckets are all reduced are freed (0 after the sync:
 * all), and beyond one unit in flight the oldest waited for; peak: their bytes at most; close frees the part. */
int gt_train_grads_by_unit(const gt_trainer *t);
gt_status gt_train_grad_units_cuts(gt_trainer *t, const size_t **cuts, int *n);
gt_status gt_train_grad_units_open(gt_trainer *t);
gt_status gt_train_grad_units_reduced(gt_trainer *t, size_t frontier);
size_t gt_train_grad_units_peak_bytes(const gt_trainer *t);
void gt_train_grad_units_close(gt_trainer *t);
/* schedule.c: the deterministic tree of micro-batch gradients; micro-batch j
 * of this rank's share of the step. */
gt_status gt_train_tree_push(gt_backend *be, gt_train_tree *t, const void *g);
gt_status gt_train_tree_pop(gt_backend *be, gt_train_tree *t, void *grads);
gt_batch gt_train_micro_batch(const gt_trainer *t, const gt_train_step *s, int j);

/* grid.c: the rank grid of cfg->grid over cfg->comm, before the shapes of a
 * step: checks it against the ranks, splits the data-parallel and pipeline
 * groups (t->comm becomes the data-parallel one), sets P, stage, nworld. */
gt_status gt_train_grid_open(gt_trainer *t);
void gt_train_grid_close(gt_trainer *t);

/* pipeline.c: the pipeline part (pp > 1), after the model exists: the
 * stage's blocks and range, the activation slots, the slice the gradient
 * sync reduces (t->sync_off and *n). The layout of a pipeline stage (its
 * range updated, the tied weights sent to the last stage; with --zero 1,
 * this rank's ZeRO-1 shard of the range); the schedule
 * (GPipe or 1F1B, pipe_schedule.c); the global gradient norm over the
 * stages; the final parameters made whole on every stage (for the
 * digests); the bubble into the statistics. */
gt_status gt_train_pipe_open(gt_trainer *t, size_t *n);
void gt_train_pipe_close(gt_trainer *t);
const gt_train_layout *gt_train_pipe_layout(int zero);
gt_train_schedule gt_train_pipe_schedule(const gt_trainer *t);
gt_status gt_train_pipe_norm(gt_trainer *t, gt_train_step *s);
gt_status gt_train_pipe_whole(gt_trainer *t);

/* pipeline.c: this rank's stage's blocks [b0, b1) (pp > 1). */
void gt_pipe_stage_blocks(const gt_trainer *t, int *b0, int *b1);

/* tensor.c: the tensor-parallel part (tp > 1; docs/distributed.md,
 * "Tensor parallelism"). new_model: the model of this rank's place in its
 * tensor group (the whole model without one), after refusing what is not
 * done yet; norm: the global gradient norm over the group's slices, the
 * replicated tensors once (after the sync's norm); full_params: the whole
 * model's parameters in the one-rank layout (the group's slices gathered)
 * in a host array with `extra` floats of room after them (freed by the
 * caller), *n the parameters; record: the group's traffic per step and
 * its formula into the statistics. */
gt_status gt_train_tp_new_model(gt_trainer *t);
gt_status gt_train_tp_norm(gt_trainer *t, gt_train_step *s);
gt_status gt_train_full_params(gt_trainer *t, size_t extra, float **out, size_t *n);
void gt_train_tp_record(gt_trainer *t);

/* ckpt_parts.c: t->ck, the checkpoints of this rank's part of the model:
 * cfg, or with pipeline stages or tensor ranks a copy whose checkpoint_dir
 * and resume name the part, DIR/pp<s>of<P>, DIR/tp<r>of<T> or
 * DIR/pp<s>of<P>/tp<r>of<T> (the ranks of its data-parallel group write it
 * as without parts). --resume DIR is refused, naming the parts DIR holds,
 * when this rank's part is missing or when DIR has parts and this layout
 * none. parts_agree, after the parts are loaded: they are of one step, or
 * the refusal. Every rank returns the same status. */
gt_status gt_train_ckpt_parts(gt_trainer *t);
gt_status gt_train_ckpt_parts_agree(gt_trainer *t);

/* faults.c */
void gt_train_faults_read(gt_train_faults *f);
void gt_train_fault_stall(const gt_trainer *t, int step);
float gt_train_fault_overflow(const gt_trainer *t, int step, float dloss);
gt_status gt_train_fault_nan(gt_trainer *t, gt_train_step *s);
gt_status gt_train_fault_perturb(gt_trainer *t);

#ifdef __cplusplus
}
#endif
#endif
