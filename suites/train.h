/* The training loop shared by `gauntlet train` and the train suite:
 * data, model, optimizer, timing, and what a report records of a run.
 */
#ifndef GT_SUITE_TRAIN_H
#define GT_SUITE_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "engine/alloc.h"
#include "engine/comm.h"
#include "engine/data.h"
#include "engine/optim.h"
#include "engine/status.h"
#include "models/gpt2/gpt2.h"
#include "reports/report.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_train_config {
    char model_name[64];     /* preset it started from, for reports */
    gt_gpt2_config model;
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
    int threads;             /* cpu threads, 0: default */
    const char *init_from;   /* "llmc:FILE" or NULL */
    double peak_gflops;      /* MFU reference; <= 0: measure it */
    int prefetch;            /* data loader thread */
    /* data parallelism: `batch` is always the global batch */
    gt_comm *comm;           /* borrowed; NULL: one process */
    int micro_batch;         /* sequences per forward/backward on a rank; 0: all of them */
    int deterministic;       /* bitwise the same on 1, 2, 4 ... ranks (tree reduction) */
    int zero;                /* 1: ZeRO-1 (optimizer state sharded) */
    double bucket_mb;        /* all-reduce bucket size in MiB (default 25) */
    int check_every;         /* cross-rank parameter hash every N steps (0: after init only) */
    /* checkpoints (docs/formats.md, "Checkpoints") */
    const char *checkpoint_dir; /* where checkpoints go; checked writable before training */
    int checkpoint_every;    /* a checkpoint after every K steps (0: none) */
    const char *resume;      /* a checkpoint file, a sharded folder, or a directory (latest) */
    int stop_after;          /* end after this step as an interruption would (0: --steps);
                              * the lr schedule still spans `steps` */
    /* Called after every step (may be NULL). */
    void (*on_step)(void *ctx, int step, int steps, float loss, float lr, double grad_norm,
                    double ms, double tokens_per_s, double mfu);
    void *on_step_ctx;
} gt_train_config;

/* Defaults for the gpt2-tiny preset: batch 8, seq 64, 200 steps, lr 1e-3,
 * warm-up 10, cpu backend, sequential order, seed 1337. */
gt_train_config gt_train_defaults(void);

typedef struct gt_train_stats {
    int first_step;     /* steps done before this run (resumed from a checkpoint), else 0 */
    int steps_done;     /* steps this run did: global steps first_step+1 .. first_step+steps_done */
    int collective_error; /* the error was agreed by every rank (same status and message):
                           * rank 0 reports it, no need to abort the job */
    double *loss;       /* (steps) mean training loss of each step this run did */
    double *lr;         /* (steps) */
    double *grad_norm;  /* (steps) before clipping */
    double *ms;         /* (steps) wall time of each step */
    double *wait_ms;    /* (steps) time waiting for data */
    double *comm_ms;    /* (steps) communication the backward did not hide */
    double tokens_per_s;      /* median over steps after the first */
    double ms_per_step;       /* median */
    double exposed_comm_ms;   /* median of comm_ms */
    double mfu;               /* model FLOP/s over peak_gflops */
    double peak_gflops;       /* the reference used */
    double flops_per_token;
    double entropy;           /* source entropy rate (nats/token), < 0 unknown */
    size_t num_params;
    uint64_t params_digest;   /* FNV-1a 64 of the final parameters' bytes */
    gt_alloc_stats mem;       /* backend allocator at the end */
    char backend_desc[256];
    int vocab;                /* model V */
    int nranks;
    size_t comm_bytes;        /* bytes this rank reduced / gathered */
} gt_train_stats;

void gt_train_stats_release(gt_train_stats *s);

/* Runs the whole training job. On error, *out holds the steps that finished. */
gt_status gt_train_run(const gt_train_config *cfg, gt_train_stats *out);

/* Puts config, metrics, series and allocator stats of a run into a result. */
void gt_train_record(const gt_train_config *cfg, const gt_train_stats *st, gt_result *res);

/* Mean of the last `k` losses (k clipped to steps_done). */
double gt_train_tail_loss(const gt_train_stats *st, int k);

#ifdef __cplusplus
}
#endif
#endif
