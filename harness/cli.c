#include "harness/cli.h"

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
    gt_result *res = gt_report_add_result(g_watch.rep, g_watch.suite, g_watch.case_name,
                                          g_watch.topology, g_watch.backend);
    if (res) {
        char msg[1200];
        snprintf(msg, sizeof msg, "watchdog: %s", message);
        gt_result_set_status(res, GT_RESULT_ERROR, msg);
    }
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
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (!local) local = getenv("SLURM_NTASKS_PER_NODE");
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int per_node = local && atoi(local) > 0 && atoi(local) < ranks ? atoi(local) : ranks;
    if (per_node < 1) per_node = 1;
    return ncpu / per_node >= 1 ? (int)(ncpu / per_node) : 1;
}
