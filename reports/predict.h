/* Scaling prediction (docs/predict.md): a model of data-parallel step time
 * at N ranks built from what reports measured on the machines at hand.
 *
 * Inputs, all read from reports (reports/read.h):
 *   - compute: the train / scaling results of one model (same model, seq,
 *     precision, backend, ZeRO and determinism): per step, ms_per_step minus
 *     exposed_comm_ms, with its samples; the work of a rank, in core-ms (host
 *     backends: the time times the cores a rank had) or ms (device backends:
 *     one rank, one GPU), is fitted as a + k x (batch per rank);
 *   - links: the collectives suite's time_<bytes> metrics fitted per
 *     collective and level (intra-node; inter-node where measured: cases
 *     "inter_node/...", or a world that spans nodes) as
 *     T(m, n) = alpha L(n) + m F(n) / beta(m): alpha from the smallest sizes,
 *     beta per measured message size (ring all-reduce L = 2(n-1),
 *     F = 2(n-1)/n; reduce-scatter and all-gather L = n-1, F = (n-1)/n);
 *     or alpha and beta given on the command line for a network that was not
 *     measured;
 *   - gauntlet's own data parallelism (engine/dp.c): gradient buckets from the
 *     end of the buffer, each all-reduced as the backward produces it, one at
 *     a time; exposed communication is what the backward does not hide;
 *     ZeRO-1 reduce-scatters the gradients and all-gathers the parameters
 *     after the backward; --deterministic sums along a binary tree.
 * Every figure carries lo / mid / hi: the model evaluated at the low end, the
 * median and the high end of the measured samples of every input (step time
 * grows with each input, so lo and hi bound the prediction the samples allow).
 */
#ifndef GT_REPORT_PREDICT_H
#define GT_REPORT_PREDICT_H

#include <stddef.h>
#include <stdio.h>

#include "engine/status.h"
#include "reports/read.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { GT_PREDICT_MAX_RANKS = 64 };

/* What the user may set; gt_predict_defaults() gives "from the reports" for
 * every field (0 or NAN). */
typedef struct gt_predict_options {
    int ranks[GT_PREDICT_MAX_RANKS]; /* the rank counts to predict */
    int n_ranks;
    const char *case_name;    /* the train / scaling case; NULL: gpt2-3m, else the first */
    double global_batch;      /* strong scaling's global batch; 0: the case's */
    double batch_per_rank;    /* weak scaling's batch per rank; 0: the case's */
    int ranks_per_node;       /* 0: from the reports */
    double cores_per_rank;    /* host backends; 0: this node's cores / ranks per node */
    double bucket_mb;         /* 0: the report's bucket_mb, else 25 (engine/dp.c) */
    double backward_fraction; /* of a step's compute; 0: 2/3 */
    int zero;                 /* -1: the case's; 0 or 1 */
    /* a network that was not measured: NAN = use the measurement */
    double intra_alpha_us, intra_beta_gbps, inter_alpha_us, inter_beta_gbps;
    /* the check: every measured multi-rank topology of the model predicted
     * from the other topologies' results */
    int check;
    double max_error;      /* > 0: a check row off by more (fraction) fails */
    double max_error_over; /* the same for rows with more ranks than cores */
} gt_predict_options;

gt_predict_options gt_predict_defaults(void);

/* lo <= mid <= hi */
typedef struct gt_predict_iv {
    double lo, mid, hi;
} gt_predict_iv;

typedef struct gt_prediction gt_prediction;

/* Builds the model from the n reports and predicts every rank count of
 * opt. Errors (*out NULL, the last error says what is missing and which
 * suite to run): GT_ERR_INVALID no usable train / scaling result, no
 * collectives result for a link the prediction needs and no --*-alpha-us /
 * --*-beta-gbps for it, a bad option; GT_ERR_OOM. The reports are borrowed
 * for the call only. */
gt_status gt_predict_build(gt_report_doc *const *docs, size_t n, const gt_predict_options *opt,
                           gt_prediction **out);
void gt_prediction_free(gt_prediction *p);

/* The screen table: inputs with their spread, assumptions, one row per rank
 * count, and the check when asked for. */
void gt_prediction_print(const gt_prediction *p, FILE *f);

/* The same as JSON (docs/predict.md), written atomically to path. */
gt_status gt_prediction_write_json(const gt_prediction *p, const char *path);
/* The JSON text (malloc'd, the caller frees); NULL on no memory. */
char *gt_prediction_json_text(const gt_prediction *p);

/* The check's verdict: rows checked, rows outside their bound. */
void gt_prediction_check_counts(const gt_prediction *p, int *checked, int *failed);

/* The links alone (the layout model, reports/predict_layout.h): each level's
 * collectives fitted from the reports' collectives results, or given by the
 * options' alpha and beta, as gt_predict_build fits them; an inter-node
 * level neither measured nor given is the intra-node one ("assumed"). */
typedef struct gt_predict_links gt_predict_links;
typedef enum gt_predict_coll {
    GT_PREDICT_ALLREDUCE,
    GT_PREDICT_REDUCE_SCATTER,
    GT_PREDICT_ALLGATHER,
    GT_PREDICT_SEND, /* one point-to-point message */
} gt_predict_coll;
/* Errors: GT_ERR_INVALID no multi-rank collectives result and no network
 * given (the message says what to run); GT_ERR_OOM. */
gt_status gt_predict_links_new(gt_report_doc *const *docs, size_t n, const gt_predict_options *opt,
                               gt_predict_links **out);
void gt_predict_links_free(gt_predict_links *l);
/* Seconds for one collective of `bytes` (the whole buffer) over a ring of n
 * ranks on one level (inter: between nodes), at the median of the samples;
 * a send is one message of `bytes` to a neighbour (n unused). */
double gt_predict_links_time(const gt_predict_links *l, int inter, gt_predict_coll coll,
                             double bytes, int n);
/* "measured", "given", "borrowed", "assumed" or "none": the all-reduce's */
const char *gt_predict_links_source(const gt_predict_links *l, int inter);

#ifdef __cplusplus
}
#endif
#endif
