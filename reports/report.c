/* JSON report writer (schema: docs/report-schema.md). */
#define _GNU_SOURCE
#include "reports/report.h"

#include "engine/fileio.h"
#include "engine/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/rng.h"
#include "engine/timer.h"
#include "reports/report_impl.h"

struct gt_result {
    json_t *obj; /* borrowed from the report's results array */
    char label[192];
};

struct gt_report {
    char *path;
    json_t *root;
    json_t *results;
    gt_result **res;
    size_t n_res, cap_res;
    /* Incomplete until gt_report_finish: why, when known (NULL: the default). */
    int complete;
    char *reason;
    /* The file's last text and state, for gt_report_write_interrupted, which
     * runs on another thread than the one building the report: mu guards
     * these and the file itself (a write and an interrupted write never
     * interleave). */
    pthread_mutex_t mu;
    char *last_text;
    int last_complete, last_has_reason;
    int sealed; /* the interrupted write happened: nothing replaces it */
    char layout[64]; /* stamped on each new result ("" none): gt_report_set_layout */
};

/* What an incomplete report says when nobody could say why: the file is
 * rewritten during the run, so a reader may meet it in this state either
 * while the run goes on or after it was killed (SIGKILL leaves no chance to
 * say more). */
#define DEFAULT_REASON                                                                         \
    "not finished: the run had not ended when this report was last written (it is still "    \
    "running, or it was killed without a chance to say why, e.g. by SIGKILL)"

static const char *const g_status_names[GT_RESULT_STATUS_COUNT] = {"pass", "fail", "skip",
                                                                   "error"};

const char *gt_report_jansson_version(void) { return JANSSON_VERSION; }

void gt_result_set_json(gt_result *res, const char *key, json_t *value) {
    if (!res || !key || !value) return;
    json_object_set_new(res->obj, key, value);
}

const char *gt_result_status_name(gt_result_status s) {
    return (s >= 0 && s < GT_RESULT_STATUS_COUNT) ? g_status_names[s] : "error";
}

static void iso_time(double t, char *buf, size_t len) {
    time_t secs = (time_t)t;
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

gt_status gt_report_new(const char *path, int argc, char **argv, gt_report **out) {
    *out = NULL;
    gt_report *r = calloc(1, sizeof *r);
    if (!r) return GT_ERR(GT_ERR_OOM, "no memory for the report");
    r->path = path ? strdup(path) : NULL;
    pthread_mutex_init(&r->mu, NULL);
    r->root = json_object();
    r->results = json_array();
    json_object_set_new(r->root, "schema_version", json_integer(GT_REPORT_SCHEMA_VERSION));
    json_t *run = json_object();
    double now = gt_wall_time();
    char id[64], ts[32];
    iso_time(now, ts, sizeof ts);
    /* unique enough across hosts and runs, and sortable by time */
    snprintf(id, sizeof id, "%s-%08x", ts,
             gt_rng_u32((uint64_t)getpid(), (uint64_t)(now * 1e6), 0));
    json_object_set_new(run, "id", json_string(id));
    json_object_set_new(run, "start", json_string(ts));
    json_object_set_new(run, "start_unix", json_real(now));
    json_t *cmd = json_array();
    for (int i = 0; i < argc; i++) json_array_append_new(cmd, json_string(argv[i]));
    json_object_set_new(run, "command_line", cmd);
    json_object_set_new(r->root, "run", run);
    json_object_set_new(r->root, "env", json_object());
    json_object_set_new(r->root, "results", r->results); /* the root holds the reference */
    *out = r;
    return GT_OK;
}

void gt_report_free(gt_report *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_res; i++) free(r->res[i]);
    free(r->res);
    json_decref(r->root);
    free(r->path);
    free(r->reason);
    free(r->last_text);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static json_t *str_or_null(const char *s) { return (s && s[0]) ? json_string(s) : json_null(); }

/* gt_env marks an unknown number with a negative value. */
static json_t *int_or_null(long long v) { return v >= 0 ? json_integer(v) : json_null(); }

/* One object per GPU: what the device is at the top, what it was doing when
 * the fingerprint was taken under `state` (changes from run to run, so a
 * comparison of two stacks can leave it out). */
static json_t *gpus_json(const gt_env *e) {
    json_t *arr = json_array();
    for (int i = 0; i < e->n_gpus; i++) {
        const gt_env_gpu *g = &e->gpus[i];
        json_t *o = json_object(), *st = json_object();
        json_object_set_new(o, "index", json_integer(g->index));
        json_object_set_new(o, "name", str_or_null(g->name));
        json_object_set_new(o, "uuid", str_or_null(g->uuid));
        json_object_set_new(o, "sm_count", int_or_null(g->sm_count));
        char cc[24] = "";
        if (g->cc_major >= 0 && g->cc_minor >= 0)
            snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
        json_object_set_new(o, "compute_capability", str_or_null(cc));
        json_object_set_new(o, "sm_clock_max_mhz", int_or_null(g->sm_clock_max_mhz));
        json_object_set_new(o, "mem_clock_max_mhz", int_or_null(g->mem_clock_max_mhz));
        json_object_set_new(o, "memory_total_mib", int_or_null(g->memory_total_mib));
        json_object_set_new(st, "sm_clock_mhz", int_or_null(g->sm_clock_mhz));
        json_object_set_new(st, "mem_clock_mhz", int_or_null(g->mem_clock_mhz));
        json_object_set_new(st, "memory_used_mib", int_or_null(g->memory_used_mib));
        json_object_set_new(st, "temperature_c", int_or_null(g->temperature_c));
        json_object_set_new(st, "power_w", g->power_w >= 0 ? json_real(g->power_w) : json_null());
        char hex[24] = "";
        if (g->has_throttle) snprintf(hex, sizeof hex, "0x%llx", g->throttle_reasons);
        json_object_set_new(st, "throttle_reasons", str_or_null(hex));
        json_object_set_new(st, "throttle_reason_names",
                            g->has_throttle ? str_or_null(g->throttle_names) : json_null());
        json_object_set_new(o, "state", st);
        json_array_append_new(arr, o);
    }
    return arr;
}

/* env.transport: gt_env.transport's "NAME=value" strings as flat string
 * members, so that compare lists each one that differs on its own line. */
static json_t *transport_json(const gt_env *e) {
    json_t *t = json_object();
    for (int i = 0; i < e->n_transport; i++) {
        const char *kv = e->transport[i], *eq = strchr(kv, '=');
        if (!eq) continue;
        char key[160];
        snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
        json_object_set_new(t, key, json_string(eq + 1));
    }
    return t;
}

void gt_report_set_env(gt_report *r, const gt_env *e, const gt_peaks *peaks) {
    json_t *env = json_object();
    json_object_set_new(env, "host", json_string(e->host));
    json_object_set_new(env, "os", json_string(e->os));
    json_t *cpu = json_object();
    json_object_set_new(cpu, "model", json_string(e->cpu_model));
    json_object_set_new(cpu, "logical", json_integer(e->cpu_logical));
    json_object_set_new(cpu, "physical", json_integer(e->cpu_physical));
    json_object_set_new(cpu, "sockets", json_integer(e->cpu_sockets));
    json_object_set_new(env, "cpu", cpu);
    json_object_set_new(env, "memory_gib", json_real(e->mem_total_gib));
    json_object_set_new(env, "gpus", gpus_json(e));
    json_t *sw = json_object();
    json_object_set_new(sw, "gauntlet", json_string(e->gauntlet_version));
    json_object_set_new(sw, "compiler", json_string(e->compiler));
    json_object_set_new(sw, "build_type", json_string(e->build_type));
    json_object_set_new(sw, "blas", json_string(e->blas));
    json_object_set_new(sw, "openmp", json_string(e->openmp));
    json_object_set_new(sw, "jansson", json_string(JANSSON_VERSION));
    json_object_set_new(sw, "mpi", json_string(e->mpi));
    json_object_set_new(sw, "hwloc", json_string(e->hwloc));
    json_object_set_new(sw, "cuda", json_string(e->cuda));
    json_object_set_new(sw, "cuda_driver", json_string(e->cuda_driver));
    json_object_set_new(sw, "cuda_runtime", json_string(e->cuda_runtime));
    json_object_set_new(sw, "cublas", json_string(e->cublas));
    json_object_set_new(sw, "cudnn", json_string(e->cudnn));
    json_object_set_new(sw, "nccl", json_string(e->nccl));
    json_object_set_new(env, "software", sw);
    json_t *blas = json_object();
    json_object_set_new(blas, "core", str_or_null(e->blas_core));
    json_object_set_new(blas, "parallel", json_string(e->blas_parallel));
    json_object_set_new(blas, "threads_per_call", json_integer(e->blas_threads));
    json_object_set_new(blas, "steering", json_string(e->blas_steering));
    json_object_set_new(env, "blas", blas);
    json_object_set_new(env, "transport", transport_json(e));
    json_object_set_new(env, "topology_digest", str_or_null(e->topology_digest));
    json_object_set_new(env, "affinity", json_string(e->affinity));
    json_object_set_new(env, "topology_xml", str_or_null(e->topology_xml));
    json_t *vars = json_object();
    for (int i = 0; i < e->n_vars; i++) {
        const char *eq = strchr(e->vars[i], '=');
        if (!eq) continue;
        char key[128];
        size_t kl = (size_t)(eq - e->vars[i]);
        if (kl >= sizeof key) kl = sizeof key - 1;
        memcpy(key, e->vars[i], kl);
        key[kl] = '\0';
        json_object_set_new(vars, key, json_string(eq + 1));
    }
    json_object_set_new(env, "variables", vars);
    if (peaks) {
        json_t *p = json_object();
        json_object_set_new(p, "fma_gflops", json_real(peaks->fma_gflops));
        json_object_set_new(p, "sgemm_gflops", json_real(peaks->sgemm_gflops));
        json_object_set_new(p, "sgemm_best_gflops", json_real(peaks->sgemm_best_gflops));
        json_object_set_new(p, "sgemm_n", json_integer(peaks->sgemm_n));
        json_object_set_new(env, "peaks", p);
    }
    json_object_set_new(r->root, "env", env);
    json_object_set_new(json_object_get(r->root, "run"), "git_revision",
                        json_string(e->git_revision));
}

void gt_report_threads(gt_report *r, int per_rank) {
    if (!r) return;
    json_t *t = json_object();
    int got = gt_env_threads_obtained(per_rank);
    json_object_set_new(t, "per_rank", json_integer(per_rank > 0 ? per_rank : got));
    json_object_set_new(t, "obtained", json_integer(got));
    static const char *const vars[] = {"OMP_NUM_THREADS", "OMP_PROC_BIND",  "OMP_PLACES",
                                       "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OPENBLAS_NUM_THREADS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        json_object_set_new(t, vars[i], str_or_null(getenv(vars[i])));
    json_object_set_new(json_object_get(r->root, "env"), "threads", t);
}

void gt_report_set_binding(gt_report *r, const char *const *per_rank, int n) {
    json_t *env = json_object_get(r->root, "env");
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        json_t *o = json_object();
        char host[128] = "", cpus[192] = "";
        sscanf(per_rank[i], "%127s %191s", host, cpus);
        json_object_set_new(o, "rank", json_integer(i));
        json_object_set_new(o, "host", json_string(host));
        json_object_set_new(o, "cpus", json_string(cpus));
        json_array_append_new(arr, o);
    }
    json_object_set_new(env, "binding", arr);
}

gt_result *gt_report_add_result(gt_report *r, const char *suite, const char *case_name,
                                const char *topology, const char *backend) {
    if (r->n_res == r->cap_res) {
        size_t cap = r->cap_res ? 2 * r->cap_res : 16;
        gt_result **n = realloc(r->res, cap * sizeof *n);
        if (!n) return NULL;
        r->res = n;
        r->cap_res = cap;
    }
    gt_result *res = calloc(1, sizeof *res);
    if (!res) return NULL;
    json_t *o = json_object();
    json_object_set_new(o, "suite", json_string(suite));
    json_object_set_new(o, "case", json_string(case_name));
    json_object_set_new(o, "topology", json_string(topology));
    if (r->layout[0]) json_object_set_new(o, "layout", json_string(r->layout));
    json_object_set_new(o, "backend", json_string(backend));
    json_object_set_new(o, "status", json_string("pass"));
    json_object_set_new(o, "params", json_object());
    json_object_set_new(o, "checks", json_array());
    json_object_set_new(o, "metrics", json_object());
    json_array_append_new(r->results, o);
    res->obj = o;
    r->res[r->n_res++] = res;
    return res;
}

void gt_report_set_node_load(gt_report *r, double others, double idle, double seconds) {
    if (!r || !isfinite(others) || !isfinite(idle) || !(seconds > 0)) return;
    json_t *n = json_object();
    json_object_set_new(n, "cpu_others_cores", json_real(others));
    json_object_set_new(n, "cpu_idle_cores", json_real(idle));
    json_object_set_new(n, "seconds", json_real(seconds));
    json_object_set_new(json_object_get(r->root, "run"), "node_load", n);
}

void gt_report_set_layout(gt_report *r, const char *layout) {
    if (r) snprintf(r->layout, sizeof r->layout, "%s", layout ? layout : "");
}

json_t *gt_report_json(gt_report *r) { return r ? r->root : NULL; }
json_t *gt_result_json(gt_result *res) { return res ? res->obj : NULL; }

void gt_result_set_status(gt_result *res, gt_result_status s, const char *message) {
    json_object_set_new(res->obj, "status", json_string(gt_result_status_name(s)));
    if (message) json_object_set_new(res->obj, "message", json_string(message));
}

const char *gt_result_message(const gt_result *res) {
    return json_string_value(json_object_get(res->obj, "message"));
}

gt_result_status gt_result_get_status(const gt_result *res) {
    const char *s = json_string_value(json_object_get(res->obj, "status"));
    for (int i = 0; i < GT_RESULT_STATUS_COUNT; i++)
        if (s && strcmp(s, g_status_names[i]) == 0) return (gt_result_status)i;
    return GT_RESULT_ERROR;
}

void gt_result_param_str(gt_result *res, const char *key, const char *value) {
    json_object_set_new(json_object_get(res->obj, "params"), key, json_string(value));
}
void gt_result_param_int(gt_result *res, const char *key, long long value) {
    json_object_set_new(json_object_get(res->obj, "params"), key, json_integer(value));
}

/* JSON has no NaN or Inf: they are written as null (and a check that saw
 * one has already failed). */
static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

void gt_result_param_num(gt_result *res, const char *key, double value) {
    json_object_set_new(json_object_get(res->obj, "params"), key, num(value));
}

void gt_result_group(gt_result *res, const char *group) {
    if (!res || !group) return;
    json_t *g = json_object_get(res->obj, "groups");
    if (!json_is_array(g)) {
        g = json_array();
        json_object_set_new(res->obj, "groups", g);
    }
    size_t i;
    json_t *v;
    json_array_foreach(g, i, v) {
        const char *have = json_string_value(v);
        if (have && strcmp(have, group) == 0) return;
    }
    json_array_append_new(g, json_string(group));
}

void gt_result_check(gt_result *res, const char *name, int passed, double value, double limit,
                     const char *detail) {
    json_t *c = json_object();
    json_object_set_new(c, "name", json_string(name));
    json_object_set_new(c, "passed", json_boolean(passed));
    json_object_set_new(c, "value", num(value));
    json_object_set_new(c, "limit", num(limit));
    if (detail) json_object_set_new(c, "detail", json_string(detail));
    json_array_append_new(json_object_get(res->obj, "checks"), c);
    if (!passed && gt_result_get_status(res) == GT_RESULT_PASS)
        gt_result_set_status(res, GT_RESULT_FAIL, NULL);
}

void gt_result_metric(gt_result *res, const char *name, const char *unit, int higher_better,
                      double value, const double *samples, size_t n) {
    json_t *m = json_object();
    json_object_set_new(m, "value", num(value));
    json_object_set_new(m, "unit", json_string(unit));
    json_object_set_new(m, "better", json_string(higher_better ? "higher" : "lower"));
    if (samples && n > 0) {
        double *sorted = malloc(n * sizeof *sorted);
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++) json_array_append_new(arr, num(samples[i]));
        json_object_set_new(m, "samples", arr);
        if (sorted) {
            memcpy(sorted, samples, n * sizeof *sorted);
            qsort(sorted, n, sizeof *sorted, gt_cmp_double);
            double med = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
            json_object_set_new(m, "min", num(sorted[0]));
            json_object_set_new(m, "median", num(med));
            json_object_set_new(m, "max", num(sorted[n - 1]));
            free(sorted);
        }
        json_object_set_new(m, "n", json_integer((json_int_t)n));
    } else {
        json_object_set_new(m, "n", json_integer(1));
    }
    json_object_set_new(json_object_get(res->obj, "metrics"), name, m);
}

void gt_result_check_unevaluated(gt_result *res, const char *name, double limit,
                                 const char *detail) {
    json_t *c = json_object();
    json_object_set_new(c, "name", json_string(name));
    json_object_set_new(c, "passed", json_null());
    json_object_set_new(c, "evaluated", json_false());
    json_object_set_new(c, "value", json_null());
    json_object_set_new(c, "limit", num(limit));
    if (detail) json_object_set_new(c, "detail", json_string(detail));
    json_array_append_new(json_object_get(res->obj, "checks"), c);
}

void gt_result_metric_derived(gt_result *res, const char *name, const char *from) {
    json_t *m = json_object_get(json_object_get(res->obj, "metrics"), name);
    if (m) json_object_set_new(m, "derived_from", json_string(from));
}

void gt_result_metric_ungated(gt_result *res, const char *name, const char *kind) {
    json_t *m = json_object_get(json_object_get(res->obj, "metrics"), name);
    if (!m) return;
    json_object_set_new(m, "gate", json_false());
    json_object_set_new(m, "kind", json_string(kind));
}

void gt_result_metric_part_of(gt_result *res, const char *name, const char *whole) {
    json_t *m = json_object_get(json_object_get(res->obj, "metrics"), name);
    if (m) json_object_set_new(m, "part_of", json_string(whole));
}

void gt_result_metric_rounds(gt_result *res, const char *name, int rounds) {
    json_t *m = json_object_get(json_object_get(res->obj, "metrics"), name);
    if (m && rounds > 0) json_object_set_new(m, "rounds", json_integer(rounds));
}

void gt_result_metric_state(gt_result *res, const char *name, const double *ns, size_t n) {
    json_t *m = json_object_get(json_object_get(res->obj, "metrics"), name);
    size_t have = 0;
    for (size_t i = 0; i < n; i++) have += ns[i] > 0;
    if (!m || !have) return;
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(arr, ns[i] > 0 ? num(ns[i]) : json_null());
    json_object_set_new(m, "state_ns", arr);
}

void gt_result_metric_cpu_wait(gt_result *res, const char *name, const double *w, size_t n) {
    json_t *m = json_object_get(json_object_get(res->obj, "metrics"), name);
    size_t have = 0;
    for (size_t i = 0; i < n; i++) have += w[i] >= 0;
    if (!m || !have) return;
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(arr, w[i] >= 0 ? num(w[i]) : json_null());
    json_object_set_new(m, "cpu_wait", arr);
}

void gt_result_series(gt_result *res, const char *name, const double *values, size_t n) {
    json_t *series = json_object_get(res->obj, "series");
    if (!series) {
        series = json_object();
        json_object_set_new(res->obj, "series", series);
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(arr, num(values[i]));
    json_object_set_new(series, name, arr);
}

/* result.memory, made on first use. */
static json_t *result_memory(gt_result *res) {
    json_t *mem = json_object_get(res->obj, "memory");
    if (!mem) {
        mem = json_object();
        json_object_set_new(res->obj, "memory", mem);
    }
    return mem;
}

void gt_result_memory_table(gt_result *res, const char *name, int n, const char *const *keys,
                            const size_t *bytes) {
    json_t *t = json_object();
    for (int i = 0; i < n; i++) json_object_set_new(t, keys[i], json_integer((json_int_t)bytes[i]));
    json_object_set_new(result_memory(res), name, t);
}

void gt_result_traffic(gt_result *res, const char *definition, int step, int n,
                       const char *const *keys, const double *bytes, const double *formula) {
    json_t *t = json_object(), *b = json_object(), *f = formula ? json_object() : NULL;
    for (int i = 0; i < n; i++) {
        json_object_set_new(b, keys[i], json_integer((json_int_t)bytes[i]));
        if (f) json_object_set_new(f, keys[i], json_integer((json_int_t)formula[i]));
    }
    json_object_set_new(t, "definition", json_string(definition));
    json_object_set_new(t, "step", json_integer(step));
    json_object_set_new(t, "bytes_per_step", b);
    if (f) json_object_set_new(t, "formula_bytes_per_step", f);
    json_object_set_new(res->obj, "traffic", t);
}

void gt_result_alloc_stats(gt_result *res, const char *name, const gt_alloc_stats *st) {
    json_t *a = json_object();
    json_object_set_new(a, "in_use_bytes", json_integer((json_int_t)st->in_use));
    json_object_set_new(a, "reserved_bytes", json_integer((json_int_t)st->reserved));
    json_object_set_new(a, "peak_in_use_bytes", json_integer((json_int_t)st->peak_in_use));
    json_object_set_new(a, "peak_reserved_bytes", json_integer((json_int_t)st->peak_reserved));
    json_object_set_new(a, "largest_free_bytes", json_integer((json_int_t)st->largest_free));
    json_object_set_new(a, "fragmentation", num(st->fragmentation));
    json_object_set_new(a, "requests", json_integer((json_int_t)st->n_requests));
    json_object_set_new(a, "cache_hits", json_integer((json_int_t)st->n_cache_hits));
    json_object_set_new(a, "raw_allocs", json_integer((json_int_t)st->n_raw_allocs));
    json_object_set_new(a, "raw_frees", json_integer((json_int_t)st->n_raw_frees));
    json_object_set_new(result_memory(res), name, a);
}

/* One reading: unknown numbers (negative) and an unknown throttle state are null. */
static json_t *sample_json(const gt_gpu_sample *g) {
    json_t *o = json_object();
    json_object_set_new(o, "t_unix", g->t_unix > 0 ? num(g->t_unix) : json_null());
    json_object_set_new(o, "sm_clock_mhz", int_or_null(g->sm_clock_mhz));
    json_object_set_new(o, "mem_clock_mhz", int_or_null(g->mem_clock_mhz));
    json_object_set_new(o, "temperature_c", int_or_null(g->temperature_c));
    json_object_set_new(o, "power_w", g->power_w >= 0 ? num(g->power_w) : json_null());
    char hex[24] = "";
    if (g->has_throttle) snprintf(hex, sizeof hex, "0x%llx", g->throttle_reasons);
    json_object_set_new(o, "throttle_reasons", str_or_null(hex));
    json_object_set_new(o, "throttle_reason_names",
                        g->has_throttle ? str_or_null(g->throttle_names) : json_null());
    return o;
}

void gt_result_telemetry(gt_result *res, const gt_gpu_sample *start, const gt_gpu_sample *end) {
    if (!res || (!start && !end)) return;
    const gt_gpu_sample *any = start ? start : end;
    json_t *t = json_object();
    json_object_set_new(t, "gpu_index", json_integer(any->index));
    json_object_set_new(t, "uuid", str_or_null(any->uuid));
    json_object_set_new(t, "start", start ? sample_json(start) : json_null());
    json_object_set_new(t, "end", end ? sample_json(end) : json_null());
    json_object_set_new(res->obj, "telemetry", t);
}

void gt_result_reset(gt_result *res) {
    if (!res) return;
    static const char *const keep[] = {"suite", "case", "topology", "backend"};
    json_t *o = json_object();
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        json_object_set(o, keep[i], json_object_get(res->obj, keep[i]));
    json_object_clear(res->obj);
    json_object_update(res->obj, o);
    json_decref(o);
    json_object_set_new(res->obj, "status", json_string("pass"));
    json_object_set_new(res->obj, "params", json_object());
    json_object_set_new(res->obj, "checks", json_array());
    json_object_set_new(res->obj, "metrics", json_object());
}

void gt_result_remove(gt_result *res, const char *section, const char *key) {
    if (!res) return;
    json_t *o = section ? json_object_get(res->obj, section) : res->obj;
    if (json_is_object(o)) json_object_del(o, key);
}

void gt_result_set_partial(gt_result *res, const char *message) {
    if (!res) return;
    json_object_set_new(res->obj, "partial", json_true());
    gt_result_set_status(res, GT_RESULT_ERROR, message);
}

int gt_result_is_partial(const gt_result *res) {
    return res && json_is_true(json_object_get(res->obj, "partial"));
}

size_t gt_report_result_count(const gt_report *r) { return r ? r->n_res : 0; }

gt_result *gt_report_result_at(gt_report *r, size_t i) {
    return r && i < r->n_res ? r->res[i] : NULL;
}

void gt_report_counts(const gt_report *r, int counts[GT_RESULT_STATUS_COUNT]) {
    memset(counts, 0, GT_RESULT_STATUS_COUNT * sizeof counts[0]);
    for (size_t i = 0; i < r->n_res; i++) counts[gt_result_get_status(r->res[i])]++;
}

void gt_report_set_incomplete(gt_report *r, const char *reason) {
    if (!r) return;
    char *copy = reason && reason[0] ? strdup(reason) : NULL;
    free(r->reason);
    r->reason = copy;
    r->complete = 0;
}

void gt_report_finish(gt_report *r) {
    if (r) r->complete = 1;
}

/* summary.complete, summary.incomplete and summary.ok of a document. */
static void set_completeness(json_t *summary, int complete, const char *reason, int ok) {
    json_object_set_new(summary, "ok", json_boolean(ok && complete));
    json_object_set_new(summary, "complete", json_boolean(complete));
    if (complete) {
        json_object_del(summary, "incomplete");
        return;
    }
    json_t *inc = json_object();
    json_t *why = json_string(reason ? reason : DEFAULT_REASON);
    if (!why) {
        /* a message with a path that is not UTF-8 must not cost the reason:
         * its bytes past ASCII become '?' */
        char buf[1200];
        snprintf(buf, sizeof buf, "%s", reason);
        for (char *c = buf; *c; c++)
            if ((unsigned char)*c >= 0x80) *c = '?';
        why = json_string(buf);
    }
    json_object_set_new(inc, "reason", why);
    json_object_set_new(summary, "incomplete", inc);
}

static void set_end(json_t *run) {
    double now = gt_wall_time();
    char ts[32];
    iso_time(now, ts, sizeof ts);
    json_object_set_new(run, "end", json_string(ts));
    json_object_set_new(run, "end_unix", json_real(now));
}

/* Writes text to the report's file (the caller holds mu); sync: fsync it. */
static gt_status put_file(const gt_report *r, const char *text, int sync) {
    gt_atomic_file af;
    gt_status s = gt_atomic_open(r->path, "report", "choose a writable --report path", &af);
    if (s == GT_OK) {
        fputs(text, af.f);
        s = sync ? gt_atomic_commit(&af) : gt_atomic_commit_unsynced(&af);
    }
    return s;
}

gt_status gt_report_write(gt_report *r) {
    int counts[GT_RESULT_STATUS_COUNT];
    gt_report_counts(r, counts);
    json_t *summary = json_object();
    json_object_set_new(summary, "total", json_integer((json_int_t)r->n_res));
    for (int i = 0; i < GT_RESULT_STATUS_COUNT; i++)
        json_object_set_new(summary, g_status_names[i], json_integer(counts[i]));
    set_completeness(summary, r->complete, r->reason,
                     counts[GT_RESULT_FAIL] == 0 && counts[GT_RESULT_ERROR] == 0);
    json_object_set_new(r->root, "summary", summary);
    set_end(json_object_get(r->root, "run"));
    if (!r->path) return GT_OK;
    char *text = json_dumps(r->root, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    if (!text) return GT_ERR(GT_ERR_OOM, "cannot serialise the report");
    pthread_mutex_lock(&r->mu);
    gt_status s = GT_OK;
    if (!r->sealed && (s = put_file(r, text, 1)) == GT_OK) {
        free(r->last_text);
        r->last_text = text;
        text = NULL;
        r->last_complete = r->complete;
        r->last_has_reason = !r->complete && r->reason != NULL;
    }
    pthread_mutex_unlock(&r->mu);
    free(text);
    return s;
}

gt_status gt_report_write_interrupted(gt_report *r, const char *reason, int *written) {
    if (written) *written = 0;
    if (!r) return GT_OK;
    pthread_mutex_lock(&r->mu);
    gt_status s = GT_OK;
    if (r->sealed || !r->path || !r->last_text || r->last_complete) goto out;
    json_error_t err;
    json_t *doc = json_loads(r->last_text, 0, &err);
    if (!doc) {
        s = GT_ERR(GT_ERR_OOM, "cannot re-read the report's last text: %s", err.text);
        goto out;
    }
    json_t *summary = json_object_get(doc, "summary");
    /* the first cause known wins (a watchdog's message over the signal that
     * ended the job after it) */
    if (json_is_object(summary) && !r->last_has_reason)
        set_completeness(summary, 0, reason, 0);
    set_end(json_object_get(doc, "run"));
    char *text = json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    json_decref(doc);
    if (!text) {
        s = GT_ERR(GT_ERR_OOM, "cannot serialise the report");
        goto out;
    }
    /* no fsync: the process is about to end, not the machine, and under
     * mpirun a SIGKILL follows the SIGTERM within milliseconds */
    s = put_file(r, text, 0);
    free(text);
    if (s == GT_OK && written) *written = 1;
out:
    if (r->path) r->sealed = 1;
    pthread_mutex_unlock(&r->mu);
    return s;
}

static const char *str_of(json_t *o, const char *k) {
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "?";
}

const char *gt_result_label(gt_result *res) {
    /* a collective's two placements share a case name */
    int ip = json_is_true(json_object_get(json_object_get(res->obj, "params"), "in_place")) ||
             json_integer_value(json_object_get(json_object_get(res->obj, "params"), "in_place"));
    /* the layout grid's results share one too */
    const char *lay =
        json_string_value(json_object_get(json_object_get(res->obj, "params"), "layout"));
    if (!lay) lay = "";
    snprintf(res->label, sizeof res->label, "%s/%s%s%s%s (topology %s, %s)",
             str_of(res->obj, "suite"), str_of(res->obj, "case"), ip ? " in-place" : "",
             *lay ? " " : "", lay, str_of(res->obj, "topology"), str_of(res->obj, "backend"));
    return res->label;
}

void gt_report_print_summary(gt_report *r, FILE *f) {
    /* suites in order of first appearance */
    const char *names[64];
    int cnt[64][GT_RESULT_STATUS_COUNT];
    int ns = 0;
    memset(cnt, 0, sizeof cnt);
    for (size_t i = 0; i < r->n_res; i++) {
        const char *su = str_of(r->res[i]->obj, "suite");
        int k = 0;
        while (k < ns && strcmp(names[k], su) != 0) k++;
        if (k == ns) {
            if (ns == 64) continue;
            names[ns++] = su;
        }
        cnt[k][gt_result_get_status(r->res[i])]++;
    }
    fprintf(f, "  %-14s %6s %6s %6s %6s\n", "suite", "pass", "fail", "skip", "error");
    for (int k = 0; k < ns; k++)
        fprintf(f, "  %-14s %6d %6d %6d %6d\n", names[k], cnt[k][GT_RESULT_PASS],
                cnt[k][GT_RESULT_FAIL], cnt[k][GT_RESULT_SKIP], cnt[k][GT_RESULT_ERROR]);
    for (size_t i = 0; i < r->n_res; i++) {
        gt_result *res = r->res[i];
        gt_result_status st = gt_result_get_status(res);
        if (st != GT_RESULT_FAIL && st != GT_RESULT_ERROR) continue;
        const char *why = json_string_value(json_object_get(res->obj, "message"));
        size_t j;
        json_t *c;
        if (st == GT_RESULT_FAIL) {
            json_array_foreach(json_object_get(res->obj, "checks"), j, c) {
                if (json_is_false(json_object_get(c, "passed"))) {
                    why = str_of(c, "name");
                    break;
                }
            }
        }
        fprintf(f, "  %s %s: %s\n", st == GT_RESULT_FAIL ? "FAIL " : "ERROR",
                gt_result_label(res), why ? why : "");
    }
}

/* ---- highlights ------------------------------------------------------------ */

static double metric_of(json_t *res, const char *name, int *have) {
    json_t *v = json_object_get(json_object_get(json_object_get(res, "metrics"), name), "value");
    *have = json_is_number(v);
    return *have ? json_number_value(v) : 0;
}

/* The out-of-place result of collectives case `name` on o's topology and
 * backend, or NULL. */
static json_t *coll_peer(gt_report *r, json_t *o, const char *name) {
    for (size_t j = 0; j < r->n_res; j++) {
        json_t *q = r->res[j]->obj;
        if (strcmp(str_of(q, "suite"), "collectives") == 0 && strcmp(str_of(q, "case"), name) == 0 &&
            strcmp(str_of(q, "topology"), str_of(o, "topology")) == 0 &&
            strcmp(str_of(q, "backend"), str_of(o, "backend")) == 0 &&
            json_integer_value(json_object_get(json_object_get(q, "params"), "in_place")) == 0)
            return q;
    }
    return NULL;
}

/* A library tuning problem: an all-reduce is a reduce-scatter and an
 * all-gather, so neither half should move data more slowly than the same
 * library's all-reduce at the same size (busbw counts each collective's own
 * traffic). Named where the raw library call of a half is over
 * GT_TUNING_FACTOR times slower than raw allreduce, at 64 KiB and above
 * (docs/distributed.md, "Reduce-scatter"): a note, not a failed check. */
#define GT_TUNING_FACTOR 4.0

/* The length of case c's scope prefix ("", "intra_node/") when c is one of
 * an all-reduce's halves in fp32 (reduce_scatter/fp32/sum, allgather/fp32);
 * -1 otherwise. */
static int half_scope(const char *c) {
    static const char *halves[] = {"reduce_scatter/fp32/sum", "allgather/fp32"};
    size_t cl = strlen(c);
    for (size_t h = 0; h < sizeof halves / sizeof halves[0]; h++) {
        size_t hl = strlen(halves[h]);
        if (cl >= hl && strcmp(c + cl - hl, halves[h]) == 0) return (int)(cl - hl);
    }
    return -1;
}

static void print_library_tuning(gt_report *r, FILE *f) {
    for (size_t i = 0; i < r->n_res; i++) {
        json_t *o = r->res[i]->obj;
        const char *c = str_of(o, "case");
        int scope = half_scope(c);
        if (scope < 0 || strcmp(str_of(o, "suite"), "collectives") != 0 ||
            json_integer_value(json_object_get(json_object_get(o, "params"), "in_place")) != 0)
            continue;
        char ar_name[160]; /* the all-reduce of the same scope (intra_node/ ...) */
        snprintf(ar_name, sizeof ar_name, "%.*sallreduce/fp32/sum", scope, c);
        json_t *ar = coll_peer(r, o, ar_name);
        double worst = 0, hb = 0, ab = 0;
        unsigned long long at = 0;
        const char *k;
        json_t *m;
        json_object_foreach(json_object_get(o, "metrics"), k, m) {
            unsigned long long sz;
            int have_h = 0, have_a = 0;
            if (!ar || sscanf(k, "raw_busbw_%llu", &sz) != 1 || sz < (64ull << 10)) continue;
            double x = metric_of(o, k, &have_h), y = metric_of(ar, k, &have_a);
            if (have_h && have_a && x > 0 && y / x > worst) worst = y / x, hb = x, ab = y, at = sz;
        }
        if (worst <= GT_TUNING_FACTOR) continue;
        fprintf(f, "  note: the library's %s on %s rank(s) at %llu KiB: %.2f GB/s busbw, %.0fx below "
                   "its own allreduce (%.2f GB/s), which does a reduce-scatter and an all-gather: "
                   "a tuning problem of the library (docs/distributed.md, \"Reduce-scatter\")\n",
                c, str_of(o, "topology"), at >> 10, hb, worst, ab);
    }
}

/* The rest of a scaling line: memory per rank (the buffers by kind) beside
 * its mode's formula, and the communication the step did not hide. */
static void print_rank_costs(FILE *f, json_t *o) {
    json_t *k = json_object_get(json_object_get(o, "memory"), "by_kind");
    static const char *const held[] = {"parameters_bytes", "gradients_bytes", "optimizer_bytes",
                                       "activations_bytes", "communication_bytes"};
    double sum = 0;
    for (size_t j = 0; k && j < sizeof held / sizeof *held; j++)
        sum += (double)json_integer_value(json_object_get(k, held[j]));
    double formula = (double)json_integer_value(json_object_get(k, "formula_bytes"));
    if (sum > 0) fprintf(f, "  memory/rank %.1f MiB (formula %.1f)", sum / 1048576.0,
                         formula / 1048576.0);
    int have = 0;
    double ex = metric_of(o, "exposed_comm_ms", &have);
    if (have) fprintf(f, "  exposed comm %.1f ms", ex);
    fputc('\n', f);
}

/* A result's layout (the layout grid's param), or NULL. */
static const char *layout_of(json_t *o) {
    return json_string_value(json_object_get(json_object_get(o, "params"), "layout"));
}

/* Whether a and b are layouts of one grid: the same case, topology and backend. */
static int same_grid(json_t *a, json_t *b) {
    return layout_of(a) && layout_of(b) && strcmp(str_of(a, "suite"), str_of(b, "suite")) == 0 &&
           strcmp(str_of(a, "case"), str_of(b, "case")) == 0 &&
           strcmp(str_of(a, "topology"), str_of(b, "topology")) == 0 &&
           strcmp(str_of(a, "backend"), str_of(b, "backend")) == 0;
}

/* Bytes per step a layout sent (the data-parallel group's kinds, the
 * tensor group's all-reduces, the pipeline's sends) and the same by their
 * formulas (< 0: a part without one, the data-parallel group of a
 * pipeline). */
static void layout_traffic(json_t *o, double *sent, double *formula) {
    json_t *tr = json_object_get(o, "traffic");
    json_t *f = json_object_get(tr, "formula_bytes_per_step");
    const char *k;
    json_t *v;
    double dp = 0, dpf = 0;
    json_object_foreach(json_object_get(tr, "bytes_per_step"), k, v) dp += json_number_value(v);
    json_object_foreach(f, k, v) dpf += json_number_value(v);
    *sent = dp;
    *formula = dp > 0 && !f ? -1 : dpf;
    static const char *const groups[][2] = {{"tp_allreduce_bytes", "tp_allreduce_bytes_formula"},
                                            {"pp_send_bytes", "pp_send_bytes_formula"}};
    for (int g = 0; g < 2; g++) {
        int have = 0, have_f = 0;
        double b = metric_of(o, groups[g][0], &have), bf = metric_of(o, groups[g][1], &have_f);
        if (have) *sent += b;
        if (have && !have_f) *formula = -1;
        if (have_f && *formula >= 0) *formula += bf;
    }
}

/* One line of the layout table; `best`: the fastest of its grid. */
static void print_layout_line(FILE *f, json_t *o, int best) {
    int h1 = 0, h2 = 0, h3 = 0, h4 = 0, h5 = 0, h6 = 0;
    double ms = metric_of(o, "ms_per_step", &h1), tps = metric_of(o, "tokens_per_s", &h2);
    double eff = metric_of(o, "strong_scaling_efficiency", &h3);
    double ex = metric_of(o, "exposed_comm_ms", &h4);
    double bub = metric_of(o, "pipeline_bubble", &h5);
    double bth = metric_of(o, "pipeline_bubble_theory", &h6);
    json_t *k = json_object_get(json_object_get(o, "memory"), "by_kind");
    static const char *const held[] = {"parameters_bytes", "gradients_bytes", "optimizer_bytes",
                                       "activations_bytes", "communication_bytes"};
    double mem = 0, sent, form;
    for (size_t j = 0; j < sizeof held / sizeof *held; j++)
        mem += (double)json_integer_value(json_object_get(k, held[j]));
    double mf = (double)json_integer_value(json_object_get(k, "formula_bytes"));
    layout_traffic(o, &sent, &form);
    char effs[16] = "-", forms[24] = "n/a", bubs[24] = "-";
    if (h3) snprintf(effs, sizeof effs, "%.1f%%", 100 * eff);
    if (form >= 0) snprintf(forms, sizeof forms, "%.2f", form / 1048576.0);
    if (h5 || h6) snprintf(bubs, sizeof bubs, "%.2f (%.2f)", bub, bth);
    fprintf(f, "  %c %-15s %9.1f %9.0f %6s %9.1f (%6.1f) %9.2f (%6s) %8.1f  %s\n", best ? '*' : ' ',
            layout_of(o), h1 ? ms : 0.0, h2 ? tps : 0.0, effs, mem / 1048576.0, mf / 1048576.0,
            sent / 1048576.0, forms, h4 ? ex : 0.0, bubs);
}

/* The layout grids side by side: one table per case, topology and backend,
 * the fastest marked with '*'. */
static void print_layouts(gt_report *r, FILE *f) {
    for (size_t i = 0; i < r->n_res; i++) {
        json_t *o = r->res[i]->obj;
        if (!layout_of(o)) continue;
        size_t j = 0;
        while (j < i && !same_grid(r->res[j]->obj, o))
            j++;
        if (j < i) continue; /* printed with its grid's first */
        double best = 0;
        for (j = i; j < r->n_res; j++) {
            int have = 0;
            double ms = metric_of(r->res[j]->obj, "ms_per_step", &have);
            if (same_grid(r->res[j]->obj, o) && have && ms > 0 && (best == 0 || ms < best))
                best = ms;
        }
        fprintf(f, "layouts: %s/%s on %s rank(s), %s (* fastest):\n", str_of(o, "suite"),
                str_of(o, "case"), str_of(o, "topology"), str_of(o, "backend"));
        fprintf(f, "    %-15s %9s %9s %6s %18s %18s %8s  %s\n", "layout", "ms/step", "tokens/s",
                "eff.", "MiB/rank (formula)", "MiB sent (formula)", "exposed", "bubble (formula)");
        for (j = i; j < r->n_res; j++) {
            json_t *q = r->res[j]->obj;
            if (!same_grid(q, o)) continue;
            int have = 0;
            double ms = metric_of(q, "ms_per_step", &have);
            print_layout_line(f, q, have && ms == best);
        }
    }
}

void gt_report_print_highlights(gt_report *r, FILE *f) {
    /* the machine: health's peaks on each topology it ran on */
    int said = 0;
    for (size_t i = 0; i < r->n_res; i++) {
        json_t *o = r->res[i]->obj;
        if (strcmp(str_of(o, "suite"), "health") != 0) continue;
        const char *c = str_of(o, "case");
        static const struct {
            const char *name, *metric, *what, *unit;
        } peaks[] = {
            {"fma_peak", "gflops", "FMA", "GFLOP/s"},
            {"sgemm_peak", "gflops", "SGEMM", "GFLOP/s"},
            {"memory_bandwidth", "gbps", "memory", "GB/s"},
            {"mpi_latency", "latency_us", "MPI latency", "us"},
            {"mpi_bandwidth", "gbps", "MPI bandwidth", "GB/s"},
        };
        for (size_t k = 0; k < sizeof peaks / sizeof *peaks; k++) {
            int have = 0;
            if (strcmp(c, peaks[k].name) != 0) continue;
            double v = metric_of(o, peaks[k].metric, &have);
            if (!have) continue;
            if (!said++) fprintf(f, "machine (health):\n");
            fprintf(f, "  %-14s %10.2f %-8s (topology %s, %s)\n", peaks[k].what, v, peaks[k].unit,
                    str_of(o, "topology"), str_of(o, "backend"));
        }
    }
    /* scaling efficiencies: the train and scaling suites, gauntlet train --topologies */
    said = 0;
    for (size_t i = 0; i < r->n_res; i++) {
        json_t *o = r->res[i]->obj;
        for (int w = 0; w < 2; w++) {
            int have = 0;
            double v = metric_of(o, w ? "weak_scaling_efficiency" : "strong_scaling_efficiency",
                                 &have);
            if (!have || layout_of(o)) continue; /* the layout tables show those */
            if (!said++) fprintf(f, "scaling efficiency (against the first topology):\n");
            fprintf(f, "  %-30s %3s rank(s)  %s %5.1f%%  (%s)", str_of(o, "case"),
                    str_of(o, "topology"), w ? "weak  " : "strong", 100.0 * v, str_of(o, "suite"));
            print_rank_costs(f, o);
        }
    }
    print_layouts(r, f);
    /* collectives: busbw at the largest size against the raw library's */
    said = 0;
    for (size_t i = 0; i < r->n_res; i++) {
        json_t *o = r->res[i]->obj;
        if (strcmp(str_of(o, "suite"), "collectives") != 0) continue;
        json_t *params = json_object_get(o, "params");
        const char *dt = str_of(params, "dtype"), *op = str_of(params, "op");
        if (strcmp(dt, "fp32") != 0 || (strcmp(op, "sum") != 0 && strcmp(op, "none") != 0))
            continue;
        /* out of place, or in place where that is all a collective has */
        if (json_integer_value(json_object_get(params, "in_place")) != 0) {
            int oop = 0;
            for (size_t j = 0; j < r->n_res && !oop; j++) {
                json_t *q = r->res[j]->obj;
                oop = j != i && strcmp(str_of(q, "suite"), "collectives") == 0 &&
                      strcmp(str_of(q, "case"), str_of(o, "case")) == 0 &&
                      strcmp(str_of(q, "topology"), str_of(o, "topology")) == 0 &&
                      strcmp(str_of(q, "backend"), str_of(o, "backend")) == 0 &&
                      json_integer_value(json_object_get(json_object_get(q, "params"),
                                                         "in_place")) == 0;
            }
            if (oop) continue;
        }
        /* the largest size with a busbw (none on one rank: n/a) */
        unsigned long long big = 0;
        const char *k;
        json_t *m;
        json_object_foreach(json_object_get(o, "metrics"), k, m) {
            unsigned long long sz;
            if (sscanf(k, "busbw_%llu", &sz) == 1 && sz > big) big = sz;
        }
        if (!big) continue;
        char name[64];
        int have = 0, have_raw = 0;
        snprintf(name, sizeof name, "busbw_%llu", big);
        double bw = metric_of(o, name, &have);
        snprintf(name, sizeof name, "raw_busbw_%llu", big);
        double raw = metric_of(o, name, &have_raw);
        if (!said++) fprintf(f, "collectives (busbw at the largest size, median; raw = the library "
                                "called directly):\n");
        char sz[32];
        if (big >= (1ull << 20)) snprintf(sz, sizeof sz, "%llu MiB", big >> 20);
        else if (big >= (1ull << 10)) snprintf(sz, sizeof sz, "%llu KiB", big >> 10);
        else snprintf(sz, sizeof sz, "%llu B", big);
        if (have_raw && raw > 0)
            fprintf(f, "  %-24s %3s rank(s) %8s  busbw %8.2f GB/s  raw %8.2f GB/s  (%.2fx)\n",
                    str_of(o, "case"), str_of(o, "topology"), sz, bw, raw, bw / raw);
        else
            fprintf(f, "  %-24s %3s rank(s) %8s  busbw %8.2f GB/s  raw n/a\n", str_of(o, "case"),
                    str_of(o, "topology"), sz, bw);
    }
    if (said) print_library_tuning(r, f);
}
