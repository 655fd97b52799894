/* The environment fingerprint. This is the one file in engine/ that asks the
 * build what it found (gt_config.h). The peak probes, which run the
 * backend's ops, are suites/probe.c's. */
#define _GNU_SOURCE
#include "engine/env.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "engine/stats.h"
#include "gt_config.h"

#if GT_HAVE_OPENMP
#include <omp.h>
#endif
#if GT_HAVE_BLAS
#include <cblas.h>
#endif
#if GT_HAVE_MPI
#include <mpi.h>
#endif
#if GT_HAVE_HWLOC
#include <hwloc.h>
#endif

extern char **environ;

static void trim(char *s) {
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = '\0';
}

static void read_cpu(gt_env *e) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(e->cpu_model, sizeof e->cpu_model, "unknown");
    if (!f) return;
    char line[512];
    int phys_ids[256], n_phys = 0, cores_per = 0;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        char *val = colon + 1;
        while (*val == ' ') val++;
        trim(val);
        if (strncmp(line, "model name", 10) == 0 && strcmp(e->cpu_model, "unknown") == 0)
            snprintf(e->cpu_model, sizeof e->cpu_model, "%s", val);
        else if (strncmp(line, "physical id", 11) == 0) {
            int id = atoi(val), seen = 0;
            for (int i = 0; i < n_phys; i++) seen |= phys_ids[i] == id;
            if (!seen && n_phys < 256) phys_ids[n_phys++] = id;
        } else if (strncmp(line, "cpu cores", 9) == 0)
            cores_per = atoi(val);
    }
    fclose(f);
    e->cpu_sockets = n_phys > 0 ? n_phys : 1;
    e->cpu_physical = cores_per > 0 ? cores_per * e->cpu_sockets : e->cpu_logical;
}

static void read_mem(gt_env *e) {
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGE_SIZE);
    e->mem_total_gib = (pages > 0 && psize > 0) ? (double)pages * psize / (1024.0 * 1024 * 1024)
                                                 : 0.0;
}

/* sched_getaffinity as ranges: the rank-to-core binding of this process. */
static void read_affinity(gt_env *e) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        snprintf(e->affinity, sizeof e->affinity, "unknown");
        return;
    }
    size_t len = 0;
    e->affinity[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE && len + 16 < sizeof e->affinity; c++) {
        if (!CPU_ISSET(c, &set)) continue;
        int d = c;
        while (d + 1 < CPU_SETSIZE && CPU_ISSET(d + 1, &set)) d++;
        len += (size_t)snprintf(e->affinity + len, sizeof e->affinity - len, "%s%d", len ? "," : "",
                                c);
        if (d > c) len += (size_t)snprintf(e->affinity + len, sizeof e->affinity - len, "-%d", d);
        c = d;
    }
}

int gt_env_local_rank(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                       "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *s = getenv(vars[i]);
        if (s && *s) {
            char *end = NULL;
            long r = strtol(s, &end, 10);
            if (end && *end == '\0' && r >= 0 && r < 1 << 20) return (int)r;
        }
    }
    return -1;
}

long gt_env_launch_size(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE",
                                       "SLURM_NTASKS", "WORLD_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *s = getenv(vars[i]);
        char *end = NULL;
        long n = s && *s ? strtol(s, &end, 10) : 0;
        if (n > 0 && end && *end == '\0') return n;
    }
    return 1;
}

void gt_env_hostname(char *host, size_t len) {
    const char *fake = getenv("GT_TEST_HOSTNAME");
    if (!len) return;
    if (fake && *fake) {
        snprintf(host, len, "%s", fake);
        return;
    }
    memset(host, 0, len);
    if (gethostname(host, len - 1) != 0) snprintf(host, len, "?");
}

void gt_env_host_affinity(char *host, size_t host_len, char *cpus, size_t cpus_len) {
    gt_env e;
    memset(&e, 0, sizeof e);
    gt_env_hostname(e.host, sizeof e.host);
    read_affinity(&e);
    snprintf(host, host_len, "%s", e.host);
    snprintf(cpus, cpus_len, "%s", e.affinity);
}

static void read_git(gt_env *e) {
    snprintf(e->git_revision, sizeof e->git_revision, "unknown");
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "git -C '%s' rev-parse --short=12 HEAD 2>/dev/null && "
             "git -C '%s' status --porcelain --untracked-files=no 2>/dev/null | head -1",
             GT_SOURCE_DIR, GT_SOURCE_DIR);
    FILE *p = popen(cmd, "r");
    if (!p) return;
    char rev[64] = "", dirty[256] = "";
    if (fgets(rev, sizeof rev, p)) {
        trim(rev);
        if (fgets(dirty, sizeof dirty, p) && dirty[0])
            snprintf(e->git_revision, sizeof e->git_revision, "%s-dirty", rev);
        else if (rev[0])
            snprintf(e->git_revision, sizeof e->git_revision, "%s", rev);
    }
    pclose(p);
}

/* The BLAS and what picks its kernel and threads (env.h). */
static void read_blas(gt_env *e) {
#if GT_HAVE_BLAS
    snprintf(e->blas, sizeof e->blas, "%s (%s)", GT_BLAS_DESC, openblas_get_config());
    snprintf(e->blas_core, sizeof e->blas_core, "%s", openblas_get_corename());
    static const char *const par[] = {"sequential", "pthreads", "openmp"};
    int p = openblas_get_parallel();
    snprintf(e->blas_parallel, sizeof e->blas_parallel, "%s", p >= 0 && p <= 2 ? par[p] : "?");
    /* gt_cpu_sgemm runs OpenBLAS on one thread per tile, whatever it was
     * started with: that is the count that decides a call's arithmetic */
    e->blas_threads = 1;
#else
    snprintf(e->blas, sizeof e->blas, "none: gauntlet's own blocked SGEMM");
    snprintf(e->blas_parallel, sizeof e->blas_parallel, "none");
    e->blas_threads = 0;
#endif
    static const char *const steer[] = {"OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS",
                                        "GOTO_NUM_THREADS", "OMP_NUM_THREADS"};
    size_t at = 0;
    for (size_t i = 0; i < sizeof steer / sizeof steer[0] && at < sizeof e->blas_steering; i++) {
        const char *v = getenv(steer[i]);
        int n = v ? snprintf(e->blas_steering + at, sizeof e->blas_steering - at, "%s%s=%s",
                             i ? ", " : "", steer[i], v)
                  : snprintf(e->blas_steering + at, sizeof e->blas_steering - at, "%s%s unset",
                             i ? ", " : "", steer[i]);
        if (n < 0) break;
        at += (size_t)n;
    }
}

static int wanted_var(const char *kv) {
    static const char *const prefixes[] = {"OMP_", "OPENBLAS_", "GOTO", "CUDA_", "NCCL_",
                                           "OMPI_", "PMIX_RANK", "SLURM_", "GT_"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(kv, prefixes[i], strlen(prefixes[i])) == 0) return 1;
    return 0;
}

#if GT_HAVE_HWLOC
/* Digest of what makes two machines' topologies the same: every object's
 * type, depth, OS index and cache size, in hwloc's traversal order. Host
 * names and free memory are left out on purpose. */
static void read_hwloc(gt_env *e) {
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) return;
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return;
    }
    uint64_t h = GT_FNV1A64_INIT;
    int depth = hwloc_topology_get_depth(topo);
    for (int d = 0; d < depth; d++) {
        unsigned n = (unsigned)hwloc_get_nbobjs_by_depth(topo, d);
        for (unsigned i = 0; i < n; i++) {
            hwloc_obj_t o = hwloc_get_obj_by_depth(topo, d, i);
            char item[128];
            unsigned long long csize =
                hwloc_obj_type_is_cache(o->type) ? (unsigned long long)o->attr->cache.size : 0;
            int len = snprintf(item, sizeof item, "%s:%d:%u:%llu;", hwloc_obj_type_string(o->type),
                               d, o->os_index, csize);
            h = gt_fnv1a64(h, item, (size_t)len);
        }
    }
    snprintf(e->topology_digest, sizeof e->topology_digest, "fnv1a64:%016llx",
             (unsigned long long)h);
    e->cpu_physical = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    int pk = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    if (pk > 0) e->cpu_sockets = pk;
    char *xml = NULL;
    int len = 0;
    if (hwloc_topology_export_xmlbuffer(topo, &xml, &len, 0) == 0 && xml) {
        e->topology_xml = strdup(xml);
        hwloc_free_xmlbuffer(topo, xml);
    }
    hwloc_topology_destroy(topo);
    unsigned v = hwloc_get_api_version();
    snprintf(e->hwloc, sizeof e->hwloc, "%u.%u.%u", v >> 16, (v >> 8) & 0xff, v & 0xff);
}
#endif

gt_status gt_env_collect(gt_env *e) {
    memset(e, 0, sizeof *e);
    gt_env_hostname(e->host, sizeof e->host);
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(e->os, sizeof e->os, "%s %s %s", u.sysname, u.release, u.machine);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    e->cpu_logical = ncpu > 0 ? (int)ncpu : 1;
    read_cpu(e);
    read_mem(e);
    snprintf(e->compiler, sizeof e->compiler, "%s, flags: %s", GT_C_COMPILER, GT_C_FLAGS_USED);
    snprintf(e->build_type, sizeof e->build_type, "%s", GT_BUILD_TYPE);
    snprintf(e->gauntlet_version, sizeof e->gauntlet_version, "%s", GT_VERSION);
    read_git(e);
    read_affinity(e);
    read_blas(e);
#if GT_HAVE_OPENMP
    snprintf(e->openmp, sizeof e->openmp, "OpenMP %d, %d threads max", _OPENMP,
             omp_get_max_threads());
#else
    snprintf(e->openmp, sizeof e->openmp, "absent: one thread");
#endif
#if GT_HAVE_MPI
    {
        char v[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        MPI_Get_library_version(v, &len);
        trim(v);
        char *nl = strchr(v, '\n');
        if (nl) *nl = '\0';
        snprintf(e->mpi, sizeof e->mpi, "%s", v);
    }
#else
    snprintf(e->mpi, sizeof e->mpi, "absent");
#endif
#if GT_HAVE_HWLOC
    read_hwloc(e);
#else
    snprintf(e->hwloc, sizeof e->hwloc, "absent");
#endif
#if GT_CUDA_EMULATOR
    snprintf(e->cuda, sizeof e->cuda, "EMULATED on the CPU (GT_CUDA_EMULATOR): not a GPU");
#elif GT_HAVE_CUDA
    snprintf(e->cuda, sizeof e->cuda, "compiled with CUDA %s for sm %s", GT_CUDA_VERSION,
             GT_CUDA_ARCHS);
#else
    snprintf(e->cuda, sizeof e->cuda, "absent");
#endif
    gt_env_collect_gpu(e);
    for (char **v = environ; v && *v && e->n_vars < GT_ENV_MAX_VARS; v++)
        if (wanted_var(*v)) e->vars[e->n_vars++] = strdup(*v);
    return GT_OK;
}

void gt_env_release(gt_env *e) {
    if (!e) return;
    free(e->topology_xml);
    for (int i = 0; i < e->n_vars; i++) free(e->vars[i]);
    memset(e, 0, sizeof *e);
}
