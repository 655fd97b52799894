/* gauntlet env: the machine, the libraries, and measured peaks. */
#include <stdio.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/env.h"
#include "harness/cli.h"
#include "kernels/registry.h"
#include "reports/report.h"
#include "suites/probe.h"

/* Unknown numbers are negative in gt_env_gpu: print "?" for them. */
static const char *num(char *buf, size_t len, long long v) {
    if (v < 0) return "?";
    snprintf(buf, len, "%lld", v);
    return buf;
}

static void print_gpu(const gt_env_gpu *g) {
    char a[24], b[24], c[24], d[24];
    printf("gpu %-7d %s, %s\n", g->index, g->name[0] ? g->name : "?", g->uuid[0] ? g->uuid : "?");
    if (g->cc_major >= 0)
        printf("            sm %d.%d, %s SMs\n", g->cc_major, g->cc_minor,
               num(a, sizeof a, g->sm_count));
    else
        printf("            %s SMs\n", num(a, sizeof a, g->sm_count));
    printf("            clocks sm %s/%s MHz, memory %s/%s MHz (now/max)\n",
           num(a, sizeof a, g->sm_clock_mhz), num(b, sizeof b, g->sm_clock_max_mhz),
           num(c, sizeof c, g->mem_clock_mhz), num(d, sizeof d, g->mem_clock_max_mhz));
    printf("            memory %s MiB (%s MiB used), %s C, ", num(a, sizeof a, g->memory_total_mib),
           num(b, sizeof b, g->memory_used_mib), num(c, sizeof c, g->temperature_c));
    if (g->power_w >= 0)
        printf("%.1f W\n", g->power_w);
    else
        printf("? W\n");
    if (g->has_throttle)
        printf("            throttle 0x%llx (%s)\n", g->throttle_reasons, g->throttle_names);
}

int gt_cmd_env(int argc, char **argv) {
    gt_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "env"};
    const char *backend = "cpu", *v = NULL;
    int err = 0, threads = 0, probes = 1;
    while (a.i < argc && !err) {
        if (gt_flag(&a, "--help") || gt_flag(&a, "-h")) {
            printf("usage: gauntlet env [--backend cpu|cuda] [--threads N] [--no-probes]\n"
                   "Prints the environment fingerprint and measures the FMA and SGEMM peaks\n"
                   "of the backend (the MFU reference of `gauntlet train`).\n");
            return GT_EXIT_OK;
        } else if (gt_opt(&a, "--backend", &v, &err)) {
            backend = v;
        } else if (gt_opt(&a, "--threads", &v, &err)) {
            err |= !gt_parse_int(&a, "--threads", v, 1, 4096, &threads);
        } else if (gt_flag(&a, "--no-probes")) {
            probes = 0;
        } else {
            return gt_usage_error("env", "unknown option '%s' (gauntlet env --help)", argv[a.i]);
        }
    }
    if (err) return GT_EXIT_USAGE;
    gt_env e;
    /* what is installed, cuBLASLt's version too where no GPU is */
    gt_status s = gt_env_collect_job(&e, GT_ENV_ALL_LIBS);
    if (s != GT_OK) return gt_fail("env", s);
    printf("host        %s\n", e.host);
    printf("os          %s\n", e.os);
    printf("cpu         %s\n", e.cpu_model);
    printf("cores       %d physical, %d logical, %d socket(s)\n", e.cpu_physical, e.cpu_logical,
           e.cpu_sockets);
    printf("memory      %.1f GiB\n", e.mem_total_gib);
    printf("gauntlet    %s (%s), git %s\n", e.gauntlet_version, e.build_type, e.git_revision);
    printf("compiler    %s\n", e.compiler);
    printf("blas        %s\n", e.blas);
    printf("blas kernel %s, %s build, %d thread%s per call; %s\n",
           e.blas_core[0] ? e.blas_core : "none", e.blas_parallel, e.blas_threads,
           e.blas_threads == 1 ? "" : "s", e.blas_steering);
    printf("openmp      %s\n", e.openmp);
    printf("jansson     %s\n", gt_report_jansson_version());
    printf("mpi         %s\n", e.mpi);
    /* env.transport, one member a line as the report has them */
    for (int i = 0; i < e.n_transport; i++) printf("transport   %s\n", e.transport[i]);
    printf("hwloc       %s\n", e.hwloc);
    printf("cuda        %s\n", e.cuda);
    printf("cuda driver %s\n", e.cuda_driver);
    printf("cudart      %s\n", e.cuda_runtime);
    printf("cublasLt    %s\n", e.cublas);
    printf("cudnn       %s\n", e.cudnn);
    printf("nccl        %s\n", e.nccl);
    for (int i = 0; i < e.n_gpus; i++) print_gpu(&e.gpus[i]);
    if (e.topology_digest[0]) printf("topology    %s\n", e.topology_digest);
    for (int i = 0; i < e.n_vars; i++) printf("env         %s\n", e.vars[i]);
    int rc = GT_EXIT_OK;
    if (probes) {
        gt_backend *be = NULL;
        gt_backend_config bc = {.threads = threads, .device = -1};
        s = gt_backend_new(backend, &bc, &be);
        if (s != GT_OK) {
            rc = gt_fail("env", s);
        } else {
            gt_peaks pk;
            s = gt_probe_measure_peaks(be, &pk);
            if (s != GT_OK) {
                rc = gt_fail("env", s);
            } else {
                printf("backend     %s\n", be->describe(be));
                if (pk.fma_gflops > 0) printf("peak fma    %.1f GFLOP/s (fp32)\n", pk.fma_gflops);
                printf("peak sgemm  %.1f GFLOP/s (n=%d, median of 5, the MFU reference)\n",
                       pk.sgemm_gflops, pk.sgemm_n);
            }
            gt_backend_free(be);
        }
    }
    gt_env_release(&e);
    return rc;
}
