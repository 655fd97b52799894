/* suites.interface.cpu: the kernels, memory and health suites through the
 * gt_suite interface, as `gauntlet run` drives them (self communicator,
 * quick effort, cpu backend), with their results asserted:
 *   - every kernels result passes conformance and carries timing metrics
 *     with samples (each host sample with its wait for a CPU beside it), and
 *     no fraction_of_peak above 1 (each memory-bound one
 *     with the memory level it was judged against);
 *   - an injected delay "gelu_fwd:3000" raises gelu_fwd's median time_us by
 *     at least 3000 us (the fault the gate's own test relies on);
 *   - the memory suite's checks pass;
 *   - the health suite's metrics are positive, its MPI cases skipped on 1 rank;
 *   - the train suite's case filter selects by full name, short name (that case
 *     of every model) and the name a cross_backend result carries, the same way
 *     for gpt2, mlp and convnet; every resume case passes its two checks and
 *     leaves nothing behind in $TMPDIR.
 * The report API writes and never reads, so the report goes to a temporary
 * file that this test reads back with jansson (as reports/tests do). */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/comm.h"
#include "engine/ops.h"
#include "engine/timer.h"
#include "reports/report.h"
#include "suites/cpu_share.h"
#include "suites/suite.h"
#include "suites/tests/expect.h"


static void count_done(void *ctx, gt_result *res) {
    (void)res;
    (*(int *)ctx)++;
}

/* Runs `suite` into a fresh report and returns the report's JSON (caller
 * json_decref's). *ndone: case_done calls. */
static json_t *run_suite(const gt_suite *suite, gt_comm *comm, const char *filter,
                         const char *delay, int *ndone) {
    char path[] = "/tmp/gt_suites_test_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        exit(2);
    }
    close(fd);
    char *argv[] = {"suites_test", NULL};
    gt_report *rep = NULL;
    if (gt_report_new(path, 1, argv, &rep) != GT_OK) {
        fprintf(stderr, "gt_report_new: %s\n", gt_last_error());
        exit(2);
    }
    *ndone = 0;
    gt_suite_ctx ctx = {.comm = comm,
                        .backend = "cpu",
                        .threads = 0,
                        .effort = GT_EFFORT_QUICK,
                        .case_filter = filter,
                        .rep = rep,
                        .topology = "1",
                        .out = stdout,
                        .inject_delay = delay,
                        .case_done = count_done,
                        .case_done_ctx = ndone};
    uint64_t t0 = gt_now_ns();
    gt_status s = suite->run(&ctx);
    printf("-- suite %s%s%s%s: %.1f s\n", suite->name, filter ? " filter " : "",
           filter ? filter : "", delay ? " (delay injected)" : "",
           (double)(gt_now_ns() - t0) * 1e-9);
    EXPECT(s == GT_OK, "%s run: %s: %s", suite->name, gt_status_name(s), gt_last_error());
    EXPECT(gt_report_write(rep) == GT_OK, "report write: %s", gt_last_error());
    gt_report_free(rep);
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    unlink(path);
    if (!root) {
        fprintf(stderr, "cannot read the report back: %s\n", err.text);
        exit(2);
    }
    return root;
}

static json_t *results(json_t *root) { return json_object_get(root, "results"); }
static const char *str(json_t *o, const char *k) {
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

static json_t *check_named(json_t *res, const char *name) {
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(res, "checks"), i, c) if (!strcmp(str(c, "name"), name)) return c;
    return NULL;
}

/* median of metric `name` of the result of case `case_name`, -1 if absent */
static double median_of(json_t *root, const char *case_name, const char *name) {
    size_t i;
    json_t *r;
    json_array_foreach(results(root), i, r) if (!strcmp(str(r, "case"), case_name)) {
        json_t *m = json_object_get(json_object_get(r, "metrics"), name);
        json_t *med = json_object_get(m, "median");
        return med ? json_number_value(med) : -1.0;
    }
    return -1.0;
}

static void test_kernels(gt_comm *comm) {
    int ndone = 0;
    json_t *root = run_suite(&gt_suite_kernels, comm, NULL, NULL, &ndone);
    size_t i, nres = json_array_size(results(root));
    json_t *r;
    EXPECT(nres >= (size_t)GT_OP_COUNT * 3, "kernels: %zu results, want >= 3 per op", nres);
    EXPECT((size_t)ndone == nres, "kernels: case_done called %d times for %zu results", ndone, nres);
    json_array_foreach(results(root), i, r) {
        const char *c = str(r, "case");
        EXPECT(!strcmp(str(r, "suite"), "kernels"), "%s: suite '%s'", c, str(r, "suite"));
        EXPECT(!strcmp(str(r, "status"), "pass"), "%s: status %s (%s)", c, str(r, "status"),
               str(r, "message"));
        json_t *ck = check_named(r, "conformance");
        EXPECT(ck && json_is_true(json_object_get(ck, "passed")), "%s: conformance check", c);
        json_t *ms = json_object_get(r, "metrics");
        EXPECT(json_object_get(ms, "max_abs_err") && json_object_get(ms, "max_rel_err"),
               "%s: error metrics", c);
        static const char *const timed[] = {"time_us", "gflops", "gbps"};
        /* The sampling rule (suites/kernels.c): 10 samples, or at least 3 once
         * 5 time caps (quick: 0.2 s) went by, for ops slower than a tenth of
         * the cap (attention under ASan on a loaded machine). */
        double t_us = json_number_value(json_object_get(json_object_get(ms, "time_us"), "value"));
        for (int k = 0; k < 3; k++) {
            json_t *m = json_object_get(ms, timed[k]);
            size_t n = json_array_size(json_object_get(m, "samples"));
            int slow_op = n >= 3 && t_us * (double)n >= 0.9e6;
            EXPECT(m && (n >= 10 || slow_op), "%s: metric %s with %zu samples of %.0f us", c,
                   timed[k], n, t_us);
            EXPECT(json_number_value(json_object_get(m, "value")) > 0, "%s: %s > 0", c, timed[k]);
            /* host timing in 5 rounds spread over the run, the same number of samples
             * each (suites/kernels.c, "Rounds"): compare's 5 blocks are the rounds */
            EXPECT(n >= 5 && n % 5 == 0, "%s: %s has %zu samples, not 5 equal rounds", c,
                   timed[k], n);
        }
        /* each host-timed sample's wait for a CPU beside it (suites/kernels.c,
         * ks_sample): as many as the samples, none negative, and on Linux
         * (/proc/self/task) every one known */
        json_t *tm = json_object_get(ms, "time_us"), *cw = json_object_get(tm, "cpu_wait");
        EXPECT(json_array_size(cw) == json_array_size(json_object_get(tm, "samples")),
               "%s: %zu cpu_wait beside %zu samples", c, json_array_size(cw),
               json_array_size(json_object_get(tm, "samples")));
        size_t wi;
        json_t *wv;
        json_array_foreach(cw, wi, wv) EXPECT(json_is_number(wv) && json_number_value(wv) >= 0,
                                              "%s: cpu_wait[%zu] not a share", c, wi);
        EXPECT(json_object_get(ms, "fraction_of_peak"), "%s: fraction_of_peak", c);
        /* Honest peaks (docs/suites.md, "Peaks"): no fraction above 1, hot or
         * cold; a memory-bound case names its level; a rate above the probe's
         * peak is flagged and becomes the peak. */
        const char *k;
        json_t *m;
        json_object_foreach(ms, k, m) {
            if (strncmp(k, "fraction_of_peak", 16) != 0) continue;
            double f = json_number_value(json_object_get(m, "value"));
            EXPECT(f > 0 && f <= 1.0, "%s: %s = %.3f, not in (0, 1]", c, k, f);
        }
        if (!strcmp(str(json_object_get(r, "params"), "bound"), "memory")) {
            json_t *lv = json_object_get(ms, "peak_level");
            double l = json_number_value(json_object_get(lv, "value"));
            EXPECT(lv && l >= 0 && l <= 3, "%s: peak_level %g", c, l);
            /* the working set that picked the level: distinct bytes, never more than moved */
            json_t *ws = json_object_get(ms, "working_set");
            double w = json_number_value(json_object_get(ws, "value"));
            double gb = json_number_value(json_object_get(json_object_get(ms, "gbps"), "value"));
            double us = json_number_value(json_object_get(json_object_get(ms, "time_us"), "value"));
            double moved = gb * us * 1e3;
            EXPECT(ws && w > 0 && w <= moved * (1 + 1e-6), "%s: working_set %g, bytes moved %g", c,
                   w, moved);
            if (!strcmp(c, "residual_bwd/fp32/n786432"))
                EXPECT(w == 3.0 * 4 * 786432,
                       "%s: working_set %g: dout, da and db once each (da, db in place)", c, w);
            if (!strcmp(c, "encoder_fwd/fp32/B4_T64_C768_V1024"))
                EXPECT(w == 4.0 * (256 + 64 + 256) * 768 + 4.0 * 256,
                       "%s: working_set %g: 256 wte rows at most, wpe's 64 rows once, out, ids",
                       c, w);
        }
        json_t *ex = json_object_get(ms, "peak_exceeded");
        if (ex) {
            double rate = json_number_value(json_object_get(json_object_get(ms, "gbps"), "value"));
            if (!strcmp(str(json_object_get(r, "params"), "bound"), "compute"))
                rate = json_number_value(json_object_get(json_object_get(ms, "gflops"), "value"));
            double pk = json_number_value(json_object_get(json_object_get(ms, "peak"), "value"));
            EXPECT(json_number_value(json_object_get(ex, "value")) > 1.0 &&
                       fabs(pk - rate) <= 1e-9 * rate,
                   "%s: peak_exceeded, yet the peak %g is not the case's rate %g", c, pk, rate);
            printf("note: %s exceeded its probe's peak by %.2fx\n", c,
                   json_number_value(json_object_get(ex, "value")));
        }
        EXPECT(json_object_get(json_object_get(r, "params"), "dtype"), "%s: dtype param", c);
    }
    json_decref(root);
}

/* The baseline is measured just before, on a small shape (~0.4 us a call),
 * so that the machine's noise (other processes on 2 cores) cannot hide or
 * fake 3 ms; every gelu_fwd shape must also show the 3 ms floor. */
static void test_delay(gt_comm *comm) {
    const char *small = "gelu_fwd/fp32/n65";
    int ndone = 0;
    json_t *base = run_suite(&gt_suite_kernels, comm, small, NULL, &ndone);
    EXPECT(ndone == 1, "filter %s: %d results", small, ndone);
    json_t *slow = run_suite(&gt_suite_kernels, comm, "gelu_fwd", "gelu_fwd:3000", &ndone);
    size_t i;
    json_t *r;
    EXPECT(json_array_size(results(slow)) >= 3, "delay: %zu gelu_fwd results",
           json_array_size(results(slow)));
    json_array_foreach(results(slow), i, r) {
        const char *c = str(r, "case");
        EXPECT(!strncmp(c, "gelu_fwd/", 9), "delay: filter let %s through", c);
        double t1 = median_of(slow, c, "time_us");
        EXPECT(t1 >= 3000.0, "delay: %s median %.1f us, want >= 3000", c, t1);
    }
    double t0 = median_of(base, small, "time_us"), t1 = median_of(slow, small, "time_us");
    printf("   %s: median %.1f us -> %.1f us with the delay\n", small, t0, t1);
    EXPECT(t0 > 0 && t1 >= t0 + 3000.0, "delay: %s median %.1f -> %.1f us, want +3000", small, t0,
           t1);
    json_decref(base);
    json_decref(slow);
}

static void all_checks_pass(json_t *root, const char *suite) {
    size_t i, j;
    json_t *r, *c;
    json_array_foreach(results(root), i, r) {
        EXPECT(!strcmp(str(r, "status"), "pass"), "%s/%s: status %s (%s)", suite, str(r, "case"),
               str(r, "status"), str(r, "message"));
        EXPECT(json_array_size(json_object_get(r, "checks")) > 0, "%s/%s: no checks", suite,
               str(r, "case"));
        json_array_foreach(json_object_get(r, "checks"), j, c)
            EXPECT(json_is_true(json_object_get(c, "passed")), "%s/%s: check %s failed (%g > %g)",
                   suite, str(r, "case"), str(c, "name"),
                   json_number_value(json_object_get(c, "value")),
                   json_number_value(json_object_get(c, "limit")));
    }
}

static void test_memory(gt_comm *comm) {
    int ndone = 0;
    json_t *root = run_suite(&gt_suite_memory, comm, NULL, NULL, &ndone);
    EXPECT(json_array_size(results(root)) == 2, "memory: %zu results",
           json_array_size(results(root)));
    all_checks_pass(root, "memory");
    double frag = -1;
    size_t i;
    json_t *r;
    json_array_foreach(results(root), i, r) if (!strcmp(str(r, "case"), "allocator_stress")) {
        json_t *ms = json_object_get(r, "metrics");
        frag = json_number_value(json_object_get(json_object_get(ms, "fragmentation_max"), "value"));
        EXPECT(json_number_value(json_object_get(json_object_get(ms, "raw_allocs"), "value")) > 0,
               "memory: no raw allocations at all");
    }
    EXPECT(frag >= 0.0 && frag <= 1.0, "memory: fragmentation_max %g", frag);
    json_decref(root);
}

static void test_health(gt_comm *comm) {
    int ndone = 0;
    json_t *root = run_suite(&gt_suite_health, comm, NULL, NULL, &ndone);
    size_t i;
    const char *k;
    json_t *r, *m;
    int measured = 0;
    json_array_foreach(results(root), i, r) {
        const char *c = str(r, "case");
        if (!strncmp(c, "mpi_", 4) || !strcmp(c, "gpu_clocks")) {
            EXPECT(!strcmp(str(r, "status"), "skip"), "health/%s: %s on 1 rank / cpu", c,
                   str(r, "status"));
            continue;
        }
        EXPECT(!strcmp(str(r, "status"), "pass"), "health/%s: %s (%s)", c, str(r, "status"),
               str(r, "message"));
        json_object_foreach(json_object_get(r, "metrics"), k, m) {
            if (!strcmp(k, "rank_spread")) continue;
            EXPECT(json_number_value(json_object_get(m, "value")) > 0, "health/%s: %s = %g", c, k,
                   json_number_value(json_object_get(m, "value")));
            measured++;
        }
    }
    EXPECT(measured >= 5, "health: %d metrics", measured);
    json_decref(root);
}

/* Runs the train suite with `filter` and checks that exactly the cases in
 * `want` (NULL-terminated, in order) came out, none of them failed or in
 * error (a skip is fine: bf16 on cpu). Returns the report (caller frees). */
static json_t *train_filter(gt_comm *comm, const char *filter, const char *const *want) {
    int ndone = 0;
    json_t *root = run_suite(&gt_suite_train, comm, filter, NULL, &ndone);
    size_t i, n = 0;
    json_t *r;
    while (want[n]) n++;
    EXPECT(json_array_size(results(root)) == n, "train filter '%s': %zu results, want %zu",
           filter, json_array_size(results(root)), n);
    json_array_foreach(results(root), i, r) {
        const char *c = str(r, "case");
        EXPECT(i < n && !strcmp(c, want[i]), "train filter '%s': result %zu is %s, want %s",
               filter, i, c, i < n ? want[i] : "none");
        EXPECT(!strcmp(str(r, "status"), "pass") || !strcmp(str(r, "status"), "skip"),
               "train/%s: %s (%s)", c, str(r, "status"), str(r, "message"));
    }
    return root;
}

static void test_train(gt_comm *comm) {
    /* the resume cases' checkpoint directories go to a $TMPDIR of our own,
     * which must be empty again afterwards */
    char tmp[] = "/tmp/gt_suites_test_tmp_XXXXXX";
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        exit(2);
    }
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("TMPDIR", tmp, 1);

    static const char *const resume[] = {"gpt2-tiny/resume", "mlp-tiny/resume",
                                         "convnet-tiny/resume", NULL};
    json_t *root = train_filter(comm, "resume", resume);
    all_checks_pass(root, "train");
    size_t i;
    json_t *r;
    json_array_foreach(results(root), i, r) {
        const char *c = str(r, "case");
        EXPECT(check_named(r, "resumed_losses") && check_named(r, "resumed_weights"),
               "train/%s: no resumed_losses / resumed_weights check", c);
        EXPECT(json_integer_value(json_object_get(json_object_get(r, "params"),
                                                  "resume_at_step")) > 0,
               "train/%s: no resume_at_step param", c);
    }
    json_decref(root);

    /* full and short names alike for every model */
    static const char *const mlp_resume[] = {"mlp-tiny/resume", NULL};
    json_decref(train_filter(comm, "mlp-tiny/resume", mlp_resume));
    static const char *const gpt2_r2r[] = {"gpt2-tiny/run_to_run", NULL};
    json_decref(train_filter(comm, "gpt2-tiny/run_to_run", gpt2_r2r));
    static const char *const r2r[] = {"gpt2-tiny/run_to_run", "mlp-tiny/run_to_run",
                                      "convnet-tiny/run_to_run", NULL};
    json_decref(train_filter(comm, "run_to_run", r2r));
    static const char *const gpt2_topo[] = {"gpt2-tiny/topology", NULL};
    json_decref(train_filter(comm, "gpt2-tiny/topology", gpt2_topo));
    static const char *const conv_cb[] = {"convnet-tiny/cross_backend_vs_ref", NULL};
    json_decref(train_filter(comm, "convnet-tiny/cross_backend", conv_cb));
    json_decref(train_filter(comm, "convnet-tiny/cross_backend_vs_ref", conv_cb));
    static const char *const bf16[] = {"gpt2-tiny/precision_bf16", NULL};
    json_decref(train_filter(comm, "gpt2-tiny/precision_bf16", bf16));
    static const char *const all_bf16[] = {"gpt2-tiny/precision_bf16", "mlp-tiny/precision_bf16",
                                           "convnet-tiny/precision_bf16", NULL};
    json_decref(train_filter(comm, "precision_bf16", all_bf16));
    static const char *const conv_fp16[] = {"convnet-tiny/precision_fp16", NULL};
    json_decref(train_filter(comm, "convnet-tiny/precision_fp16", conv_fp16));
    /* gpt2's alone: the short name runs it once; mlp has no such case */
    static const char *const rc[] = {"gpt2-tiny/recompute", NULL};
    root = train_filter(comm, "recompute", rc);
    all_checks_pass(root, "train");
    r = json_array_get(results(root), 0);
    json_t *rm = r ? json_object_get(r, "metrics") : NULL;
    EXPECT(r && check_named(r, "recompute_bitwise") && json_object_get(rm, "recompute_overhead") &&
               json_object_get(rm, "ms_per_step_none") &&
               json_number_value(
                   json_object_get(json_object_get(rm, "activation_bytes_none"), "value")) >
                   json_number_value(
                       json_object_get(json_object_get(rm, "activation_bytes"), "value")),
           "train/gpt2-tiny/recompute: check, overhead or activation bytes missing");
    /* its identity (params) is the same in a second run: a measured figure
     * there made every run a new case, which the gate calls MISSING */
    json_t *again = train_filter(comm, "recompute", rc);
    json_t *r2 = json_array_get(results(again), 0);
    EXPECT(r && r2 && json_equal(json_object_get(r, "params"), json_object_get(r2, "params")),
           "train/gpt2-tiny/recompute: params differ between two runs of one build");
    json_decref(again);
    /* the node's record of the run beside its steps, not gated */
    for (int k = 0; k < 2; k++) {
        const char *nm = k ? "cpu_idle_cores" : "cpu_others_cores";
        json_t *nmj = json_object_get(rm, nm), *v = json_object_get(nmj, "value");
        EXPECT(json_is_number(v) && json_number_value(v) >= 0 &&
                   json_is_false(json_object_get(nmj, "gate")),
               "train/gpt2-tiny/recompute: %s not a number of cores, or gated", nm);
    }
    json_decref(root);
    /* --full cases named at a lower effort: a skip result that says why */
    static const char *const ttt[] = {"mlp-small/time_to_target", NULL};
    root = train_filter(comm, "mlp-small/time_to_target", ttt);
    r = json_array_get(results(root), 0);
    EXPECT(r && !strcmp(str(r, "status"), "skip") && strstr(str(r, "message"), "--full"),
           "mlp-small/time_to_target below --full: %s (%s)", r ? str(r, "status") : "none",
           r ? str(r, "message") : "");
    json_decref(root);
    static const char *const none[] = {NULL};
    json_decref(train_filter(comm, "convnet-tiny/precision_bf8", none));
    json_decref(train_filter(comm, "mlp-tiny/run_to_run/", none));
    json_decref(train_filter(comm, "mlp-tiny/recompute", none));
    json_decref(train_filter(comm, "tiny/resume", none));

    DIR *d = opendir(tmp);
    int left = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            fprintf(stderr, "left behind: %s/%s\n", tmp, e->d_name);
            left++;
        }
    if (d) closedir(d);
    EXPECT(d && left == 0, "train/resume: %d entries left in $TMPDIR %s", left, tmp);
    if (saved) {
        setenv("TMPDIR", saved, 1);
        free(saved);
    } else {
        unsetenv("TMPDIR");
    }
    rmdir(tmp);
}

static void sleep_s(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* A child that spins for `s` seconds: this executable (fork) or another
 * (/bin/sh's loop); its pid. */
static pid_t spin_child(int other_exe, double s) {
    pid_t p = fork();
    if (p != 0) return p;
    if (other_exe) {
        execl("/bin/sh", "sh", "-c", "while :; do :; done", (char *)NULL);
        _exit(127);
    }
    uint64_t end = gt_now_ns() + (uint64_t)(s * 1e9);
    volatile unsigned x = 0;
    while (gt_now_ns() < end)
        x++;
    _exit(0);
}

/* The node's CPU record (suites/cpu_share.h): a busy process of another
 * executable is another's (at least a fifth of a core over a second, on a
 * machine that other tests share); one of this executable is the job's own
 * (its time counted in own_s, not in others). */
static void test_node_cpu(void) {
    gt_node_cpu a, b;
    double others, idle;
    gt_node_cpu_now(&a);
    pid_t p = spin_child(1, 1.0);
    sleep_s(1.0);
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    gt_node_cpu_now(&b);
    EXPECT(gt_node_cpu_between(&a, &b, &others, &idle) && others >= 0.2 && idle >= 0,
           "node cpu: a busy /bin/sh loop for 1 s read as %.2f other cores (%.2f idle)", others,
           idle);
    gt_node_cpu_now(&a);
    p = spin_child(0, 1.0);
    sleep_s(0.5);
    gt_node_cpu_now(&b); /* the child still runs: its time is in this sample */
    waitpid(p, NULL, 0);
    EXPECT(b.own_s - a.own_s >= 0.1,
           "node cpu: a busy child of this executable added %.2f s "
           "of its own time in 0.5 s",
           b.own_s - a.own_s);
    gt_node_load_mark();
    EXPECT(gt_node_load_since(1.0, &others, &idle) && others >= 0 && idle >= 0,
           "node load since a mark: %.2f others, %.2f idle", others, idle);
}

int main(void) {
    gt_comm_config cfg = gt_comm_defaults();
    cfg.backend = "self";
    gt_comm *comm = NULL;
    if (gt_comm_world(&cfg, &comm) != GT_OK) {
        fprintf(stderr, "gt_comm_world: %s\n", gt_last_error());
        return 2;
    }
    uint64_t t0 = gt_now_ns();
    test_node_cpu();
    test_kernels(comm);
    test_delay(comm);
    test_memory(comm);
    test_health(comm);
    test_train(comm);
    gt_comm_free(comm);
    printf("suites_test: %d failure(s), %.1f s\n", g_fails, (double)(gt_now_ns() - t0) * 1e-9);
    return g_fails ? 1 : 0;
}
