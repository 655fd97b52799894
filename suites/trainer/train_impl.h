/* Shared by the training loop's files (suites/trainer/), not for its callers. */
#ifndef GT_SUITE_TRAIN_IMPL_H
#define GT_SUITE_TRAIN_IMPL_H

#include "engine/checkpoint.h"
#include "engine/comm.h"
#include "engine/data.h"
#include "engine/lossscale.h"
#include "models/model.h"
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

#ifdef __cplusplus
}
#endif
#endif
