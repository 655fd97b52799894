/* gauntlet run SUITE: runs a suite on the world communicator and writes
 * the report. Today: collectives. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/comm.h"
#include "engine/env.h"
#include "engine/timer.h"
#include "harness/cli.h"
#include "reports/report.h"
#include "suites/collectives.h"

static void run_usage(FILE *f) {
    fprintf(f,
        "usage: gauntlet run collectives [options]\n"
        "       (under MPI: mpirun -np N gauntlet run collectives ...)\n"
        "\n"
        "nccl-tests' sweep through gauntlet's communicator, with the raw MPI call timed on\n"
        "the same buffers; every result is checked element by element.\n"
        "\n"
        "sizes (K, M, G suffixes: powers of 1024):\n"
        "  -b, --minbytes SIZE   first size (default 8)\n"
        "  -e, --maxbytes SIZE   last size (default 64M; 1M with --quick)\n"
        "  -f, --stepfactor N    multiply the size by N each step (default 2)\n"
        "  --quick               stop at 1 MiB (an explicit -e wins)\n"
        "selection (comma-separated):\n"
        "  --colls LIST          allreduce,reduce,broadcast,allgather,reduce_scatter,\n"
        "                        alltoall,sendrecv (default all)\n"
        "  --dtypes LIST         fp32,fp64,bf16,fp16,int32,int64 (default all)\n"
        "  --ops LIST            sum,avg,max,min (default all; reducing collectives only)\n"
        "                        by default fp32 sum runs at every size and the other\n"
        "                        dtype x op combinations up to 1 MiB; naming --dtypes or\n"
        "                        --ops runs every named combination at every size\n"
        "timing:\n"
        "  --iters N             timed iterations per block (default: adapt to ~5 ms)\n"
        "  --warmup N            warm-up iterations (default: adapt)\n"
        "  --reps N              timed blocks: min/median/max (default 5)\n"
        "  --root R              reduce / broadcast root (default 0)\n"
        "  --comm-timeout S      watchdog per operation in seconds (default 300; 0: none)\n"
        "output:\n"
        "  --report FILE         write the JSON report there (rank 0)\n"
        "  --quiet               no table, only the summary\n");
}

/* "8", "64K", "1M", "2G" (powers of 1024, as nccl-tests), optional "B"/"iB". */
static int parse_size(const gt_args *a, const char *name, const char *v, uint64_t *out) {
    if (!v) return 0;
    char *end = NULL;
    errno = 0;
    if (!isdigit((unsigned char)v[0])) goto bad;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v) goto bad;
    uint64_t mul = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': mul = 1ull << 10; end++; break;
    case 'M': mul = 1ull << 20; end++; break;
    case 'G': mul = 1ull << 30; end++; break;
    default: break;
    }
    if (mul > 1 && (*end == 'i' || *end == 'I')) end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end != '\0') goto bad;
    if (x == 0 || x > UINT64_MAX / mul) {
        fprintf(stderr, "gauntlet %s: %s %s is out of range (1 .. 2^64 bytes)\n", a->cmd, name,
                v);
        return 0;
    }
    *out = x * mul;
    return 1;
bad:
    fprintf(stderr, "gauntlet %s: %s expects a size such as 8, 64K, 1M or 2G, got '%s'\n",
            a->cmd, name, v);
    return 0;
}

typedef gt_status (*item_parser)(const char *name, int *out);
static gt_status parse_dtype_item(const char *s, int *out) {
    gt_dtype d;
    GT_TRY(gt_dtype_parse(s, &d));
    *out = (int)d;
    return GT_OK;
}
static gt_status parse_op_item(const char *s, int *out) {
    gt_redop o;
    GT_TRY(gt_redop_parse(s, &o));
    *out = (int)o;
    return GT_OK;
}
static gt_status parse_coll_item(const char *s, int *out) {
    gt_coll_test t;
    GT_TRY(gt_coll_test_parse(s, &t));
    *out = (int)t;
    return GT_OK;
}

/* Comma-separated names into a bit mask. */
static int parse_list(const char *name, const char *v, item_parser p, const char *choices,
                      unsigned *mask) {
    if (!v) return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", v);
    unsigned m = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int bit;
        if (p(tok, &bit) != GT_OK) {
            fprintf(stderr, "gauntlet run: %s: unknown '%s' (choose from %s)\n", name, tok,
                    choices);
            return 0;
        }
        m |= 1u << bit;
    }
    if (!m) {
        fprintf(stderr, "gauntlet run: %s needs at least one of %s\n", name, choices);
        return 0;
    }
    *mask = m;
    return 1;
}

static void human_size(char *buf, size_t n, uint64_t b) {
    if (b >= (1ull << 30) && b % (1ull << 30) == 0)
        snprintf(buf, n, "%llu GiB", (unsigned long long)(b >> 30));
    else if (b >= (1ull << 20) && b % (1ull << 20) == 0)
        snprintf(buf, n, "%llu MiB", (unsigned long long)(b >> 20));
    else if (b >= 1024 && b % 1024 == 0)
        snprintf(buf, n, "%llu KiB", (unsigned long long)(b >> 10));
    else
        snprintf(buf, n, "%llu B", (unsigned long long)b);
}

typedef struct writer {
    gt_report *rep;
    const char *path; /* NULL off rank 0 */
    double last;
    int failed;
} writer;

/* Keeps the report current while the sweep runs, at most every 2 s: the
 * full matrix has hundreds of results and each write is an fsync. */
static void write_progress(void *ctx) {
    writer *w = ctx;
    if (!w->path || w->failed) return;
    double now = gt_now_ns() * 1e-9;
    if (now - w->last < 2.0) return;
    w->last = now;
    if (gt_report_write(w->rep) != GT_OK) {
        fprintf(stderr, "gauntlet run: %s\n", gt_last_error());
        w->failed = 1;
    }
}

int gt_cmd_run(int argc, char **argv) {
    if (argc < 2) {
        run_usage(stderr);
        return GT_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        run_usage(stdout);
        return GT_EXIT_OK;
    }
    if (strcmp(argv[1], "collectives") != 0) {
        fprintf(stderr, "gauntlet run: suite '%s' is not available yet (available: "
                        "collectives)\n",
                argv[1]);
        return GT_EXIT_USAGE;
    }

    gt_coll_config cfg = gt_coll_defaults();
    gt_comm_config ccfg = gt_comm_defaults();
    gt_args a = {.argc = argc, .argv = argv, .i = 2, .cmd = "run"};
    const char *report_path = NULL, *v = NULL;
    int err = 0, quiet = 0, quick = 0, max_given = 0;
    static const char dtypes[] = "fp32,fp64,bf16,fp16,int32,int64";
    static const char ops[] = "sum,avg,max,min";
    static const char colls[] =
        "allreduce,reduce,broadcast,allgather,reduce_scatter,alltoall,sendrecv";
    while (a.i < argc && !err) {
        if (gt_flag(&a, "--help") || gt_flag(&a, "-h")) {
            run_usage(stdout);
            return GT_EXIT_OK;
        } else if (gt_opt(&a, "-b", &v, &err) || gt_opt(&a, "--minbytes", &v, &err)) {
            err |= !parse_size(&a, "-b", v, &cfg.min_bytes);
        } else if (gt_opt(&a, "-e", &v, &err) || gt_opt(&a, "--maxbytes", &v, &err)) {
            err |= !parse_size(&a, "-e", v, &cfg.max_bytes);
            max_given = 1;
        } else if (gt_opt(&a, "-f", &v, &err) || gt_opt(&a, "--stepfactor", &v, &err)) {
            err |= !gt_parse_int(&a, "-f", v, 2, 1 << 20, &cfg.step_factor);
        } else if (gt_flag(&a, "--quick")) {
            quick = 1;
        } else if (gt_opt(&a, "--colls", &v, &err)) {
            err |= !parse_list("--colls", v, parse_coll_item, colls, &cfg.colls);
        } else if (gt_opt(&a, "--dtypes", &v, &err)) {
            err |= !parse_list("--dtypes", v, parse_dtype_item, dtypes, &cfg.dtypes);
            cfg.full_matrix = 1;
        } else if (gt_opt(&a, "--ops", &v, &err)) {
            err |= !parse_list("--ops", v, parse_op_item, ops, &cfg.ops);
            cfg.full_matrix = 1;
        } else if (gt_opt(&a, "--iters", &v, &err)) {
            err |= !gt_parse_int(&a, "--iters", v, 1, 1000000, &cfg.iters);
        } else if (gt_opt(&a, "--warmup", &v, &err)) {
            err |= !gt_parse_int(&a, "--warmup", v, 0, 1000000, &cfg.warmup);
        } else if (gt_opt(&a, "--reps", &v, &err)) {
            err |= !gt_parse_int(&a, "--reps", v, 1, 32, &cfg.reps);
        } else if (gt_opt(&a, "--root", &v, &err)) {
            err |= !gt_parse_int(&a, "--root", v, 0, 1 << 30, &cfg.root);
        } else if (gt_opt(&a, "--comm-timeout", &v, &err)) {
            err |= !gt_parse_double(&a, "--comm-timeout", v, 0.0, 1e7, &ccfg.timeout_s);
        } else if (gt_opt(&a, "--report", &v, &err)) {
            report_path = v;
        } else if (gt_flag(&a, "--quiet")) {
            quiet = 1;
        } else {
            fprintf(stderr, "gauntlet run: unknown option '%s' (gauntlet run --help lists "
                            "them)\n",
                    argv[a.i]);
            return GT_EXIT_USAGE;
        }
    }
    if (err) return GT_EXIT_USAGE;
    if (quick && !max_given) cfg.max_bytes = GT_COLL_MATRIX_MAX_BYTES;
    if (cfg.max_bytes < cfg.min_bytes)
        return gt_usage_error("run", "-e %llu is below -b %llu",
                              (unsigned long long)cfg.max_bytes,
                              (unsigned long long)cfg.min_bytes);

    gt_comm *comm = NULL;
    gt_status s = gt_comm_world(&ccfg, &comm);
    if (s != GT_OK) return gt_fail("run", s);
    int rank = gt_comm_rank(comm), n = gt_comm_size(comm);
    if (cfg.root >= n) {
        gt_comm_free(comm);
        return gt_usage_error("run", "--root %d: there are only %d ranks", cfg.root, n);
    }
    /* Every rank builds the same results (values are reduced across ranks),
     * so every rank knows the exit code; rank 0 alone writes the file. */
    const char *path = rank == 0 ? report_path : NULL;
    gt_report *rep = NULL;
    s = gt_report_new(path, argc + 1, argv - 1, &rep);
    if (s != GT_OK) {
        gt_comm_free(comm);
        return gt_fail("run", s);
    }
    gt_env env;
    int have_env = 0;
    if (rank == 0) {
        gt_env_collect(&env);
        gt_report_set_env(rep, &env, NULL);
        have_env = 1;
    }
    /* fail early on an unwritable destination, and tell every rank */
    int32_t bad = 0;
    if (path && gt_report_write(rep) != GT_OK) {
        fprintf(stderr, "gauntlet run: %s\n", gt_last_error());
        bad = 1;
    }
    s = gt_comm_allreduce(comm, &bad, &bad, 1, GT_DTYPE_INT32, GT_REDOP_MAX, NULL);
    if (s != GT_OK || bad) {
        int rc = s != GT_OK ? gt_fail("run", s) : GT_EXIT_USAGE;
        if (have_env) gt_env_release(&env);
        gt_report_free(rep);
        gt_comm_free(comm);
        return rc;
    }

    if (rank == 0) {
        char lo[32], hi[32];
        human_size(lo, sizeof lo, cfg.min_bytes);
        human_size(hi, sizeof hi, cfg.max_bytes);
        printf("gauntlet run collectives: %d rank%s, backend %s (%s), sizes %s .. %s x%d%s\n",
               n, n == 1 ? "" : "s", gt_comm_backend_name(comm), gt_comm_library_version(comm),
               lo, hi, cfg.step_factor,
               cfg.full_matrix ? ", every named dtype x op at every size"
                               : ", fp32 sum at every size, other dtype x op up to 1 MiB");
        fflush(stdout);
    }
    writer w = {.rep = rep, .path = path, .last = gt_now_ns() * 1e-9};
    cfg.out = rank == 0 && !quiet ? stdout : NULL;
    cfg.on_result = write_progress;
    cfg.on_result_ctx = &w;
    gt_coll_summary sum;
    {
        char topo[16];
        snprintf(topo, sizeof topo, "%d", n);
        gt_watchdog_report(path ? rep : NULL, "collectives", "in progress", topo,
                           gt_comm_backend_name(comm));
    }
    s = gt_coll_run(comm, &cfg, rep, &sum);

    int rc = GT_EXIT_OK;
    if (s != GT_OK) {
        fprintf(stderr, "gauntlet run: %s [%s]\n", gt_last_error(), gt_status_name(s));
        rc = GT_EXIT_USAGE;
    }
    if (path) {
        if (gt_report_write(rep) != GT_OK) {
            fprintf(stderr, "gauntlet run: %s\n", gt_last_error());
            rc = GT_EXIT_USAGE;
        } else if (!quiet && s == GT_OK) {
            printf("report: %s\n", path);
        }
    }
    if (s == GT_ERR_TIMEOUT || (s == GT_ERR_COMM && n > 1)) {
        /* The other ranks may be blocked in an operation this rank left:
         * only an abort ends them. The report already holds what finished. */
        fflush(stdout);
        fflush(stderr);
        gt_comm_abort(comm, GT_EXIT_USAGE);
    }
    int counts[GT_RESULT_STATUS_COUNT];
    gt_report_counts(rep, counts);
    if (rc == GT_EXIT_OK) {
        if (counts[GT_RESULT_ERROR]) rc = GT_EXIT_USAGE;
        else if (counts[GT_RESULT_FAIL]) rc = GT_EXIT_CHECK;
    }
    if (rank == 0 && s == GT_OK) {
        printf("summary: %d results: %d pass, %d fail, %d skip, %d error; wrong elements %lld",
               sum.results, counts[GT_RESULT_PASS], counts[GT_RESULT_FAIL],
               counts[GT_RESULT_SKIP], counts[GT_RESULT_ERROR], sum.wrong);
        if (sum.overhead_checked)
            printf("; busbw vs raw >= %.3f", sum.min_overhead_ratio);
        printf("\nchecks: %s\n", rc == GT_EXIT_OK ? "all passed" : "FAILED");
    }
    if (have_env) gt_env_release(&env);
    gt_report_free(rep);
    gt_comm_free(comm);
    return rc;
}
