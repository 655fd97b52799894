/* The suites `gauntlet run` knows, in the order it runs them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ops.h"
#include "suites/collectives.h"
#include "suites/suite.h"

static const gt_suite *const g_suites[] = {
    &gt_suite_health, &gt_suite_kernels, &gt_suite_memory, &gt_suite_collectives,
    &gt_suite_train,  &gt_suite_scaling, NULL,
};

const gt_suite *const *gt_suites(void) { return g_suites; }

const gt_suite *gt_suite_find(const char *name) {
    for (int i = 0; g_suites[i]; i++)
        if (strcmp(g_suites[i]->name, name) == 0) return g_suites[i];
    return NULL;
}

gt_status gt_parse_slowdown(const char *spec, char *name, size_t len, double *factor) {
    *factor = 0;
    const char *colon = spec ? strrchr(spec, ':') : NULL;
    char *end = NULL;
    if (colon) {
        errno = 0;
        *factor = strtod(colon + 1, &end);
    }
    if (!colon || colon == spec || !end || end == colon + 1 || *end || errno ||
        !(*factor > 1 && *factor <= 100) || (size_t)(colon - spec) >= len)
        return GT_ERR(GT_ERR_INVALID,
                      "inject_slowdown '%s': expected NAME:FACTOR, a kernel op or a collective "
                      "and a factor above 1 (e.g. matmul_fwd:1.2, allreduce:1.2)",
                      spec ? spec : "");
    memcpy(name, spec, (size_t)(colon - spec));
    name[colon - spec] = '\0';
    /* NAME: an op or collective, or one case of a kernel op (op/dtype/shape) */
    char first[64];
    size_t fl = strcspn(name, "/");
    snprintf(first, sizeof first, "%.*s", (int)(fl < sizeof first ? fl : sizeof first - 1), name);
    for (int o = 0; o < GT_OP_COUNT; o++)
        if (strcmp(gt_op_name((gt_op)o), first) == 0) return GT_OK;
    gt_coll_test t;
    if (!name[fl] && gt_coll_test_parse(name, &t) == GT_OK) return GT_OK;
    return GT_ERR(GT_ERR_INVALID,
                  "inject_slowdown '%s': '%s' is neither a kernel op (or op/dtype/shape case) "
                  "nor a collective (gauntlet list names them)",
                  spec, name);
}
