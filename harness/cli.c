#define _GNU_SOURCE /* open_memstream */
#include "harness/cli.h"
#include "reports/compare.h"

#include "engine/comm.h"
#include "engine/env.h"
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
    if (found)
        fprintf(stderr, "gauntlet %s: unknown option '%s': did you mean %s? (gauntlet %s --help "
                        "lists them)\n",
                cmd, arg, near, cmd);
    else
        fprintf(stderr, "gauntlet %s: unknown option '%s' (gauntlet %s --help lists them)\n", cmd,
                arg, cmd);
    return GT_EXIT_USAGE;
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
