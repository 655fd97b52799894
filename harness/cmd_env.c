/* gauntlet env: the machine, the libraries, and measured peaks. */
#include <stdio.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/env.h"
#include "harness/cli.h"
#include "reports/report.h"

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
    gt_status s = gt_env_collect(&e);
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
    printf("openmp      %s\n", e.openmp);
    printf("jansson     %s\n", gt_report_jansson_version());
    printf("mpi         %s\n", e.mpi);
    printf("hwloc       %s\n", e.hwloc);
    printf("cuda        %s\n", e.cuda);
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
            s = gt_env_measure_peaks(be, &pk);
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
