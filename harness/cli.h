/* Command-line helpers shared by the gauntlet subcommands. Parsing errors
 * print what was wrong and return GT_EXIT_USAGE. */
#ifndef GT_CLI_H
#define GT_CLI_H

#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

#include "engine/status.h"

struct gt_compare;
/* compare's decision as an exit code: 0 may ship, 3 must not, 4 undecided,
 * 5 not comparable. */
int gt_compare_exit_code(const struct gt_compare *c);
struct gt_compare_options;
/* compare's and history --gate's sequential design: --sequential FIRST:MAX
 * (1 <= FIRST <= MAX <= 1000; compare checks FIRST against what it looks at)
 * and --spending pocock|obf. Print "gauntlet CMD: ..." and return 0 on error. */
int gt_parse_sequential(const char *cmd, const char *v, struct gt_compare_options *o);
int gt_parse_spending(const char *cmd, const char *v, struct gt_compare_options *o);

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
int gt_unknown_option(const char *cmd, const char *arg, void (*usage)(FILE *));

/* ---- a command's options from one table ---------------------------------------
 * Each option is one gt_cli_opt: its names, its argument, its help text and
 * what it sets. The table parses the command line, prints --help, and gives
 * the nearest-name suggestion for an unknown option, so the three never
 * disagree. */
typedef enum gt_cli_kind {
    GT_CLI_SET,     /* set() parses the argument (or takes none, `arg` NULL) */
    GT_CLI_FLAG,    /* no argument: the int at `off` becomes 1 */
    GT_CLI_INT,     /* an int in [lo, hi] at `off` */
    GT_CLI_I64,     /* an int64_t in [lo, hi] */
    GT_CLI_U64,     /* a uint64_t (gt_parse_u64) */
    GT_CLI_FLOAT,   /* a float in [lo, hi] */
    GT_CLI_DOUBLE,  /* a double in [lo, hi] */
    GT_CLI_STRING,  /* the argument itself: a const char * borrowed from argv */
    GT_CLI_SECTION, /* not an option: a heading of --help (in `name`) */
} gt_cli_kind;

typedef struct gt_cli_opt gt_cli_opt;

/* Sets what option o says from its argument v into opts (the command's
 * options struct). v is NULL for a flag, and when the argument was missing
 * (the error is printed already; the setter adds nothing then). Prints what
 * was wrong ("gauntlet CMD: ...") and returns 0 on error. */
typedef int (*gt_cli_setter)(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v);

struct gt_cli_opt {
    const char *name;  /* "--steps" (messages name it); SECTION: the heading */
    const char *alias; /* a second name ("--minbytes" of "-b"), or NULL */
    const char *arg;   /* the argument as --help shows it ("N"); NULL: a flag */
    gt_cli_kind kind;
    size_t off;        /* where kind stores the value: offsetof(options struct, field) */
    double lo, hi;     /* INT, I64, FLOAT, DOUBLE: the accepted range */
    gt_cli_setter set; /* NULL: kind stores the value; else set() does the whole job
                        * (it may call gt_cli_store first) */
    const void *data;  /* for set(): a key, a list of choices */
    const char *help;  /* lines separated by '\n' */
};

typedef struct gt_cli {
    const char *cmd;        /* "train": messages say "gauntlet train: ..." */
    const char *usage;      /* --help: the text before the options */
    const char *epilogue;   /* and after them (NULL: none) */
    const gt_cli_opt *opts; /* ends with an entry whose name is NULL */
    /* An argument that does not start with '-' (run's SUITE/CASE); NULL:
     * such an argument is an unknown option. Returns 0 after printing an
     * error. */
    int (*word)(void *opts, const gt_args *a, const char *w);
} gt_cli;

/* --topologies LIST of run and train: rank counts (1 .. 2^20), at most 16. */
typedef struct gt_cli_topologies {
    int v[16];
    int n;
} gt_cli_topologies;
/* The setter of --topologies: a gt_cli_topologies at o->off. */
int gt_cli_set_topologies(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v);

/* Parses argv[1 ..) into opts, in order, stopping at the first error.
 * Returns 1 to go on, or 0 with *rc the exit code to return: GT_EXIT_OK
 * after --help (-h) printed the usage to stdout, GT_EXIT_USAGE after an
 * error was printed (an unknown option with the nearest name of the
 * table: "did you mean --steps?"). */
int gt_cli_parse(const gt_cli *c, int argc, char **argv, void *opts, int *rc);
/* What option o's kind does with v (the setter of an entry with set NULL). */
int gt_cli_store(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v);
/* The usage, every option with its help under its heading, the epilogue. */
void gt_cli_usage(const gt_cli *c, FILE *f);

/* Prints "gauntlet CMD: <last error>" and returns the exit code for status s. */
int gt_fail(const char *cmd, gt_status s);
int gt_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

int gt_cmd_run(int argc, char **argv);

/* Renamed presets and result names (models/model.h gt_model_preset_renamed,
 * reports/read.h gt_report_renames; docs/models.md): the old name keeps
 * working, deprecated. gt_cli_model_name: the preset an old --model NAME now
 * is, else name. gt_cli_case_name: a selection or case (SUITE/CASE, CASE,
 * predict's --case) with an old name in its case part under the new one, in
 * storage of its own that lives as long as the process, else sel. Each prints
 * one note on stderr naming the new name ("gauntlet CMD: note: ..."), once per
 * job (not from the other ranks or a relaunched copy). */
const char *gt_cli_model_name(const char *cmd, const char *name);
const char *gt_cli_case_name(const char *cmd, const char *sel);

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
