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
#define GT_ENV_MAX_GPUS 16

/* One GPU as the driver sees it. Every field is optional: a library, symbol
 * or call that is missing leaves it unknown (strings "", numbers -1). The
 * identity fields come from libcuda (so the list honours CUDA_VISIBLE_DEVICES);
 * the readings come from NVML, matched to the CUDA device by UUID. */
typedef struct gt_env_gpu {
    int index;                     /* CUDA device ordinal */
    char name[96];                 /* "NVIDIA H100 80GB HBM3" */
    char uuid[48];                 /* "GPU-8c5e...", NVML's spelling */
    int sm_count;
    int cc_major, cc_minor;        /* compute capability */
    int sm_clock_max_mhz;          /* NVML max SM clock, else CUDA's clock rate */
    int mem_clock_max_mhz;         /* NVML max memory clock, else CUDA's */
    long long memory_total_mib;
    /* readings at collection time (NVML) */
    int sm_clock_mhz;
    int mem_clock_mhz;
    long long memory_used_mib;
    int temperature_c;
    double power_w;                /* board power draw */
    int has_throttle;              /* throttle_reasons below is valid */
    unsigned long long throttle_reasons; /* NVML clocks-event reason bits, 0 = none */
    char throttle_names[192];      /* "sw_power_cap,hw_slowdown", "none", "" unknown */
} gt_env_gpu;

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
    /* The BLAS kernel, on its own since it changes numerics: the core the
     * library dispatched to ("Haswell", "SkylakeX"; "" without BLAS), its
     * threading build ("pthreads", "openmp", "sequential"), the threads it
     * runs inside one call (1: the cpu backend splits every GEMM itself,
     * kernels/cpu/sgemm.h), and the variables that steer it, "NAME=value"
     * or "NAME unset", comma-separated. */
    char blas_core[64];
    char blas_parallel[16];
    int blas_threads;
    char blas_steering[GT_ENV_STR];
    char openmp[64];              /* "OpenMP 201511" (the threads: env.threads) */
    char mpi[GT_ENV_STR];         /* library version string or "absent" */
    /* The communication transport, the report's env.transport (docs/
     * report-schema.md): owned "NAME=value" strings, n_transport of them, in
     * this order: "mpi_library=..." (the MPI library's version line, "none"
     * without MPI); every variable of the process that steers a transport
     * (OMPI_MCA_*, PMIX_MCA_*, UCX_*, NCCL_*, FI_*, I_MPI_*, MPIR_CVAR_*,
     * HCOLL_*, SHARP_*, PSM2_*) by name, without those a launcher sets in
     * every process it starts, and with the value "(withheld)" where it looks
     * like a secret or is unique to one run; then "mpi_t.pml=..." and the
     * other component selections the MPI library holds (its MPI_T control
     * variables, read before or after MPI_Init alike), those with a value. */
    int n_transport;
    char **transport;
    char hwloc[64];
    char cuda[GT_ENV_STR];        /* "compiled for 13.0 (sm 80;90)" or "absent" */
    /* Found at run time with dlopen (env_gpu.c), whether or not this build
     * uses CUDA: "<version> (<path loaded>)" or "absent (<short reason>)". */
    char cuda_driver[GT_ENV_STR]; /* "580.65.06, CUDA 13.0 (/usr/lib/.../libcuda.so.1)" */
    char cuda_runtime[GT_ENV_STR];/* libcudart: "13.0 (...)" */
    char cublas[GT_ENV_STR];      /* libcublasLt: "13.1.0 (...)", or "not read: ..."
                                   * on a host without a CUDA device (GT_ENV_ALL_LIBS) */
    char cudnn[GT_ENV_STR];       /* "9.19.0 (...)" */
    char nccl[GT_ENV_STR];        /* "2.28.9 (...)" */
    int n_gpus;                   /* 0 without libcuda or without a usable device */
    gt_env_gpu gpus[GT_ENV_MAX_GPUS];
    char affinity[192];           /* CPUs this process may run on, "0-3,8" */
    char topology_digest[72];     /* hex digest of the hwloc topology XML ("" without hwloc) */
    char *topology_xml;           /* owned, NULL without hwloc */
    int n_vars;
    char *vars[GT_ENV_MAX_VARS];  /* owned "NAME=value" of OMP_*, OPENBLAS_*, CUDA_*, NCCL_*, OMPI_* */
} gt_env;

/* This process's index among the ranks of its node, from the launcher's
 * environment (Open MPI, MPICH/Hydra, MVAPICH, Slurm, torchrun); -1 when no
 * launcher set one. Picks the GPU local to a rank (cuda backend, nccl,
 * telemetry). */
int gt_env_local_rank(void);
/* How many processes the launcher started (the job's size, from the same
 * environments); 1 when no launcher said. */
long gt_env_launch_size(void);

/* Just the host name and this process's CPU affinity ("0-3,8"): cheap,
 * for the per-rank binding table (no GPU libraries loaded). */
void gt_env_host_affinity(char *host, size_t host_len, char *cpus, size_t cpus_len);

/* Just the CPU's model name from /proc/cpuinfo ("unknown" where it says
 * none): cheap, for keys that must change with the CPU (suites/probe_cache.c). */
void gt_env_cpu_model(char *out, size_t len);

/* Collects everything above (fast: no benchmarks). */
gt_status gt_env_collect(gt_env *out);
/* The same for a job that says what it uses: GT_ENV_NO_MPI (one process that
 * starts no MPI and launches none) leaves MPI_T unread and records
 * transport.mpi_t = "not read: this job uses no MPI" in its place. */
#define GT_ENV_NO_MPI 1u
/* GT_ENV_ALL_LIBS reads cuBLASLt's version on a host without a CUDA device
 * too (gauntlet env). Without it such a host records env.software.cublas as
 * "not read: ...": opening the library costs a third of a second, and
 * nothing there can run on it (gt_env_collect_gpu). */
#define GT_ENV_ALL_LIBS 2u
gt_status gt_env_collect_job(gt_env *out, unsigned flags);
/* The threads an OpenMP parallel region gets once `asked` (> 0) are
 * requested, as the cpu backend requests them (omp_set_num_threads, which
 * this also does; asked <= 0: OpenMP's default); 1 without OpenMP. What a run reports as the threads it
 * obtained (env.threads.obtained). */
int gt_env_threads_obtained(int asked);
void gt_env_release(gt_env *e);

/* Part of gt_env_collect: fills cuda_driver .. nccl and gpus by loading the
 * CUDA libraries with dlopen (nothing is linked, no header needed), first by
 * name, then from /usr/local/cuda/lib64 and the nvidia/<pkg>/lib folders of
 * Python wheels. cuBLASLt's version is read where a CUDA device is, where
 * this process has the library loaded already, or with GT_ENV_ALL_LIBS.
 * Never fails; cuInit runs only when libcuda.so.1 loads. */
void gt_env_collect_gpu(gt_env *e, unsigned flags);

/* One reading of a GPU's clocks and health, taken around a case (the
 * report's per-result "telemetry"). Numbers are -1 when NVML did not give
 * them. */
typedef struct gt_gpu_sample {
    int index;                 /* CUDA ordinal read */
    char uuid[48];             /* "GPU-...": NVML's spelling */
    double t_unix;             /* when (wall clock, seconds) */
    int sm_clock_mhz;
    int mem_clock_mhz;
    int temperature_c;
    double power_w;            /* board power draw */
    int has_throttle;          /* throttle_reasons below is valid */
    unsigned long long throttle_reasons; /* NVML clocks-event reason bits, 0 = none */
    char throttle_names[192];  /* as gt_env_gpu.throttle_names */
} gt_gpu_sample;

/* Reads the GPU of CUDA ordinal cuda_index; < 0: this rank's own GPU, the
 * launcher's local rank (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID, ...;
 * else 0) modulo the visible devices, the device the cuda backend and the
 * nccl communicator take. libcuda (for the device's UUID) and NVML (matched
 * by UUID, as in gt_env_collect_gpu) are loaded once with dlopen on the
 * first call and kept; a reading is five NVML queries, well under a
 * millisecond. Returns 1 with *out filled, 0 when there is no driver, no
 * NVML, no such device or no NVML match: then nothing is to be recorded,
 * which is not an error (no last-error message is set). Call from one
 * thread at a time. */
int gt_env_gpu_sample(int cuda_index, gt_gpu_sample *out);

/* Which GPU a rank has: the device of CUDA ordinal cuda_index, or < 0:
 * this rank's own (the launcher's local rank modulo the visible devices,
 * as gt_env_gpu_sample). Needs only libcuda (NVML not used). Returns 1 with
 * *out filled (strings "" where the driver lacks the call), 0 without a
 * driver or device (then out->index is -1). Shares gt_env_gpu_sample's
 * loaded libraries; call from one thread at a time. */
typedef struct gt_gpu_identity {
    int index;             /* CUDA ordinal */
    char name[96];         /* "NVIDIA H100 80GB HBM3" */
    char uuid[48];         /* "GPU-8c5e..." */
    char pci_bus_id[32];   /* "0000:1B:00.0" */
} gt_gpu_identity;
int gt_env_gpu_identity(int cuda_index, gt_gpu_identity *out);

/* This host's name: gethostname, or GT_TEST_HOSTNAME when that is set and
 * not empty. The override exists for the tests, which fake several hosts
 * with the ranks of one machine (mpirun -np 1 -x GT_TEST_HOSTNAME=a prog :
 * -np 1 -x GT_TEST_HOSTNAME=b prog); every report records it among
 * env.variables, so a report made with it says so. */
void gt_env_hostname(char *host, size_t len);

/* Measured peaks of a backend, as reports record them beside the
 * environment; measured by suites/probe.c (gt_probe_measure_peaks), which
 * runs the backend's ops. */
typedef struct gt_peaks {
    double fma_gflops;   /* FP32 FMA throughput, all threads of the backend */
    double sgemm_gflops; /* large SGEMM through the backend's matmul op (the MFU reference) */
    double sgemm_best_gflops; /* its fastest sample: the compute peak of the kernels suite */
    int sgemm_n;         /* square size used */
    double seconds;      /* time the probes took */
} gt_peaks;

#ifdef __cplusplus
}
#endif
#endif
