/* Command-line helpers shared by the gauntlet subcommands. Parsing errors
 * print what was wrong and return GT_EXIT_USAGE. */
#ifndef GT_CLI_H
#define GT_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "engine/status.h"

struct gt_compare;
/* compare's decision as an exit code: 0 may ship, 3 must not, 4 undecided,
 * 5 not comparable. */
int gt_compare_exit_code(const struct gt_compare *c);

enum {
    GT_EXIT_OK = 0,         /* every check passed */
    GT_EXIT_CHECK = 1,      /* a check failed */
    GT_EXIT_USAGE = 2,      /* usage or environment error */
    GT_EXIT_REGRESSION = 3, /* compare found a regression */
    GT_EXIT_UNDECIDED = 4,  /* compare: a change above the threshold not yet decided */
    GT_EXIT_NOT_COMPARABLE = 5, /* compare: different machine classes, speed not judged */
};

typedef struct gt_args {
    int argc;
    char **argv;
    int i;           /* current index */
    const char *cmd; /* "train", for messages */
} gt_args;

/* When argv[i] is `--name VALUE` or `--name=VALUE`, stores VALUE, advances
 * and returns 1; a missing VALUE prints an error and sets *err. */
int gt_opt(gt_args *a, const char *name, const char **value, int *err);
/* When argv[i] is the flag `--name`, advances and returns 1. */
int gt_flag(gt_args *a, const char *name);

/* Parse with range checks; print "gauntlet CMD: --name ..." and return 0 on error. */
int gt_parse_int(const gt_args *a, const char *name, const char *v, long lo, long hi, int *out);
int gt_parse_i64(const gt_args *a, const char *name, const char *v, int64_t lo, int64_t hi,
                 int64_t *out);
int gt_parse_u64(const gt_args *a, const char *name, const char *v, uint64_t *out);
int gt_parse_float(const gt_args *a, const char *name, const char *v, double lo, double hi,
                   float *out);
int gt_parse_double(const gt_args *a, const char *name, const char *v, double lo, double hi,
                    double *out);

/* The name among names[0 .. n) closest to `word` (edit distance, and a name
 * that starts with `word` or that `word` starts with counts as close), or
 * NULL when none is close enough to be what was meant. */
const char *gt_nearest(const char *word, const char *const *names, int n);

/* For an unknown option: the "--name" in `help` (a command's usage text)
 * nearest to `arg` (its part before '=' only), or NULL. Reading the options
 * from the usage text keeps the suggestions and --help the same list. */
const char *gt_nearest_option(const char *arg, const char *help, char *buf, size_t n);

/* Prints "gauntlet CMD: unknown option 'ARG'" with the nearest option of
 * the command's usage text (what `usage` prints) when one is close ("did you
 * mean --steps?") and where the list is; returns GT_EXIT_USAGE. */
#include <stdio.h>
int gt_unknown_option(const char *cmd, const char *arg, void (*usage)(FILE *));

/* Prints "gauntlet CMD: <last error>" and returns the exit code for status s. */
int gt_fail(const char *cmd, gt_status s);
int gt_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

int gt_cmd_run(int argc, char **argv);

/* Relaunching on more ranks: harness/launcher.h. */
/* The watchdog (engine/comm.h) ends the job when a blocking collective
 * passes its deadline; before that it calls this handler, which records the
 * stuck case as an error result in `rep` (when not NULL: rank 0) and writes
 * the report, so what had finished survives. The case named here is the one
 * reported; call again when the case changes. */
struct gt_report;
void gt_watchdog_report(struct gt_report *rep, const char *suite, const char *case_name,
                        const char *topology, const char *backend);

/* Gathers every rank's host and CPU binding into rank 0's report
 * (collective over comm). */
struct gt_comm;
int gt_report_binding(struct gt_report *rep, struct gt_comm *comm);

/* The job (engine/job.h): gathers every rank's host, node and GPU over comm
 * (collective) and records it as env.job in rank 0's report (rep NULL on
 * the other ranks); remembered for gt_report_topology_layout. 1 on success. */
int gt_report_job(struct gt_report *rep, struct gt_comm *comm);
/* Results added from now on carry the layout (nodes x ranks per node) of
 * ranks [0, n) of the job: call before each topology. rep may be NULL. */
void gt_report_topology_layout(struct gt_report *rep, int n);
/* The job gt_report_job gathered, or NULL. */
struct gt_job;
const struct gt_job *gt_harness_job(void);

/* cpu threads per rank when the user gave none: OMP_NUM_THREADS when set (its
 * first level), else this node's cores divided by
 * the ranks that share it, at most `ranks` (the local rank count comes from
 * OMPI_COMM_WORLD_LOCAL_SIZE or SLURM_NTASKS_PER_NODE). At least 1. */
int gt_default_threads(int ranks);

int gt_cmd_train(int argc, char **argv);
int gt_cmd_list(int argc, char **argv);
int gt_cmd_env(int argc, char **argv);
int gt_cmd_data(int argc, char **argv);
int gt_cmd_compare(int argc, char **argv);
int gt_cmd_report(int argc, char **argv);
int gt_cmd_predict(int argc, char **argv);
int gt_cmd_history(int argc, char **argv);

/* --history DB of run and train (harness/cmd_history.c). begin: opens (creates)
 * the database before the run, so a bad one fails first; db NULL: nothing to
 * do. Prints what was wrong and returns 0 on failure. finish: records the
 * report written at report_path and returns rc, or GT_EXIT_USAGE in place of
 * GT_EXIT_OK when it could not be recorded; closes nothing (gt_history_close). */
struct gt_history;
int gt_history_begin(const char *cmd, const char *db, const char *report_path,
                     struct gt_history **h);
int gt_history_finish(const char *cmd, struct gt_history *h, const char *db,
                      const char *report_path, int rc);

int gt_cmd_doctor(int argc, char **argv);

#endif
