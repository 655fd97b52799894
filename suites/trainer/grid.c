/* The rank grid (train_impl.h): --layout dp=D,tp=T,pp=P parsed and checked
 * against the job's ranks, and the process groups split from its
 * communicator (Megatron's parallel_state: who is in my tensor, pipeline
 * and data-parallel group, in one place). Placement, innermost first:
 * a tensor-parallel group on neighbouring ranks (it talks in every
 * layer: a launcher that fills a node before the next keeps it inside a
 * node), then the pipeline stages, data-parallel replicas outermost:
 * rank = (replica * P + stage) * T + tp_rank. */
#define _POSIX_C_SOURCE 200809L /* strtok_r */

#include "suites/trainer/train.h"
#include "suites/trainer/train_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const g_schedules[GT_TRAIN_PP_COUNT] = {"1f1b", "gpipe"};

const char *gt_train_pp_schedule_name(gt_train_pp_schedule s) {
    return (int)s >= 0 && s < GT_TRAIN_PP_COUNT ? g_schedules[s] : "?";
}

gt_status gt_train_pp_schedule_parse(const char *s, gt_train_pp_schedule *out) {
    for (int i = 0; i < GT_TRAIN_PP_COUNT; i++)
        if (s && strcmp(s, g_schedules[i]) == 0) {
            *out = (gt_train_pp_schedule)i;
            return GT_OK;
        }
    return GT_ERR(GT_ERR_INVALID, "--schedule '%s': use gpipe or 1f1b", s ? s : "(null)");
}

/* One "key=N" item into its field of g. */
static gt_status grid_item(const char *item, gt_train_grid *g) {
    static const char *const keys[] = {"dp", "tp", "pp"};
    int *fields[] = {&g->dp, &g->tp, &g->pp};
    const char *eq = strchr(item, '=');
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(keys[i]);
        if (!eq || (size_t)(eq - item) != n || strncmp(item, keys[i], n) != 0) continue;
        char *end = NULL;
        long v = strtol(eq + 1, &end, 10);
        if (end == eq + 1 || *end || v < 1 || v > 65536)
            return GT_ERR(GT_ERR_INVALID, "--layout: '%s': %s must be a whole number >= 1", item,
                          keys[i]);
        if (*fields[i]) return GT_ERR(GT_ERR_INVALID, "--layout: %s is given twice", keys[i]);
        *fields[i] = (int)v;
        return GT_OK;
    }
    return GT_ERR(GT_ERR_INVALID,
                  "--layout: '%s' is not dp=N, tp=N or pp=N (e.g. "
                  "--layout dp=2,pp=2)",
                  item);
}

gt_status gt_train_grid_parse(const char *s, gt_train_grid *out) {
    memset(out, 0, sizeof *out);
    char buf[128];
    if (!s || !*s || strlen(s) >= sizeof buf)
        return GT_ERR(GT_ERR_INVALID, "--layout '%s': expected dp=D,tp=T,pp=P (each optional)",
                      s ? s : "");
    snprintf(buf, sizeof buf, "%s", s);
    char *save = NULL;
    for (char *tk = strtok_r(buf, ",", &save); tk; tk = strtok_r(NULL, ",", &save))
        GT_TRY(grid_item(tk, out));
    return GT_OK;
}

void gt_train_grid_format(const gt_train_grid *g, char *buf, size_t len) {
    snprintf(buf, len, "dp=%d,tp=%d,pp=%d", g->dp, g->tp ? g->tp : 1, g->pp ? g->pp : 1);
}

gt_status gt_train_grid_sizes(const gt_train_grid *g, int N, gt_train_grid *out) {
    int tp = g->tp ? g->tp : 1, pp = g->pp ? g->pp : 1;
    if (N % (tp * pp) != 0)
        return GT_ERR(GT_ERR_INVALID,
                      "--layout tp=%d x pp=%d does not divide the job's %d ranks: "
                      "launch a multiple of %d ranks",
                      tp, pp, N, tp * pp);
    int dp = N / (tp * pp);
    if (g->dp && g->dp != dp)
        return GT_ERR(GT_ERR_INVALID,
                      "--layout dp=%d x tp=%d x pp=%d is %d ranks, but the job "
                      "has %d: launch %d ranks or change dp",
                      g->dp, tp, pp, g->dp * tp * pp, N, g->dp * tp * pp);
    *out = (gt_train_grid){.dp = dp, .tp = tp, .pp = pp};
    return GT_OK;
}

void gt_train_grid_coords(const gt_train_grid *g, int rank, gt_train_grid *at) {
    int tp = g->tp ? g->tp : 1, pp = g->pp ? g->pp : 1;
    at->tp = rank % tp;
    at->pp = rank / tp % pp;
    at->dp = rank / (tp * pp);
}

/* The groups: data-parallel (same stage and tensor rank), pipeline (same
 * replica and tensor rank), tensor-parallel (same replica and stage), each
 * ordered by the coordinate that varies in it. Only those of size > 1
 * (the data-parallel one only with tp or pp > 1: else it is comm). */
gt_status gt_train_grid_split(gt_comm *comm, const gt_train_grid *g, gt_comm **dp,
                              gt_comm **pp, gt_comm **tp) {
    *dp = *pp = *tp = NULL;
    gt_train_grid at;
    gt_train_grid_coords(g, gt_comm_rank(comm), &at);
    if (g->pp > 1 || g->tp > 1) GT_TRY(gt_comm_split(comm, at.pp * g->tp + at.tp, at.dp, dp));
    if (g->pp > 1) GT_TRY(gt_comm_split(comm, at.dp * g->tp + at.tp, at.pp, pp));
    if (g->tp > 1) GT_TRY(gt_comm_split(comm, at.dp * g->pp + at.pp, at.tp, tp));
    /* the watchdog names a stalled group by these */
    char name[96];
    snprintf(name, sizeof name, "the data-parallel group of stage %d, tensor rank %d", at.pp,
             at.tp);
    gt_comm_set_name(*dp, name);
    snprintf(name, sizeof name, "the pipeline of replica %d, tensor rank %d", at.dp, at.tp);
    gt_comm_set_name(*pp, name);
    snprintf(name, sizeof name, "the tensor-parallel group of replica %d, stage %d", at.dp,
             at.pp);
    gt_comm_set_name(*tp, name);
    return GT_OK;
}

gt_status gt_train_grid_open(gt_trainer *t) {
    int N = gt_comm_size(t->comm), me = gt_comm_rank(t->comm);
    GT_TRY(gt_train_grid_sizes(&t->cfg->grid, N, &t->st->grid));
    const gt_train_grid *g = &t->st->grid;
    gt_train_grid at;
    gt_train_grid_coords(g, me, &at);
    t->P = g->pp;
    t->stage = at.pp;
    t->TP = g->tp;
    t->tp_rank = at.tp;
    t->nworld = N;
    t->wrank = me;
    GT_TRY(gt_train_grid_split(t->comm, g, &t->dp_comm, &t->pp_comm, &t->tp_comm));
    if (t->dp_comm) t->comm = t->dp_comm;
    return GT_OK;
}

void gt_train_grid_close(gt_trainer *t) {
    gt_comm_free(t->tp_comm);
    gt_comm_free(t->pp_comm);
    gt_comm_free(t->dp_comm);
    t->tp_comm = t->pp_comm = t->dp_comm = NULL;
}

int gt_train_grid_layouts(int N, int heads, int layers, int padded_vocab, gt_train_grid *out,
                          int max) {
    int n = 0;
    if (N < 1) return 0;
    /* dp descending, then tp descending: plain data parallelism first */
    for (int dp = N; dp >= 1; dp--) {
        if (N % dp) continue;
        int rest = N / dp;
        for (int tp = rest; tp >= 1; tp--) {
            if (rest % tp) continue;
            int pp = rest / tp;
            if (heads % tp || padded_vocab % tp || layers % pp) continue;
            if (out && n < max) out[n] = (gt_train_grid){.dp = dp, .tp = tp, .pp = pp};
            n++;
        }
    }
    return n;
}
