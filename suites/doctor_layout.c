/* gauntlet doctor --layout dp=D,tp=T,pp=P: the groups of a training layout,
 * probed as training uses them (docs/doctor.md, "Layouts").
 *
 * The job's communicator is split by the trainer's own code
 * (gt_train_grid_split: the same placement and group names), then, kind by
 * kind with a barrier of the whole job between kinds, every tensor group
 * all-reduces, every data-parallel group all-reduces, and every pipeline
 * boundary (stage s -> s + 1 of one replica and tensor rank) sends and
 * receives, all groups of a kind at the same time, as in training. Each
 * operation is non-blocking and waited for under the layout's deadline
 * (gt_comm_set_timeout): a blocking collective that passes the watchdog's
 * deadline ends the job, a waited one returns GT_ERR_TIMEOUT with the
 * watchdog's record (gt_comm_last_hang), so that the doctor lives to name
 * the group. The blocks run in rounds, a barrier of the whole job before
 * each; in a round a group's figure is its slowest member's, and groups are
 * judged round by round against the median group of their kind, as the
 * doctor's compute probes judge ranks. */
#define _POSIX_C_SOURCE 200809L /* nanosleep, strtok_r */

#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/stats.h"
#include "engine/timer.h"
#include "suites/doctor_impl.h"
#include "suites/trainer/train.h"

/* The kinds of probe; a rank's row holds one slot per kind. A pipeline
 * boundary is two slots: its sender's and its receiver's. */
enum { K_TENSOR = 0, K_DATA, K_SEND, K_RECV, K_COUNT };
/* a slot's state */
enum { S_NONE = 0, S_OK, S_TIMEOUT, S_STALLED };
/* per slot: state, the peer world rank a timed-out wait was for, then each
 * round's block time per operation (s; 0: none) */
enum { MAX_ROUNDS = 25, SLOT = MAX_ROUNDS + 2, ROW = K_COUNT * SLOT };

static const struct {
    const char *name, *what, *op;
} g_kind[3] = {
    {"layout_tensor", "tensor group", "allreduce"},
    {"layout_data", "data-parallel group", "allreduce"},
    {"layout_pipeline", "pipeline send", "send/recv"},
};

static double now_s(void) { return (double)gt_now_ns() * 1e-9; }

static void sleep_s(double s) {
    if (!(s > 0)) return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* What this rank does in the layout probes. */
typedef struct lay_plan {
    gt_train_grid g, at;       /* the grid (sizes filled in), this rank's place */
    gt_comm *dp, *pp, *tp;     /* owned: the groups (dp NULL: pure data parallelism) */
    gt_comm *dp_own;           /* owned: the data-parallel group when dp was NULL */
    size_t count;              /* fp32 elements of the representative message */
    int reps, iters;           /* rounds (a block each) and operations per block */
    double factor;             /* GT_FAULT_SLOW_*: this rank's slowdown */
    int stalled;               /* GT_FAULT_STALL_RANK names this rank */
    float *a, *b;              /* count each */
    double row[ROW];
} lay_plan;

static double *slot_of(lay_plan *p, int k) { return p->row + k * SLOT; }

/* The end of a slot's probes on a failed block: a wait past the deadline
 * records whom the watchdog says it waited for (gt_comm_last_hang); any
 * other error is said on stderr and counts the same (its group could not
 * be measured). */
static void slot_fail(lay_plan *p, int k, gt_status s) {
    double *x = slot_of(p, k);
    gt_comm_hang h;
    x[0] = S_TIMEOUT;
    x[1] = s == GT_ERR_TIMEOUT && gt_comm_last_hang(&h) ? h.peer_world_rank : -1;
    if (s != GT_ERR_TIMEOUT) fprintf(stderr, "gauntlet doctor --layout: %s\n", gt_last_error());
}

/* Waits for *req when the start s succeeded (the argument is the
 * request's address: C leaves the order of a call's arguments open, so a
 * request passed by value might be read before the start set it). */
static gt_status wait_op(gt_comm *c, gt_status s, gt_comm_request **req) {
    return s == GT_OK ? gt_comm_wait(c, *req) : s;
}

static gt_status barrier_w(gt_comm *c) {
    gt_comm_request *r = NULL;
    return wait_op(c, gt_comm_barrier(c, &r), &r);
}

/* One block of an all-reduce group: barrier, `iters` all-reduces, the
 * slowdown's sleep before the closing barrier (so that every member times
 * the slow block). *t: time per all-reduce. */
static gt_status block_allreduce(lay_plan *p, gt_comm *c, double *t) {
    GT_TRY(barrier_w(c));
    double t0 = now_s();
    for (int i = 0; i < p->iters; i++) {
        gt_comm_request *req = NULL;
        GT_TRY(wait_op(c, gt_comm_allreduce(c, p->a, p->b, p->count, GT_DTYPE_FP32,
                                            GT_REDOP_SUM, &req), &req));
    }
    sleep_s((p->factor - 1) * (now_s() - t0));
    GT_TRY(barrier_w(c));
    *t = (now_s() - t0) / p->iters;
    return GT_OK;
}

/* Both ends of a boundary: a token each way (send first: 4 bytes go
 * eagerly, the receive is the wait). */
static gt_status exchange(gt_comm *c, int peer) {
    int32_t out = 1, in = 0;
    gt_comm_request *r = NULL;
    GT_TRY(wait_op(c, gt_comm_send(c, &out, 1, GT_DTYPE_INT32, peer, 1, &r), &r));
    return wait_op(c, gt_comm_recv(c, &in, 1, GT_DTYPE_INT32, peer, 1, &r), &r);
}

/* One block of one end of a pipeline boundary on the pipeline group: this
 * rank sends (k == K_SEND) to or receives from stage `peer`, as above. */
static gt_status block_boundary(lay_plan *p, int k, int peer, double *t) {
    gt_comm *c = p->pp;
    GT_TRY(exchange(c, peer));
    double t0 = now_s();
    for (int i = 0; i < p->iters; i++) {
        gt_comm_request *req = NULL;
        gt_status s = k == K_SEND
                          ? gt_comm_send(c, p->a, p->count, GT_DTYPE_FP32, peer, 2, &req)
                          : gt_comm_recv(c, p->b, p->count, GT_DTYPE_FP32, peer, 2, &req);
        GT_TRY(wait_op(c, s, &req));
    }
    sleep_s((p->factor - 1) * (now_s() - t0));
    GT_TRY(exchange(c, peer));
    *t = (now_s() - t0) / p->iters;
    return GT_OK;
}

/* Slot k's rounds: each starts with a barrier of the whole job, so that
 * round r of every group runs at the same time and groups are compared
 * round by round (load that comes and goes moves a few rounds; a slow rank
 * is slow in all). part: this rank has a group of this kind (c: its
 * all-reduce group; NULL: the boundary to stage `peer`). A stalled rank
 * and one whose block failed still take part in the barriers. */
static gt_status run_rounds(gt_comm *world, lay_plan *p, int k, int part, gt_comm *c, int peer) {
    double *x = slot_of(p, k);
    if (part) x[0] = p->stalled ? S_STALLED : S_OK;
    for (int r = 0; r < p->reps; r++) {
        GT_TRY(gt_comm_barrier_idle(world));
        if (!part || (int)x[0] != S_OK) continue;
        double t = 0;
        gt_status s = c ? block_allreduce(p, c, &t) : block_boundary(p, k, peer, &t);
        if (s == GT_OK) x[2 + r] = t;
        else slot_fail(p, k, s);
    }
    return GT_OK;
}

/* Every kind in turn (those the layout has: every rank knows the same).
 * Pipeline boundaries in two phases, from even stages then from odd ones,
 * so that no rank is in two boundaries at once. */
static gt_status lay_measure(gt_comm *world, lay_plan *p) {
    for (int i = 0; i < ROW; i++) p->row[i] = 0;
    for (int k = 0; k < K_COUNT; k++) slot_of(p, k)[1] = -1;
    gt_comm *dp = p->dp ? p->dp : p->dp_own;
    if (p->g.tp > 1) GT_TRY(run_rounds(world, p, K_TENSOR, 1, p->tp, -1));
    if (p->g.dp > 1) GT_TRY(run_rounds(world, p, K_DATA, 1, dp, -1));
    int P = p->g.pp, st = p->at.pp;
    for (int phase = 0; P > 1 && phase < (P > 2 ? 2 : 1); phase++) {
        int send = st % 2 == phase && st + 1 < P, recv = st > 0 && (st - 1) % 2 == phase;
        if (send) GT_TRY(run_rounds(world, p, K_SEND, 1, NULL, st + 1));
        else GT_TRY(run_rounds(world, p, recv ? K_RECV : K_SEND, recv, NULL, st - 1));
    }
    return GT_OK;
}

static void lay_free(lay_plan *p) {
    gt_comm_free(p->tp);
    gt_comm_free(p->pp);
    gt_comm_free(p->dp);
    gt_comm_free(p->dp_own);
    free(p->a);
    free(p->b);
}

static int stalled_here(const char *spec, int me) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", spec ? spec : "");
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (atoi(tok) == me) return 1;
    return 0;
}

static gt_status lay_open(gt_comm *comm, const gt_doctor_config *cfg, const gt_job *job,
                          lay_plan *p) {
    int me = gt_comm_rank(comm);
    memset(p, 0, sizeof *p);
    gt_train_grid parsed;
    GT_TRY(gt_train_grid_parse(cfg->layout, &parsed));
    GT_TRY(gt_train_grid_sizes(&parsed, gt_comm_size(comm), &p->g));
    gt_train_grid_coords(&p->g, me, &p->at);
    GT_TRY(gt_train_grid_split(comm, &p->g, &p->dp, &p->pp, &p->tp));
    if (!p->dp) GT_TRY(gt_comm_split(comm, 0, me, &p->dp_own));
    if (p->dp_own) gt_comm_set_name(p->dp_own, "the data-parallel group (the whole job)");
    double dl = cfg->layout_deadline_s > 0 ? cfg->layout_deadline_s : GT_DOCTOR_LAYOUT_DEADLINE;
    gt_comm *groups[] = {p->dp, p->pp, p->tp, p->dp_own};
    for (int i = 0; i < 4; i++) gt_comm_set_timeout(groups[i], dl);
    /* a tensor group's activation all-reduce, a stage's activations: 1 MiB
     * quick, else 16 MiB (the link probe's sizes) */
    p->count = ((size_t)(cfg->quick ? 1 : 16) << 20) / sizeof(float);
    p->reps = cfg->quick ? MAX_ROUNDS : 15; /* the link probe's blocks */
    p->iters = cfg->quick ? 4 : 8;
    p->factor = 1;
    gt_doctor_fault_factor(cfg->slow_hosts, "GT_FAULT_SLOW_HOST", 0, job->rank[me].host, me,
                           &p->factor);
    gt_doctor_fault_factor(cfg->slow_ranks, "GT_FAULT_SLOW_RANK", 1, NULL, me, &p->factor);
    p->stalled = stalled_here(cfg->stall_ranks, me);
    p->a = calloc(p->count, sizeof(float));
    p->b = calloc(p->count, sizeof(float));
    if (!p->a || !p->b) return GT_ERR(GT_ERR_OOM, "doctor --layout: out of memory");
    for (size_t i = 0; i < p->count; i++) p->a[i] = (float)(i % 7);
    return GT_OK;
}

/* ---- judging (every rank: the same rows; rank 0 says it) ---------------------------------------------------------- */

/* One group of a kind: its members (world ranks; for a boundary the
 * sender then the receiver) and what they measured. */
typedef struct lay_group {
    int kind, index, n, *members; /* n world ranks (borrowed: groups_of's buffer) */
    int coord[3];        /* tensor: replica, stage; data: stage, tensor rank; pipeline:
                            replica, tensor rank, sending stage */
    double f[MAX_ROUNDS];  /* each round: the slowest member's block (s per operation) */
    int ok;              /* every member measured every round */
    double fig, ratio;   /* the median over rounds of f and of f / the round's reference */
    int timeout, stalled;
    char waited[128];    /* the ranks waited for, "3" or "2,3" */
} lay_group;

static int rank_at(const gt_train_grid *g, int dp, int pp, int tp) {
    return (dp * g->pp + pp) * g->tp + tp;
}

static void add_waited(lay_group *gr, int r) {
    char num[16];
    snprintf(num, sizeof num, "%d", r);
    size_t l = strlen(gr->waited);
    /* already there? (the list is short) */
    char pad[140];
    snprintf(pad, sizeof pad, ",%s,", gr->waited);
    char key[20];
    snprintf(key, sizeof key, ",%s,", num);
    if (strstr(pad, key)) return;
    snprintf(gr->waited + l, sizeof gr->waited - l, "%s%s", l ? "," : "", num);
}

/* The group's rounds and state from its members' rows (all: n x ROW, R
 * rounds); slot[i]: the slot member i used. */
static void group_fill(lay_group *gr, const double *all, const int *slot, int R) {
    gr->ok = 1;
    for (int i = 0; i < gr->n; i++) {
        const double *x = all + (size_t)gr->members[i] * ROW + slot[i] * SLOT;
        int state = (int)x[0];
        for (int r = 0; state == S_OK && r < R; r++) gr->f[r] = fmax(gr->f[r], x[2 + r]);
        if (state == S_TIMEOUT) {
            gr->timeout = 1;
            if (x[1] >= 0) add_waited(gr, (int)x[1]);
        }
        if (state == S_STALLED) {
            gr->stalled = 1;
            add_waited(gr, gr->members[i]);
        }
        gr->ok &= state == S_OK;
    }
    /* a collective that timed out on some members: the others are the
     * ones waited for, when the watchdog could not say */
    if (gr->timeout && !gr->waited[0])
        for (int i = 0; i < gr->n; i++)
            if ((int)all[(size_t)gr->members[i] * ROW + slot[i] * SLOT] == S_OK)
                add_waited(gr, gr->members[i]);
}

/* Judged round by round, as the doctor's compute probes are: in round r
 * the reference is the median of the groups' figures (of two the better);
 * a group's ratio is the median over rounds of its figure / the round's
 * reference, its figure the median over rounds. Returns the median over
 * rounds of the reference (-1: fewer than two groups measured). */
static double groups_judge(lay_group *gr, int n, int R) {
    double *v = malloc((size_t)(n + 2 * R + 1) * sizeof *v);
    if (!v) return -1;
    double *refs = v + n, *x = refs + R;
    for (int r = 0; r < R; r++) {
        int k = 0;
        for (int g = 0; g < n; g++)
            if (gr[g].ok && gr[g].f[r] > 0) v[k++] = gr[g].f[r];
        refs[r] = k >= 3 ? gt_median(v, (size_t)k) : k == 2 ? fmin(v[0], v[1]) : -1;
    }
    for (int g = 0; g < n; g++) {
        gr[g].fig = gr[g].ratio = 0;
        if (!gr[g].ok) continue;
        int k = 0;
        for (int r = 0; r < R; r++)
            if (gr[g].f[r] > 0) x[k++] = gr[g].f[r];
        gr[g].fig = k ? gt_median(x, (size_t)k) : 0;
        k = 0;
        for (int r = 0; r < R; r++)
            if (gr[g].f[r] > 0 && refs[r] > 0) x[k++] = gr[g].f[r] / refs[r];
        gr[g].ratio = k ? gt_median(x, (size_t)k) : 0;
    }
    int k = 0;
    for (int r = 0; r < R; r++)
        if (refs[r] > 0) x[k++] = refs[r];
    double ref = k ? gt_median(x, (size_t)k) : -1;
    free(v);
    return ref;
}

/* Every group of kind k (0 tensor, 1 data, 2 pipeline boundary) over R
 * rounds, filled and judged (*ref: groups_judge's reference). */
static int groups_of(int k, const gt_train_grid *g, const double *all, int R, lay_group *out,
                     int *memb, int *slot, double *ref) {
    int n = 0;
    int A = k == 0 ? g->dp : k == 1 ? g->pp : g->dp;
    int B = k == 0 ? g->pp : k == 1 ? g->tp : g->tp;
    int C = k == 2 ? g->pp - 1 : 1;
    if ((k == 0 && g->tp < 2) || (k == 1 && g->dp < 2) || (k == 2 && g->pp < 2)) return 0;
    for (int a = 0; a < A; a++)
        for (int b = 0; b < B; b++)
            for (int c = 0; c < C; c++) {
                lay_group *gr = &out[n];
                memset(gr, 0, sizeof *gr);
                gr->members = memb; /* each kind's groups hold at most 2 x the ranks */
                gr->kind = k;
                gr->index = n;
                gr->coord[0] = a;
                gr->coord[1] = b;
                gr->coord[2] = c;
                if (k == 0)
                    for (int t = 0; t < g->tp; t++, gr->n++)
                        gr->members[t] = rank_at(g, a, b, t), slot[t] = K_TENSOR;
                else if (k == 1)
                    for (int d = 0; d < g->dp; d++, gr->n++)
                        gr->members[d] = rank_at(g, d, a, b), slot[d] = K_DATA;
                else {
                    gr->members[0] = rank_at(g, a, c, b), slot[0] = K_SEND;
                    gr->members[1] = rank_at(g, a, c + 1, b), slot[1] = K_RECV;
                    gr->n = 2;
                }
                group_fill(gr, all, slot, R);
                memb += gr->n;
                n++;
            }
    *ref = groups_judge(out, n, R);
    return n;
}

/* "tensor group 1 (replica 0, stage 1; ranks 2,3 on nodec,noded)" */
static void group_label(const lay_group *gr, const gt_job *job, char *buf, size_t len) {
    char ranks[256] = "", hosts[512] = "";
    for (int i = 0; i < gr->n; i++) {
        size_t l = strlen(ranks), h = strlen(hosts);
        snprintf(ranks + l, sizeof ranks - l, "%s%d", i ? (gr->kind == 2 ? " -> rank " : ",") : "",
                 gr->members[i]);
        const char *host = job->rank[gr->members[i]].host;
        /* a host once, in member order */
        char key[GT_JOB_HOST + 2], pad[520];
        snprintf(key, sizeof key, ",%s,", host);
        snprintf(pad, sizeof pad, ",%s,", hosts);
        if (!strstr(pad, key)) snprintf(hosts + h, sizeof hosts - h, "%s%s", h ? "," : "", host);
    }
    if (gr->kind == 0)
        snprintf(buf, len, "tensor group %d (replica %d, stage %d: ranks %s on %s)", gr->index,
                 gr->coord[0], gr->coord[1], ranks, hosts);
    else if (gr->kind == 1)
        snprintf(buf, len, "data-parallel group %d (stage %d, tensor rank %d: ranks %s on %s)",
                 gr->index, gr->coord[0], gr->coord[1], ranks, hosts);
    else
        snprintf(buf, len, "pipeline send stage %d -> %d (replica %d, tensor rank %d: rank %s on %s)",
                 gr->coord[2], gr->coord[2] + 1, gr->coord[0], gr->coord[1], ranks, hosts);
}

typedef struct lay_judge {
    const gt_doctor_config *cfg;
    const gt_job *job;
    gt_report *rep;
    const char *topology;
    FILE *out;
    double limit, deadline, bytes;
    int named;
    int *in_named;  /* per world rank: how many named groups hold it */
    int kinds;      /* kinds with groups of more than one rank */
} lay_judge;

static void name_group(lay_judge *j, const lay_group *gr, const char *label, double ratio,
                       double ref, const char *detail) {
    j->named++;
    for (int i = 0; j->in_named && i < gr->n; i++) j->in_named[gr->members[i]]++;
    if (j->out) fprintf(j->out, "  OUTLIER %s\n", detail);
    if (!j->rep) return;
    gt_record *o = gt_report_record(j->rep, "doctor", "outliers");
    gt_record_str(o, "probe", g_kind[gr->kind].name);
    gt_record_str(o, "scope", "group");
    gt_record_str(o, "group", label);
    gt_record_int(o, "group_index", gr->index);
    gt_record_str(o, "operation", g_kind[gr->kind].op);
    gt_record_num(o, "bytes", j->bytes);
    char ranks[256] = "";
    for (int i = 0; i < gr->n; i++) {
        size_t l = strlen(ranks);
        snprintf(ranks + l, sizeof ranks - l, "%s%d", i ? "," : "", gr->members[i]);
    }
    gt_record_str(o, "ranks", ranks);
    /* the rank waited for when the group stalled; a slow group's members
     * all time the same slow blocks, so no one of them is named here (the
     * rank in every named group is: layout_suspects) */
    if (gr->waited[0]) {
        int r = atoi(gr->waited);
        gt_record_int(o, "rank", r);
        gt_record_str(o, "host", j->job->rank[r].host);
    } else {
        gt_record_str(o, "rank", NULL);
        gt_record_str(o, "host", NULL);
    }
    gt_record_bool(o, "stalled", gr->timeout || gr->stalled);
    gt_record_str(o, "waiting_for_ranks", gr->waited);
    if (gr->fig > 0) gt_record_num(o, "value", gr->fig * 1e3);
    gt_record_str(o, "unit", gr->fig > 0 ? "ms" : "");
    if (ref > 0) gt_record_num(o, "reference", ref * 1e3);
    if (ratio > 0) gt_record_num(o, "ratio", ratio);
    gt_record_num(o, "limit", j->limit);
    gt_record_num(o, "deadline_s", j->deadline);
    gt_record_str(o, "detail", detail);
}

/* One group's line: its record in the kind's result, the console, and
 * the outlier when it is one. */
static int judge_group(lay_judge *j, gt_result *res, const lay_group *gr, double ref,
                       int judged, char *worst, size_t wlen) {
    char label[768], detail[1400], size[32];
    group_label(gr, j->job, label, sizeof label);
    snprintf(size, sizeof size, "%.3g MiB", j->bytes / 1048576.0);
    double ratio = gr->ratio;
    int stalled = gr->timeout || gr->stalled;
    int out = stalled || (judged && ratio > j->limit);
    if (stalled)
        snprintf(detail, sizeof detail,
                 "%s: %s of %s did not complete within %g s (waiting for rank %s)", label,
                 g_kind[gr->kind].op, size, j->deadline, gr->waited[0] ? gr->waited : "?");
    else
        snprintf(detail, sizeof detail, "%s: %s of %s %.1fx slower than the %s group (%.3g ms "
                 "against %.3g ms, medians over rounds; limit %.2fx)", label,
                 g_kind[gr->kind].op, size, ratio, judged >= 3 ? "median" : "better",
                 gr->fig * 1e3, ref * 1e3, j->limit);
    if (j->out && !out && ratio > 0)
        fprintf(j->out, "    %-64s %9.3f ms  %.2fx\n", label, gr->fig * 1e3, ratio);
    else if (j->out && !out)
        fprintf(j->out, "    %-64s %9.3f ms\n", label, gr->fig * 1e3);
    if (res) {
        gt_record *rec = gt_result_record(res, "groups");
        gt_record_int(rec, "index", gr->index);
        gt_record_str(rec, "group", label);
        if (gr->fig > 0) gt_record_num(rec, "value", gr->fig * 1e3);
        else gt_record_str(rec, "value", NULL);
        if (ratio > 0) gt_record_num(rec, "ratio", ratio);
        gt_record_bool(rec, "stalled", stalled);
        gt_record_str(rec, "waiting_for_ranks", gr->waited);
        gt_record_bool(rec, "outlier", out);
    }
    if (!out) return 0;
    name_group(j, gr, label, ratio, ref, detail);
    size_t l = strlen(worst);
    snprintf(worst + l, wlen - l, "%s%s", l ? "; " : "", detail);
    return 1;
}

/* Kind k's groups (judged: groups_judge, ref its reference): a result with
 * a record per group, and every group named. */
static void judge_kind(lay_judge *j, int k, const lay_group *gr, int n, double ref) {
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v), worst_ratio = 0;
    int valid = 0, count = 0;
    for (int i = 0; v && i < n; i++)
        if (gr[i].fig > 0) v[valid++] = gr[i].fig;
    int judged = valid >= 2 && ref > 0 ? valid : 0;
    gt_result *res = j->rep ? gt_report_add_result(j->rep, "doctor", g_kind[k].name,
                                                   j->topology, j->cfg->backend)
                            : NULL;
    if (res) {
        gt_result_param_str(res, "probe", k == 2 ? "pipeline boundary send/recv (stage s -> s+1)"
                                                 : k ? "data-parallel group all-reduce"
                                                     : "tensor group all-reduce");
        gt_result_param_str(res, "layout", j->cfg->layout);
        gt_result_param_num(res, "bytes", j->bytes);
        gt_result_param_num(res, "limit", j->limit);
        gt_result_param_num(res, "deadline_s", j->deadline);
        gt_result_param_str(res, "reference",
                            valid >= 3   ? "median over groups, round by round"
                            : valid == 2 ? "the better of two groups, round by round"
                                         : "none: one group measured");
        for (int i = 0; i < valid; i++) v[i] *= 1e3;
        gt_result_metric(res, "time_ms", "ms", 0, valid ? gt_median(v, (size_t)valid) : 0, v,
                         (size_t)valid);
        gt_result_metric_ungated(res, "time_ms", "reference");
    }
    if (j->out && ref > 0)
        fprintf(j->out, "%-15s %s of %.3g MiB: reference %.3f ms (%s)\n", g_kind[k].name,
                g_kind[k].op, j->bytes / 1048576.0, ref * 1e3,
                valid >= 3 ? "median group" : "better of 2");
    else if (j->out)
        fprintf(j->out, "%-15s %s of %.3g MiB: no reference (%d group(s) measured: not "
                "compared)\n", g_kind[k].name, g_kind[k].op, j->bytes / 1048576.0, valid);
    char worst[4096] = "";
    for (int i = 0; i < n; i++) {
        count += judge_group(j, res, &gr[i], ref, judged, worst, sizeof worst);
        worst_ratio = fmax(worst_ratio, gr[i].ratio);
    }
    if (res && !judged && !count)
        gt_result_check_unevaluated(res, "no_outlier", j->limit,
                                    "one group of this kind: nothing to compare with");
    else if (res)
        gt_result_check(res, "no_outlier", count == 0, worst_ratio, j->limit,
                        count ? worst : "every group within the limit, none stalled");
    free(v);
}

/* With two or more groups named, the ranks in every one of them (a slow
 * rank slows each group it is in: its tensor group and its pipeline
 * boundaries): doctor.layout_suspects[] and a console line. */
static void suspects(lay_judge *j, int n) {
    if (j->named < 2 || !j->in_named) return;
    if (j->rep) gt_report_section_array(j->rep, "doctor", "layout_suspects");
    for (int r = 0; r < n; r++) {
        if (j->in_named[r] != j->named) continue;
        if (j->out)
            fprintf(j->out, "  rank %d (host %s) is in every group named above\n", r,
                    j->job->rank[r].host);
        if (!j->rep) continue;
        gt_record *o = gt_report_record(j->rep, "doctor", "layout_suspects");
        gt_record_int(o, "rank", r);
        gt_record_str(o, "host", j->job->rank[r].host);
    }
}

/* One look: every kind measured, every rank's row gathered into all (n x ROW). */
static gt_status lay_look(gt_comm *comm, lay_plan *p, double *all) {
    GT_TRY(lay_measure(comm, p));
    return gt_comm_allgather(comm, p->row, all, ROW, GT_DTYPE_FP64, NULL);
}

/* Every kind's groups judged (j->out, j->rep: where they are said); the
 * count named. again: a second look's rows (NULL: none), in which case
 * each group is judged by the look in which its ratio was smaller (a
 * burst of other work on a shared machine is seldom in both looks; a slow
 * rank is). gr, g2: room for n groups each. */
static int lay_judge_all(lay_judge *j, const lay_plan *p, const double *all,
                         const double *again, lay_group *gr, lay_group *g2) {
    j->named = j->kinds = 0;
    size_t N = (size_t)p->g.dp * p->g.tp * p->g.pp;
    int *memb = malloc(N * 6 * sizeof *memb); /* gr's members, g2's, the slots */
    if (!memb) return 0;
    for (int k = 0; k < 3; k++) {
        double ref = -1, ref2 = -1;
        int ng = groups_of(k, &p->g, all, p->reps, gr, memb, memb + 4 * N, &ref);
        if (ng && again &&
            groups_of(k, &p->g, again, p->reps, g2, memb + 2 * N, memb + 4 * N, &ref2) == ng) {
            for (int i = 0; i < ng; i++)
                if (g2[i].ok && g2[i].ratio > 0 && g2[i].ratio < gr[i].ratio) gr[i] = g2[i];
            ref = ref2 > 0 && (ref <= 0 || ref2 < ref) ? ref2 : ref;
        }
        if (ng) judge_kind(j, k, gr, ng, ref);
        j->kinds += ng > 0;
    }
    if (j->out && j->kinds == 0)
        fprintf(j->out, "  no group of more than one rank in this layout: nothing to probe\n");
    free(memb);
    return j->named;
}

/* The second look (into *again), when the first named a slow group and
 * nothing stalled (a stalled group's communicator is spent). */
static gt_status lay_second_look(gt_comm *comm, lay_plan *p, lay_judge *quiet, const double *all,
                                 lay_group *gr, int n, double **again) {
    *again = NULL;
    for (int i = 0; i < n * K_COUNT; i++) {
        int state = (int)all[i * SLOT];
        if (state == S_TIMEOUT || state == S_STALLED) return GT_OK;
    }
    int first = lay_judge_all(quiet, p, all, NULL, gr, NULL);
    if (first == 0) return GT_OK;
    if (quiet->cfg->out && gt_comm_rank(comm) == 0)
        fprintf(quiet->cfg->out, "layout, first look: %d group(s) named; looking again: each "
                "group below is judged by the look in which it did better\n", first);
    *again = malloc((size_t)n * ROW * sizeof **again);
    if (!*again) return GT_ERR(GT_ERR_OOM, "doctor --layout: out of memory");
    return lay_look(comm, p, *again);
}

gt_status gt_doctor_layout_run(gt_comm *comm, const gt_doctor_config *cfg, const gt_job *job,
                               gt_report *rep, const char *topology, FILE *out, int *named) {
    *named = 0;
    int n = gt_comm_size(comm), looks = 1;
    lay_plan p;
    gt_status s = lay_open(comm, cfg, job, &p);
    double *all = s == GT_OK ? malloc((size_t)n * ROW * sizeof *all) : NULL;
    lay_group *gr = s == GT_OK ? malloc((size_t)n * 2 * sizeof *gr) : NULL;
    double *again = NULL;
    if (s == GT_OK && (!all || !gr)) s = GT_ERR(GT_ERR_OOM, "doctor --layout: out of memory");
    if (s == GT_OK) s = lay_look(comm, &p, all);
    lay_judge j = {.cfg = cfg, .job = job, .topology = topology,
                   .limit = cfg->group_limit > 0 ? cfg->group_limit : GT_DOCTOR_GROUP_LIMIT,
                   .deadline = cfg->layout_deadline_s > 0 ? cfg->layout_deadline_s
                                                          : GT_DOCTOR_LAYOUT_DEADLINE,
                   .bytes = (double)p.count * sizeof(float)};
    if (s == GT_OK && !cfg->one_look) s = lay_second_look(comm, &p, &j, all, gr, n, &again);
    if (again) looks = 2;
    if (s == GT_OK) {
        char grid[64];
        gt_train_grid_format(&p.g, grid, sizeof grid);
        j.rep = rep;
        j.out = out;
        if (out)
            fprintf(out, "layout %s: time per operation, each group's median over %d rounds%s%s\n",
                    grid, p.reps, looks == 2 ? ", the better of two looks" : "",
                    cfg->stall_ranks ? " (GT_FAULT_STALL_RANK injected)" : "");
        j.in_named = calloc((size_t)n, sizeof *j.in_named);
        *named = lay_judge_all(&j, &p, all, again, gr, gr + n);
        suspects(&j, n);
        free(j.in_named);
        if (rep) {
            gt_report_section_str(rep, "doctor", "layout", grid);
            gt_report_section_num(rep, "doctor", "group_limit", j.limit);
            gt_report_section_num(rep, "doctor", "layout_deadline_s", j.deadline);
            gt_report_section_int(rep, "doctor", "layout_looks", looks);
        }
    }
    free(again);
    free(gr);
    free(all);
    lay_free(&p);
    return s;
}
