/* Layout prediction (predict_layout.h, docs/predict.md "Layouts"). */
#include "reports/predict_layout.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/stats.h"

/* ---- the formulas --------------------------------------------------------- */

double gt_layout_bubble(int pp, int micro_batches) {
    if (pp <= 1 || micro_batches < 1) return 0;
    return (double)(pp - 1) / (micro_batches + pp - 1);
}

int gt_layout_tp_allreduces(int layers) {
    return 4 * layers + 4;
}

double gt_layout_tp_bytes(int layers, double tokens, int channels) {
    return (4.0 * layers + 2) * tokens * channels * 4 + 24 * tokens;
}

double gt_layout_pp_send_bytes(double tokens, int channels) {
    return tokens * channels * 4;
}

int gt_layout_micro_batches(const gt_layout_shape *s, gt_layout l) {
    double share = s->global_batch / l.dp;
    if (share < 1 || share != floor(share)) return 0;
    double b = s->micro_batch > 0 && s->micro_batch < share ? s->micro_batch : share;
    double m = share / b;
    return m == floor(m) ? (int)m : 0;
}

const char *gt_layout_invalid(const gt_layout_shape *s, gt_layout l, char *buf, size_t len) {
    if (l.dp < 1 || l.tp < 1 || l.pp < 1)
        snprintf(buf, len, "dp, tp and pp must be at least 1");
    else if (l.pp > s->layers)
        snprintf(buf, len, "pp=%d: more stages than the model's %d blocks", l.pp, s->layers);
    else if (s->heads % l.tp || s->channels % l.tp || s->vocab % l.tp)
        snprintf(buf, len,
                 "tp=%d does not divide the heads (%d), channels (%d) and vocabulary (%d)", l.tp,
                 s->heads, s->channels, s->vocab);
    else if (!gt_layout_micro_batches(s, l))
        snprintf(buf, len,
                 "dp=%d: the global batch of %g sequences is not a whole number of "
                 "micro-batches of %g a replica",
                 l.dp, s->global_batch, s->micro_batch);
    else
        return NULL;
    return buf;
}

double gt_layout_net_time(const gt_layout_net *net, int inter, gt_predict_coll coll, double bytes,
                          int n) {
    if (net->links) return gt_predict_links_time(net->links, inter, coll, bytes, n);
    double a = net->alpha_s[inter ? 1 : 0], b = net->beta_bps[inter ? 1 : 0];
    if (bytes <= 0) return 0;
    if (coll == GT_PREDICT_SEND) return a + bytes / b;
    if (n <= 1) return 0;
    double steps = coll == GT_PREDICT_ALLREDUCE ? 2.0 * (n - 1) : n - 1.0;
    return a * steps + bytes * steps / n / b;
}

/* bytes of one micro-batch's activations on a rank: its stage's blocks and
 * the embedding's and head's buffers, which every slot keeps (gpt2.c
 * act_sizes; the split dimensions over T; the unfused MLP backward) */
static double act_bytes_per_micro_batch(const gt_layout_shape *s, gt_layout l) {
    double C = s->channels, T = l.tp, tokens = s->micro_batch * s->seq;
    int blocks = (s->layers + l.pp - 1) / l.pp;
    /* ln1, res2, ln2, res3 whole; qkv, atty, fch, gelu(fch) split; 4
     * LayerNorm statistics; the attention state (NH/T) x seq per token */
    double layer = 4 * (4 * C + 4 + 12 * C / T) + 4.0 * (s->heads / T) * s->seq;
    /* encoded, lnf, dres, dln whole; the logits split; lnf's statistics,
     * the loss, tokens, targets; datty, dqkv, dfch, dgelu split */
    double fixed = 4 * (4 * C + 5 + s->vocab / T + 12 * C / T);
    return tokens * (blocks * layer + fixed);
}

void gt_layout_memory_of(const gt_layout_shape *s, gt_layout l, gt_layout_memory *out) {
    int m = gt_layout_micro_batches(s, l);
    double pr = s->params / ((double)l.tp * l.pp), d = l.dp;
    out->parameters = 4 * pr / (s->zero >= 3 ? d : 1);
    out->gradients = 4 * pr / (s->zero >= 2 ? d : 1);
    out->optimizer = 8 * pr / (s->zero >= 1 ? d : 1);
    int in_flight = l.pp <= 1 ? 1 : s->gpipe ? m : (m < l.pp ? m : l.pp);
    out->activations = in_flight * act_bytes_per_micro_batch(s, l);
    out->total = out->parameters + out->gradients + out->optimizer + out->activations;
}

/* the communication of a step (everything but the compute) */
static void comm_of(const gt_layout_shape *s, gt_layout l, int rpn, const gt_layout_net *net,
                    gt_layout_step *o) {
    int n = l.dp * l.tp * l.pp, m = gt_layout_micro_batches(s, l);
    double mb_tokens = s->micro_batch > 0 && s->micro_batch < s->global_batch / l.dp
                           ? s->micro_batch * s->seq
                           : s->global_batch / l.dp * s->seq;
    o->micro_batches = m;
    o->tp_inter = l.tp > rpn;
    o->pp_inter = l.tp * l.pp > rpn;
    o->dp_inter = n > rpn;
    o->tp_ms = o->pp_ms = o->dp_ms = 0;
    if (l.tp > 1) {
        /* the last stage's: 4 per block, the head's and (without stages)
         * the embedding's of b T C fp32, and the loss's 8 and 16 bytes a token */
        int blocks = (s->layers + l.pp - 1) / l.pp;
        double act = 4.0 * blocks + 1 + (l.pp == 1);
        double one = gt_layout_net_time(net, o->tp_inter, GT_PREDICT_ALLREDUCE,
                                        mb_tokens * s->channels * 4, l.tp);
        double loss =
            gt_layout_net_time(net, o->tp_inter, GT_PREDICT_ALLREDUCE, 8 * mb_tokens, l.tp) +
            gt_layout_net_time(net, o->tp_inter, GT_PREDICT_ALLREDUCE, 16 * mb_tokens, l.tp);
        o->tp_ms = m * (act * one + loss) * 1e3;
    }
    if (l.pp > 1)
        o->pp_ms = m * 2 *
                   gt_layout_net_time(net, o->pp_inter, GT_PREDICT_SEND,
                                      gt_layout_pp_send_bytes(mb_tokens, s->channels), 2) *
                   1e3;
    if (l.dp > 1) {
        double g = 4 * s->params / ((double)l.tp * l.pp);
        double rs = gt_layout_net_time(net, o->dp_inter, GT_PREDICT_REDUCE_SCATTER, g, l.dp);
        double ag = gt_layout_net_time(net, o->dp_inter, GT_PREDICT_ALLGATHER, g, l.dp);
        double t = s->zero == 0
                       ? gt_layout_net_time(net, o->dp_inter, GT_PREDICT_ALLREDUCE, g, l.dp)
                   : s->zero < 3 ? rs + ag
                                 : rs + 2 * ag;
        o->dp_ms = t * 1e3;
    }
    o->bubble = gt_layout_bubble(l.pp, m);
}

void gt_layout_step_of(const gt_layout_shape *s, gt_layout l, int ranks_per_node, double work_ms,
                       double cores, const gt_layout_net *net, gt_layout_step *out) {
    memset(out, 0, sizeof *out);
    comm_of(s, l, ranks_per_node, net, out);
    int n = l.dp * l.tp * l.pp, m = out->micro_batches;
    out->compute_ms = work_ms * s->global_batch * s->seq / n / cores;
    /* the slot: one micro-batch of a stage and its sends; M + P - 1 of them */
    double busy = out->compute_ms + out->tp_ms + out->pp_ms;
    double pipe = m > 0 ? busy * (m + l.pp - 1) / m : busy;
    out->bubble_ms = pipe - busy;
    out->step_ms = pipe + out->dp_ms;
}

double gt_layout_work_of(const gt_layout_shape *s, gt_layout l, int ranks_per_node, double step_ms,
                         double cores, const gt_layout_net *net) {
    gt_layout_step o;
    memset(&o, 0, sizeof o);
    comm_of(s, l, ranks_per_node, net, &o);
    int n = l.dp * l.tp * l.pp, m = o.micro_batches;
    if (m < 1) return NAN;
    double busy = (step_ms - o.dp_ms) * m / (m + l.pp - 1);
    double compute = busy - o.tp_ms - o.pp_ms;
    if (!(compute > 0)) return NAN;
    return compute * n * cores / (s->global_batch * s->seq);
}

double gt_layout_parse_size(const char *v) {
    if (!v) return -1;
    char *end = NULL;
    double x = strtod(v, &end);
    if (end == v || !isfinite(x) || x <= 0) return -1;
    while (*end == ' ')
        end++;
    const char *units = "KMGT";
    double mul = 1;
    const char *u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
    if (u && *u) {
        mul = pow(1024, (double)(u - units + 1));
        end++;
        if (*end == 'i' && end[1] == 'B')
            end += 2;
        else if (*end == 'B')
            end++;
    } else if (*end == 'B') {
        end++;
    }
    return *end ? -1 : x * mul;
}

/* ---- from reports --------------------------------------------------------- */

enum { MAX_LAYOUT_ROWS = 512, MAX_LNOTES = 16 };

/* one measured train result */
typedef struct lpoint {
    gt_layout l;
    gt_layout_shape s;
    int rpn, has_grid;
    double cores, step_ms;
    double mem_measured; /* memory.by_kind's buffers, bytes; NAN when absent */
    char grid[48];
} lpoint;

typedef struct lrow {
    gt_layout l;
    gt_layout_step st;
    gt_layout_memory mem;
    int fits;
} lrow;

typedef struct lrank {
    int ranks;
    gt_layout_shape s;
    lrow rows[MAX_LAYOUT_ROWS];
    int n_rows, best, smallest; /* best: the fastest that fits, -1 none */
} lrank;

typedef struct lcheck {
    char grid[48];
    int ranks, n_fit;
    double predicted, measured, error, work;
    double mem, mem_measured; /* bytes a rank: the model's, memory.by_kind's */
} lcheck;

struct gt_layout_prediction {
    gt_layout_options opt;
    char model[64], backend[32];
    gt_layout_shape base;
    int rpn;
    double cores, work;
    int n_work;
    lpoint *pts;
    size_t n_pts;
    lrank *ranks;
    int n_ranks;
    lcheck *check;
    int n_check;
    gt_predict_links *links;
    gt_layout_net net;
    char notes[MAX_LNOTES][512];
    int n_notes;
};

gt_layout_options gt_layout_defaults(void) {
    gt_layout_options o;
    memset(&o, 0, sizeof o);
    o.gpipe = -1;
    o.top = 8;
    static const int r[] = {64, 512, 4096};
    memcpy(o.ranks, r, sizeof r);
    o.n_ranks = 3;
    return o;
}

static double lnum(const gt_report_result *r, const char *k, double dflt) {
    json_t *v = r->params ? json_object_get(r->params, k) : NULL;
    return json_is_number(v) ? json_number_value(v) : dflt;
}
static const char *lstr(const gt_report_result *r, const char *k) {
    json_t *v = r->params ? json_object_get(r->params, k) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* a passed gpt2 train result with a step time into *pt; 0 when it is none */
static int read_point(gt_report_doc *d, const gt_report_result *r, lpoint *pt) {
    const char *model = lstr(r, "model");
    const gt_report_metric *ms = gt_report_result_metric(r, "ms_per_step");
    if (strcmp(r->suite, "train") != 0 || r->status != GT_RESULT_PASS || !ms || !model ||
        strncmp(model, "gpt2", 4) != 0)
        return 0;
    memset(pt, 0, sizeof *pt);
    int ranks = (int)lnum(r, "ranks", atoi(r->topology));
    const char *grid = lstr(r, "grid");
    if (grid && sscanf(grid, "dp=%d,tp=%d,pp=%d", &pt->l.dp, &pt->l.tp, &pt->l.pp) == 3) {
        pt->has_grid = 1;
    } else {
        pt->l = (gt_layout){ranks > 0 ? ranks : 1, 1, 1};
    }
    snprintf(pt->grid, sizeof pt->grid, "dp=%d,tp=%d,pp=%d", pt->l.dp, pt->l.tp, pt->l.pp);
    gt_layout_shape *s = &pt->s;
    s->params = lnum(r, "num_params", 0);
    s->layers = (int)lnum(r, "layers", 0);
    s->channels = (int)lnum(r, "channels", 0);
    s->heads = (int)lnum(r, "heads", 0);
    s->vocab = (int)lnum(r, "padded_vocab", lnum(r, "vocab", 0));
    s->seq = (int)lnum(r, "seq", 0);
    s->global_batch = lnum(r, "batch", 0);
    s->zero = (int)lnum(r, "zero", 0);
    const char *sched = lstr(r, "schedule");
    s->gpipe = sched && strcmp(sched, "gpipe") == 0;
    /* micro-batches: recorded with pipeline stages; a tensor group's from its
     * all-reduces (4L + 4 per micro-batch); else --micro-batch's, or the
     * replica's share at once */
    double m = lnum(r, "micro_batches", 0);
    const gt_report_metric *tc = gt_report_result_metric(r, "tp_collectives");
    if (!(m >= 1) && tc && pt->l.pp == 1 && s->layers > 0)
        m = round(tc->value / gt_layout_tp_allreduces(s->layers));
    double mb = lnum(r, "micro_batch", 0);
    if (!(m >= 1) && mb > 0) m = s->global_batch / pt->l.dp / mb;
    s->micro_batch = s->global_batch / pt->l.dp / (m >= 1 ? m : 1);
    if (!(s->params > 0 && s->layers > 0 && s->channels > 0 && s->heads > 0 && s->vocab > 0 &&
          s->seq > 0 && s->global_batch > 0))
        return 0;
    json_t *lay = json_object_get(r->json, "layout");
    int a = 0, b = 0;
    pt->rpn = json_is_string(lay) && sscanf(json_string_value(lay), "%dx%d", &a, &b) == 2 && b > 0
                  ? b
                  : (ranks > 0 ? ranks : 1);
    json_t *cpu = json_object_get(json_object_get(gt_report_doc_json(d), "env"), "cpu");
    json_t *lg = json_object_get(cpu, "logical");
    double cores = json_is_integer(lg) ? (double)json_integer_value(lg) : 0;
    double threads = lnum(r, "threads", 0);
    double per = cores > 0 ? cores / pt->rpn : 1;
    pt->cores = strcmp(r->backend, "cuda") == 0 ? 1 : threads > 0 && threads < per ? threads : per;
    pt->mem_measured = NAN;
    json_t *bk = json_object_get(json_object_get(r->json, "memory"), "by_kind");
    if (json_is_object(bk)) {
        const char *kinds[] = {"parameters_bytes", "gradients_bytes", "optimizer_bytes",
                               "activations_bytes", "communication_bytes"};
        double sum = 0;
        for (int k = 0; k < 5; k++) {
            json_t *v = json_object_get(bk, kinds[k]);
            sum += json_is_number(v) ? json_number_value(v) : 0;
        }
        if (sum > 0) pt->mem_measured = sum;
    }
    pt->step_ms = ms->n_samples ? gt_median(ms->samples, ms->n_samples) : ms->value;
    return isfinite(pt->step_ms) && pt->step_ms > 0;
}

static void lnote(gt_layout_prediction *p, const char *msg) {
    if (p->n_notes < MAX_LNOTES) snprintf(p->notes[p->n_notes++], sizeof p->notes[0], "%s", msg);
}

static int same_model(const gt_layout_shape *a, const gt_layout_shape *b) {
    return a->layers == b->layers && a->channels == b->channels && a->heads == b->heads &&
           a->vocab == b->vocab && a->seq == b->seq;
}

static gt_status read_points(gt_layout_prediction *p, gt_report_doc *const *docs, size_t n) {
    size_t skipped = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < gt_report_doc_result_count(docs[i]); j++) {
            const gt_report_result *r = gt_report_doc_result(docs[i], j);
            lpoint pt;
            if (!read_point(docs[i], r, &pt)) continue;
            if (p->n_pts &&
                (!same_model(&pt.s, &p->pts[0].s) || strcmp(r->backend, p->backend) != 0)) {
                skipped++;
                continue;
            }
            lpoint *np = realloc(p->pts, (p->n_pts + 1) * sizeof *np);
            if (!np) return GT_ERR(GT_ERR_OOM, "no memory");
            p->pts = np;
            if (!p->n_pts) {
                snprintf(p->model, sizeof p->model, "%s", lstr(r, "model"));
                snprintf(p->backend, sizeof p->backend, "%s", r->backend);
            }
            p->pts[p->n_pts++] = pt;
        }
    if (!p->n_pts)
        return GT_ERR(GT_ERR_INVALID,
                      "the reports hold no passed gpt2 train result to fit the layouts' compute "
                      "to: run e.g. `mpirun -np 2 gauntlet train --model gpt2-tiny --layout tp=2 "
                      "--micro-batches 4 --report t.json` and add t.json to --from");
    if (skipped) {
        char b[200];
        snprintf(b, sizeof b,
                 "%zu train result(s) of another model shape or backend than the "
                 "first (%s on %s) left out",
                 skipped, p->model, p->backend);
        lnote(p, b);
    }
    return GT_OK;
}

/* the work per token: the median over the points not of layout `skip`
 * (NULL: all); *used: how many */
static double fit_work(const gt_layout_prediction *p, const char *skip, int *used) {
    double *v = malloc((p->n_pts ? p->n_pts : 1) * sizeof *v);
    size_t k = 0;
    for (size_t i = 0; v && i < p->n_pts; i++) {
        const lpoint *t = &p->pts[i];
        if (skip && strcmp(t->grid, skip) == 0) continue;
        double w = gt_layout_work_of(&t->s, t->l, t->rpn, t->step_ms, t->cores, &p->net);
        if (isfinite(w)) v[k++] = w;
    }
    double w = k ? gt_median(v, k) : NAN;
    free(v);
    *used = (int)k;
    return w;
}

static int cmp_row(const void *a, const void *b) {
    const lrow *x = a, *y = b;
    if (x->st.step_ms != y->st.step_ms) return x->st.step_ms < y->st.step_ms ? -1 : 1;
    return x->l.tp != y->l.tp ? x->l.tp - y->l.tp : x->l.pp - y->l.pp;
}

/* every valid layout of N ranks, fastest first */
static void rank_layouts(const gt_layout_prediction *p, lrank *rk) {
    int n = rk->ranks;
    char why[200];
    rk->n_rows = 0;
    /* tp divides the heads and pp is at most the blocks: nothing larger runs */
    for (int t = 1; t <= n && t <= rk->s.heads; t++) {
        if (n % t) continue;
        for (int pp = 1; pp <= n / t && pp <= rk->s.layers; pp++) {
            if ((n / t) % pp || rk->n_rows >= MAX_LAYOUT_ROWS) continue;
            gt_layout l = {n / t / pp, t, pp};
            if (gt_layout_invalid(&rk->s, l, why, sizeof why)) continue;
            lrow *r = &rk->rows[rk->n_rows++];
            r->l = l;
            gt_layout_step_of(&rk->s, l, p->rpn, p->work, p->cores, &p->net, &r->st);
            gt_layout_memory_of(&rk->s, l, &r->mem);
            r->fits = !(p->opt.memory_per_rank > 0) || r->mem.total <= p->opt.memory_per_rank;
        }
    }
    qsort(rk->rows, (size_t)rk->n_rows, sizeof rk->rows[0], cmp_row);
    rk->best = rk->smallest = -1;
    for (int i = 0; i < rk->n_rows; i++) {
        if (rk->best < 0 && rk->rows[i].fits) rk->best = i;
        if (rk->smallest < 0 || rk->rows[i].mem.total < rk->rows[rk->smallest].mem.total)
            rk->smallest = i;
    }
}

/* the shape at N ranks: the base's model, the global batch the options
 * give or the base's sequences per rank times N */
static gt_layout_shape shape_at(const gt_layout_prediction *p, int n) {
    gt_layout_shape s = p->base;
    const lpoint *b = &p->pts[0];
    int ranks = b->l.dp * b->l.tp * b->l.pp;
    s.global_batch =
        p->opt.global_batch > 0 ? p->opt.global_batch : ceil(b->s.global_batch / ranks * n);
    return s;
}

static gt_status run_layout_check(gt_layout_prediction *p) {
    p->check = calloc(p->n_pts ? p->n_pts : 1, sizeof *p->check);
    if (!p->check) return GT_ERR(GT_ERR_OOM, "no memory");
    for (size_t i = 0; i < p->n_pts; i++) {
        const lpoint *t = &p->pts[i];
        if (!t->has_grid) continue;
        int used = 0;
        double w = fit_work(p, t->grid, &used);
        if (!used) {
            char b[300];
            snprintf(b, sizeof b,
                     "check: %s not predicted: no result of another layout to fit "
                     "the compute from (measure a second layout)",
                     t->grid);
            lnote(p, b);
            continue;
        }
        gt_layout_step st;
        gt_layout_step_of(&t->s, t->l, t->rpn, w, t->cores, &p->net, &st);
        lcheck *c = &p->check[p->n_check++];
        snprintf(c->grid, sizeof c->grid, "%s", t->grid);
        c->ranks = t->l.dp * t->l.tp * t->l.pp;
        c->n_fit = used;
        c->work = w;
        c->predicted = st.step_ms;
        c->measured = t->step_ms;
        c->error = (st.step_ms - t->step_ms) / t->step_ms;
        gt_layout_memory mem;
        gt_layout_memory_of(&t->s, t->l, &mem);
        c->mem = mem.total;
        c->mem_measured = t->mem_measured;
    }
    return GT_OK;
}

static void set_base(gt_layout_prediction *p) {
    const lpoint *b = &p->pts[0];
    for (size_t i = 0; i < p->n_pts; i++) /* a layout result over a plain one */
        if (p->pts[i].has_grid) {
            b = &p->pts[i];
            lpoint tmp = p->pts[0];
            p->pts[0] = *b;
            p->pts[i] = tmp;
            b = &p->pts[0];
            break;
        }
    p->base = b->s;
    if (p->opt.micro_batch > 0) p->base.micro_batch = p->opt.micro_batch;
    if (p->opt.gpipe >= 0) p->base.gpipe = p->opt.gpipe;
    p->rpn = p->opt.ranks_per_node;
    for (size_t i = 0; !p->rpn && i < p->n_pts; i++) /* the most measured on one node */
        p->rpn = p->pts[i].rpn;
    for (size_t i = 0; !p->opt.ranks_per_node && i < p->n_pts; i++)
        if (p->pts[i].rpn > p->rpn) p->rpn = p->pts[i].rpn;
    p->cores = p->opt.cores_per_rank > 0 ? p->opt.cores_per_rank : b->cores;
}

gt_status gt_layout_predict(gt_report_doc *const *docs, size_t n, const gt_predict_options *popt,
                            const gt_layout_options *opt, gt_layout_prediction **out) {
    *out = NULL;
    gt_layout_prediction *p = calloc(1, sizeof *p);
    if (!p) return GT_ERR(GT_ERR_OOM, "no memory");
    p->opt = *opt;
    if (p->opt.top < 1) p->opt.top = 8;
    gt_status s = read_points(p, docs, n);
    if (s == GT_OK) s = gt_predict_links_new(docs, n, popt, &p->links);
    if (s != GT_OK) goto fail;
    p->net.links = p->links;
    set_base(p);
    p->work = fit_work(p, NULL, &p->n_work);
    if (!p->n_work) {
        s = GT_ERR(GT_ERR_INVALID,
                   "every train result's step is shorter than the communication "
                   "the layout model gives it: the links are slower than what the runs saw "
                   "(check --alpha-us / --beta-gbps)");
        goto fail;
    }
    p->ranks = calloc((size_t)opt->n_ranks, sizeof *p->ranks);
    if (!p->ranks) {
        s = GT_ERR(GT_ERR_OOM, "no memory");
        goto fail;
    }
    for (int i = 0; i < opt->n_ranks; i++, p->n_ranks++) {
        lrank *rk = &p->ranks[i];
        rk->ranks = opt->ranks[i];
        rk->s = shape_at(p, rk->ranks);
        rank_layouts(p, rk);
        if (rk->n_rows == 0) {
            s = GT_ERR(GT_ERR_INVALID,
                       "no layout of %d ranks can run %s with a global batch of "
                       "%g sequences (--global-batch sets another)",
                       rk->ranks, p->model, rk->s.global_batch);
            goto fail;
        }
        if (rk->best < 0) {
            const lrow *m = &rk->rows[rk->smallest];
            s = GT_ERR(GT_ERR_INVALID,
                       "no layout of %d ranks fits --memory-per-rank %.1f MiB: "
                       "the smallest need is %.1f MiB a rank (dp=%d,tp=%d,pp=%d); give at least "
                       "that, or more ranks",
                       rk->ranks, opt->memory_per_rank / 1048576.0, m->mem.total / 1048576.0,
                       m->l.dp, m->l.tp, m->l.pp);
            goto fail;
        }
    }
    if (opt->check && (s = run_layout_check(p)) != GT_OK) goto fail;
    *out = p;
    return GT_OK;
fail:
    gt_layout_prediction_free(p);
    return s;
}

void gt_layout_prediction_free(gt_layout_prediction *p) {
    if (!p) return;
    gt_predict_links_free(p->links);
    free(p->pts);
    free(p->ranks);
    free(p->check);
    free(p);
}

void gt_layout_check_counts(const gt_layout_prediction *p, int *checked, double *max_error) {
    *checked = p->n_check;
    *max_error = 0;
    for (int i = 0; i < p->n_check; i++)
        if (fabs(p->check[i].error) > *max_error) *max_error = fabs(p->check[i].error);
}

static const char *lvl(int inter) {
    return inter ? "inter" : "intra";
}

static void print_rank(const gt_layout_prediction *p, const lrank *rk, FILE *f) {
    fprintf(f, "\n%d ranks (%d a node): global batch %g sequences, micro-batch %g; %d layouts\n",
            rk->ranks, p->rpn, rk->s.global_batch, rk->s.micro_batch, rk->n_rows);
    fprintf(f, "  %-4s %-22s %5s %10s %9s %9s %9s %9s %7s %11s  %s\n", "rank", "layout", "M",
            "step ms", "compute", "tp", "pp", "dp", "bubble", "memory MiB", "fits");
    for (int i = 0; i < rk->n_rows; i++) {
        const lrow *r = &rk->rows[i];
        if (i >= p->opt.top && i != rk->best) continue;
        char lay[48];
        snprintf(lay, sizeof lay, "dp=%d,tp=%d,pp=%d", r->l.dp, r->l.tp, r->l.pp);
        fprintf(f, "  %-4d %-22s %5d %10.3f %9.3f %9.3f %9.3f %9.3f %7.3f %11.2f  %s%s\n", i + 1,
                lay, r->st.micro_batches, r->st.step_ms, r->st.compute_ms, r->st.tp_ms, r->st.pp_ms,
                r->st.dp_ms, r->st.bubble, r->mem.total / 1048576.0, r->fits ? "yes" : "no",
                i == rk->best ? "  <- fastest that fits" : "");
    }
    const lrow *b = &rk->rows[rk->best];
    fprintf(f,
            "  advice: dp=%d,tp=%d,pp=%d, %.3f ms a step (%s-node tp, %s-node pp, %s-node "
            "dp), %.2f MiB a rank (parameters %.2f, gradients %.2f, optimizer %.2f, activations "
            "%.2f)\n",
            b->l.dp, b->l.tp, b->l.pp, b->st.step_ms, lvl(b->st.tp_inter), lvl(b->st.pp_inter),
            lvl(b->st.dp_inter), b->mem.total / 1048576.0, b->mem.parameters / 1048576.0,
            b->mem.gradients / 1048576.0, b->mem.optimizer / 1048576.0,
            b->mem.activations / 1048576.0);
}

void gt_layout_prediction_print(const gt_layout_prediction *p, FILE *f) {
    const gt_layout_shape *s = &p->base;
    fprintf(f,
            "layout prediction: %s (%.0f parameters, %d blocks, C %d, %d heads, vocabulary "
            "%d), seq %d, ZeRO-%d over dp, %s, on %s\n",
            p->model, s->params, s->layers, s->channels, s->heads, s->vocab, s->seq, s->zero,
            s->gpipe ? "GPipe" : "1F1B", p->backend);
    fprintf(f, "  compute: %.5g %s per token of one rank's work (median of %d train results)\n",
            p->work, strcmp(p->backend, "cuda") == 0 ? "ms" : "core-ms", p->n_work);
    fprintf(f, "  links: intra-node %s, inter-node %s; %d ranks a node, %g core(s) a rank\n",
            gt_predict_links_source(p->links, 0), gt_predict_links_source(p->links, 1), p->rpn,
            p->cores);
    if (p->opt.memory_per_rank > 0)
        fprintf(f,
                "  memory per rank: %.2f MiB (parameters, gradients and AdamW split by tp "
                "and pp, ZeRO over dp; activations by micro-batches in flight and tp)\n",
                p->opt.memory_per_rank / 1048576.0);
    for (int i = 0; i < p->n_notes; i++)
        fprintf(f, "  note: %s\n", p->notes[i]);
    for (int i = 0; i < p->n_ranks; i++)
        print_rank(p, &p->ranks[i], f);
    if (!p->opt.check) return;
    fprintf(f, "\ncheck: each measured layout predicted from the other layouts' results\n");
    fprintf(f, "  %-22s %5s %12s %12s %8s %6s %11s %11s\n", "layout", "ranks", "predicted ms",
            "measured ms", "error", "fit", "memory MiB", "measured");
    for (int i = 0; i < p->n_check; i++) {
        const lcheck *c = &p->check[i];
        char meas[32] = "-";
        if (isfinite(c->mem_measured))
            snprintf(meas, sizeof meas, "%.2f", c->mem_measured / 1048576.0);
        fprintf(f, "  %-22s %5d %12.3f %12.3f %+7.1f%% %6d %11.2f %11s\n", c->grid, c->ranks,
                c->predicted, c->measured, 100 * c->error, c->n_fit, c->mem / 1048576.0, meas);
    }
    if (!p->n_check) fprintf(f, "  nothing to check: no layout result with another to fit from\n");
}
