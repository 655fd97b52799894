/* The environment fingerprint: what machine and software a result came
 * from, and measured peaks that figures are judged against.
 */
#ifndef GT_ENV_H
#define GT_ENV_H

#include <stddef.h>

#include "engine/backend.h"
#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GT_ENV_STR 256
#define GT_ENV_MAX_VARS 64

typedef struct gt_env {
    char host[GT_ENV_STR];
    char os[GT_ENV_STR];          /* "Linux 6.1.0-... x86_64" */
    char cpu_model[GT_ENV_STR];
    int cpu_logical;              /* online logical CPUs */
    int cpu_physical;             /* physical cores (hwloc when present, else /proc) */
    int cpu_sockets;
    double mem_total_gib;
    char compiler[GT_ENV_STR];    /* compiler and flags of this build */
    char build_type[32];
    char gauntlet_version[32];
    char git_revision[64];        /* "unknown" outside a git checkout */
    char blas[GT_ENV_STR];        /* "OpenBLAS 0.3.21 (config ...)" or "gauntlet blocked sgemm" */
    char openmp[64];              /* "OpenMP 201511, 2 threads max" */
    char mpi[GT_ENV_STR];         /* library version string or "absent" */
    char hwloc[64];
    char cuda[GT_ENV_STR];        /* "compiled for 13.0 (sm 80;90)" or "absent" */
    char affinity[192];           /* CPUs this process may run on, "0-3,8" */
    char topology_digest[72];     /* hex digest of the hwloc topology XML ("" without hwloc) */
    char *topology_xml;           /* owned, NULL without hwloc */
    int n_vars;
    char *vars[GT_ENV_MAX_VARS];  /* owned "NAME=value" of OMP_*, OPENBLAS_*, CUDA_*, NCCL_*, OMPI_* */
} gt_env;

/* Collects everything above (fast: no benchmarks). */
gt_status gt_env_collect(gt_env *out);
void gt_env_release(gt_env *e);

/* Measured peaks of a backend. */
typedef struct gt_peaks {
    double fma_gflops;   /* FP32 FMA throughput, all threads of the backend */
    double sgemm_gflops; /* large SGEMM through the backend's matmul op (the MFU reference) */
    int sgemm_n;         /* square size used */
    double seconds;      /* time the probes took */
} gt_peaks;

/* Runs the probes on `be` (cpu: FMA loop on every thread, SGEMM n=2048
 * through ops->matmul_fwd, median of 5). Takes a few seconds. */
gt_status gt_env_measure_peaks(gt_backend *be, gt_peaks *out);

#ifdef __cplusplus
}
#endif
#endif
