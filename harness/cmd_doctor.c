/* gauntlet doctor: which node of a job is the slow one (suites/doctor.h,
 * docs/doctor.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/comm.h"
#include "engine/env.h"
#include "harness/cli.h"
#include "harness/signals.h"
#include "reports/report.h"
#include "suites/doctor.h"
#include "suites/trainer/train.h"

static void doctor_usage(FILE *f) {
    fprintf(f,
        "usage: mpirun -np N gauntlet doctor [options]    (srun -n N gauntlet doctor ...)\n"
        "\n"
        "Every rank runs the same probes at once (GEMM rate, memory bandwidth, its CPU share,\n"
        "the GPU's clock and throttle reasons where there is one), then pairwise links in rounds over\n"
        "disjoint pairs of nodes (of ranks on one node); names every rank, host, GPU or link\n"
        "whose figure is beyond the limit against the job's median (docs/doctor.md).\n"
        "Run one rank per GPU (or per node on CPU-only nodes), one job over every suspect node.\n"
        "\n"
        "  --backend NAME        cpu (default), ref or cuda: where the GEMM and memory run\n"
        "  --quick               small probes (seconds; tests, a first look)\n"
        "  --threads N           cpu threads per rank (default: cores / ranks on the node)\n"
        "  --limit X             a rank is named when its GEMM rate or memory bandwidth is\n"
        "                        X times worse than the job's reference (default %.2f)\n"
        "  --link-limit X        the same for its link bandwidth (default %.2f)\n"
        "  --latency-limit X     the same for its link latency (default %.2f); a single link\n"
        "                        is named beyond %.0fx these limits\n"
        "  --clock-limit X       the same for the GPU SM clock, cuda only (default %.2f)\n"
        "  --cpu-limit X         the same for its CPU share: time on a CPU over time runnable\n"
        "                        (default %.2f); named with the cause: a cgroup quota, steal,\n"
        "                        or other work on its cores\n"
        "  --one-look            judge the first look only (default: when it names anything,\n"
        "                        measure again and judge the better of the two looks)\n"
        "  --report FILE         the JSON report (rank 0): results of suite doctor and the\n"
        "                        section \"doctor\" with the verdict and the outliers\n"
        "  --layout dp=D,tp=T,pp=P  also probe the groups of that training layout (train's\n"
        "                        syntax and placement): each tensor and data-parallel group's\n"
        "                        all-reduce, each pipeline boundary's send/recv; a group\n"
        "                        slower than the median group of its kind, or stalled, is named\n"
        "  --layout-only         the layout's groups only (no GEMM, memory or link probes)\n"
        "  --group-limit X       a group is named when X times slower than the median group\n"
        "                        of its kind (default %.2f)\n"
        "  --layout-deadline S   each layout probe's operation must complete within S seconds,\n"
        "                        else its group is named as stalled (default %.0f)\n"
        "  --comm-timeout S      watchdog per collective in seconds (default 300)\n"
        "  --quiet               only the verdict and the outliers\n"
        "\n"
        "fault injection (tests; proving a deployment names a bad node):\n"
        "  GT_FAULT_SLOW_HOST=HOST:FACTOR[,...]  that host's probes and links take FACTOR\n"
        "  GT_FAULT_SLOW_RANK=RANK:FACTOR[,...]  times as long (world rank numbers)\n"
        "  GT_FAULT_STALL_RANK=RANK[,...]        those ranks take no part in the layout\n"
        "                                        probes (their groups' peers wait for them)\n"
        "\n"
        "exit codes: 0 no outlier, 1 outliers named (or a failed check), 2 usage or\n"
        "            environment error\n",
        GT_DOCTOR_LIMIT, GT_DOCTOR_LINK_LIMIT, GT_DOCTOR_LATENCY_LIMIT,
        GT_DOCTOR_SINGLE_LINK_FACTOR, GT_DOCTOR_CLOCK_LIMIT, GT_DOCTOR_CPU_LIMIT,
        GT_DOCTOR_GROUP_LIMIT, GT_DOCTOR_LAYOUT_DEADLINE);
}

/* 1 when --layout (parsed already; NULL: none) fits a job of n ranks;
 * else 0 and the last error says why. */
static int layout_fits(const char *layout, int n) {
    gt_train_grid g, sized;
    return !layout ||
           (gt_train_grid_parse(layout, &g) == GT_OK && gt_train_grid_sizes(&g, n, &sized) == GT_OK);
}

int gt_cmd_doctor(int argc, char **argv) {
    gt_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "doctor"};
    gt_doctor_config cfg = {.backend = "cpu"};
    gt_comm_config ccfg = gt_comm_defaults();
    const char *report_path = NULL, *v = NULL;
    int err = 0, quiet = 0;
    while (a.i < argc && !err) {
        if (gt_flag(&a, "--help") || gt_flag(&a, "-h")) {
            doctor_usage(stdout);
            return GT_EXIT_OK;
        } else if (gt_opt(&a, "--backend", &v, &err)) {
            if (v && strcmp(v, "cpu") && strcmp(v, "ref") && strcmp(v, "cuda"))
                return gt_usage_error("doctor", "--backend '%s': use cpu, ref or cuda", v);
            cfg.backend = v;
        } else if (gt_flag(&a, "--quick")) {
            cfg.quick = 1;
        } else if (gt_opt(&a, "--threads", &v, &err)) {
            err |= !gt_parse_int(&a, "--threads", v, 1, 4096, &cfg.threads);
        } else if (gt_opt(&a, "--limit", &v, &err)) {
            err |= !gt_parse_double(&a, "--limit", v, 1.01, 1000, &cfg.limit);
        } else if (gt_opt(&a, "--link-limit", &v, &err)) {
            err |= !gt_parse_double(&a, "--link-limit", v, 1.01, 1000, &cfg.link_limit);
        } else if (gt_opt(&a, "--latency-limit", &v, &err)) {
            err |= !gt_parse_double(&a, "--latency-limit", v, 1.01, 1000, &cfg.latency_limit);
        } else if (gt_opt(&a, "--clock-limit", &v, &err)) {
            err |= !gt_parse_double(&a, "--clock-limit", v, 1.01, 1000, &cfg.clock_limit);
        } else if (gt_opt(&a, "--cpu-limit", &v, &err)) {
            err |= !gt_parse_double(&a, "--cpu-limit", v, 1.01, 1000, &cfg.cpu_limit);
        } else if (gt_opt(&a, "--layout", &v, &err)) {
            gt_train_grid g;
            if (v && gt_train_grid_parse(v, &g) != GT_OK)
                return gt_usage_error("doctor", "%s", gt_last_error());
            cfg.layout = v;
        } else if (gt_flag(&a, "--layout-only")) {
            cfg.layout_only = 1;
        } else if (gt_opt(&a, "--group-limit", &v, &err)) {
            err |= !gt_parse_double(&a, "--group-limit", v, 1.01, 1000, &cfg.group_limit);
        } else if (gt_opt(&a, "--layout-deadline", &v, &err)) {
            err |= !gt_parse_double(&a, "--layout-deadline", v, 0.01, 1e6,
                                    &cfg.layout_deadline_s);
        } else if (gt_flag(&a, "--one-look")) {
            cfg.one_look = 1;
        } else if (gt_opt(&a, "--report", &v, &err)) {
            report_path = v;
        } else if (gt_opt(&a, "--comm-timeout", &v, &err)) {
            err |= !gt_parse_double(&a, "--comm-timeout", v, 0.0, 1e7, &ccfg.timeout_s);
        } else if (gt_flag(&a, "--quiet")) {
            quiet = 1;
        } else if (argv[a.i][0] != '-') {
            return gt_usage_error("doctor", "unexpected argument '%s' (gauntlet doctor --help)",
                                  argv[a.i]);
        } else {
            return gt_unknown_option("doctor", argv[a.i], doctor_usage);
        }
    }
    if (err) return GT_EXIT_USAGE;
    if (cfg.layout_only && !cfg.layout)
        return gt_usage_error("doctor", "--layout-only needs --layout dp=D,tp=T,pp=P");
    cfg.slow_hosts = getenv("GT_FAULT_SLOW_HOST");
    cfg.slow_ranks = getenv("GT_FAULT_SLOW_RANK");
    /* a malformed fault spec is a usage error, before any rank starts work */
    if (gt_doctor_check_faults(cfg.slow_hosts, cfg.slow_ranks) != GT_OK)
        return gt_usage_error("doctor", "%s", gt_last_error());
    cfg.stall_ranks = getenv("GT_FAULT_STALL_RANK");
    if (gt_doctor_check_stall(cfg.stall_ranks) != GT_OK)
        return gt_usage_error("doctor", "%s", gt_last_error());

    gt_comm *comm = NULL;
    gt_status s = gt_comm_world(&ccfg, &comm);
    if (s != GT_OK) return gt_fail("doctor", s);
    int rank = gt_comm_rank(comm), n = gt_comm_size(comm);
    if (!layout_fits(cfg.layout, n)) { /* a usage error on every rank, said by rank 0 */
        int rc = rank == 0 ? gt_usage_error("doctor", "%s", gt_last_error()) : GT_EXIT_USAGE;
        gt_comm_free(comm);
        return rc;
    }
    if (cfg.threads == 0 && !strcmp(cfg.backend, "cpu")) cfg.threads = gt_default_threads(n);
    gt_report *rep = NULL;
    s = gt_report_new(rank == 0 ? report_path : NULL, argc + 1, argv - 1, &rep);
    if (s != GT_OK) {
        gt_comm_free(comm);
        return gt_fail("doctor", s);
    }
    gt_env env;
    int have_env = 0;
    if (rank == 0) {
        gt_env_collect(&env);
        gt_report_set_env(rep, &env, NULL);
        have_env = 1;
    }
    gt_report_binding(rank == 0 ? rep : NULL, comm);
    gt_report_job(rank == 0 ? rep : NULL, comm);
    gt_report_topology_layout(rank == 0 ? rep : NULL, n);
    /* SIGTERM / SIGINT: the report marked incomplete with the signal (signals.h) */
    gt_signals_report(rep);
    int32_t bad = 0;
    if (rank == 0 && report_path && gt_report_write(rep) != GT_OK) {
        fprintf(stderr, "gauntlet doctor: %s\n", gt_last_error());
        bad = 1;
    }
    s = gt_comm_allreduce(comm, &bad, &bad, 1, GT_DTYPE_INT32, GT_REDOP_MAX, NULL);
    int rc = GT_EXIT_OK, outliers = 0;
    if (s != GT_OK || bad) {
        rc = s != GT_OK ? gt_fail("doctor", s) : GT_EXIT_USAGE;
    } else {
        cfg.out = rank == 0 ? (quiet ? NULL : stdout) : NULL;
        FILE *verdict_out = rank == 0 ? stdout : NULL;
        gt_watchdog_report(rank == 0 ? rep : NULL, "doctor", "running", "", cfg.backend);
        s = gt_doctor_run(comm, &cfg, rank == 0 ? rep : NULL, &outliers);
        if (s != GT_OK) {
            fprintf(stderr, "gauntlet doctor: %s [%s]\n", gt_last_error(), gt_status_name(s));
            char why[1200];
            snprintf(why, sizeof why, "stopped early: %s", gt_last_error());
            gt_report_set_incomplete(rep, why);
            rc = GT_EXIT_USAGE;
        } else {
            int counts[GT_RESULT_STATUS_COUNT];
            gt_report_counts(rep, counts);
            rc = outliers || counts[GT_RESULT_FAIL] ? GT_EXIT_CHECK : GT_EXIT_OK;
            gt_report_finish(rep); /* every probe ran: the report is complete */
            if (verdict_out && quiet)
                fprintf(verdict_out, "gauntlet doctor: %d outlier(s)%s\n", outliers,
                        outliers ? " (gauntlet doctor without --quiet, or the report, names them)"
                                 : "");
        }
        if (rank == 0 && report_path) {
            if (gt_report_write(rep) != GT_OK) {
                fprintf(stderr, "gauntlet doctor: %s\n", gt_last_error());
                rc = GT_EXIT_USAGE;
            } else if (!quiet) {
                printf("report: %s\n", report_path);
            }
        }
        if (s != GT_OK && n > 1) {
            fflush(NULL);
            gt_comm_abort(comm, GT_EXIT_USAGE);
        }
    }
    if (have_env) gt_env_release(&env);
    gt_signals_report(NULL);
    gt_report_free(rep);
    gt_comm_free(comm);
    return rc;
}
