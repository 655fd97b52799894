/* The suites `gauntlet run` knows, in the order it runs them. */
#include <string.h>

#include "suites/suite.h"

/* TEMPORARY while the kernels/memory/health suites are being written */
extern const gt_suite gt_suite_health __attribute__((weak));
extern const gt_suite gt_suite_kernels __attribute__((weak));
extern const gt_suite gt_suite_memory __attribute__((weak));

static const gt_suite *g_suites[8];

const gt_suite *const *gt_suites(void) {
    const gt_suite *all[] = {&gt_suite_health, &gt_suite_kernels, &gt_suite_memory,
                             &gt_suite_collectives, &gt_suite_train, &gt_suite_scaling};
    int k = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) g_suites[k++] = all[i];
    g_suites[k] = NULL;
    return (const gt_suite *const *)g_suites;
}

const gt_suite *gt_suite_find(const char *name) {
    for (const gt_suite *const *s = gt_suites(); *s; s++)
        if (strcmp((*s)->name, name) == 0) return *s;
    return NULL;
}
