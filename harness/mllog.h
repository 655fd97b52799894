/* MLPerf-style logging (docs/mllog.md): `--mllog FILE` of gauntlet run and
 * gauntlet train writes one `:::MLLOG {...}` line per event, the format of
 * mlcommons/logging's mllog: a JSON object with namespace, time_ms
 * (milliseconds since the Unix epoch), event_type (INTERVAL_START,
 * INTERVAL_END, POINT_IN_TIME), key, value and metadata (file and lineno of
 * the call, and what the key needs: status of run_stop, samples_count and
 * epoch_num of blocks and evaluations). Each line is flushed as it is
 * written, so a run that dies leaves every event before it. Rank 0 writes. */
#ifndef GT_MLLOG_H
#define GT_MLLOG_H

#include "engine/status.h"

typedef struct gt_mllog gt_mllog;

typedef enum gt_mllog_type {
    GT_MLLOG_START = 0, /* INTERVAL_START */
    GT_MLLOG_END,       /* INTERVAL_END */
    GT_MLLOG_POINT,     /* POINT_IN_TIME */
} gt_mllog_type;

/* Creates (truncates) the file now, so a bad path fails before the run.
 * GT_ERR_IO names the file. */
gt_status gt_mllog_open(const char *path, gt_mllog **out);
void gt_mllog_close(gt_mllog *m);

/* One event. value: JSON text (NULL: null); metadata: the members of the
 * metadata object after file and lineno, as JSON text without braces
 * ("\"status\": \"success\""; NULL: none). time_ms < 0: now. m NULL: nothing. */
void gt_mllog_event_at(gt_mllog *m, const char *file, int line, gt_mllog_type type, const char *key,
                       const char *value, const char *metadata, double time_ms);
#define gt_mllog_event(m, type, key, value, metadata)                                              \
    gt_mllog_event_at((m), __FILE__, __LINE__, (type), (key), (value), (metadata), -1.0)

/* When this process started, in milliseconds since the Unix epoch (init_start). */
double gt_mllog_process_start_ms(void);

/* s as a JSON string literal (quotes included) into buf; returns buf. */
const char *gt_mllog_str(char *buf, size_t len, const char *s);

/* The submission_* and benchmark events every log opens with (after
 * init_start): benchmark and platform as given, division open, org
 * "gauntlet", status onprem. */
void gt_mllog_submission(gt_mllog *m, const char *benchmark, const char *platform);

#endif

/* The events of gauntlet train (harness/cmd_train.c): begin (init_start at
 * the process start, submission_*, cache_clear, the hyperparameters,
 * train_samples, eval_samples, init_stop, run_start); a block per topology
 * trained, cut at every evaluation (block_stop, eval_start, eval_accuracy:
 * the held-out loss, eval_stop, block_start); end (run_stop with status
 * success or aborted). samples_count counts the samples trained on; epoch_num
 * is the optimizer step (gauntlet's tasks have no epochs). m NULL: nothing. */
struct gt_train_config;
typedef struct gt_mllog_train {
    gt_mllog *m;
    int batch;      /* samples per step of the topology being trained */
    int steps;      /* its last step */
    int block_open; /* a block_start without its block_stop */
    int block_step; /* the step the open block started after */
} gt_mllog_train;
void gt_mllog_train_begin(gt_mllog_train *t, gt_mllog *m, const struct gt_train_config *cfg,
                          int ranks, const char *platform);
void gt_mllog_train_block(gt_mllog_train *t, int batch, int first_step, int steps);
/* gt_train_config.on_eval, ctx a gt_mllog_train. */
void gt_mllog_train_eval(void *ctx, int step, int phase, double eval_loss);
void gt_mllog_train_block_end(gt_mllog_train *t, int step);
void gt_mllog_train_end(gt_mllog_train *t, int success);
