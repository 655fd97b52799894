/* The per-op profile of training steps (docs/profile.md).
 *
 * gt_profile_new wraps a backend's op table: be->ops becomes a table of the
 * same shape whose every filled slot times the call and forwards it to the
 * backend's own slot (an empty slot stays empty), so that no model code
 * changes. The training loop marks the steps and the regions that are not
 * ops (data wait, the gradient all-reduce issued during the backward and the
 * part the backward did not hide, the optimizer); whatever is left of a step
 * is "rest". The parts of a step are disjoint: an op called inside a region
 * counts under the op, the region keeps its own time outside op calls (its
 * inclusive time is kept beside), so that ops + regions + rest = the step.
 *
 * Clocks. Host backends (no mark_* slots): CLOCK_MONOTONIC around each call,
 * the ops being synchronous. Device backends (cuda): a mark (CUDA event) is
 * queued on the stream before and after each call and read back at the end
 * of the step, after the step's own synchronisation (gt_profile_step_end is
 * called after it): the profiler adds no synchronisation to the step. Each
 * call is also an NVTX range (be->range_push/pop) so that nsys shows the
 * op's name.
 *
 * Steps. The first step of a run (index 0) is profiled for memory (the
 * allocator's peak during each op: gt_allocator_window_*) and is left out of
 * the figures, as ms_per_step leaves it out. With overhead_every = k > 0,
 * every k-th later step runs without the profiler (be->ops restored for the
 * step, unless an op is being slowed): the step times with and without it
 * in the same run give its measured overhead; the other steps are the
 * profile's samples.
 *
 * Overhead: the instrumentation's cost per call is timed at start; once two
 * profiled steps show an estimate (cost x calls / step) above
 * GT_PROFILE_OVERHEAD_LIMIT, the profile stops itself for the rest of the run
 * unless keep_over_limit (gauntlet train --profile on), and says so.
 *
 * A profile serves one backend and one thread (the training loop's).
 */
#ifndef GT_PROFILE_H
#define GT_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/backend.h"
#include "engine/ops.h"
#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The parts of a step that are not ops, written once: X(ENUM, name). Recorded
 * in reports: append, never reorder. */
#define GT_PROF_REGION_LIST(X)                                                                     \
    X(DATA_WAIT, data_wait)                                                                        \
    X(ALLREDUCE_ISSUED, allreduce_issued)                                                          \
    X(ALLREDUCE_EXPOSED, allreduce_exposed)                                                        \
    X(OPTIMIZER, optimizer)                                                                        \
    X(PARAM_GATHER, param_gather)

typedef enum gt_prof_region {
#define GT_PROF_REGION_ENUM_(ENUM, name) GT_PROF_##ENUM,
    GT_PROF_REGION_LIST(GT_PROF_REGION_ENUM_)
#undef GT_PROF_REGION_ENUM_
    GT_PROF_REGION_COUNT
} gt_prof_region;

/* Part indices: the ops (gt_op), then the regions, then the rest. */
#define GT_PROF_PART_REGION(r) (GT_OP_COUNT + (int)(r))
#define GT_PROF_PART_REST (GT_OP_COUNT + GT_PROF_REGION_COUNT)
#define GT_PROF_PARTS (GT_PROF_PART_REST + 1)

/* Overhead limit: a profile costing more than this fraction of the step
 * says so (docs/profile.md); measured on cpu at about 0.1%. */
#define GT_PROFILE_OVERHEAD_LIMIT 0.02

typedef struct gt_profile_config {
    int max_steps;          /* steps that may be recorded (>= 1) */
    const char *trace_path; /* Chrome trace event JSON written here (NULL: none); with
                               nranks > 1 each rank writes its own file, ".rank<r>"
                               inserted before a ".json" ending (appended otherwise) */
    int rank, nranks;       /* the trace's pid and file name */
    int overhead_every;     /* every k-th step after the first runs without the profiler
                               (its measured overhead); 0: never */
    int keep_over_limit;    /* 1: keep profiling when the overhead estimate exceeds
                               GT_PROFILE_OVERHEAD_LIMIT; 0: the profile stops itself after
                               two profiled steps that show it (the rest run without) */
    gt_op slow_op;          /* fault injection: this op made slow_factor times as long */
    double slow_factor;     /* > 1 to inject; otherwise none */
} gt_profile_config;

/* overhead_every 3, no trace, rank 0 of 1, no slowdown. */
gt_profile_config gt_profile_defaults(void);

typedef struct gt_profile gt_profile;

/* Wraps be's op table (be->ops, be->profile). GT_ERR_INVALID when be already
 * has a profile or max_steps < 1; GT_ERR_IO when the trace file cannot be
 * created (the message names it); GT_ERR_OOM. */
gt_status gt_profile_new(gt_backend *be, const gt_profile_config *cfg, gt_profile **out);
/* Gives the backend its own op table back and closes the trace; the figures
 * stay readable. Call before the backend is freed. Idempotent. */
void gt_profile_detach(gt_profile *p);
/* Detaches and frees. Accepts NULL. */
void gt_profile_free(gt_profile *p);

/* Step i of this run (0 the first) starts at host time t0_ns. */
gt_status gt_profile_step_begin(gt_profile *p, int i, uint64_t t0_ns);
/* A region of the step, on the host clock (not nested in another region). */
/* end: bytes the region moved between ranks (the all-reduce's; 0: none). */
void gt_profile_region_begin(gt_profile *p, gt_prof_region r);
void gt_profile_region_end(gt_profile *p, gt_prof_region r, double bytes);
/* A region timed by its owner: [t0_ns, t1_ns), bytes it moved (0: none). */
void gt_profile_region_add(gt_profile *p, gt_prof_region r, uint64_t t0_ns, uint64_t t1_ns,
                           double bytes);
/* The step ended at t1_ns, after its synchronisation: device marks are read
 * back, the step's parts recorded and its trace events written. */
gt_status gt_profile_step_end(gt_profile *p, uint64_t t1_ns);

/* ---- the figures ---------------------------------------------------------------------- */

/* "matmul_fwd", ..., "data_wait", ..., "rest"; NULL past the last. */
const char *gt_profile_part_name(int part);
/* "op", "region", "rest". */
const char *gt_profile_part_kind(int part);
/* 1 for a part a profile leaves out when nothing entered it: an op (a model
 * calls only some) or a region only some training modes enter (ZeRO-3's
 * param_gather); the other regions and the rest are always listed. */
int gt_profile_part_optional(int part);

typedef struct gt_profile_part {
    const char *name, *kind;
    double calls_per_step;    /* ops: calls per profiled step; regions: times per step */
    const double *samples_ms; /* its time in each profiled step (n_samples of them) */
    size_t n_samples;
    double flops_per_step;    /* 0: not known (ops whose FLOPs are counted: GEMMs,
                                 attention, convolutions) */
    double bytes_per_step;    /* 0: not known (ops: every operand once; allreduce_issued
                                 and _exposed, optimizer: the bytes this rank reduced or
                                 gathered in them) */
    double inclusive_ms;      /* regions: median including the ops called inside */
    int mem_known;            /* 1: called in the first step, memory below recorded */
    size_t peak_bytes;        /* the allocator's in_use high-water mark during its calls in
                                 the first step */
    size_t scratch_bytes;     /* the most it rose above in_use at a call's start */
} gt_profile_part;

/* Part `part` (0 .. GT_PROF_PARTS-1). GT_ERR_INVALID past the end. */
gt_status gt_profile_part_get(const gt_profile *p, int part, gt_profile_part *out);

typedef struct gt_profile_info {
    const char *clock;         /* "host clock" or "device events" */
    int steps_profiled;        /* steps whose parts are the samples */
    const double *step_ms;     /* those steps' times (steps_profiled) */
    int steps_without;         /* steps run without the profiler */
    const double *without_ms;  /* their times */
    double overhead_ms;        /* measured: the median over the steps run without the
                                  profiler of (the mean of its two neighbours, profiled) -
                                  (its own time); NAN with fewer than 2 such steps */
    int overhead_pairs;        /* how many such steps */
    double step_mean_ms;       /* mean of the profiled steps */
    double parts_mean_ms;      /* sum over the parts of their means: step_mean_ms but for
                                  overlap (a part clamped) and rounding */
    double call_cost_us;       /* the instrumentation's own cost per op call, timed at start */
    double calls_per_step;     /* op calls per profiled step */
    double estimate_ms;        /* call_cost_us x calls_per_step */
    double max_overlap_ms;     /* largest amount by which a step's measured parts exceeded
                                  it (host clocks: 0 but for clock granularity) */
    int trace_files;           /* 1 when a trace was written */
    char trace_path[4096];     /* this rank's trace file ("" none) */
    char stopped[160];         /* why the profile stopped itself ("" it did not) */
    char slowed[64];           /* the op slowed by fault injection ("" none) */
    double slow_factor;
} gt_profile_info;

void gt_profile_get_info(const gt_profile *p, gt_profile_info *out);

#ifdef __cplusplus
}
#endif
#endif
