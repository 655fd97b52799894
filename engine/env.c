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

/* A /proc/cpuinfo line's value (after "key: "), trimmed in place; NULL for
 * a line without one. */
static char *cpuinfo_value(char *line) {
    char *colon = strchr(line, ':');
    if (!colon) return NULL;
    char *val = colon + 1;
    while (*val == ' ') val++;
    trim(val);
    return val;
}

/* The first "model name" line's value into out, if line is one and out
 * still says "unknown". */
static void take_model(const char *line, const char *val, char *out, size_t len) {
    if (strncmp(line, "model name", 10) == 0 && strcmp(out, "unknown") == 0)
        snprintf(out, len, "%s", val);
}

void gt_env_cpu_model(char *out, size_t len) {
    if (len) snprintf(out, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512], *val;
    while (fgets(line, sizeof line, f) && strcmp(out, "unknown") == 0)
        if ((val = cpuinfo_value(line))) take_model(line, val, out, len);
    fclose(f);
}

static void read_cpu(gt_env *e) {
    snprintf(e->cpu_model, sizeof e->cpu_model, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    int phys_ids[256], n_phys = 0, cores_per = 0;
    while (fgets(line, sizeof line, f)) {
        char *val = cpuinfo_value(line);
        if (!val) continue;
        take_model(line, val, e->cpu_model, sizeof e->cpu_model);
        if (strncmp(line, "physical id", 11) == 0) {
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

/* env.transport (env.h): what carries the messages between ranks. */

static void transport_add(gt_env *e, const char *name, const char *value) {
    size_t n = strlen(name) + strlen(value) + 2;
    char **t = realloc(e->transport, (size_t)(e->n_transport + 1) * sizeof *t);
    char *kv = malloc(n);
    if (t) e->transport = t;
    if (!t || !kv) {
        free(kv);
        return;
    }
    snprintf(kv, n, "%s=%s", name, value);
    e->transport[e->n_transport++] = kv;
}

static int has_prefix(const char *s, const char *const *prefixes, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strncmp(s, prefixes[i], strlen(prefixes[i])) == 0) return 1;
    return 0;
}

/* The variables that steer a transport: Open MPI's and PMIx's MCA
 * parameters, UCX, NCCL, libfabric, Intel MPI, MPICH, HCOLL, SHARP, PSM2. */
static const char *const transport_prefixes[] = {"OMPI_MCA_", "PMIX_MCA_", "UCX_",       "NCCL_",
                                                 "FI_",       "I_MPI_",    "MPIR_CVAR_", "HCOLL_",
                                                 "SHARP_",    "PSM2_"};

/* What Open MPI's mpirun (4.1) puts into every process it starts, seen with
 * `mpirun -np 2 env` over identical runs: job id and rank (ess_base_*), the
 * daemon's URI with its port, the session directories under mpirun's pid
 * and the tests' own tmpdir base (orte_*), a per-job key
 * (orte_precondition_transports), the launch's shape (node count, app
 * number, binding, oversubscription, mapping) and the launcher's own
 * components (ess, pmix, shmem hint, a PMIx logging switch). Then what
 * MPI_Init adds: PMIx's client copies the server's PMIX_SECURITY_MODE,
 * PMIX_GDS_MODULE and PMIX_PTL_MODULE into PMIX_MCA_psec, _gds and _ptl
 * (how a rank talks to its launcher, not to other ranks). They describe
 * the launch, several change from run to run, none picks a transport.
 * Each entry is a prefix of the name. */
static const char *const launch_vars[] = {"OMPI_MCA_orte_",
                                          "OMPI_MCA_ess",
                                          "OMPI_MCA_pmix",
                                          "OMPI_MCA_initial_wdir",
                                          "OMPI_MCA_rmaps_",
                                          "OMPI_MCA_mpi_oversubscribe",
                                          "OMPI_MCA_shmem_RUNTIME_QUERY_hint",
                                          "PMIX_MCA_mca_base_component_show_load_errors",
                                          "PMIX_MCA_psec",
                                          "PMIX_MCA_gds",
                                          "PMIX_MCA_ptl"};

/* Whole "NAME=value" pairs an MPI library sets itself in MPI_Init: Open
 * MPI's psm2 MTL sets PSM2_DEVICES=self,shm (unless already set) when every
 * rank is on one node, which the job's layout says already. */
static const char *const set_by_mpi[] = {"PSM2_DEVICES=self,shm"};

static int launch_var(const char *kv) {
    for (size_t i = 0; i < sizeof set_by_mpi / sizeof set_by_mpi[0]; i++)
        if (strcmp(kv, set_by_mpi[i]) == 0) return 1;
    return has_prefix(kv, launch_vars, sizeof launch_vars / sizeof launch_vars[0]);
}

/* A name that says its value is a secret (a key, token, password). */
static int secret_name(const char *name, size_t len) {
    static const char *const words[] = {"KEY", "SECRET", "TOKEN", "PASSW", "CRED", "AUTH"};
    char up[128];
    if (len >= sizeof up) len = sizeof up - 1;
    for (size_t i = 0; i < len; i++)
        up[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
    up[len] = '\0';
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strstr(up, words[i])) return 1;
    return 0;
}

/* env.variables, with the value of a name that looks like a secret
 * withheld as in env.transport. */
static void read_vars(gt_env *e) {
    for (char **v = environ; v && *v && e->n_vars < GT_ENV_MAX_VARS; v++) {
        if (!wanted_var(*v)) continue;
        const char *eq = strchr(*v, '=');
        int len = eq ? (int)(eq - *v) : (int)strlen(*v);
        char kv[192];
        snprintf(kv, sizeof kv, "%.*s=(withheld)", len, *v);
        char *d = strdup(secret_name(*v, (size_t)len) ? kv : *v);
        if (d) e->vars[e->n_vars++] = d;
    }
}

/* Whether the number n stands alone (between non-digits) in s. */
static int has_number(const char *s, long n) {
    char d[24];
    int dl = snprintf(d, sizeof d, "%ld", n);
    for (const char *p = strstr(s, d); p; p = strstr(p + 1, d))
        if ((p == s || p[-1] < '0' || p[-1] > '9') && (p[dl] < '0' || p[dl] > '9')) return 1;
    return 0;
}

/* A value unique to one run: a URI ("tcp://10.0.0.1:5000"), an address
 * ending in a port ("host:29500"), a path naming a process ("/tmp/x/pid.42",
 * or holding this process's or its parent's pid). */
static int per_run_value(const char *v) {
    if (strstr(v, "://")) return 1;
    const char *colon = strrchr(v, ':');
    size_t digits = colon ? strspn(colon + 1, "0123456789") : 0;
    if (colon && digits >= 4 && digits <= 5 && colon[1 + digits] == '\0') return 1;
    return strchr(v, '/') &&
           (strstr(v, "pid") || has_number(v, (long)getpid()) || has_number(v, (long)getppid()));
}

/* A variable of env.transport: it steers a transport, the launcher did not set it. */
static int transport_var(const char *kv) {
    size_t n = sizeof transport_prefixes / sizeof transport_prefixes[0];
    return has_prefix(kv, transport_prefixes, n) && !launch_var(kv);
}

static int by_string(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The transport variables of this process, sorted by name (environ's order
 * is the launcher's). */
static void read_transport_vars(gt_env *e) {
    int first = e->n_transport;
    for (char **v = environ; v && *v; v++) {
        const char *eq = strchr(*v, '=');
        if (!eq || !transport_var(*v)) continue;
        char name[128];
        size_t len = (size_t)(eq - *v);
        if (len >= sizeof name) continue;
        memcpy(name, *v, len);
        name[len] = '\0';
        int hide = secret_name(name, len) || per_run_value(eq + 1);
        transport_add(e, name, hide ? "(withheld)" : eq + 1);
    }
    qsort(e->transport + first, (size_t)(e->n_transport - first), sizeof *e->transport, by_string);
}

#if GT_HAVE_MPI
/* The MPI_T control variables that hold the component selection: Open
 * MPI's framework lists (what the environment, openmpi-mca-params.conf and
 * mpirun --mca ask for: "^ucx", "self,tcp"; Open MPI 4.1 has no variable
 * for the component it then picked), MPICH's network module, OFI provider
 * and thread policy. */
static const char *const mpi_t_names[] = {"pml",
                                          "btl",
                                          "coll",
                                          "mtl",
                                          "osc",
                                          "MPIR_CVAR_CH4_NETMOD",
                                          "MPIR_CVAR_NEMESIS_NETMOD",
                                          "MPIR_CVAR_OFI_USE_PROVIDER",
                                          "MPIR_CVAR_DEFAULT_THREAD_POLICY"};
#define GT_N_MPI_T (sizeof mpi_t_names / sizeof mpi_t_names[0])

/* Which of mpi_t_names control variable i is (a string not bound to an
 * object), or -1. */
static int cvar_slot(int i) {
    char name[128], desc[8];
    int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    if (MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &enumtype, desc, &desc_len,
                            &bind, &scope) != MPI_SUCCESS ||
        type != MPI_CHAR || bind != MPI_T_BIND_NO_OBJECT)
        return -1;
    for (size_t k = 0; k < GT_N_MPI_T; k++)
        if (strcmp(name, mpi_t_names[k]) == 0) return (int)k;
    return -1;
}

/* Control variable i's string; owned, NULL when it cannot be read. */
static char *cvar_string(int i) {
    MPI_T_cvar_handle h;
    int count = 0;
    if (MPI_T_cvar_handle_alloc(i, NULL, &h, &count) != MPI_SUCCESS) return NULL;
    char *v = count > 0 ? calloc((size_t)count + 1, 1) : NULL;
    if (v && MPI_T_cvar_read(h, v) != MPI_SUCCESS) {
        free(v);
        v = NULL;
    }
    MPI_T_cvar_handle_free(&h);
    return v;
}

/* MPI_T may start before MPI_Init and after it alike (MPI 3.0 section
 * 14.3.4); Open MPI 4.1 gives the same values either way. Those with a
 * value, as "mpi_t.NAME", in mpi_t_names' order. */
static void read_mpi_t(gt_env *e) {
    int provided = 0, n = 0;
    char *vals[GT_N_MPI_T] = {0};
    if (MPI_T_init_thread(MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return;
    if (MPI_T_cvar_get_num(&n) != MPI_SUCCESS) n = 0;
    for (int i = 0; i < n; i++) {
        int k = cvar_slot(i);
        if (k >= 0 && !vals[k]) vals[k] = cvar_string(i);
    }
    MPI_T_finalize();
    for (size_t k = 0; k < GT_N_MPI_T; k++) {
        if (vals[k]) trim(vals[k]);
        if (vals[k] && vals[k][0]) {
            char member[64];
            snprintf(member, sizeof member, "mpi_t.%s", mpi_t_names[k]);
            transport_add(e, member, vals[k]);
        }
        free(vals[k]);
    }
}
#endif

/* After read of e->mpi: the library line, the variables, what MPI_T says
 * (unless the job uses no MPI: MPI_T's start loads every Open MPI component,
 * a quarter of a second before a one-process train's first step, to
 * describe a transport nothing uses). */
static void read_transport(gt_env *e, unsigned flags) {
    transport_add(e, "mpi_library", GT_HAVE_MPI ? e->mpi : "none");
    read_transport_vars(e);
#if GT_HAVE_MPI
    if (flags & GT_ENV_NO_MPI)
        transport_add(e, "mpi_t", "not read: this job uses no MPI");
    else
        read_mpi_t(e);
#else
    (void)flags;
#endif
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

gt_status gt_env_collect(gt_env *e) { return gt_env_collect_job(e, 0); }

gt_status gt_env_collect_job(gt_env *e, unsigned flags) {
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
    /* the version only: the threads a run uses are its own (env.threads,
     * gt_env_threads_obtained), whatever OMP_NUM_THREADS said at start */
    snprintf(e->openmp, sizeof e->openmp, "OpenMP %d", _OPENMP);
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
        /* MPICH's line is "MPICH Version:<TAB>4.0.2": one space per gap */
        char *w = v;
        for (char *r = v; *r; r++) {
            char ch = *r == '\t' ? ' ' : *r;
            if (ch == ' ' && w > v && w[-1] == ' ') continue;
            *w++ = ch;
        }
        *w = '\0';
        snprintf(e->mpi, sizeof e->mpi, "%s", v);
    }
#else
    snprintf(e->mpi, sizeof e->mpi, "absent");
#endif
    read_transport(e, flags);
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
    gt_env_collect_gpu(e, flags);
    read_vars(e);
    return GT_OK;
}

void gt_env_release(gt_env *e) {
    if (!e) return;
    free(e->topology_xml);
    for (int i = 0; i < e->n_vars; i++) free(e->vars[i]);
    for (int i = 0; i < e->n_transport; i++) free(e->transport[i]);
    free(e->transport);
    memset(e, 0, sizeof *e);
}

int gt_env_threads_obtained(int asked) {
#if GT_HAVE_OPENMP
    if (asked > 0) omp_set_num_threads(asked);
    int got = 1; /* asked <= 0: OpenMP's default (OMP_NUM_THREADS or the cores) */
#pragma omp parallel
    {
#pragma omp single
        got = omp_get_num_threads();
    }
    return got;
#else
    (void)asked;
    return 1;
#endif
}
