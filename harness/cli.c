#define _GNU_SOURCE /* open_memstream */
#include "harness/cli.h"
#include "reports/compare.h"
#include "reports/gate_stats.h"

#include "engine/comm.h"
#include "engine/env.h"
#include "models/model.h"
#include "reports/read.h"
#include "reports/report.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int gt_opt(gt_args *a, const char *name, const char **value, int *err) {
    const char *arg = a->argv[a->i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0) return 0;
    if (arg[n] == '=') {
        *value = arg + n + 1;
        a->i++;
        return 1;
    }
    if (arg[n] != '\0') return 0;
    if (a->i + 1 >= a->argc) {
        fprintf(stderr, "gauntlet %s: %s needs a value\n", a->cmd, name);
        *err = 1;
        *value = NULL; /* parsers ignore NULL: the error is already printed */
        a->i++;
        return 1;
    }
    *value = a->argv[a->i + 1];
    a->i += 2;
    return 1;
}

/* Levenshtein distance, capped at 64 characters (option and suite names). */
static int edit_distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 64) la = 64;
    if (lb > 64) lb = 64;
    int prev[65], cur[65];
    for (int j = 0; j <= lb; j++) prev[j] = j;
    for (int i = 1; i <= la; i++) {
        cur[0] = i;
        for (int j = 1; j <= lb; j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof(int) * (size_t)(lb + 1));
    }
    return prev[lb];
}

const char *gt_nearest(const char *word, const char *const *names, int n) {
    const char *best = NULL;
    int bd = 1 << 30;
    size_t lw = strlen(word);
    for (int i = 0; i < n; i++) {
        if (!names[i] || !names[i][0]) continue;
        int d = edit_distance(word, names[i]);
        size_t ln = strlen(names[i]);
        /* a prefix either way ("--step" of "--steps", "kernel" of "kernels") is
         * one typo however long the rest */
        if (lw >= 3 && ln >= 3 &&
            (strncmp(word, names[i], lw < ln ? lw : ln) == 0) && d > 1)
            d = 1 + (int)(lw > ln ? lw - ln : ln - lw) / 4;
        if (d < bd) {
            bd = d;
            best = names[i];
        }
    }
    /* close enough to be a typo: about a third of the word may differ */
    int limit = lw <= 4 ? 1 : lw <= 8 ? 2 : 3;
    return best && bd <= limit ? best : NULL;
}

const char *gt_nearest_option(const char *arg, const char *help, char *buf, size_t n) {
    char word[64];
    size_t lw = strcspn(arg, "=");
    if (lw >= sizeof word) lw = sizeof word - 1;
    memcpy(word, arg, lw);
    word[lw] = 0;
    /* every "--name" of the usage text, once */
    enum { MAXOPT = 256 };
    char store[MAXOPT][40];
    const char *names[MAXOPT];
    int k = 0;
    for (const char *p = help; p && (p = strstr(p, "--")) != NULL && k < MAXOPT;) {
        size_t l = 2;
        while (p[l] &&
               (p[l] == '-' || (p[l] >= 'a' && p[l] <= 'z') || (p[l] >= '0' && p[l] <= '9')))
            l++;
        if (l > 2 && l < sizeof store[0]) {
            memcpy(store[k], p, l);
            store[k][l] = 0;
            names[k] = store[k];
            k++;
        }
        p += l;
    }
    const char *best = gt_nearest(word, names, k);
    if (!best) return NULL;
    snprintf(buf, n, "%s", best);
    return buf;
}

/* near: the option meant, or NULL. */
static int say_unknown(const char *cmd, const char *arg, const char *near) {
    if (near)
        fprintf(stderr, "gauntlet %s: unknown option '%s': did you mean %s? (gauntlet %s --help "
                        "lists them)\n",
                cmd, arg, near, cmd);
    else
        fprintf(stderr, "gauntlet %s: unknown option '%s' (gauntlet %s --help lists them)\n", cmd,
                arg, cmd);
    return GT_EXIT_USAGE;
}

int gt_unknown_option(const char *cmd, const char *arg, void (*usage)(FILE *)) {
    char near[64], *help = NULL;
    size_t hn = 0;
    FILE *m = open_memstream(&help, &hn);
    if (m) {
        usage(m);
        fclose(m);
    }
    const char *found = help ? gt_nearest_option(arg, help, near, sizeof near) : NULL;
    free(help);
    return say_unknown(cmd, arg, found);
}

/* ---- options from one table ------------------------------------------------------ */

int gt_cli_store(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    char *at = (char *)opts + o->off;
    switch (o->kind) {
    case GT_CLI_FLAG:
        *(int *)at = 1;
        return 1;
    case GT_CLI_INT:
        return gt_parse_int(a, o->name, v, (long)o->lo, (long)o->hi, (int *)at);
    case GT_CLI_I64:
        return gt_parse_i64(a, o->name, v, (int64_t)o->lo, (int64_t)o->hi, (int64_t *)at);
    case GT_CLI_U64:
        return gt_parse_u64(a, o->name, v, (uint64_t *)at);
    case GT_CLI_FLOAT:
        return gt_parse_float(a, o->name, v, o->lo, o->hi, (float *)at);
    case GT_CLI_DOUBLE:
        return gt_parse_double(a, o->name, v, o->lo, o->hi, (double *)at);
    case GT_CLI_STRING:
        *(const char **)at = v;
        return 1;
    default:
        return 0;
    }
}

/* The entry argv's `arg` names: exactly, or "NAME=VALUE" for one that takes
 * an argument; *used: the name as given (messages repeat it). */
static const gt_cli_opt *cli_find(const gt_cli *c, const char *arg, const char **used) {
    for (const gt_cli_opt *o = c->opts; o->name; o++) {
        if (o->kind == GT_CLI_SECTION) continue;
        const char *names[2] = {o->name, o->alias};
        for (int k = 0; k < 2 && names[k]; k++) {
            size_t n = strlen(names[k]);
            if (strncmp(arg, names[k], n) == 0 && (arg[n] == '\0' || (o->arg && arg[n] == '='))) {
                *used = names[k];
                return o;
            }
        }
    }
    return NULL;
}

/* An unknown option, with the table's "--name" nearest to its part before '='. */
static int cli_unknown(const gt_cli *c, const char *arg) {
    enum { MAXOPT = 256 };
    const char *names[MAXOPT];
    int k = 0;
    for (const gt_cli_opt *o = c->opts; o->name && k < MAXOPT - 1; o++) {
        if (o->kind == GT_CLI_SECTION) continue;
        if (strncmp(o->name, "--", 2) == 0) names[k++] = o->name;
        if (o->alias && strncmp(o->alias, "--", 2) == 0) names[k++] = o->alias;
    }
    char word[64];
    size_t lw = strcspn(arg, "=");
    if (lw >= sizeof word) lw = sizeof word - 1;
    memcpy(word, arg, lw);
    word[lw] = 0;
    return say_unknown(c->cmd, arg, gt_nearest(word, names, k));
}

int gt_cli_parse(const gt_cli *c, int argc, char **argv, void *opts, int *rc) {
    gt_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = c->cmd};
    *rc = GT_EXIT_USAGE;
    while (a.i < argc) {
        const char *arg = argv[a.i], *used = NULL, *v = NULL;
        if (gt_flag(&a, "--help") || gt_flag(&a, "-h")) {
            gt_cli_usage(c, stdout);
            *rc = GT_EXIT_OK;
            return 0;
        }
        if (arg[0] != '-' && c->word) {
            a.i++;
            if (!c->word(opts, &a, arg)) return 0;
            continue;
        }
        const gt_cli_opt *o = cli_find(c, arg, &used);
        if (!o) {
            *rc = cli_unknown(c, arg);
            return 0;
        }
        int err = 0;
        if (o->arg) gt_opt(&a, used, &v, &err);
        else a.i++;
        int ok = o->set ? o->set(opts, &a, o, v) : gt_cli_store(opts, &a, o, v);
        if (err || !ok) return 0;
    }
    *rc = GT_EXIT_OK;
    return 1;
}

int gt_cli_set_topologies(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    gt_cli_topologies *t = (gt_cli_topologies *)((char *)opts + o->off);
    int ok = 1;
    t->n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v ? v : "");
    char *save = NULL;
    for (char *tk = strtok_r(buf, ",", &save); tk && ok; tk = strtok_r(NULL, ",", &save)) {
        if (t->n == 16) return !gt_usage_error(a->cmd, "%s: at most 16", o->name);
        ok = gt_parse_int(a, o->name, tk, 1, 1 << 20, &t->v[t->n++]);
    }
    if (ok && v && t->n == 0) return !gt_usage_error(a->cmd, "%s is empty", o->name);
    return ok;
}

void gt_cli_usage(const gt_cli *c, FILE *f) {
    enum { COL = 24 }; /* where the help starts */
    fputs(c->usage, f);
    for (const gt_cli_opt *o = c->opts; o->name; o++) {
        if (o->kind == GT_CLI_SECTION) {
            fprintf(f, "%s\n", o->name);
            continue;
        }
        char left[96];
        snprintf(left, sizeof left, "  %s%s%s%s%s", o->name, o->alias ? ", " : "",
                 o->alias ? o->alias : "", o->arg ? " " : "", o->arg ? o->arg : "");
        int pad = (int)strlen(left) + 2 <= COL ? COL - (int)strlen(left) : 2;
        const char *h = o->help ? o->help : "";
        size_t n = strcspn(h, "\n");
        fprintf(f, "%s%*s%.*s\n", left, pad, "", (int)n, h);
        for (h += n; *h == '\n'; h += n) {
            h++;
            n = strcspn(h, "\n");
            fprintf(f, "%*s%.*s\n", COL, "", (int)n, h);
        }
    }
    if (c->epilogue) fputs(c->epilogue, f);
}

int gt_flag(gt_args *a, const char *name) {
    if (strcmp(a->argv[a->i], name) != 0) return 0;
    a->i++;
    return 1;
}

int gt_parse_i64(const gt_args *a, const char *name, const char *v, int64_t lo, int64_t hi,
                 int64_t *out) {
    if (!v) return 0;
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end != '\0') {
        fprintf(stderr, "gauntlet %s: %s expects an integer, got '%s'\n", a->cmd, name, v);
        return 0;
    }
    if (x < lo || x > hi) {
        fprintf(stderr, "gauntlet %s: %s %lld is out of range [%lld, %lld]\n", a->cmd, name, x,
                (long long)lo, (long long)hi);
        return 0;
    }
    *out = x;
    return 1;
}

int gt_parse_int(const gt_args *a, const char *name, const char *v, long lo, long hi, int *out) {
    int64_t x;
    if (!gt_parse_i64(a, name, v, lo, hi, &x)) return 0;
    *out = (int)x;
    return 1;
}

int gt_parse_u64(const gt_args *a, const char *name, const char *v, uint64_t *out) {
    if (!v) return 0;
    char *end = NULL;
    errno = 0;
    if (v[0] == '-') {
        fprintf(stderr, "gauntlet %s: %s expects a non-negative integer, got '%s'\n", a->cmd,
                name, v);
        return 0;
    }
    unsigned long long x = strtoull(v, &end, 0);
    if (errno || end == v || *end != '\0') {
        fprintf(stderr, "gauntlet %s: %s expects a non-negative integer, got '%s'\n", a->cmd,
                name, v);
        return 0;
    }
    *out = x;
    return 1;
}

int gt_parse_double(const gt_args *a, const char *name, const char *v, double lo, double hi,
                    double *out) {
    if (!v) return 0;
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end != '\0' || !isfinite(x)) {
        fprintf(stderr, "gauntlet %s: %s expects a number, got '%s'\n", a->cmd, name, v);
        return 0;
    }
    if (x < lo || x > hi) {
        fprintf(stderr, "gauntlet %s: %s %g is out of range [%g, %g]\n", a->cmd, name, x, lo, hi);
        return 0;
    }
    *out = x;
    return 1;
}

int gt_parse_float(const gt_args *a, const char *name, const char *v, double lo, double hi,
                   float *out) {
    double x;
    if (!gt_parse_double(a, name, v, lo, hi, &x)) return 0;
    *out = (float)x;
    return 1;
}

int gt_fail(const char *cmd, gt_status s) {
    fprintf(stderr, "gauntlet %s: %s [%s]\n", cmd, gt_last_error(), gt_status_name(s));
    return GT_EXIT_USAGE;
}

int gt_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gauntlet %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return GT_EXIT_USAGE;
}

static struct {
    gt_report *rep;
    char suite[32], case_name[96], topology[16], backend[16];
} g_watch;

/* Runs on the watchdog thread while the main thread is stuck inside MPI:
 * only the report and stdio, never the communicator. */
static void on_watchdog(const char *message, void *ctx) {
    (void)ctx;
    if (!g_watch.rep) return;
    char msg[1200];
    snprintf(msg, sizeof msg, "watchdog: %s", message);
    /* the stuck case's result so far (gauntlet train rewrites it as it
     * goes) keeps its series and takes the watchdog's message */
    size_t n = gt_report_result_count(g_watch.rep);
    gt_result *res = n ? gt_report_result_at(g_watch.rep, n - 1) : NULL;
    if (!res || !gt_result_is_partial(res))
        res = gt_report_add_result(g_watch.rep, g_watch.suite, g_watch.case_name,
                                   g_watch.topology, g_watch.backend);
    if (res) gt_result_set_status(res, GT_RESULT_ERROR, msg);
    /* the job is about to be aborted: the report says so, and why */
    gt_report_set_incomplete(g_watch.rep, msg);
    if (gt_report_write(g_watch.rep) != GT_OK)
        fprintf(stderr, "gauntlet: watchdog: could not write the report: %s\n", gt_last_error());
}

void gt_watchdog_report(gt_report *rep, const char *suite, const char *case_name,
                        const char *topology, const char *backend) {
    g_watch.rep = rep;
    snprintf(g_watch.suite, sizeof g_watch.suite, "%s", suite);
    snprintf(g_watch.case_name, sizeof g_watch.case_name, "%s", case_name);
    snprintf(g_watch.topology, sizeof g_watch.topology, "%s", topology);
    snprintf(g_watch.backend, sizeof g_watch.backend, "%s", backend);
    gt_comm_set_timeout_handler(on_watchdog, NULL);
}

int gt_report_binding(gt_report *rep, gt_comm *comm) {
    enum { LEN = 512 };
    char host[256], cpus[192];
    gt_env_host_affinity(host, sizeof host, cpus, sizeof cpus);
    int n = gt_comm_size(comm);
    char mine[LEN];
    snprintf(mine, sizeof mine, "%s %s", host, cpus);
    char *all = calloc((size_t)n, LEN);
    const char **rows = calloc((size_t)n, sizeof *rows);
    int ok = all && rows &&
             gt_comm_allgather(comm, mine, all, LEN / 4, GT_DTYPE_INT32, NULL) == GT_OK;
    if (ok && rep) {
        for (int i = 0; i < n; i++) {
            all[(size_t)i * LEN + LEN - 1] = '\0';
            rows[i] = all + (size_t)i * LEN;
        }
        gt_report_set_binding(rep, rows, n);
    }
    free(all);
    free(rows);
    return ok;
}

int gt_default_threads(int ranks) {
    /* OpenMP's own variable, as every OpenMP program honours it (its first
     * level: "4,2" nests) */
    const char *omp = getenv("OMP_NUM_THREADS");
    if (omp && atoi(omp) > 0) return atoi(omp);
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (!local) local = getenv("MPI_LOCALNRANKS"); /* MPICH's Hydra */
    if (!local) local = getenv("SLURM_NTASKS_PER_NODE");
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int per_node = local && atoi(local) > 0 && atoi(local) < ranks ? atoi(local) : ranks;
    if (per_node < 1) per_node = 1;
    return ncpu / per_node >= 1 ? (int)(ncpu / per_node) : 1;
}

int gt_compare_exit_code(const gt_compare *c) {
    switch (gt_compare_decide(c)) {
    case GT_DECISION_SHIP:
        return GT_EXIT_OK;
    case GT_DECISION_UNDECIDED:
        return GT_EXIT_UNDECIDED;
    case GT_DECISION_NOT_COMPARABLE:
        return GT_EXIT_NOT_COMPARABLE;
    default:
        return GT_EXIT_REGRESSION;
    }
}

/* --sequential FIRST:MAX: looks after FIRST, FIRST + 1, ..., MAX pairs or NEW
 * runs; compare says whether FIRST suits what it looks at. */
int gt_parse_sequential(const char *cmd, const char *v, gt_compare_options *o) {
    int first = 0, max = 0, used = 0;
    if (!v || sscanf(v, "%d:%d%n", &first, &max, &used) != 2 || v[used] != '\0' || first < 1 ||
        max < first || max > 1000) {
        fprintf(stderr,
                "gauntlet %s: --sequential '%s': FIRST:MAX, 1 <= FIRST <= MAX <= 1000 (e.g. "
                "5:12: a look after 5 pairs, then after each further pair up to 12; or 1:3 "
                "NEW runs against a baseline directory or history)\n",
                cmd, v ? v : "");
        return 0;
    }
    o->seq_first = first;
    o->seq_max = max;
    return 1;
}

int gt_parse_spending(const char *cmd, const char *v, gt_compare_options *o) {
    if (v && strcmp(v, "pocock") == 0) {
        o->spending = GT_GS_SPEND_POCOCK;
    } else if (v && (strcmp(v, "obf") == 0 || strcmp(v, "obrien-fleming") == 0)) {
        o->spending = GT_GS_SPEND_OBRIEN_FLEMING;
    } else {
        fprintf(stderr,
                "gauntlet %s: --spending '%s': pocock (alpha spent evenly over the looks) or "
                "obf (O'Brien-Fleming: little early, most at the last look)\n",
                cmd, v ? v : "");
        return 0;
    }
    return 1;
}

/* ---- renamed names ---------------------------------------------------------------- */

/* The note once a job: not from a rank other than 0, nor from the copy that
 * run relaunched under mpirun (the first process said it). */
static int note_here(void) {
    if (getenv("GT_NO_RELAUNCH")) return 0;
    static const char *const ranks[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                        "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof ranks / sizeof ranks[0]; i++) {
        const char *r = getenv(ranks[i]);
        if (r && r[0] && strcmp(r, "0") != 0) return 0;
    }
    return 1;
}

static void rename_note(const char *cmd, const char *old_name, const char *new_name,
                        const char *what) {
    if (note_here())
        fprintf(stderr,
                "gauntlet %s: note: %s '%s' is now '%s' (3.3M parameters: GPT-2 small, 124M, "
                "is gpt2-124m); the old name is deprecated, reports record the new one\n",
                cmd, what, old_name, new_name);
}

const char *gt_cli_model_name(const char *cmd, const char *name) {
    const char *n = gt_model_preset_renamed(name);
    if (!n) return name;
    rename_note(cmd, name, n, "model");
    return n;
}

const char *gt_cli_case_name(const char *cmd, const char *sel) {
    static char store[32][160];
    static int used;
    if (!sel) return sel;
    /* the case part: after "SUITE/" when the first part names a suite of the
     * renames' kind, else the whole selection (predict's --case) */
    for (int whole = 0; whole < 2; whole++) {
        const char *c = sel;
        if (!whole) {
            const char *slash = strchr(sel, '/');
            if (!slash) continue;
            c = slash + 1;
        }
        for (const gt_report_rename *r = gt_report_renames; r->old_name; r++) {
            size_t k = strlen(r->old_name);
            if (strncmp(c, r->old_name, k) != 0 || (c[k] && c[k] != '/')) continue;
            if (used == 32) return sel;
            char *out = store[used++];
            snprintf(out, sizeof store[0], "%.*s%s%s", (int)(c - sel), sel, r->new_name, c + k);
            rename_note(cmd, sel, out, "case");
            return out;
        }
    }
    return sel;
}
