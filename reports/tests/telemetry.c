/* Per-result GPU telemetry (reports.telemetry.host): synthetic readings
 * written by gt_result_telemetry come back from the file field by field,
 * unknown values as null; the validator (report_check, argv[1]) accepts the
 * report and rejects a mistyped reading; a report without telemetry and one
 * with it compare with each other both ways (old reports still load); and
 * gt_env_gpu_sample, where this machine has an NVML GPU, gives a sane
 * reading (elsewhere it answers 0 without setting an error). */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/tests/check.h"
#include "reports/compare.h"
#include "reports/report.h"

static char g_dir[64];

static void path_of(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", g_dir, name);
}

static gt_report *new_report(const char *path) {
    char *argv[] = {"gauntlet", "run", "collectives"};
    gt_report *rep = NULL;
    CHECK_OK(gt_report_new(path, 3, argv, &rep));
    gt_env env;
    memset(&env, 0, sizeof env);
    snprintf(env.host, sizeof env.host, "testhost");
    snprintf(env.os, sizeof env.os, "Linux");
    snprintf(env.cpu_model, sizeof env.cpu_model, "cpu");
    snprintf(env.compiler, sizeof env.compiler, "cc");
    snprintf(env.blas, sizeof env.blas, "none");
    snprintf(env.git_revision, sizeof env.git_revision, "unknown");
    env.cpu_logical = 2;
    gt_report_set_env(rep, &env, NULL);
    return rep;
}

static gt_result *add(gt_report *rep, const char *case_name) {
    gt_result *res = gt_report_add_result(rep, "collectives", case_name, "2", "cuda");
    gt_result_metric(res, "busbw_1048576", "GB/s", 1, 100.0, NULL, 0);
    gt_result_check(res, "wrong_elements", 1, 0, 0, NULL);
    return res;
}

static json_t *tel_of(json_t *root, size_t i) {
    return json_object_get(json_array_get(json_object_get(root, "results"), i), "telemetry");
}

static int run_check(const char *tool, const char *file, const char *opt) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "'%s' '%s' %s >/dev/null 2>&1", tool, file, opt);
    int rc = system(cmd);
    return rc == -1 ? -1 : WEXITSTATUS(rc);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s REPORT_CHECK\n", argv[0]);
        return 2;
    }
    snprintf(g_dir, sizeof g_dir, "/tmp/gt-telemetry-XXXXXX");
    if (!mkdtemp(g_dir)) return 2;
    char with[128], without[128], bad[128];
    path_of(with, sizeof with, "with.json");
    path_of(without, sizeof without, "without.json");
    path_of(bad, sizeof bad, "bad.json");

    /* the report an older gauntlet writes: no telemetry anywhere */
    gt_report *old = new_report(without);
    add(old, "allreduce/fp32/sum");
    add(old, "broadcast/fp32");
    gt_report_finish(old); /* a finished run: compare takes it as BASE */
    CHECK_OK(gt_report_write(old));
    gt_report_free(old);

    gt_report *rep = new_report(with);
    gt_gpu_sample a = {.index = 3,
                       .t_unix = 1795000000.25,
                       .sm_clock_mhz = 1980,
                       .mem_clock_mhz = 2619,
                       .temperature_c = 41,
                       .power_w = 312.5,
                       .has_throttle = 1,
                       .throttle_reasons = 0x4};
    snprintf(a.uuid, sizeof a.uuid, "GPU-01234567-89ab-cdef-0123-456789abcdef");
    snprintf(a.throttle_names, sizeof a.throttle_names, "sw_power_cap");
    gt_gpu_sample b = a;
    b.t_unix += 2;
    b.sm_clock_mhz = 1755;
    b.temperature_c = 63;
    b.throttle_reasons = 0x24;
    snprintf(b.throttle_names, sizeof b.throttle_names, "sw_power_cap,sw_thermal");
    gt_gpu_sample unknown = {.index = 0,
                             .t_unix = 0,
                             .sm_clock_mhz = -1,
                             .mem_clock_mhz = -1,
                             .temperature_c = -1,
                             .power_w = -1};
    gt_result_telemetry(add(rep, "allreduce/fp32/sum"), &a, &b);
    gt_result_telemetry(add(rep, "broadcast/fp32"), NULL, &unknown);
    add(rep, "alltoall/fp32");
    gt_result_telemetry(gt_report_result_at(rep, 2), NULL, NULL); /* nothing: stays absent */
    CHECK(gt_report_result_count(rep) == 3, "count %zu", gt_report_result_count(rep));
    CHECK(gt_report_result_at(rep, 3) == NULL, "past the end is NULL");
    gt_report_finish(rep);
    CHECK_OK(gt_report_write(rep));
    gt_report_free(rep);

    json_error_t err;
    json_t *root = json_load_file(with, 0, &err);
    CHECK(root != NULL, "reload: %s", err.text);
    if (root) {
        json_t *t = tel_of(root, 0), *s = json_object_get(t, "start"),
               *e = json_object_get(t, "end");
        CHECK(json_integer_value(json_object_get(t, "gpu_index")) == 3, "gpu_index");
        CHECK(!strcmp(json_string_value(json_object_get(t, "uuid")), a.uuid), "uuid");
        CHECK(json_integer_value(json_object_get(s, "sm_clock_mhz")) == 1980, "start sm clock");
        CHECK(json_integer_value(json_object_get(s, "mem_clock_mhz")) == 2619, "start mem clock");
        CHECK(json_integer_value(json_object_get(s, "temperature_c")) == 41, "start temp");
        CHECK(json_real_value(json_object_get(s, "power_w")) == 312.5, "start power");
        CHECK(json_real_value(json_object_get(s, "t_unix")) == a.t_unix, "start time");
        CHECK(!strcmp(json_string_value(json_object_get(s, "throttle_reasons")), "0x4"),
              "start throttle");
        CHECK(
            !strcmp(json_string_value(json_object_get(s, "throttle_reason_names")), "sw_power_cap"),
            "start throttle names");
        CHECK(json_integer_value(json_object_get(e, "sm_clock_mhz")) == 1755, "end sm clock");
        CHECK(json_integer_value(json_object_get(e, "temperature_c")) == 63, "end temp");
        CHECK(!strcmp(json_string_value(json_object_get(e, "throttle_reasons")), "0x24"),
              "end throttle");

        t = tel_of(root, 1);
        e = json_object_get(t, "end");
        CHECK(json_is_null(json_object_get(t, "start")), "missing start is null");
        static const char *const keys[] = {
            "t_unix",  "sm_clock_mhz",     "mem_clock_mhz",        "temperature_c",
            "power_w", "throttle_reasons", "throttle_reason_names"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            CHECK(json_is_null(json_object_get(e, keys[k])), "unknown %s is not null", keys[k]);
        CHECK(tel_of(root, 2) == NULL, "a result without telemetry has none");

        CHECK(run_check(argv[1], with, "") == 0, "report_check rejects %s", with);
        CHECK(run_check(argv[1], without, "") == 0, "report_check rejects %s", without);
        /* --telemetry: every cuda/nccl result must have it; the third has none */
        CHECK(run_check(argv[1], with, "--telemetry") == 1,
              "report_check --telemetry accepts a GPU result without telemetry");
        /* the validator looks inside: a mistyped reading, then no reading at all */
        json_object_set_new(json_object_get(tel_of(root, 0), "start"), "sm_clock_mhz",
                            json_string("fast"));
        CHECK(json_dump_file(root, bad, 0) == 0, "write %s", bad);
        CHECK(run_check(argv[1], bad, "") == 1, "report_check accepts a string clock");
        json_object_set_new(tel_of(root, 0), "start", json_null());
        json_object_set_new(tel_of(root, 0), "end", json_null());
        CHECK(json_dump_file(root, bad, 0) == 0, "write %s", bad);
        CHECK(run_check(argv[1], bad, "") == 1, "report_check accepts telemetry without readings");
        json_decref(root);
    }

    /* old and new reports load and compare with each other */
    gt_compare_options o = gt_compare_defaults();
    gt_compare *c = NULL;
    CHECK_OK(gt_compare_files(without, with, &o, &c));
    if (c) CHECK(gt_compare_may_ship(c), "old vs new with telemetry: may not ship");
    gt_compare_free(c);
    c = NULL;
    CHECK_OK(gt_compare_files(with, without, &o, &c));
    gt_compare_free(c);

    /* the live sampler: an NVML GPU gives a sane reading, anything else 0 */
    gt_error_clear();
    gt_gpu_sample g;
    int got = gt_env_gpu_sample(-1, &g);
    if (got) {
        CHECK(g.index >= 0 && !strncmp(g.uuid, "GPU-", 4), "sample: index %d uuid %s", g.index,
              g.uuid);
        CHECK(g.sm_clock_mhz > 0 && g.t_unix > 0, "sample: sm clock %d", g.sm_clock_mhz);
        printf("gpu %d %s: sm %d MHz, mem %d MHz, %d C, %.1f W, throttle %s\n", g.index, g.uuid,
               g.sm_clock_mhz, g.mem_clock_mhz, g.temperature_c, g.power_w, g.throttle_names);
    } else {
        CHECK(gt_last_error()[0] == '\0', "no GPU set an error: %s", gt_last_error());
        printf("no NVML GPU here: the live sampler answered 0\n");
    }
    CHECK(gt_env_gpu_sample(GT_ENV_MAX_GPUS + 5, &g) == 0, "an absent ordinal gives 0");

    unlink(with);
    unlink(without);
    unlink(bad);
    rmdir(g_dir);
    return check_done("reports.telemetry");
}
