/* MLPerf-style logging (harness/mllog.h, docs/mllog.md). */
#define _GNU_SOURCE
#include "harness/mllog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/timer.h"

struct gt_mllog {
    FILE *f;
};

gt_status gt_mllog_open(const char *path, gt_mllog **out) {
    *out = NULL;
    gt_mllog *m = calloc(1, sizeof *m);
    if (!m) return GT_ERR(GT_ERR_OOM, "no memory");
    m->f = fopen(path, "w");
    if (!m->f) {
        int e = errno;
        free(m);
        return GT_ERR(GT_ERR_IO, "cannot write the --mllog file '%s': %s", path, strerror(e));
    }
    *out = m;
    return GT_OK;
}

void gt_mllog_close(gt_mllog *m) {
    if (!m) return;
    fclose(m->f);
    free(m);
}

const char *gt_mllog_str(char *buf, size_t len, const char *s) {
    size_t k = 0;
    if (len < 3) return "\"\"";
    buf[k++] = '"';
    for (; s && *s && k + 8 < len; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            buf[k++] = '\\';
            buf[k++] = (char)c;
        } else if (c < 0x20) {
            k += (size_t)snprintf(buf + k, len - k, "\\u%04x", c);
        } else {
            buf[k++] = (char)c;
        }
    }
    buf[k++] = '"';
    buf[k] = '\0';
    return buf;
}

void gt_mllog_event_at(gt_mllog *m, const char *file, int line, gt_mllog_type type, const char *key,
                       const char *value, const char *metadata, double time_ms) {
    if (!m) return;
    static const char *const types[] = {"INTERVAL_START", "INTERVAL_END", "POINT_IN_TIME"};
    if (time_ms < 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        time_ms = ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
    }
    /* the source file as the repository names it */
    const char *rel = strstr(file, "harness/");
    char fbuf[256], kbuf[128];
    fprintf(m->f,
            ":::MLLOG {\"namespace\": \"\", \"time_ms\": %.0f, \"event_type\": \"%s\", \"key\": "
            "%s, \"value\": %s, \"metadata\": {\"file\": %s, \"lineno\": %d%s%s}}\n",
            time_ms, types[type], gt_mllog_str(kbuf, sizeof kbuf, key), value ? value : "null",
            gt_mllog_str(fbuf, sizeof fbuf, rel ? rel : file), line,
            metadata && metadata[0] ? ", " : "", metadata ? metadata : "");
    fflush(m->f);
}

void gt_mllog_submission(gt_mllog *m, const char *benchmark, const char *platform) {
    if (!m) return;
    char buf[512];
    gt_mllog_event(m, GT_MLLOG_POINT, "submission_benchmark",
                   gt_mllog_str(buf, sizeof buf, benchmark), NULL);
    gt_mllog_event(m, GT_MLLOG_POINT, "submission_org", "\"gauntlet\"", NULL);
    gt_mllog_event(m, GT_MLLOG_POINT, "submission_division", "\"open\"", NULL);
    gt_mllog_event(m, GT_MLLOG_POINT, "submission_status", "\"onprem\"", NULL);
    gt_mllog_event(m, GT_MLLOG_POINT, "submission_platform",
                   gt_mllog_str(buf, sizeof buf, platform), NULL);
}

double gt_mllog_process_start_ms(void) {
    return gt_wall_time() * 1e3 - (double)(gt_now_ns() - gt_process_start_ns()) * 1e-6;
}

/* ---- gauntlet train ---- */

#include <math.h>

#include "suites/trainer/train.h"

void gt_mllog_train_begin(gt_mllog_train *t, gt_mllog *m, const struct gt_train_config *cfg,
                          int ranks, const char *platform) {
    memset(t, 0, sizeof *t);
    t->m = m;
    if (!m) return;
    char buf[160], v[64];
    gt_mllog_event_at(m, __FILE__, __LINE__, GT_MLLOG_START, "init_start", NULL, NULL,
                      gt_mllog_process_start_ms());
    snprintf(buf, sizeof buf, "gauntlet-%s", cfg->model_name[0] ? cfg->model_name : "train");
    gt_mllog_submission(m, buf, platform);
    gt_mllog_event(m, GT_MLLOG_POINT, "cache_clear", "false", NULL);
    snprintf(v, sizeof v, "%d", cfg->batch);
    gt_mllog_event(m, GT_MLLOG_POINT, "global_batch_size", v, NULL);
    int micro = cfg->micro_batch > 0 ? cfg->micro_batch : cfg->batch / (ranks > 0 ? ranks : 1);
    int accum = micro > 0 ? cfg->batch / (micro * (ranks > 0 ? ranks : 1)) : 1;
    snprintf(v, sizeof v, "%d", accum > 0 ? accum : 1);
    gt_mllog_event(m, GT_MLLOG_POINT, "gradient_accumulation_steps", v, NULL);
    gt_mllog_event(m, GT_MLLOG_POINT, "opt_name", "\"adamw\"", NULL);
    snprintf(v, sizeof v, "%.9g", (double)cfg->opt.lr);
    gt_mllog_event(m, GT_MLLOG_POINT, "opt_base_learning_rate", v, NULL);
    snprintf(v, sizeof v, "%d", cfg->opt.warmup_steps);
    gt_mllog_event(m, GT_MLLOG_POINT, "opt_learning_rate_warmup_steps", v, NULL);
    snprintf(v, sizeof v, "%.9g", (double)cfg->opt.weight_decay);
    gt_mllog_event(m, GT_MLLOG_POINT, "opt_weight_decay", v, NULL);
    snprintf(v, sizeof v, "%llu", (unsigned long long)cfg->seed);
    gt_mllog_event(m, GT_MLLOG_POINT, "seed", v, NULL);
    snprintf(v, sizeof v, "%lld", (long long)cfg->batch * cfg->steps);
    gt_mllog_event(m, GT_MLLOG_POINT, "train_samples", v, NULL);
    snprintf(v, sizeof v, "%d", cfg->eval_samples);
    gt_mllog_event(m, GT_MLLOG_POINT, "eval_samples", v, NULL);
    gt_mllog_event(m, GT_MLLOG_END, "init_stop", NULL, NULL);
    gt_mllog_event(m, GT_MLLOG_START, "run_start", NULL, NULL);
}

static void block_event(gt_mllog_train *t, gt_mllog_type type, const char *key, int step) {
    char md[160];
    snprintf(md, sizeof md, "\"samples_count\": %lld, \"epoch_num\": %d",
             (long long)t->batch * step, step);
    gt_mllog_event_at(t->m, __FILE__, __LINE__, type, key, NULL, md, -1.0);
}

void gt_mllog_train_block(gt_mllog_train *t, int batch, int first_step, int steps) {
    if (!t->m) return;
    t->batch = batch;
    t->steps = steps;
    t->block_open = 1;
    t->block_step = first_step;
    block_event(t, GT_MLLOG_START, "block_start", first_step);
}

void gt_mllog_train_block_end(gt_mllog_train *t, int step) {
    if (!t->m || !t->block_open) return;
    t->block_open = 0;
    block_event(t, GT_MLLOG_END, "block_stop", step);
}

void gt_mllog_train_eval(void *ctx, int step, int phase, double eval_loss) {
    gt_mllog_train *t = ctx;
    if (!t->m) return;
    if (phase == 0) {
        gt_mllog_train_block_end(t, step);
        block_event(t, GT_MLLOG_START, "eval_start", step);
        return;
    }
    char v[64], md[200];
    if (isfinite(eval_loss))
        snprintf(v, sizeof v, "%.9g", eval_loss);
    else
        snprintf(v, sizeof v, "null");
    snprintf(md, sizeof md,
             "\"samples_count\": %lld, \"epoch_num\": %d, \"metric\": \"held_out_loss\", "
             "\"better\": \"lower\"",
             (long long)t->batch * step, step);
    gt_mllog_event(t->m, GT_MLLOG_POINT, "eval_accuracy", v, md);
    block_event(t, GT_MLLOG_END, "eval_stop", step);
    if (step < t->steps) {
        t->block_open = 1;
        t->block_step = step;
        block_event(t, GT_MLLOG_START, "block_start", step);
    }
}

void gt_mllog_train_end(gt_mllog_train *t, int success) {
    if (!t->m) return;
    gt_mllog_event(t->m, GT_MLLOG_END, "run_stop", NULL,
                   success ? "\"status\": \"success\"" : "\"status\": \"aborted\"");
}
