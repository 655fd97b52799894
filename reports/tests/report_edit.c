/* Makes a NEW report from a real one for the compare tests, so that the
 * verdicts they expect do not depend on timing noise.
 * usage: report_edit IN.json OUT.json [--scale-metric NAME FACTOR]...
 *            [--scale-case PREFIX METRIC FACTOR]... [--scale-group GROUP METRIC FACTOR]...
 *            [--scale-series NAME FACTOR]... [--fail-check NAME]... [--drop-case CASE]...
 *            [--schema-version N]
 * --scale-metric multiplies value, samples, min, median and max of metric NAME
 * in every result; --scale-case does the same to METRIC in the results whose
 * case starts with PREFIX, --scale-group in those whose "groups" array holds
 * GROUP (gemm, memory, collective); METRIC "*" there is every metric whose
 * unit is a time (ns, us, ms, s), the synthetic slowdown of ci/bench_gate.sh
 * (a derived metric such as GFLOP/s is judged through its time, so it is left
 * alone). --fail-check sets passed=false on check NAME and the result's status
 * to fail; --drop-case removes the results of case CASE.
 * Exit 0 on success, 2 on bad input. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void scale(json_t *m, const char *key, double f) {
    json_t *v = json_object_get(m, key);
    if (json_is_number(v)) json_object_set_new(m, key, json_real(json_number_value(v) * f));
}

/* value, min, median, max and every sample of metric object m times f */
static void scale_metric(json_t *m, double f) {
    scale(m, "value", f);
    scale(m, "min", f);
    scale(m, "median", f);
    scale(m, "max", f);
    json_t *s = json_object_get(m, "samples");
    for (size_t j = 0; j < json_array_size(s); j++)
        json_array_set_new(s, j, json_real(json_number_value(json_array_get(s, j)) * f));
    if (f < 0) { /* keep min <= max */
        json_t *lo = json_object_get(m, "min"), *hi = json_object_get(m, "max");
        json_incref(lo);
        json_object_set(m, "min", hi);
        json_object_set_new(m, "max", lo);
    }
}

static int is_time_unit(const char *unit) {
    static const char *const units[] = {"ns", "us", "ms", "s"};
    for (size_t i = 0; unit && i < sizeof units / sizeof units[0]; i++)
        if (strcmp(unit, units[i]) == 0) return 1;
    return 0;
}

/* metric `name` of result r times f; name "*": each metric with a time unit */
static void scale_result(json_t *r, const char *name, double f) {
    json_t *metrics = json_object_get(r, "metrics");
    if (strcmp(name, "*") != 0) {
        json_t *m = json_object_get(metrics, name);
        if (m) scale_metric(m, f);
        return;
    }
    const char *key;
    json_t *m;
    json_object_foreach(metrics, key, m) {
        if (is_time_unit(json_string_value(json_object_get(m, "unit")))) scale_metric(m, f);
    }
}

static int has_group(json_t *r, const char *group) {
    size_t k;
    json_t *g;
    json_array_foreach(json_object_get(r, "groups"), k, g) {
        if (json_is_string(g) && strcmp(json_string_value(g), group) == 0) return 1;
    }
    return 0;
}

/* FACTOR as a finite number, or exit 2 with a message */
static double factor_arg(const char *opt, const char *s) {
    char *end;
    double f = strtod(s, &end);
    if (end == s || *end != '\0' || !isfinite(f)) {
        fprintf(stderr, "report_edit: %s: FACTOR '%s' is not a number\n", opt, s);
        exit(2);
    }
    return f;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: report_edit IN.json OUT.json [--scale-metric NAME FACTOR] "
                        "[--scale-case PREFIX METRIC|* FACTOR] [--scale-group GROUP METRIC|* "
                        "FACTOR] [--scale-series NAME FACTOR] [--fail-check NAME] "
                        "[--drop-case CASE] [--schema-version N]\n");
        return 2;
    }
    json_error_t e;
    json_t *root = json_load_file(argv[1], 0, &e);
    if (!root) {
        fprintf(stderr, "report_edit: %s: %s\n", argv[1], e.text);
        return 2;
    }
    json_t *results = json_object_get(root, "results");
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--scale-metric") == 0 && i + 2 < argc) {
            const char *name = argv[i + 1];
            double f = factor_arg(argv[i], argv[i + 2]);
            size_t k;
            json_t *r;
            json_array_foreach(results, k, r) {
                json_t *m = json_object_get(json_object_get(r, "metrics"), name);
                if (m) scale_metric(m, f);
            }
            i += 2;
        } else if ((strcmp(argv[i], "--scale-case") == 0 ||
                    strcmp(argv[i], "--scale-group") == 0) &&
                   i + 3 < argc) {
            int by_case = strcmp(argv[i], "--scale-case") == 0;
            const char *which = argv[i + 1], *name = argv[i + 2];
            double f = factor_arg(argv[i], argv[i + 3]);
            size_t k, len = strlen(which);
            json_t *r;
            json_array_foreach(results, k, r) {
                const char *cs = json_string_value(json_object_get(r, "case"));
                if (by_case ? (cs && strncmp(cs, which, len) == 0) : has_group(r, which))
                    scale_result(r, name, f);
            }
            i += 3;
        } else if (strcmp(argv[i], "--scale-series") == 0 && i + 2 < argc) {
            /* every value of series NAME after the first times FACTOR */
            const char *name = argv[i + 1];
            double f = factor_arg(argv[i], argv[i + 2]);
            size_t k;
            json_t *r;
            json_array_foreach(results, k, r) {
                json_t *s = json_object_get(json_object_get(r, "series"), name);
                for (size_t j = 1; j < json_array_size(s); j++)
                    json_array_set_new(s, j,
                                       json_real(json_number_value(json_array_get(s, j)) * f));
            }
            i += 2;
        } else if (strcmp(argv[i], "--fail-check") == 0 && i + 1 < argc) {
            size_t k;
            json_t *r;
            json_array_foreach(results, k, r) {
                size_t j;
                json_t *c;
                json_array_foreach(json_object_get(r, "checks"), j, c) {
                    if (strcmp(json_string_value(json_object_get(c, "name")), argv[i + 1]) != 0)
                        continue;
                    json_object_set_new(c, "passed", json_false());
                    json_object_set_new(r, "status", json_string("fail"));
                }
            }
            i += 1;
        } else if (strcmp(argv[i], "--drop-case") == 0 && i + 1 < argc) {
            for (size_t k = json_array_size(results); k-- > 0;)
                if (strcmp(json_string_value(json_object_get(json_array_get(results, k), "case")),
                           argv[i + 1]) == 0)
                    json_array_remove(results, k);
            i += 1;
        } else if (strcmp(argv[i], "--schema-version") == 0 && i + 1 < argc) {
            json_object_set_new(root, "schema_version", json_integer(atoi(argv[i + 1])));
            i += 1;
        } else {
            fprintf(stderr, "report_edit: unknown or incomplete option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (json_dump_file(root, argv[2], JSON_INDENT(1) | JSON_REAL_PRECISION(17)) != 0) {
        fprintf(stderr, "report_edit: cannot write %s\n", argv[2]);
        return 2;
    }
    json_decref(root);
    return 0;
}
