/* The training loop shared by `gauntlet train` and the train suite: data,
 * model, optimizer, timing, checkpoints (suites/trainer/: loop.c,
 * checkpoint.c). It sits above models/ and below suites/: what a report
 * records of a run is the suite's (suites/train_record.h).
 */
#ifndef GT_SUITE_TRAIN_H
#define GT_SUITE_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "engine/alloc.h"
#include "engine/comm.h"
#include "engine/data.h"
#include "engine/dtype.h"
#include "engine/lossscale.h"
#include "engine/optim.h"
#include "engine/status.h"
#include "models/model.h"

/* gt_train_config.peak_gflops: no MFU at all (no peak probe, no mfu metric) */
#define GT_TRAIN_NO_MFU (-1.0)
/* The first sample index of the held-out evaluation (2^40: far past any
 * step * batch a run reaches). */
#define GT_TRAIN_EVAL_FIRST ((uint64_t)1 << 40)

#ifdef __cplusplus
extern "C" {
#endif

/* The layout of the job's ranks: dp x tp x pp. */
typedef struct gt_train_grid {
    int dp, tp, pp; /* 0: not given (dp: the ranks over tp * pp; tp, pp: 1) */
} gt_train_grid;

/* Parses "dp=D,tp=T,pp=P" (any order, each at most once, each >= 1; a
 * missing one is 0: not given). GT_ERR_INVALID names what was wrong. */
gt_status gt_train_grid_parse(const char *s, gt_train_grid *out);
/* The grid g (as parsed) on N ranks, every field filled in (dp = N / (tp *
 * pp) when not given); GT_ERR_INVALID names what does not fit. */
gt_status gt_train_grid_sizes(const gt_train_grid *g, int N, gt_train_grid *out);
/* Where job rank `rank` sits on the grid g (sizes filled in): its replica
 * (at->dp), stage (at->pp) and tensor-parallel rank (at->tp). Tensor
 * groups innermost: rank = (replica * pp + stage) * tp + tp_rank. */
void gt_train_grid_coords(const gt_train_grid *g, int rank, gt_train_grid *at);
/* The process groups of grid g (sizes filled in) split from comm, whose
 * rank r sits at gt_train_grid_coords(g, r), each named for the watchdog
 * ("the tensor-parallel group of replica 0, stage 1"): *dp (same stage and
 * tensor rank; NULL when tp = pp = 1: comm is the group), *pp (same replica
 * and tensor rank; NULL without pp), *tp (same replica and stage; NULL
 * without tp). Collective over comm; the caller frees the three. */
gt_status gt_train_grid_split(gt_comm *comm, const gt_train_grid *g, gt_comm **dp,
                              gt_comm **pp, gt_comm **tp);
/* Every layout dp x tp x pp = N a gpt2 of `heads` heads, `layers` blocks and a
 * padded vocabulary of `padded_vocab` allows (tp divides the heads and the
 * padded vocabulary, pp divides the blocks: equal stages), dp descending,
 * then tp descending (plain data parallelism first). Writes at most `max`
 * of them to out (may be NULL) and returns how many there are; 0 for N < 1.
 * Pure: the scaling suite's layout grid (docs/suites.md, "scaling"). */
int gt_train_grid_layouts(int N, int heads, int layers, int padded_vocab, gt_train_grid *out,
                          int max);
/* "dp=2,tp=1,pp=2" (len >= 48) */
void gt_train_grid_format(const gt_train_grid *g, char *buf, size_t len);

/* The pipeline schedules (docs/distributed.md, "Pipeline parallel"). */
typedef enum gt_train_pp_schedule {
    GT_TRAIN_PP_1F1B = 0, /* one forward, one backward in the steady phase */
    GT_TRAIN_PP_GPIPE,    /* every forward, then every backward */
    GT_TRAIN_PP_COUNT
} gt_train_pp_schedule;
const char *gt_train_pp_schedule_name(gt_train_pp_schedule s); /* "1f1b", "gpipe" */
gt_status gt_train_pp_schedule_parse(const char *s, gt_train_pp_schedule *out);

typedef struct gt_train_config {
    char model_name[64];     /* preset it started from, for reports; an mlp or convnet
                              * preset (models/model.h) selects that model and its
                              * synthetic task, and seq_len, the data fields and
                              * init_from do not apply (docs/models.md); "llmc": gpt2
                              * with the six options of an llm.c file */
    char model_options[GT_MODEL_OPTIONS_LEN]; /* options by name over the preset
                              * ("layers=4,heads=4", models/model.h); "" for none */
    int batch;               /* global batch, sequences per optimizer step */
    int seq_len;             /* T */
    int steps;
    gt_adamw_config opt;
    uint64_t seed;           /* initialisation and data order */
    const char *data_path;   /* NULL: the synthetic source */
    gt_data_order data_order;
    int64_t synth_tokens;    /* 0: enough for every step to see new data */
    int synth_branch;        /* successors per state of the synthetic chain */
    const char *backend;     /* "cpu", "ref", "cuda" */
    /* mixed precision (models/gpt2/gpt2.h, "Precision"): storage of
     * activations, compute weights and gradients; fp32 master weights and
     * AdamW state whatever it is. fp16 adds dynamic loss scaling */
    gt_dtype precision;      /* GT_DTYPE_FP32 (default), _BF16 or _FP16 */
    gt_lossscale_config loss_scale; /* fp16 only: gt_lossscale_defaults() */
    gt_model_recompute recompute; /* what the forward keeps for the backward: NONE (default)
                              * or BLOCK, each block's input only, the block recomputed
                              * in the backward: the same bits, less activation memory
                              * (models/model.h) */
    int threads;             /* cpu threads, 0: default */
    const char *init_from;   /* "llmc:FILE" or NULL */
    const char *save_final;  /* "llmc:FILE": the final parameters (the one-rank layout,
                              * written by the job's rank 0), or NULL */
    double peak_gflops;      /* MFU reference in GFLOP/s; 0: measure it;
                              * GT_TRAIN_NO_MFU: neither measured nor
                              * reported (correctness runs) */
    int prefetch;            /* data loader thread */
    uint64_t origin_ns;      /* gt_now_ns() from which startup_ms counts (gauntlet train:
                              * the process start); 0: gt_train_run's own start */
    /* data parallelism: `batch` is always the global batch */
    gt_comm *comm;           /* borrowed; NULL: one process */
    int micro_batch;         /* sequences per forward/backward on a rank; 0: all of them */
    int deterministic;       /* bitwise the same on 1, 2, 4 ... ranks (tree reduction) */
    int zero;                /* 1: ZeRO-1 (optimizer state sharded); 2: ZeRO-2 (and the
                                summed gradients); 3: ZeRO-3 (and the weights, gathered
                                unit by unit; gpt2 only) */
    double bucket_mb;        /* all-reduce bucket size in MiB (default 25) */
    /* the rank grid (--layout dp=D,tp=T,pp=P; docs/distributed.md, "Pipeline parallel"):
     * 0 for a field means what the ranks leave (dp) or 1 (tp, pp). Pipeline stages are
     * neighbours in the job's rank order, data parallel replicas outermost */
    gt_train_grid grid;
    int micro_batches;       /* micro-batches per replica per step (gradient accumulation,
                              * or the pipeline's M); 0: from micro_batch */
    gt_train_pp_schedule schedule; /* pp > 1: GPipe or 1F1B (the default) */
    int check_every;         /* cross-rank parameter hash every N steps (0: after init only) */
    /* checkpoints (docs/formats.md, "Checkpoints") */
    const char *checkpoint_dir; /* where checkpoints go; checked writable before training */
    int checkpoint_every;    /* a checkpoint after every K steps (0: none) */
    const char *resume;      /* a checkpoint file, a sharded folder, or a directory (latest) */
    const char *resume_allow; /* comma-separated fields (gt_train_resume_field) that may
                               * differ from the checkpoint's run; NULL: none may */
    int stop_after;          /* end after this step as an interruption would (0: --steps);
                              * the lr schedule still spans `steps` */
    int eval_samples;        /* mlp / convnet: after training, rank 0 evaluates this many
                              * held-out samples of the task (from GT_TRAIN_EVAL_FIRST on,
                              * never trained on) in evaluation mode (BatchNorm's running
                              * statistics); 0: none */
    int eval_every;          /* also after every K steps (needs eval_samples): the curve
                              * eval_loss over steps; 0: only after training */
    double target_gap;       /* > 0: the first periodic evaluation whose loss is within this
                              * of the Bayes predictor's is the target (MLPerf's quality
                              * target): steps and training time to reach it */
    /* the per-op profile (engine/profile.h, docs/profile.md) */
    int no_profile;          /* 1: no per-op profile (on by default) */
    int profile_on;          /* 1: keep the profile even when its overhead estimate exceeds
                              * 2% of the step (by default it stops itself then) */
    const char *trace_path;  /* Chrome trace event JSON of the steps (NULL: none) */
    const char *inject_slowdown; /* "OP:FACTOR": that op takes FACTOR times as long in every
                              * step (fault injection for the gate's test); a name that is
                              * not an op (a collective, an op/dtype/shape case) is not
                              * the training loop's and is ignored here */
    /* Called after every step (may be NULL). */
    void (*on_step)(void *ctx, int step, int steps, float loss, float lr, double grad_norm,
                    double ms, double tokens_per_s, double mfu);
    void *on_step_ctx;
    /* Called on rank 0 around every held-out evaluation (may be NULL): phase 0
     * before it, phase 1 after it with its loss; step: the steps done. */
    void (*on_eval)(void *ctx, int step, int phase, double eval_loss);
    void *on_eval_ctx;
} gt_train_config;

/* Defaults for the gpt2-tiny preset: batch 8, seq 64, 200 steps, lr 1e-3,
 * warm-up 10, cpu backend, fp32, sequential order, seed 1337. */
gt_train_config gt_train_defaults(void);

/* Backend memory of a rank by kind, as held at the end of the run (padding
 * included), and the total the mode's formula gives (docs/distributed.md,
 * "Memory per rank"): what the allocator's peak is made of. */
typedef struct gt_train_memory {
    size_t params;  /* fp32 masters, the 16-bit compute copy, state tensors */
    size_t grads;   /* the gradient buffer, and the deterministic mode's tree slots */
    size_t optim;   /* AdamW's m and v: the whole model, or a ZeRO shard */
    size_t acts;    /* the model's activations and scratch */
    size_t comm;    /* the gradient sync's own buffers (ZeRO's summed shard) */
    size_t expected; /* the formula's total for this model, precision, ranks and mode */
} gt_train_memory;

/* Bytes this rank handed its data-parallel communicator per operation kind
 * (GT_COLL_*, engine/comm.h's count) in one step's gradient sync and
 * optimizer step (the last step this run updated), and the mode's formula
 * (docs/distributed.md, "Traffic per step"). */
typedef struct gt_train_traffic {
    int step;        /* the global step (1-based) measured; 0: none */
    int has_formula; /* 0: the mode has none (pipeline stages) */
    double bytes[GT_COLL_COUNT];
    double formula[GT_COLL_COUNT];
} gt_train_traffic;

typedef struct gt_train_stats {
    int first_step;     /* steps done before this run (resumed from a checkpoint), else 0 */
    int steps_done;     /* steps this run did: global steps first_step+1 .. first_step+steps_done */
    int collective_error; /* the error was agreed by every rank (same status and message):
                           * rank 0 reports it, no need to abort the job */
    unsigned long hangs_before; /* gt_comm_hang_count() when the run started: a hang after
                                 * it is this run's (the result's stall record) */
    double *loss;       /* (steps) mean training loss of each step this run did */
    double *lr;         /* (steps) */
    double *grad_norm;  /* (steps) before clipping */
    double *ms;         /* (steps) wall time of each step */
    double *wait_ms;    /* (steps) time waiting for data */
    double *comm_ms;    /* (steps) communication the backward did not hide */
    double *loss_scale; /* (steps) fp16: the loss scale of each step's backward, else 1 */
    unsigned char *skipped; /* (steps) 1: fp16 overflow, the optimizer step was skipped */
    int64_t skipped_steps;    /* fp16: steps skipped for overflow since step 0 (resumes
                               * included) */
    double final_loss_scale;  /* fp16: the scale the next step would use; 1 otherwise */
    double tokens_per_s;      /* median over steps after the first, in `unit`s per second
                               * (tokens for gpt2, samples / images for mlp / convnet) */
    char unit[16];            /* "tokens", "samples", "images" (gt_model_info.unit) */
    double ms_per_step;       /* median */
    double startup_ms;        /* from cfg->origin_ns (or the run's start) to the first step's start:
                               * model, initialisation or checkpoint, data, the MFU probe */
    double first_step_ms;     /* the first step of this process: first touches of the
                               * activations and gradients, cold caches and code */
    double exposed_comm_ms;   /* median of comm_ms */
    double mfu;               /* model FLOP/s over peak_gflops */
    double peak_gflops;       /* the reference used */
    char peak_how[96];        /* what peak_gflops is: "--peak-gflops", "measured SGEMM n=2048",
                               * "measured bf16 GEMM 8192^3 (cuda events)" */
    double datasheet_gflops;  /* the GPU's dense datasheet peak in the training dtype, 0 unknown */
    double mfu_datasheet;     /* model FLOP/s over datasheet_gflops (0 when unknown) */
    double flops_per_token;   /* per unit */
    double entropy;           /* source entropy rate (nats/token) for gpt2, the task's
                               * Bayes-optimal loss for mlp / convnet; < 0 unknown */
    double eval_loss;         /* mean held-out loss (eval_samples > 0; NAN otherwise) */
    double eval_bayes;        /* the Bayes-optimal predictor's on the same samples */
    int eval_samples;         /* how many were evaluated (0: none) */
    double *eval_curve;       /* eval_every: the held-out loss after steps eval_at[i] */
    int *eval_at;
    int n_evals;
    int steps_to_target;      /* target_gap: the global step that reached it, -1: not reached */
    double time_to_target_s;  /* this run's training time (step times) until then */
    size_t num_params;
    uint64_t params_digest;   /* FNV-1a 64 of the final parameters' bytes, then the state
                               * tensors' (BatchNorm running statistics; none for gpt2) */
    uint64_t weights_digest;  /* the same of the parameters alone (the topology check: rank
                               * 0's running statistics depend on the rank count) */
    gt_alloc_stats mem;       /* backend allocator at the end */
    gt_train_memory mem_parts; /* what it holds, by kind */
    size_t act_bytes;         /* the model's activations and scratch on this rank
                               * (gt_model_act_bytes): what cfg->recompute shrinks */
    char backend_desc[256];
    int vocab;                /* model V, or the classes of mlp / convnet */
    int nranks;
    size_t comm_bytes;        /* bytes this rank reduced / gathered */
    gt_train_traffic traffic; /* per step per collective kind, beside the formula */
    /* the rank grid this run used (dp x tp x pp = nranks) and the pipeline's figures:
     * the blocks of each stage ("0-1,2-3"), micro-batches, the schedule, the bubble
     * (the fraction of a step's schedule a stage spent waiting on its neighbours: the
     * median over steps after the first, per stage, and their mean) beside the
     * equal-stages formula (P-1)/(M+P-1) */
    gt_train_grid grid;
    char pp_split[256];
    int pp_micro_batches;
    char pp_schedule[8];
    double bubble_theory;
    double bubble_measured;
    double *bubble_stage;     /* (pp) owned, NULL without a pipeline */
    /* tensor parallelism: all-reduces inside this rank's tensor group per step, the
     * bytes it sent into them, and those bytes by the formula (docs/distributed.md,
     * "Tensor parallelism"); the parameters this rank holds */
    double tp_collectives;
    double tp_bytes;
    double tp_bytes_formula;
    /* pipeline stages: the bytes this rank sent to its pipeline neighbours in the last
     * step recorded (activations, their gradients, the tied head's weights or gradient)
     * and the same by the formula (docs/distributed.md, "Pipeline parallel"); 0 without */
    double pp_send_bytes;
    double pp_send_formula;
    size_t params_per_rank;
    /* resumed runs: the checkpoint (file or sharded folder) resumed from, the
     * fields that differed and were allowed ("lr: 0.001 -> 0.002; ..."), and what
     * an old-format checkpoint could not check (empty when all was) */
    char resumed_from[4096];
    char resume_overrides[1024];
    char resume_unchecked[512];
    struct gt_profile *profile; /* the per-op profile (engine/profile.h), NULL when off;
                                 * owned, freed by gt_train_stats_release */
} gt_train_stats;

void gt_train_stats_release(gt_train_stats *s);

/* Runs the whole training job. On error, *out holds the steps that finished.
 *
 * fp16: the backward starts from dloss * the loss scale (engine/lossscale.h);
 * a step whose global gradient norm is not finite is an overflow: every rank
 * skips the optimizer step (the master weights and m, v stay as they were),
 * the scale backs off and the step counts in skipped_steps. As with torch's
 * GradScaler and an lr scheduler, the lr schedule still advances on a
 * skipped step while AdamW's step count t does not (t = step - skipped).
 * A non-finite LOSS is an error in every precision, and so is a non-finite
 * gradient norm in fp32 and bf16. Fault injection: GT_FAULT_OVERFLOW=STEP
 * makes rank 0 start that step's backward from an infinite dloss
 * (docs/reliability.md). */
gt_status gt_train_run(const gt_train_config *cfg, gt_train_stats *out);

/* The fields a checkpoint records that --resume-allow may let differ, by
 * index from 0 (NULL past the last): data, data_order, seed, batch, seq,
 * precision, the AdamW fields, warmup, lr_min_frac, steps, world_size, zero,
 * micro_batch, deterministic (docs/formats.md, "Loading"). */
const char *gt_train_resume_field(int i);

/* The data position a resumed run starts from: tokens the loader has
 * consumed before `step` (step x global batch x seq; sequential order reads
 * them from the stream's start, modulo its length). */
int64_t gt_train_data_position(const gt_train_config *cfg, int64_t step);

/* Mean of the last `k` losses (k clipped to steps_done). */
double gt_train_tail_loss(const gt_train_stats *st, int k);

#ifdef __cplusplus
}
#endif
#endif
