/* Layout prediction (docs/predict.md, "Layouts"): the step time and the memory
 * per rank of gpt2 on a layout dp=D,tp=T,pp=P of N = D T P ranks, from the
 * train results measured on other layouts, and the fastest layout that fits
 * a memory per rank at each rank count asked for.
 *
 * The model, per step and rank (docs/distributed.md has the formulas it
 * reuses):
 *   - compute: one rank's work per token, w (core-ms, or ms on a device),
 *     shared by the N ranks: c = w x tokens / (N x cores per rank);
 *   - tensor parallelism: 4L + 4 all-reduces per micro-batch over the
 *     T ranks of the group ((4L + 2) b T C x 4 + 24 b T bytes; a pipeline
 *     stage: 4 per block of its own, plus the last stage's head and loss),
 *     on the intra-node link when T <= ranks per node;
 *   - pipeline: M micro-batches in (M + P - 1) slots (the bubble
 *     (P - 1) / (M + P - 1)), each slot one micro-batch's compute and tensor
 *     all-reduces of a stage and two sends of b T C x 4 bytes (its input
 *     activation, its input gradient), on the inter-node link when a
 *     pipeline spans nodes;
 *   - data parallelism over D replicas of a stage's slice (4 P / (T P)
 *     bytes of gradients): an all-reduce, or ZeRO-1/2's reduce-scatter and
 *     all-gather, ZeRO-3's reduce-scatter and two all-gathers, after the
 *     pipeline (not overlapped), on the inter-node link when the job spans
 *     nodes.
 * Memory per rank, fp32: parameters 4 P / (T P) (ZeRO-3 / D), gradients the
 * same (ZeRO-2/3 / D), AdamW 8 P / (T P) (ZeRO-1/2/3 / D), activations of
 * one micro-batch of the stage's blocks with the tensor-split dimensions
 * divided by T (models/gpt2/gpt2.c act_sizes), times the micro-batches in
 * flight (1 without stages, M with GPipe, min(M, P) with 1F1B).
 */
#ifndef GT_REPORT_PREDICT_LAYOUT_H
#define GT_REPORT_PREDICT_LAYOUT_H

#include <stddef.h>
#include <stdio.h>

#include "engine/status.h"
#include "reports/predict.h"
#include "reports/read.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_layout {
    int dp, tp, pp;
} gt_layout;

/* The model and the step a layout runs. */
typedef struct gt_layout_shape {
    double params;                      /* the whole model's parameters */
    int layers, channels, heads, vocab; /* vocab: the padded vocabulary */
    int seq;
    double global_batch; /* sequences per step */
    double micro_batch;  /* sequences per micro-batch (at most a replica's share) */
    int zero;            /* 0-3, over the data-parallel group */
    int gpipe;           /* 1: GPipe (every micro-batch in flight), 0: 1F1B */
} gt_layout_shape;

/* The links: alpha (s per ring step) and beta (bytes/s) per level (0 intra-
 * node, 1 inter-node), or, when links is set, the fits of the reports. */
typedef struct gt_layout_net {
    double alpha_s[2], beta_bps[2];
    const gt_predict_links *links;
} gt_layout_net;

/* ---- the formulas (pure) ------------------------------------------------ */

/* (P - 1) / (M + P - 1) */
double gt_layout_bubble(int pp, int micro_batches);
/* all-reduces of a tensor group per micro-batch, the whole model: 4L + 4 */
int gt_layout_tp_allreduces(int layers);
/* bytes of those all-reduces per micro-batch of `tokens` tokens:
 * (4L + 2) tokens C x 4 + 24 tokens */
double gt_layout_tp_bytes(int layers, double tokens, int channels);
/* bytes of one pipeline send (one micro-batch's activation or its
 * gradient): tokens C x 4 */
double gt_layout_pp_send_bytes(double tokens, int channels);
/* micro-batches per replica: the replica's share over the micro-batch
 * (the share when the micro-batch is larger); 0 when the share is not a
 * whole number of sequences or of micro-batches */
int gt_layout_micro_batches(const gt_layout_shape *s, gt_layout l);
/* NULL when the layout can run the shape, else why not (into buf) */
const char *gt_layout_invalid(const gt_layout_shape *s, gt_layout l, char *buf, size_t len);
/* ring all-reduce on one level: alpha 2(n-1) + m 2(n-1)/n / beta, seconds */
double gt_layout_net_time(const gt_layout_net *net, int inter, gt_predict_coll coll, double bytes,
                          int n);

typedef struct gt_layout_memory {
    double parameters, gradients, optimizer, activations, total; /* bytes */
} gt_layout_memory;
void gt_layout_memory_of(const gt_layout_shape *s, gt_layout l, gt_layout_memory *out);

typedef struct gt_layout_step {
    int micro_batches;
    int tp_inter, pp_inter, dp_inter; /* the level each group's traffic takes */
    double compute_ms;                /* a rank's compute, no bubble */
    double tp_ms;                     /* the tensor all-reduces of a step */
    double pp_ms;                     /* the sends on the critical path */
    double bubble;                    /* (P - 1) / (M + P - 1) */
    double bubble_ms;                 /* what the bubble adds */
    double dp_ms;                     /* the data-parallel reduction */
    double step_ms;
} gt_layout_step;
/* The step on `ranks_per_node`-rank nodes for one rank's work per token
 * `work_ms` (core-ms) and `cores` cores a rank. */
void gt_layout_step_of(const gt_layout_shape *s, gt_layout l, int ranks_per_node, double work_ms,
                       double cores, const gt_layout_net *net, gt_layout_step *out);
/* The work per token a measured step implies: the inverse of
 * gt_layout_step_of (the communication it models taken out); NAN when the
 * communication alone exceeds the step. */
double gt_layout_work_of(const gt_layout_shape *s, gt_layout l, int ranks_per_node, double step_ms,
                         double cores, const gt_layout_net *net);

/* "64MiB", "16G", "1.5 GiB", "1048576": bytes (K, M, G, T: powers of
 * 1024, with or without "iB" / "B"); -1 when it is not a size */
double gt_layout_parse_size(const char *v);

/* ---- from reports ------------------------------------------------------- */

typedef struct gt_layout_options {
    int ranks[GT_PREDICT_MAX_RANKS];
    int n_ranks;
    double memory_per_rank; /* bytes; 0: no limit */
    int ranks_per_node;     /* 0: the measured job's */
    double cores_per_rank;  /* 0: the measured results' */
    double global_batch;    /* 0: the measured sequences per rank x ranks */
    double micro_batch;     /* 0: the measured micro-batch */
    int gpipe;              /* -1: the measured schedule (1F1B when none) */
    int check;
    int top; /* rows of the ranking printed per rank count (default 8) */
} gt_layout_options;
gt_layout_options gt_layout_defaults(void);

typedef struct gt_layout_prediction gt_layout_prediction;

/* Reads gpt2 train results (with a grid or plain data parallel) and the
 * links (gt_predict_links_new with popt's network), fits the work per
 * token, ranks every layout of each rank count and, with check, predicts
 * each measured layout from the other layouts' results. Errors (*out NULL,
 * the last error says what is missing): GT_ERR_INVALID no gpt2 train
 * result, no links, no layout fits the memory at a rank count (the
 * smallest need named); GT_ERR_OOM. */
gt_status gt_layout_predict(gt_report_doc *const *docs, size_t n, const gt_predict_options *popt,
                            const gt_layout_options *opt, gt_layout_prediction **out);
void gt_layout_prediction_free(gt_layout_prediction *p);
void gt_layout_prediction_print(const gt_layout_prediction *p, FILE *f);
/* the check: rows, and the largest |error| (fraction; 0 without rows) */
void gt_layout_check_counts(const gt_layout_prediction *p, int *checked, double *max_error);

#ifdef __cplusplus
}
#endif
#endif
