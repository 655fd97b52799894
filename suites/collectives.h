/* The collectives suite: nccl-tests' measurements through gt_comm, with the
 * raw library timed beside it (docs/distributed.md, "Collectives suite").
 *
 * Collectives: allreduce, reduce, broadcast, allgather, reduce_scatter,
 * alltoall, sendrecv (ring exchange). For every selected collective x dtype
 * x reduction (reducing collectives only) x size x placement (out of place,
 * in place where the collective has one) a row is measured:
 *   - one run on freshly built inputs whose exact result is known in any
 *     summation order (small integers), checked element by element:
 *     #wrong, summed over ranks;
 *   - warm-up, then `reps` blocks of timed iterations; a block's time is the
 *     slowest rank's mean time per operation; blocks of gt_comm and of the
 *     raw library (MPI_Allreduce etc. on the same buffers through
 *     gt_comm_native_handle; on an nccl communicator ncclAllReduce etc. on
 *     the same device buffers, then a stream synchronise) alternate, so
 *     both see the same machine state.
 * On an nccl communicator the buffers are device memory; inputs are built
 * and results checked through host copies.
 * Definitions are nccl-tests': algbw = bytes / time, busbw = algbw x factor
 * (allreduce 2(n-1)/n; reduce_scatter, allgather, alltoall (n-1)/n;
 * broadcast, reduce, sendrecv 1); bytes is the count x element size for
 * allreduce, reduce, broadcast and sendrecv, and count x size x nranks (the
 * whole gathered / scattered / exchanged buffer) for allgather,
 * reduce_scatter and alltoall.
 *
 * Results: one per collective x dtype x op x placement (suite "collectives",
 * case "allreduce/fp32/sum", "broadcast/fp32"; param in_place tells the two
 * placements apart), with per-size metrics busbw_<bytes>, time_<bytes>,
 * raw_busbw_<bytes>, overhead_ratio_<bytes> and the checks wrong_elements
 * and (when the timing can be trusted) busbw_vs_raw. Every rank builds the
 * same results (the values are reduced across ranks), so every rank knows
 * the exit code; only the caller decides who writes the report.
 */
#ifndef GT_SUITE_COLLECTIVES_H
#define GT_SUITE_COLLECTIVES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/comm.h"
#include "engine/status.h"
#include "reports/report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The collectives in the suite, in the order they run. */
typedef enum gt_coll_test {
    GT_COLL_TEST_ALLREDUCE = 0,
    GT_COLL_TEST_REDUCE,
    GT_COLL_TEST_BROADCAST,
    GT_COLL_TEST_ALLGATHER,
    GT_COLL_TEST_REDUCE_SCATTER,
    GT_COLL_TEST_ALLTOALL,
    GT_COLL_TEST_SENDRECV,
    GT_COLL_TEST_COUNT
} gt_coll_test;

const char *gt_coll_test_name(gt_coll_test t); /* "allreduce", ..., "sendrecv" */
gt_status gt_coll_test_parse(const char *name, gt_coll_test *out);

/* The default sweep's rule for which dtype x op x size combinations run:
 * the primary combination (fp32 sum; fp32 for collectives without a
 * reduction) runs at every size; the others run at sizes up to this bound.
 * When the user names dtypes or ops, every named combination runs at every
 * size (full_matrix). */
#define GT_COLL_MATRIX_MAX_BYTES ((uint64_t)1 << 20)

/* The sweep's default passes (gt_coll_config.rounds): a row's blocks are
 * spread over the run, one share per pass, so that compare --paired can take
 * each round as a replicate (docs/suites.md, docs/ci-gating.md "Rounds"). */
#define GT_COLL_ROUNDS 5

/* Sizes at or above this are where busbw_vs_raw is checked. */
#define GT_COLL_OVERHEAD_MIN_BYTES ((uint64_t)1 << 20)
/* busbw_vs_raw is judged only with at least this many such sizes timed
 * steadily (their median ratio): one size's ratio is noise at 5%. */
#define GT_COLL_OVERHEAD_MIN_SIZES 3
/* The busbw_vs_raw limit: gauntlet's best busbw / raw best busbw. */
#define GT_COLL_OVERHEAD_LIMIT 0.95

typedef struct gt_coll_config {
    uint64_t min_bytes;       /* first size (nccl-tests -b), default 8 */
    uint64_t max_bytes;       /* last size (-e), default 64 MiB */
    int step_factor;          /* sizes multiply by this (-f), default 2 */
    unsigned colls;           /* bit per gt_coll_test; default all */
    unsigned dtypes;          /* bit per gt_dtype; default all six */
    unsigned ops;             /* bit per gt_redop; default all four */
    int full_matrix;          /* every dtype x op at every size (see above) */
    uint64_t matrix_max_bytes;/* default GT_COLL_MATRIX_MAX_BYTES */
    int iters;                /* timed iterations per block; 0: adaptive */
    int warmup;               /* warm-up iterations; < 0: adaptive */
    int reps;                 /* timed blocks of the primary combination (default 5),
                                 split over the rounds (at least one a round); the
                                 others: one a round, or min(reps, 3) with one round */
    int rounds;               /* passes over the whole sweep, each timing every row's
                                 share of its blocks (default GT_COLL_ROUNDS; 1..32) */
    int root;                 /* reduce / broadcast root (default 0) */
    uint64_t seed;            /* input values */
    /* fault injection: collective t's gauntlet blocks take slow_factor[t]
     * times as long (> 1; else none: 0 in gt_coll_defaults) */
    double slow_factor[GT_COLL_TEST_COUNT];
    /* Which communicator of a job that spans nodes this is: NULL the one
     * the suite was given (world: today's case names), else "intra_node"
     * (the ranks of one node) or "inter_node" (one rank per node): the case
     * names start with it ("intra_node/allreduce/fp32/sum") and the param
     * comm_scope carries it. */
    const char *scope;
    const char *scope_layout; /* with scope: the param comm_layout ("1x2", "2x1") */
    FILE *out;                /* the table (rank 0 passes stdout); NULL: silent */
    /* Called after each result is complete (may be NULL): the caller writes
     * the report so that a run that dies keeps what finished. */
    void (*on_result)(void *ctx);
    void *on_result_ctx;
} gt_coll_config;

gt_coll_config gt_coll_defaults(void);

/* How many results gt_coll_run adds with this config (one per collective x
 * dtype x op x placement it runs): what progress estimates count on. */
int gt_coll_count_results(const gt_coll_config *cfg);

typedef struct gt_coll_summary {
    int results;              /* results added */
    long long wrong;          /* wrong elements over every row, summed over ranks */
    int overhead_checked;     /* results that carry a busbw_vs_raw check */
    double min_overhead_ratio;/* smallest busbw_vs_raw value (1 when none) */
} gt_coll_summary;

/* Runs the sweep on `comm` (collective: every rank calls it with the same
 * config) and adds results to `rep`. Returns GT_OK when the sweep ran, even
 * if checks failed (the results say so). GT_ERR_TIMEOUT or GT_ERR_COMM: a
 * communicator operation failed; the result being measured is recorded as
 * error and the sweep stops (after a timeout the caller must call
 * gt_comm_abort). GT_ERR_INVALID for a bad config, GT_ERR_OOM. */
gt_status gt_coll_run(gt_comm *comm, const gt_coll_config *cfg, gt_report *rep,
                      gt_coll_summary *summary);

/* gt_coll_run in its passes, so that a caller can interleave the rounds of
 * several sweeps (the layout cases' with the whole sweep's: each row's
 * blocks then sample moments spread over the run, not one second of it).
 * open: the config checked, the raw baseline, the state probe and the
 * buffers set up (collective; cfg and rep must outlive the session). round:
 * the next of cfg->rounds passes (the last records, prints, judges and
 * prints the totals); an error ends the session (later rounds return it).
 * close: gives the summary (may be NULL) and frees (NULL: nothing); returns the session's error, or GT_ERR_INVALID when rounds are
 * missing. Every rank calls each in the same order. */
typedef struct gt_coll_session gt_coll_session;
gt_status gt_coll_open(gt_comm *comm, const gt_coll_config *cfg, gt_report *rep,
                       gt_coll_session **out);
gt_status gt_coll_round(gt_coll_session *s);
gt_status gt_coll_close(gt_coll_session *s, gt_coll_summary *summary);

#ifdef __cplusplus
}
#endif
#endif
