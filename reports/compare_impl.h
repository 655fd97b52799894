/* compare's internal types, shared by compare.c (matching, verdicts of one
 * metric, printing, JUnit) and compare_family.c (families, the correction
 * over families and metrics, sequential looks). Not a public header: only
 * reports/compare*.c include it. */
#ifndef GT_COMPARE_IMPL_H
#define GT_COMPARE_IMPL_H

/* Lines of a kind (families, failed results, slower metrics) shown by default;
 * --verbose, JUnit and the HTML page have the rest. */
#define GT_COMPARE_SHOWN 15
/* Members listed by default after slower or undecided families named them. */
#define GT_COMPARE_SHOWN_MEMBERS 10

#include <stddef.h>
#include <stdio.h>

#include "reports/compare.h"
#include "reports/compare_state.h"
#include "reports/read.h"

#include <jansson.h>

typedef struct side {
    const double *v;
    size_t n;
    const size_t *cut;
    int runs;
    int rounds; /* every run's metric says "rounds": this many (else 0) */
    double q;   /* the quantile a run's or block's level is (0.5: the median) */
    int state_moved; /* its samples were moved to one machine state (compare_state.h):
                        judged on the runs, not their rounds */
} side;

/* What a verdict is decided from; kept per metric so that the family-wise
 * correction can decide again with adjusted p-values. */
typedef struct assessment {
    gt_compare_method method;
    double base_med, new_med, rel, p;
    /* RUNS and BLOCKS: the levels judged, the medians except that a time
     * below the timing floor on one side only is lifted to the floor (below
     * it the figure is call overhead and timer, so "at most the floor" is
     * all it says: 2.6 -> 5.1 us is no evidence, 2.6 -> 50 us is) */
    double base_lvl, new_lvl;
    double se_rel; /* standard error of rel under no change (NAN: none) */
    double se;     /* the same in the metric's unit (NAN: none; RUNS and BLOCKS only) */
    double spread; /* RUNS and BLOCKS: the replicates' pooled variance, before the floor */
    double floor_frac; /* the assumed least run-to-run noise, a fraction of the level */
    double inv_runs;   /* 1 / runs_base + 1 / runs_new */
    int df;        /* degrees of freedom of the t test (0: normal) */
    int pairs;     /* PAIRED: the pairs judged */
    int blocks;    /* PAIRED: the blocks each pair was cut into (0: the runs' medians) */
    int pooled;    /* PAIRED with blocks: the blocks counted as replicates (gt_gs_summarize_nested) */
    int large, better;
} assessment;

typedef struct keyed {
    const char *key;
    size_t idx;
} keyed;

typedef struct cmp_metric {
    const char *name, *unit; /* borrowed from the documents */
    const char *derived_from; /* the gated metric it is computed from (shown, not gated), or NULL */
    const char *ungated;      /* "gate": false in a report: its "kind" (numerics, state), or NULL */
    const char *part_of;      /* the whole it was judged as a part of (rel, detectable: of the
                                 whole's BASE level), or NULL */
    int in_base, in_new, higher_better;
    gt_verdict verdict;
    gt_compare_method method;
    double base_med, new_med, rel, p;
    double p_adj; /* p after the Holm correction over every tested metric */
    double detectable; /* smallest relative change it would call faster or slower (NAN: none) */
    int runs_b, runs_n; /* runs of each side that hold it */
    assessment a;
    size_t nb, nn;
    /* For the family tests: the log of each run's median, per run of each
     * side (RUNS, PAIRED; NAN where that run lacks it), or of each block of
     * the one run (BLOCKS); NULL when the metric cannot join a family. */
    double *lb, *ln;
    int nlb, nln;
    /* PAIRED, every pair's runs in GT_COMPARE_BLOCKS equal blocks: the log
     * ratio of block j of pair i at blk[i GT_COMPARE_BLOCKS + j] (NAN where
     * pair i lacks it), nblk pairs; NULL otherwise. */
    double *blk;
    int nblk;
    int in_family; /* a member of a family of two or more */
    int family_moved; /* one of its families was shown to move (rejected, beyond the threshold) */
    int alone;     /* shown to move while none of its families did, on a side of one run
                      or a loaded machine: not gated */
    int rejected;  /* the correction rejected "no change" (two-sided) */
    double level;  /* the (two-sided) level the correction tested it at */
    double lo, hi; /* rel's interval at that level (NAN: none) */
    int needed;    /* UNDECIDED: more pairs (runs a side) that would decide; -1: over 1000 */
    int held;      /* UNDECIDED by a rule for few runs a side (GT_HELD_*), not by its
                      interval alone; 0: not held */
    int beyond_reach; /* UNDECIDED, and more pairs than the design's reach would be
                         needed: too noisy for the threshold here */
    gt_state_fit state; /* its samples moved to one machine state (compare_state.h) */
    size_t unloaded[2];   /* samples of BASE, NEW that waited for a CPU: less the wait */
    size_t busy_out[2];   /* ... and those left out (compare_state.h, gt_state_unload) */
    int starved[2];       /* runs of BASE, NEW whose every batch waited most of its time */
    int waits_known;      /* both sides' samples carry their wait for a CPU ("cpu_wait") */
    int neighbour[2];     /* runs of BASE, NEW whose result saw another process take a core
                             (cpu_others_cores, cpu_idle_cores: GT_STATE_NEIGHBOUR_CORES) */
} cmp_metric;

/* A family: one metric of one op over its shapes (suite/op), or of every
 * result in a class the suite names ("groups": gemm, memory, collective),
 * on one topology and backend; its members' evidence pooled. */
typedef struct cmp_family {
    char *name;  /* "kernels/matmul_fwd" or "kernels/[gemm]" */
    char *key;   /* name, topology, backend, metric stem, direction */
    const char *topology, *backend;
    char *stem;  /* the metric without a trailing _<size> (time_us_1048576 -> time_us) */
    int is_class, higher_better;
    cmp_metric **mem;
    size_t n;
    gt_compare_method method;
    int reps;          /* pairs (PAIRED), runs BASE + NEW (RUNS), 2 (BLOCKS) */
    int blocks, pooled; /* PAIRED: blocks a pair was cut into (0: none); counted as replicates */
    double est, se;    /* the pooled log ratio and its standard error */
    double sd;         /* PAIRED: the spread of the pooled pair ratios; RUNS: pooled run spread */
    int df, nb, nn;    /* nb, nn: runs each side (RUNS; 1 and 1 for BLOCKS) */
    double rel, lo, hi, p, p_adj, level, detectable;
    int rejected, moved, needed, beyond_reach;
    int held;          /* shown slower, UNDECIDED (GT_HELD_*): on a loaded machine with too
                          few runs, or by one member alone on a side of one run */
    gt_verdict verdict;
} cmp_family;

typedef struct cmp_check {
    const char *name, *detail;
    int base_state, new_state; /* -1 absent, 0 failed, 1 passed, 2 not evaluated */
    double value, limit;       /* NEW's */
} cmp_check;

typedef struct cmp_result {
    const char *suite, *case_name, *topology, *backend;
    char *key;         /* identity; "#k" appended for the k-th duplicate */
    int repeat;        /* k: this is the k-th result with its identity in its report */
    char *label;       /* for people: case plus the params that tell it from its siblings */
    json_t *base, *nw; /* borrowed; NULL when absent from that report */
    const gt_report_result *rb, *rn; /* the same results as the reader parsed them */
    const char *base_status, *new_status, *new_message;
    cmp_metric *m;
    size_t nm;
    cmp_check *ck;
    size_t nck;
    char *notes; /* excluded params that changed, one per line */
    char *profile_line; /* a slower step's parts, each with its verdict (reports/profile.h) */
    /* why this result stops NEW (NULL: it does not) */
    int missing, failed_checks, failed;
    int neighbour[2]; /* runs of BASE, NEW whose node record saw a neighbour (neighbour_runs) */
} cmp_result;

typedef struct fp_diff {
    char *key, *base, *nw;
    int machine; /* part of the machine class: speed compares only within one */
} fp_diff;

/* The further runs of a side (a baseline kept as a directory of reports):
 * each with its results' keys sorted, to find the result of a key. */
typedef struct extra_run {
    gt_report_doc *rd;
    json_t *doc; /* rd's */
    char *path;
    char **keys;
    keyed *sorted;
    size_t n;
} extra_run;

struct gt_compare {
    gt_compare_options opt;
    char *base_path, *new_path;
    gt_report_doc *base_rd, *new_rd; /* the first run of each side */
    json_t *base_doc, *new_doc;      /* theirs */
    extra_run *xb, *xn;         /* the further runs of each side */
    size_t nxb, nxn;
    fp_diff *fp;
    size_t nfp;
    cmp_result *res;
    size_t nres;
    gt_compare_counts counts;
    cmp_family *fam;
    size_t nfam;
    double alpha; /* the alpha of this look: opt.alpha, or its share in a sequential design */
    int pairs;    /* PAIRED: the pairs judged */
    int look;     /* what a sequential design counts: the pairs (paired), else NEW's runs */
    char *new_incomplete; /* "'path': reason" of the first incomplete NEW report */
    int busy_own; /* 1 BASE, 2 NEW: its blocks waited for a CPU far more (compare_state.h) */
    int loaded;   /* a side's blocks waited for a CPU GT_STATE_LOADED of the time or more */
    double busy_share[2]; /* of BASE's, NEW's timed blocks, those that waited */
    int runs_loaded[2];   /* of BASE's, NEW's runs not set aside, those on a loaded machine */
    int runs_judged[2];   /* ... and all of them */
    int lopsided; /* runs not paired: 1 BASE's, 2 NEW's runs on a loaded machine GT_STATE_LOPSIDED
                     more often than the other side's (another process's load, not busy_own) */
    unsigned char *aside; /* PAIRED: pair i set aside (a run of it on a loaded machine);
                             NULL: none */
    unsigned char *skip[2]; /* runs not paired: BASE's, NEW's run i set aside (on a loaded
                               machine, the side keeping enough without); NULL: none */
    int not_comparable;   /* the machine classes differ (fp entries with machine set) and
                             opt.across_machines is 0: speed does not gate */
};

/* compare_family.c: builds the families from the tested metrics, tests
 * families and metrics under one correction (weighted Holm), decides every
 * tested metric's and family's verdict, the pairs an undecided one needs.
 * -1 when out of memory. */
int gt_cmp_families(gt_compare *c);
void gt_cmp_families_free(gt_compare *c);
/* The family lines of the text output: at most `cap` lines of families that
 * are not same (0: all), and a count of the rest. */
void gt_cmp_print_families(const gt_compare *c, FILE *f, size_t cap);
/* The rule line's words for the correction and the sequential look. */
void gt_cmp_print_rules(const gt_compare *c, FILE *f);
/* The slower and undecided families, a line each, in the list of
 * regressions and failures; returns how many (f NULL: only counts). */
int gt_cmp_family_regressions(const gt_compare *c, FILE *f);
/* JUnit test cases, one per family (inside a testsuite "families"). */
void gt_cmp_junit_families(const gt_compare *c, FILE *f);
/* 1 when metric m, in no family, is undecided and so keeps NEW from
 * shipping yet. */
int gt_cmp_metric_undecided(const gt_compare *c, const cmp_metric *m);
/* 1 when a family or a metric that decides the gate is undecided (from the
 * counts: call after they are made). */
int gt_cmp_undecided(const gt_compare *c);
/* The smallest slowdown one run a side decides (its "large changes"): the
 * threshold, or the run noise it assumes where that is larger. */
double gt_cmp_one_run_large(const gt_compare *c);
/* 1 when the sides ran on a loaded machine, another process's load and not
 * the stack's own threads: a member then moves only with its family. */
int gt_cmp_loaded_by_other(const gt_compare *c);
/* Why a verdict is held UNDECIDED (cmp_metric.held, cmp_family.held): a
 * loaded machine with fewer than GT_COMPARE_LOADED_RUNS runs a side; a
 * family slower by one member alone on a side of one run; one run a side's
 * ambiguous slowdown (its run-to-run spread assumed); a side that timed a
 * neighbour in every run; a time with no record of its waits for a CPU on a
 * loaded machine, or whose run saw another process take a core (no number
 * of runs decides it there); a speed whose NEW runs ran beside another
 * process far more often than BASE's (c->lopsided: the same). */
enum {
    GT_HELD_LOADED = 1,
    GT_HELD_ONE_MEMBER = 2,
    GT_HELD_ONE_RUN = 3,
    GT_HELD_STARVED_BASE = 4, /* every run of a side timed a neighbour */
    GT_HELD_STARVED_NEW = 5,
    GT_HELD_STARVED_BOTH = 6,
    GT_HELD_UNRECORDED = 7, /* a time with no wait record, on a loaded machine */
    GT_HELD_NEIGHBOUR = 8,  /* ... whose run saw another process take a core */
    GT_HELD_LOPSIDED = 9    /* NEW's runs beside a neighbour far more often than BASE's */
};
/* "; slower, but ...": a held verdict's reason and the runs that would
 * decide it (needed <= 0: BASE lacks runs). */
void gt_cmp_print_held(const gt_compare *c, int held, int needed, FILE *f);
/* The "needed: ..." line when something is undecided. */
void gt_cmp_print_needed(const gt_compare *c, FILE *f);
/* A time or a rate's unit: microseconds per unit, 0 when not a time. */
double gt_cmp_us_per_unit(const char *unit);

#endif
