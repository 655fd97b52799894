/* Validates a gauntlet report against the schema of docs/report-schema.md.
 * usage: report_check FILE [--steps N] [--status pass|fail|error]
 *                          [--zero-check NAME] [--no-failed-checks] [--except NAME]
 *                          [--no-errors] [--telemetry] [--complete] [--incomplete]
 *                          [--reason TEXT] [--min-steps N]
 * --zero-check NAME: at least one check NAME exists and every one has value 0
 * (e.g. wrong_elements); --no-failed-checks: no check failed, except those
 * named by --except (repeatable); --no-errors: no result has status error;
 * --telemetry: every result run on a GPU (backend cuda or nccl) carries a
 * telemetry object (an optional one is always validated when present).
 * --complete / --incomplete: summary.complete is true / false (an
 * incomplete report must also have summary.ok false and a reason string in
 * summary.incomplete, whatever the options); --reason TEXT: the reason
 * contains TEXT; --min-steps N: every result's series.loss has at least N
 * entries (a report rewritten during training, killed later).
 * Exit 0 when valid and as expected, 1 otherwise (each problem printed). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

static int problems;

#define NEED(cond, ...)                                                                \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            problems++;                                                                \
            fprintf(stderr, "report_check: ");                                         \
            fprintf(stderr, __VA_ARGS__);                                              \
            fputc('\n', stderr);                                                       \
        }                                                                              \
    } while (0)

static json_t *get(json_t *o, const char *path) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *tok = strtok(buf, "."); tok && o; tok = strtok(NULL, "."))
        o = json_object_get(o, tok);
    return o;
}

static int int_or_null(json_t *v) { return !v || json_is_null(v) || json_is_integer(v); }
static int num_or_null(json_t *v) { return !v || json_is_null(v) || json_is_number(v); }
static int str_or_null(json_t *v) { return !v || json_is_null(v) || json_is_string(v); }

/* The optional per-result GPU telemetry: gpu_index, uuid, and start / end
 * readings (object or null) whose every field is of its type or null. */
static void check_telemetry(json_t *t, size_t i) {
    NEED(json_is_object(t), "result %zu: telemetry is not an object", i);
    if (!json_is_object(t)) return;
    NEED(json_is_integer(get(t, "gpu_index")) && json_integer_value(get(t, "gpu_index")) >= 0,
         "result %zu: telemetry.gpu_index missing or negative", i);
    NEED(str_or_null(get(t, "uuid")), "result %zu: telemetry.uuid is not a string", i);
    static const char *const ends[] = {"start", "end"};
    int readings = 0;
    for (int k = 0; k < 2; k++) {
        json_t *g = get(t, ends[k]);
        if (!g || json_is_null(g)) continue;
        readings++;
        NEED(json_is_object(g), "result %zu: telemetry.%s is not an object", i, ends[k]);
        if (!json_is_object(g)) continue;
        static const char *const ints[] = {"sm_clock_mhz", "mem_clock_mhz", "temperature_c"};
        for (size_t j = 0; j < sizeof ints / sizeof ints[0]; j++)
            NEED(int_or_null(get(g, ints[j])), "result %zu: telemetry.%s.%s is not an integer",
                 i, ends[k], ints[j]);
        NEED(num_or_null(get(g, "power_w")) && num_or_null(get(g, "t_unix")),
             "result %zu: telemetry.%s power_w/t_unix not numbers", i, ends[k]);
        const char *hex = json_string_value(get(g, "throttle_reasons"));
        NEED(str_or_null(get(g, "throttle_reasons")) && (!hex || !strncmp(hex, "0x", 2)),
             "result %zu: telemetry.%s.throttle_reasons is not a 0x... string", i, ends[k]);
        NEED(str_or_null(get(g, "throttle_reason_names")),
             "result %zu: telemetry.%s.throttle_reason_names is not a string", i, ends[k]);
    }
    NEED(readings > 0, "result %zu: telemetry has neither a start nor an end reading", i);
}

/* memory.by_kind (train results): non-negative integers; the buffers held
 * are within the allocator's peak, and the mode's formula within 10% of
 * them (docs/distributed.md, "Memory per rank"). */
static void check_memory_kinds(json_t *r, size_t i) {
    json_t *k = get(r, "memory.by_kind");
    if (!k) return;
    static const char *const held[] = {"parameters_bytes", "gradients_bytes", "optimizer_bytes",
                                       "activations_bytes", "communication_bytes"};
    double sum = 0;
    for (size_t j = 0; j < sizeof held / sizeof held[0]; j++) {
        json_t *v = get(k, held[j]);
        NEED(json_is_integer(v) && json_integer_value(v) >= 0,
             "result %zu: memory.by_kind.%s is not a non-negative integer", i, held[j]);
        sum += json_is_integer(v) ? (double)json_integer_value(v) : 0;
    }
    json_t *f = get(k, "formula_bytes"), *peak = get(r, "memory.backend.peak_in_use_bytes");
    NEED(json_is_integer(f), "result %zu: memory.by_kind.formula_bytes missing", i);
    if (json_is_integer(peak))
        NEED(sum <= (double)json_integer_value(peak),
             "result %zu: memory by kind %.0f bytes, above the peak in use %lld", i, sum,
             (long long)json_integer_value(peak));
    if (json_is_integer(f) && sum > 0)
        NEED(fabs((double)json_integer_value(f) - sum) <= 0.1 * sum,
             "result %zu: the memory formula says %lld bytes, the buffers held %.0f (off by "
             "more than 10%%)", i, (long long)json_integer_value(f), sum);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: report_check FILE [--steps N] [--status S] [--zero-check NAME] "
                        "[--no-failed-checks] [--except NAME] [--no-errors] [--telemetry] "
                        "[--node-load]\n");
        return 2;
    }
    long steps = -1;
    const char *want_status = NULL, *zero_check = NULL;
    const char *except[16];
    int n_except = 0, no_failed = 0, no_errors = 0, want_telemetry = 0, want_complete = -1,
        want_node = 0;
    const char *want_reason = NULL;
    long min_steps = -1;
    for (int i = 2; i < argc; i++) {
        int has_value = i + 1 < argc;
        if (strcmp(argv[i], "--steps") == 0 && has_value) steps = atol(argv[++i]);
        else if (strcmp(argv[i], "--status") == 0 && has_value) want_status = argv[++i];
        else if (strcmp(argv[i], "--zero-check") == 0 && has_value) zero_check = argv[++i];
        else if (strcmp(argv[i], "--except") == 0 && has_value && n_except < 16)
            except[n_except++] = argv[++i];
        else if (strcmp(argv[i], "--no-failed-checks") == 0) no_failed = 1;
        else if (strcmp(argv[i], "--no-errors") == 0) no_errors = 1;
        else if (strcmp(argv[i], "--telemetry") == 0) want_telemetry = 1;
        else if (strcmp(argv[i], "--node-load") == 0)
            want_node = 1;
        else if (strcmp(argv[i], "--complete") == 0) want_complete = 1;
        else if (strcmp(argv[i], "--incomplete") == 0) want_complete = 0;
        else if (strcmp(argv[i], "--reason") == 0 && has_value) want_reason = argv[++i];
        else if (strcmp(argv[i], "--min-steps") == 0 && has_value) min_steps = atol(argv[++i]);
        else {
            fprintf(stderr, "report_check: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    long zero_seen = 0;
    json_error_t err;
    json_t *root = json_load_file(argv[1], 0, &err);
    if (!root) {
        fprintf(stderr, "report_check: %s: not valid JSON: %s (line %d)\n", argv[1], err.text,
                err.line);
        return 1;
    }
    NEED(json_integer_value(get(root, "schema_version")) == 1, "schema_version is not 1");
    static const char *const strings[] = {"run.id", "run.start", "run.end", "run.git_revision",
                                          "env.host", "env.os", "env.cpu.model",
                                          "env.software.compiler", "env.software.blas",
                                          "env.software.jansson", "env.blas.parallel",
                                          "env.blas.steering"};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        NEED(json_is_string(get(root, strings[i])), "%s missing or not a string", strings[i]);
    NEED(json_is_array(get(root, "run.command_line")), "run.command_line is not an array");
    /* the node's CPU over the run (gauntlet run): three numbers, none negative */
    json_t *node = get(root, "run.node_load");
    NEED(!want_node || json_is_object(node), "run.node_load missing");
    static const char *const node_keys[] = {"cpu_others_cores", "cpu_idle_cores", "seconds"};
    for (size_t k = 0; node && k < 3; k++)
        NEED(json_is_number(get(node, node_keys[k])) &&
                 json_number_value(get(node, node_keys[k])) >= 0,
             "run.node_load.%s missing or negative", node_keys[k]);
    NEED(json_is_integer(get(root, "env.cpu.logical")), "env.cpu.logical missing");
    /* the BLAS kernel: a string with BLAS, null without; its threads per call */
    NEED(json_is_string(get(root, "env.blas.core")) || json_is_null(get(root, "env.blas.core")),
         "env.blas.core missing (a string, or null without BLAS)");
    NEED(json_is_integer(get(root, "env.blas.threads_per_call")),
         "env.blas.threads_per_call missing");
    json_t *results = get(root, "results");
    NEED(json_is_array(results) && json_array_size(results) >= 1, "no results");
    size_t i;
    json_t *r;
    json_array_foreach(results, i, r) {
        NEED(json_is_string(get(r, "suite")) && json_is_string(get(r, "case")) &&
                 json_is_string(get(r, "topology")) && json_is_string(get(r, "backend")),
             "result %zu lacks suite/case/topology/backend", i);
        const char *st = json_string_value(get(r, "status"));
        NEED(st && (!strcmp(st, "pass") || !strcmp(st, "fail") || !strcmp(st, "skip") ||
                    !strcmp(st, "error")),
             "result %zu status '%s' is not pass|fail|skip|error", i, st ? st : "(none)");
        if (want_status)
            NEED(st && !strcmp(st, want_status), "result %zu status '%s', expected '%s'", i,
                 st ? st : "(none)", want_status);
        if (no_errors)
            NEED(st && strcmp(st, "error") != 0, "result %zu (%s): status error: %s", i,
                 json_string_value(get(r, "case")), json_string_value(get(r, "message")));
        json_t *checks = get(r, "checks");
        NEED(json_is_array(checks), "result %zu: checks is not an array", i);
        size_t j;
        json_t *c;
        json_array_foreach(checks, j, c) {
            /* passed: a boolean, or null with "evaluated": false (a check
             * the run could not judge) */
            int unevaluated = json_is_null(get(c, "passed")) && json_is_false(get(c, "evaluated"));
            NEED(json_is_string(get(c, "name")) && (json_is_boolean(get(c, "passed")) || unevaluated),
                 "result %zu check %zu lacks name/passed", i, j);
            const char *cname = json_string_value(get(c, "name"));
            if (zero_check && cname && !strcmp(cname, zero_check)) {
                zero_seen++;
                NEED(json_is_number(get(c, "value")) && json_number_value(get(c, "value")) == 0,
                     "result %zu (%s): check %s has value %g, expected 0", i,
                     json_string_value(get(r, "case")), cname,
                     json_number_value(get(c, "value")));
            }
            if (no_failed && cname && json_is_false(get(c, "passed"))) {
                int exempt = 0;
                for (int k = 0; k < n_except; k++) exempt |= !strcmp(cname, except[k]);
                if (exempt)
                    fprintf(stderr, "report_check: note: result %zu (%s): check %s failed "
                                    "(value %g, limit %g), allowed by --except\n",
                            i, json_string_value(get(r, "case")), cname,
                            json_number_value(get(c, "value")),
                            json_number_value(get(c, "limit")));
                else
                    NEED(0, "result %zu (%s): check %s failed (value %g, limit %g)", i,
                         json_string_value(get(r, "case")), cname,
                         json_number_value(get(c, "value")), json_number_value(get(c, "limit")));
            }
        }
        const char *key;
        json_t *m;
        json_object_foreach(get(r, "metrics"), key, m) {
            const char *better = json_string_value(get(m, "better"));
            NEED(json_is_string(get(m, "unit")), "metric %s has no unit", key);
            NEED(better && (!strcmp(better, "higher") || !strcmp(better, "lower")),
                 "metric %s: better must be higher|lower", key);
            NEED(json_is_integer(get(m, "n")), "metric %s has no n", key);
        }
        check_memory_kinds(r, i);
        json_t *tel = get(r, "telemetry");
        if (tel) check_telemetry(tel, i);
        const char *be = json_string_value(get(r, "backend"));
        if (want_telemetry && be && (!strcmp(be, "cuda") || !strcmp(be, "nccl")))
            NEED(tel != NULL, "result %zu (%s, backend %s) has no telemetry", i,
                 json_string_value(get(r, "case")), be);
        if (min_steps >= 0) {
            json_t *loss = get(r, "series.loss");
            NEED(json_is_array(loss) && (long)json_array_size(loss) >= min_steps,
                 "result %zu: series.loss has %zu entries, expected at least %ld", i,
                 json_array_size(loss), min_steps);
        }
        if (json_is_true(get(r, "partial")))
            NEED(st && !strcmp(st, "error"), "result %zu is partial with status '%s' (not error)",
                 i, st ? st : "(none)");
        if (steps >= 0) {
            json_t *loss = get(r, "series.loss");
            NEED(json_is_array(loss) && (long)json_array_size(loss) == steps,
                 "series.loss has %zu entries, expected %ld", json_array_size(loss), steps);
        }
    }
    if (zero_check) NEED(zero_seen > 0, "no check named %s in any result", zero_check);
    json_t *sum = get(root, "summary");
    NEED(json_is_integer(get(sum, "total")) &&
             json_integer_value(get(sum, "total")) == (json_int_t)json_array_size(results),
         "summary.total does not count the results");
    /* complete: a boolean (absent in reports written before it existed);
     * false: never ok, and a reason */
    json_t *complete = get(sum, "complete");
    NEED(!complete || json_is_boolean(complete), "summary.complete is not true or false");
    if (json_is_false(complete)) {
        NEED(json_is_false(get(sum, "ok")), "an incomplete report has summary.ok not false");
        NEED(json_is_string(get(sum, "incomplete.reason")),
             "an incomplete report has no summary.incomplete.reason string");
    } else {
        NEED(!get(sum, "incomplete"), "a complete report has summary.incomplete");
    }
    if (want_complete == 1)
        NEED(json_is_true(complete), "summary.complete is not true (reason: %s)",
             json_string_value(get(sum, "incomplete.reason")));
    if (want_complete == 0) NEED(json_is_false(complete), "summary.complete is not false");
    if (want_reason) {
        const char *why = json_string_value(get(sum, "incomplete.reason"));
        NEED(why && strstr(why, want_reason), "summary.incomplete.reason '%s' lacks '%s'",
             why ? why : "(none)", want_reason);
    }
    if (!problems && json_is_false(complete))
        printf("report_check: %s is valid, incomplete: %s\n", argv[1],
               json_string_value(get(sum, "incomplete.reason")));
    else if (!problems)
        printf("report_check: %s is valid\n", argv[1]);
    json_decref(root);
    return problems ? 1 : 0;
}
