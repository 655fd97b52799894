/* Judging two stacks in one machine state (docs/ci-gating.md, "The
 * machine's state").
 *
 * A time may carry, beside each sample, the state the machine was in when
 * it was taken (a metric's "state_ns": the collectives suite's core-to-core
 * round trip of the node's first two ranks, suites/coll_state.h). Where the
 * state moves during runs, every collective moves with it (4x at 1 MiB on
 * this project's VM), and runs of the same build then differ by whatever
 * share of each they spent in which state. The state is measured through no
 * library, so it says nothing of the stack under test; what a time does
 * when the state moves is the stack's own, and is measured within a side,
 * whose every run is the same stack:
 *
 *   log t = level of the side + b log(state / ref) + noise
 *
 * The states are first grouped into modes (sorted, split where one is
 * GT_STATE_SAME times the one before; a sample's state is its mode's
 * median, so the probe's own jitter within a mode moves nothing, and a mode
 * of a single sample, an interrupted probe, counts as no state). b is one
 * slope for both sides (under load two sides' slopes differ by their
 * errors, and each side moved by its own made A/A single sizes 3x
 * "slower"), fitted on cells - a run's samples in one mode, the median of
 * their log times (so that a block another process took does not bend it),
 * weighted by their count - twice: within runs (each cell about its run's
 * mean: what the state does while everything else about the run stays) and
 * across runs (each run's mean about its side's: a run's level against its
 * share of the states). The two are weighted by the inverse of their
 * variances, measured on their own residuals (a random-effects fit), unless
 * they differ by more than GT_STATE_DISAGREE times their joint error: the
 * runs' levels then moved with something the probe does not see that their
 * share of the states happened to follow (a ZeRO-3 all-gather that costs
 * the same in both states within a run, 0.17 across runs, came out 9%
 * "slower"), and the slope is the one within runs alone. Where each side's
 * own line within its runs differs from the other's beyond their errors
 * (the stack changed how the time answers the state), or neither line has
 * a residual degree of freedom, the slope is that of a line through the
 * median log time of each mode over a side's runs, each side about its own
 * mean, as before these lines. Every sample is then moved to the
 * reference state ref (the lowest mode: the closest the machine's cores
 * came), t * (ref/mode)^b, and compare judges the moved
 * samples as it would the measured ones. */
#ifndef GT_REPORTS_COMPARE_STATE_H
#define GT_REPORTS_COMPARE_STATE_H

#include <stddef.h>

/* States within this factor of the next are one mode; one mode: nothing moved. */
#define GT_STATE_SAME 1.5
/* A side has a contrast of its own, and a line (within or across runs) a
 * slope, when its samples about their means have a sum of squared log
 * states of at least this (one sample of 25 in a state 2x away gives 0.46). */
#define GT_STATE_LEAST_SXX 0.3
/* Two slopes (within against across runs; BASE's within its runs against
 * NEW's) disagree where they differ by more than this many standard errors
 * of their difference (about 95%). */
#define GT_STATE_DISAGREE 2.0
/* The slope is kept in [0, GT_STATE_MAX_B]: a time does not get faster as
 * the cores move apart, and no more than in proportion to the round trip's
 * square. */
#define GT_STATE_MAX_B 2.0

typedef enum gt_state_outcome {
    GT_STATE_NONE = 0,     /* a side's samples carry no state (or too few): not adjusted */
    GT_STATE_ONE,          /* every state within GT_STATE_SAME of the others: not adjusted */
    GT_STATE_ADJUSTED,     /* moved to ref with the sides' one slope (the other's where
                              every sample of one side was in one state) */
    GT_STATE_CONFOUNDED,   /* each side held one state all along, a different one: the
                              stack and the state cannot be told apart; not adjusted */
} gt_state_outcome;

typedef struct gt_state_fit {
    gt_state_outcome outcome;
    double ref_ns, hi_ns;        /* the reference state (the lowest mode); the highest mode */
    double b_base, b_new;        /* the slopes applied (NAN: not adjusted) */
    int b_borrowed;              /* 1: one side had no contrast (the slope is the other's) */
    int within_runs;             /* 1: the slope is the one within runs (the runs' levels
                                    moved apart from their states) */
} gt_state_fit;

/* A timed block whose slowest rank spent a share w of it runnable but
 * waiting for a CPU ("cpu_wait": another process took its core) timed the
 * neighbour too. Where its run holds GT_STATE_CLEAN_LEAST blocks or more
 * that did not wait (w below GT_STATE_BUSY_WAIT; the kernels suite's runs,
 * judged by a low quantile), the waited ones are left out: the clean ones
 * are the stack's time, and a quantile of them needs no model of the wait.
 * Else (the collectives' 5 rounds a run) each is taken as t (1 - w), the
 * block less the wait, which keeps every round (leaving out the waited
 * ones of 5 cost the collectives power under load). Less the wait is only
 * as good as the wait: idle helper threads that spin (OpenBLAS's,
 * OpenMP's) wait too without holding the call up, and a quantile of the
 * kernels' batches less such waits falls below the stack's time. A block
 * that waited longer than it took (other threads' waits counted when they
 * ran) cannot be mended and is left out, unless it is all its run has.
 * Figures: docs/ci-gating.md, "A loaded window" and "The kernels' waits". */
#define GT_STATE_BUSY_WAIT 0.05
#define GT_STATE_CLEAN_LEAST 15 /* GT_COMPARE_QUANTILE_SAMPLES: a quantile's level */
/* In a run of GT_STATE_CLEAN_LEAST samples or more (the kernels' batches)
 * with fewer clean ones, a batch that waited this share of its time or more
 * (less than all of it) is left out too where the run has batches that
 * waited less; else it is mended as before. A multi-threaded
 * kernel's batch held up by one preempted thread for a time slice waited
 * 85-99% of it, and t (1 - w) of those came out at 8-190 us for a 160-us
 * call (docs/ci-gating.md, "Batches that waited most of their time"). */
#define GT_STATE_MEND_MAX 0.5
/* Unless one side's blocks, over all of its runs, waited far more than the
 * other's: at least this share and GT_STATE_BUSY_OWN_X times the other's
 * share plus 1% - a stack that brings threads of its own (a transport's
 * progress thread) waits for the CPU itself, and that is judged as
 * measured (compare decides it over the reports, not per time). */
#define GT_STATE_BUSY_OWN_SHARE 0.2
/* A side whose timed blocks waited this share of the time or more ran on a
 * loaded machine (idle, 0.1-0.8% of this VM's blocks wait, kernels and
 * collectives pools and the gate job's runs; beside one busy process, the
 * collectives 6-11%, the gate job's kernels, collectives and train 2.8-7.7%:
 * its many short kernel batches rarely wait): its times move with the load
 * (modes the state probe cannot see, 20-60 us for the same near-state
 * block) more than with the cores' state, and a slope fitted through them
 * moved one side by its error (false alarms in 8 of 80 loaded A/A draws,
 * none as measured). Its times are taken less their waits and not moved to
 * one state. 4% until the twenty-second session: the gate job beside a
 * busy process at 3.99% was judged idle and its starved training steps
 * failed an unchanged stack. */
#define GT_STATE_LOADED 0.02
#define GT_STATE_BUSY_OWN_X 3.0
/* Runs not paired: where the share of one side's runs on a loaded machine
 * (GT_STATE_LOADED, each run on its own) exceeds the other side's by this
 * much or more, the sides ran in different load states, and a neighbour
 * slows the blocks it does not make wait (a core's other hardware thread,
 * the caches, memory bandwidth): 5 quiet baseline runs against 5 candidate
 * runs beside a busy process, every run's waits taken off, showed the GEMM
 * and convolution families +6-9% (conv2d_bwd +8.7% [+0.1%, +18.0%]:
 * slower). Half: a side's middle run (its median) was loaded and the
 * other's was not, or its mean moved by half the neighbour's share. */
#define GT_STATE_LOPSIDED 0.5
/* ... but a neighbour that does not make a block wait slows it by less
 * than this factor: sharing a core's other hardware thread costs a
 * compute-bound kernel at most about 1.7x, the caches and memory bandwidth
 * less (the gate job's families +6-9% beside a busy process). A slowdown
 * whose interval's near end exceeds it (NEW's time over BASE's, a rate's
 * inverse) is judged where the sides ran in different load states: a
 * 10 ms delay injected into a 1 us kernel was held UNDECIDED because one
 * block of NEW's one run waited (harness.jobs.cpu under ctest -j2). */
#define GT_STATE_NEIGHBOUR_MAX 2.0
/* Runs not paired: where the shares of the sides' loaded runs differ by this
 * much or more, each side's loaded runs are set aside where it keeps 3 or
 * more without (and no fewer); sides loaded alike keep them all (a window
 * of 2 loaded runs in each side's 5: setting them aside left 3 against 3,
 * too few for a 20% slower allreduce in 2 of 10 draws, decided with them). */
#define GT_STATE_UNEVEN 0.25
/* A run whose report recorded its node's CPU (run.node_load, a job on one
 * node) with other processes keeping less than this share of a core busy
 * over the run had no neighbour: where its blocks waited, the stack's own
 * threads did (it counts as loaded, never as beside a neighbour for
 * GT_STATE_LOPSIDED and GT_STATE_UNEVEN). Quiet runs of the gate job read
 * 0.00-0.03 per training case, beside a busy process 0.91-0.98. */
#define GT_STATE_QUIET_NODE 0.05
/* A run of a result that recorded the node's CPU (the train suite's
 * cpu_others_cores, cpu_idle_cores: suites/cpu_share.h) had a neighbour
 * where other processes kept GT_STATE_NEIGHBOUR_CORES of a core busy or
 * more while fewer than GT_STATE_IDLE_CORES cores sat idle: a process that
 * ran on cores the run left idle took nothing from it. */
#define GT_STATE_NEIGHBOUR_CORES 0.25
#define GT_STATE_IDLE_CORES 1.0

/* One side's samples v[] with their states s[] and waits w[] (NAN: none),
 * cut into runs: in a run with GT_STATE_CLEAN_LEAST samples that did not
 * wait, every sample that waited GT_STATE_BUSY_WAIT or more is left out;
 * in another, each sample whose wait is in [GT_STATE_BUSY_WAIT, 1) becomes
 * v (1 - w) (counted in *unloaded), and those that waited 1 or more are
 * left out unless every sample of their run did (v[], s[], w[] and cut[]
 * compacted in place). Returns the samples left out. */
size_t gt_state_unload(double *v, double *s, double *w, size_t *cut, int runs,
                       size_t *unloaded);

/* The runs among `runs` (waits w[], run i holding [cut[i], cut[i + 1]]) of
 * GT_STATE_CLEAN_LEAST samples or more of which fewer than
 * GT_STATE_STARVED_LIGHT waited less than GT_STATE_MEND_MAX of their time:
 * such a run timed the neighbour, not the stack (a kernel of two threads,
 * one of them preempted: 200 us a call -> 10,000), and neither mending nor
 * one or two light batches give its level (judged as measured, where the
 * other side's own threads waited, its low quantile is a waited batch). */
#define GT_STATE_STARVED_LIGHT 3
int gt_state_starved(const double *w, const size_t *cut, int runs);

/* One side: n samples v[] (positive; moved in place), their states s[] (ns;
 * not positive or NAN where none), cut into runs (run i holds
 * [cut[i], cut[i + 1])). Both sides' samples are moved to one reference, or
 * neither side's; returns the outcome (also in *fit). */
gt_state_outcome gt_state_adjust(double *vb, const double *sb, const size_t *cb, int runs_b,
                                 double *vn, const double *sn, const size_t *cn, int runs_n,
                                 gt_state_fit *fit);

#endif
