/* The suites `gauntlet run` knows, in the order it runs them. */
#include <string.h>

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
