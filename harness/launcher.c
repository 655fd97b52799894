/* The MPI launcher gauntlet relaunches itself with (harness/launcher.h). */
#define _GNU_SOURCE
#include "harness/launcher.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gt_config.h"

const char *gt_launcher_family_name(gt_launcher_family f) {
    switch (f) {
    case GT_LAUNCHER_OPENMPI: return "openmpi";
    case GT_LAUNCHER_HYDRA: return "hydra";
    default: return "other";
    }
}

gt_launcher_family gt_launcher_family_of_build(void) {
    if (strcmp(GT_MPIEXEC_FAMILY, "openmpi") == 0) return GT_LAUNCHER_OPENMPI;
    if (strcmp(GT_MPIEXEC_FAMILY, "hydra") == 0) return GT_LAUNCHER_HYDRA;
    return GT_LAUNCHER_OTHER;
}

/* The first executable `name` in a directory of PATH, into out. */
static int on_path(const char *name, char *out, int n) {
    const char *path = getenv("PATH");
    if (!path || !name[0]) return 0;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    char *save = NULL;
    for (char *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char f[4200];
        snprintf(f, sizeof f, "%s/%s", d, name);
        if (access(f, X_OK) == 0) {
            snprintf(out, (size_t)n, "%s", f);
            return 1;
        }
    }
    return 0;
}

int gt_launcher_path(char *path, int n) {
    path[0] = '\0';
    const char *conf = GT_MPIEXEC;
    if (conf[0] && access(conf, X_OK) == 0) {
        snprintf(path, (size_t)n, "%s", conf);
        return 1;
    }
    const char *slash = strrchr(conf, '/');
    if (conf[0] && on_path(slash ? slash + 1 : conf, path, n)) return 1;
    /* a build from before the launcher was configured, or an Open MPI whose
     * mpiexec moved: its mpirun on PATH, as gauntlet always did */
    if (gt_launcher_family_of_build() == GT_LAUNCHER_OPENMPI || !conf[0])
        return on_path("mpirun", path, n);
    return 0;
}

const char *gt_launcher_name(void) {
    static char name[256];
    char path[4096];
    if (!gt_launcher_path(path, sizeof path)) return "mpirun";
    const char *slash = strrchr(path, '/');
    /* a base name longer than 255 bytes is cut (no launcher is named so) */
    snprintf(name, sizeof name, "%.255s", slash ? slash + 1 : path);
    return name;
}

int gt_launcher_argv(gt_launcher_family family, const char *path, int n, long ncpu, int as_root,
                     const char *self, char *const rest[], char np[16], char **args, int max) {
    int k = 0;
    snprintf(np, 16, "%d", n);
#define PUSH(s)                       \
    do {                              \
        if (k >= max - 1) return -1;  \
        args[k++] = (char *)(s);      \
    } while (0)
    PUSH(path);
    if (family == GT_LAUNCHER_OPENMPI) {
        PUSH("-np");
        PUSH(np);
        if (n > ncpu) PUSH("--oversubscribe");
        if (as_root) PUSH("--allow-run-as-root");
    } else {
        /* Hydra's -n (its -np is a synonym); it has neither flag above and
         * stops at an option it does not know */
        PUSH("-n");
        PUSH(np);
    }
    PUSH(self);
    for (int i = 0; rest && rest[i]; i++) PUSH(rest[i]);
#undef PUSH
    args[k] = NULL;
    return k;
}

const char *const *gt_launcher_env(gt_launcher_family family, int n, long ncpu) {
    static const char *const none[] = {NULL};
    static const char *const ompi_yield[] = {"OMPI_MCA_mpi_yield_when_idle=1", NULL};
    if (family == GT_LAUNCHER_OPENMPI && n > ncpu) return ompi_yield;
    return none;
}

const char *gt_launcher_root_hint(void) {
    return gt_launcher_family_of_build() == GT_LAUNCHER_OPENMPI
               ? " (as root add --allow-run-as-root)"
               : "";
}

int gt_launcher_available(void) {
    char path[4096];
    return GT_HAVE_MPI && gt_launcher_path(path, sizeof path);
}

void gt_launcher_relaunch(int n, char **argv_full) {
    static char path[4096], self[4096], np[16];
    if (!gt_launcher_path(path, sizeof path)) return;
    /* our own path: "/proc/self/exe" would name the launcher once it runs */
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return;
    self[len] = '\0';
    gt_launcher_family family = gt_launcher_family_of_build();
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    /* the user's own setting wins */
    for (const char *const *e = gt_launcher_env(family, n, ncpu); *e; e++) {
        char name[128];
        const char *eq = strchr(*e, '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
        setenv(name, eq + 1, 0);
    }
    char *args[256];
    if (gt_launcher_argv(family, path, n, ncpu, geteuid() == 0, self, argv_full + 1, np, args,
                         256) < 0) {
        fprintf(stderr, "gauntlet: too many arguments to relaunch under %s\n", path);
        return;
    }
    fflush(NULL);
    execv(path, args);
}
