/* Shared by the model tests that take a backend name as argv[1]. */
#ifndef GT_MODELS_TESTS_BACKEND_OR_SKIP_H
#define GT_MODELS_TESTS_BACKEND_OR_SKIP_H

#include <stdio.h>
#include <stdlib.h>

#include "engine/backend.h"
#include "kernels/registry.h"

/* Creates backend `name` (threads: 0 = the default), or ends the test:
 * exit 77 (skipped) when the backend is not built in or has no device here,
 * exit 1 on any other error. */
static inline gt_backend *mt_backend_or_skip(const char *name, int threads) {
    gt_backend *be = NULL;
    gt_backend_config bc = {.threads = threads, .device = -1};
    gt_status s = gt_backend_new(name, &bc, &be);
    if (s == GT_ERR_UNSUPPORTED) {
        printf("skip: %s\n", gt_last_error());
        exit(77);
    }
    if (s != GT_OK) {
        fprintf(stderr, "backend %s: %s\n", name, gt_last_error());
        exit(1);
    }
    return be;
}

#endif
