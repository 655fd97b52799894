/* gauntlet doctor: which node (or rank, GPU, link) of a job is the slow one
 * (docs/doctor.md).
 *
 * Every rank runs the same probes at the same time (GEMM rate through the
 * backend's matmul, memory bandwidth, and where a GPU is there its clocks
 * and throttle reasons), then pairwise links in rounds over disjoint pairs
 * of nodes (a round-robin tournament; over ranks when the job has one
 * node): ping-pong latency and a two-rank all-reduce's bandwidth. Each
 * probe's per-rank figures are compared with the job's reference (the
 * median over ranks; with only two ranks the better one), and a rank
 * beyond the probe's limit is named: host, rank, GPU, probe, its figure
 * and the ratio to the reference.
 */
#ifndef GT_SUITES_DOCTOR_H
#define GT_SUITES_DOCTOR_H

#include <stdio.h>

#include "engine/comm.h"
#include "engine/status.h"
#include "reports/report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits, as the factor by which a rank's figure may be worse than the
 * reference: chosen from measured noise (docs/doctor.md, "Thresholds"). */
#define GT_DOCTOR_LIMIT 2.0          /* GEMM, memory */
#define GT_DOCTOR_LINK_LIMIT 3.0     /* a rank's link bandwidth */
#define GT_DOCTOR_LATENCY_LIMIT 3.0  /* a rank's link latency */
/* One link on its own (both ends otherwise within their limits) is named
 * only beyond this multiple of its probe's limit: it is one measurement,
 * where a rank's figure is the middle of several */
#define GT_DOCTOR_SINGLE_LINK_FACTOR 2.0
#define GT_DOCTOR_CLOCK_LIMIT 1.15   /* GPU SM clock under the GEMM (cuda backend) */
/* CPU share: a rank whose threads ran for less than 1/1.5 of the time they
 * were runnable, against the job's reference (a busy neighbour on its core
 * leaves it 1/2, two leave 1/3) */
#define GT_DOCTOR_CPU_LIMIT 1.5
/* --layout: a group whose all-reduce (a pipeline boundary whose send/recv)
 * takes this many times as long as the median group of its kind; and the
 * deadline of each of the layout probes' operations, in seconds */
#define GT_DOCTOR_GROUP_LIMIT 3.0
#define GT_DOCTOR_LAYOUT_DEADLINE 10.0

typedef struct gt_doctor_config {
    const char *backend;     /* "cpu", "ref", "cuda": where the GEMM and memory probes run */
    int threads;             /* cpu threads per rank (0: the backend's default) */
    int quick;               /* small probes (tests, a first look): about a second */
    double limit;            /* GT_DOCTOR_LIMIT when 0 */
    double link_limit;       /* GT_DOCTOR_LINK_LIMIT when 0 */
    double latency_limit;    /* GT_DOCTOR_LATENCY_LIMIT when 0 */
    double clock_limit;      /* GT_DOCTOR_CLOCK_LIMIT when 0 */
    double cpu_limit;        /* GT_DOCTOR_CPU_LIMIT when 0 */
    /* 0: a first look that names anything is followed by a second, and each
     * figure judged is the better of the two (a slow node is slow in both;
     * a burst of other work on a shared machine is seldom in both); 1: one
     * look only */
    int one_look;
    /* Fault injection (tests, and proving a deployment names a bad node):
     * "HOST:FACTOR[,HOST:FACTOR...]" and "RANK:FACTOR[,...]": the probes
     * and links of those hosts / world ranks take FACTOR (> 1, <= 100) times
     * as long (the rank sleeps the difference inside the timed interval).
     * NULL: none. The harness passes GT_FAULT_SLOW_HOST, GT_FAULT_SLOW_RANK. */
    const char *slow_hosts;
    const char *slow_ranks;
    FILE *out;               /* rank 0's table and verdict; NULL: quiet */
    /* --layout "dp=D,tp=T,pp=P" (train's syntax and placement): the groups
     * training would split are probed too (docs/doctor.md, "Layouts"); NULL:
     * none. layout_only: those probes only (no GEMM, memory or links) */
    const char *layout;
    int layout_only;
    double group_limit;        /* GT_DOCTOR_GROUP_LIMIT when 0 */
    double layout_deadline_s;  /* GT_DOCTOR_LAYOUT_DEADLINE when 0 */
    /* Fault injection: "RANK[,RANK...]" (world ranks) take no part in the
     * layout probes, as a rank stuck elsewhere would not: the peers of its
     * groups wait for it until the deadline. The harness passes
     * GT_FAULT_STALL_RANK. NULL: none. */
    const char *stall_ranks;
} gt_doctor_config;

/* Checks the fault-injection specs without running anything:
 * GT_ERR_INVALID saying what was wrong. */
gt_status gt_doctor_check_faults(const char *slow_hosts, const char *slow_ranks);
/* The same for a GT_FAULT_STALL_RANK spec ("RANK[,RANK...]"; NULL: none). */
gt_status gt_doctor_check_stall(const char *stall_ranks);

/* Runs the doctor on comm (collective: every rank calls it with the same
 * config). Rank 0 adds its results (suite "doctor") and the report's
 * "doctor" section to rep (NULL on the other ranks). *outliers, on every
 * rank: how many were named. GT_ERR_INVALID for a bad config or fault spec,
 * GT_ERR_UNSUPPORTED for a backend that is not built, the communicator's
 * errors. */
gt_status gt_doctor_run(gt_comm *comm, const gt_doctor_config *cfg, gt_report *rep,
                        int *outliers);

#ifdef __cplusplus
}
#endif
#endif
