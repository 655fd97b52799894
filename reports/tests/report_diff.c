/* Compares a series (default "loss") of the first result of two reports.
 * usage: report_diff A.json B.json [--series NAME] [--rtol X]
 * Prints the largest relative difference; exit 0 when it is <= rtol (default
 * 0: bitwise equal values), 1 otherwise or when the series differ in length,
 * 2 on unreadable input. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *series(json_t *root, const char *name) {
    json_t *res = json_array_get(json_object_get(root, "results"), 0);
    return json_object_get(json_object_get(res, "series"), name);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: report_diff A.json B.json [--series NAME] [--rtol X]\n");
        return 2;
    }
    const char *name = "loss";
    double rtol = 0.0;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--series") == 0) name = argv[i + 1];
        else if (strcmp(argv[i], "--rtol") == 0) rtol = atof(argv[i + 1]);
    }
    json_error_t err;
    json_t *a = json_load_file(argv[1], 0, &err), *b = json_load_file(argv[2], 0, &err);
    if (!a || !b) {
        fprintf(stderr, "report_diff: cannot read %s: %s\n", a ? argv[2] : argv[1], err.text);
        return 2;
    }
    json_t *sa = series(a, name), *sb = series(b, name);
    size_t n = json_array_size(sa);
    if (!json_is_array(sa) || !json_is_array(sb) || n == 0 || n != json_array_size(sb)) {
        fprintf(stderr, "report_diff: series '%s' missing or of different lengths (%zu, %zu)\n",
                name, n, json_array_size(sb));
        return 1;
    }
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        double x = json_number_value(json_array_get(sa, i));
        double y = json_number_value(json_array_get(sb, i));
        double d = x == y ? 0.0 : fabs(x - y) / fmax(fabs(x), fabs(y));
        if (d > worst || isnan(d)) {
            worst = d;
            at = i;
        }
    }
    printf("report_diff: %s: %zu values, largest relative difference %.3g at index %zu%s\n",
           name, n, worst, at, worst == 0 ? " (bitwise equal)" : "");
    json_decref(a);
    json_decref(b);
    return worst <= rtol ? 0 : 1;
}
