/* Which fingerprint fields say what a change point changed (reports/history.h,
 * gt_history_stack_field): the stack, not the launch. Needs no SQLite. */
#include <stdlib.h>
#include <string.h>

#include "reports/history.h"

static int starts(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* "env.gpus.<i>.<member>": every member but the device's uuid and index
 * (which physical GPU, not what kind) */
static int gpu_field(const char *key) {
    const char *dot = strchr(key + strlen("env.gpus."), '.');
    if (!dot) return 1; /* a GPU that appeared or went: the count changed */
    return strcmp(dot + 1, "uuid") != 0 && strcmp(dot + 1, "index") != 0;
}

int gt_history_stack_field(const char *key) {
    /* whole objects: versions, the BLAS, threads, transports, the job's shape */
    static const char *const objects[] = {"env.software.", "env.blas.", "env.threads.",
                                          "env.transport.", "env.job."};
    static const char *const exact[] = {"env.cpu.model",   "env.cpu.sockets", "env.cpu.physical",
                                        "env.cpu.logical", "env.os",          "env.topology_digest",
                                        "env.affinity",    "git_revision"};
    /* thread settings of reports written before env.threads */
    static const char *const thread_vars[] = {"OMP_",      "GOMP_", "KMP_",
                                              "OPENBLAS_", "MKL_",  "BLIS_"};
    for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++)
        if (starts(key, objects[i])) return 1;
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strcmp(key, exact[i]) == 0) return 1;
    if (starts(key, "env.gpus.")) return gpu_field(key);
    if (starts(key, "env.variables.")) {
        const char *v = key + strlen("env.variables.");
        for (size_t i = 0; i < sizeof thread_vars / sizeof thread_vars[0]; i++)
            if (starts(v, thread_vars[i])) return 1;
    }
    return 0;
}

/* Where the next field of a `changed` text starts: "; " followed by a key
 * (every key begins "env." or is "git_revision:"), so that a value holding
 * "; " stays whole. NULL at the end. */
static const char *next_field(const char *s) {
    for (const char *p = strstr(s, "; "); p; p = strstr(p + 2, "; "))
        if (starts(p + 2, "env.") || starts(p + 2, "git_revision:")) return p;
    return NULL;
}

char *gt_history_stack_changes(const char *changed, int *hidden) {
    if (hidden) *hidden = 0;
    if (!changed) changed = "";
    size_t len = strlen(changed), k = 0;
    char *out = malloc(len + 1);
    if (!out) return NULL;
    for (const char *s = changed; *s;) {
        const char *end = next_field(s);
        size_t n = end ? (size_t)(end - s) : strlen(s);
        const char *colon = memchr(s, ':', n);
        char key[512] = "";
        if (colon && (size_t)(colon - s) < sizeof key) {
            memcpy(key, s, (size_t)(colon - s));
            key[colon - s] = '\0';
        }
        if (gt_history_stack_field(key)) {
            if (k) {
                memcpy(out + k, "; ", 2);
                k += 2;
            }
            memcpy(out + k, s, n);
            k += n;
        } else if (hidden) {
            (*hidden)++;
        }
        s = end ? end + 2 : s + n;
    }
    out[k] = '\0';
    return out;
}
