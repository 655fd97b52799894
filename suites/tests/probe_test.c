/* suites.probe.host: the choice of the memory level a kernel is judged
 * against (suites/probe.h), with no measurement: gt_probe_level_pick on
 * host-like and cuda-like level tables, the host cache discovery on a
 * made-up sysfs tree, the plan of the host probes (capacities per thread
 * count, probe sizes), the GPU L2 sizes of the datasheet table, and the
 * probe cache (GT_PROBE_CACHE): what is stored reads back bit for bit under
 * its key only, a damaged or partial file reads as nothing, device backends
 * never use it. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "suites/probe.h"
#include "suites/tests/expect.h"


#define KiB 1024.0
#define MiB 1048576.0

static void test_pick(void) {
    /* 2 threads on this kind of VM: L1 2 x 48 KiB, L2 2 x 2 MiB, L3 260 MiB */
    gt_probe_level lv[4] = {
        {.level = 1, .bytes = 96 * KiB, .gbps = 850},
        {.level = 2, .bytes = 4 * MiB, .gbps = 40}, /* a probe that lost its core */
        {.level = 3, .bytes = 260 * MiB, .gbps = 55},
        {.level = 0, .bytes = 0, .gbps = 25},
    };
    double g = 0;
    EXPECT(gt_probe_level_pick(lv, 4, 1, &g) == 0 && g == 850, "1 byte: L1 850, got %g", g);
    EXPECT(gt_probe_level_pick(lv, 4, 96 * KiB, &g) == 0, "exactly L1's capacity fits L1");
    EXPECT(gt_probe_level_pick(lv, 4, 96 * KiB + 1, &g) == 1 && g == 55,
           "past L1: L2, judged against the better L3 figure (55), got %g", g);
    EXPECT(gt_probe_level_pick(lv, 4, 16 * MiB, &g) == 2 && g == 55, "16 MiB: L3 55, got %g", g);
    EXPECT(gt_probe_level_pick(lv, 4, 1e12, &g) == 3 && g == 25, "1 TB: memory 25, got %g", g);
    EXPECT(gt_probe_level_pick(lv, 4, 0, &g) == 3 && g == 25, "no working set: memory");
    EXPECT(gt_probe_level_pick(lv, 4, NAN, &g) == 3, "NaN working set: memory");
    EXPECT(gt_probe_level_pick(lv, 4, INFINITY, &g) == 3, "infinite working set: memory");
    EXPECT(gt_probe_level_pick(lv, 0, 1, &g) == -1 && g == 0, "no levels: -1, peak 0");
    EXPECT(gt_probe_level_pick(lv, 4, 1, NULL) == 0, "gbps optional");
    /* the last level holds everything, whatever its bytes say */
    EXPECT(gt_probe_level_pick(lv, 2, 1e12, &g) == 1 && g == 40, "2 levels, 1 TB: the last");
    /* a cold timing picks among the last level alone */
    EXPECT(gt_probe_level_pick(lv + 3, 1, 1, &g) == 0 && g == 25, "cold: memory");

    /* cuda: an H100's L2 from the table, then device memory */
    gt_probe_level cu[2] = {{.level = 2, .bytes = 50 * MiB, .gbps = 7000},
                            {.level = 0, .bytes = 0, .gbps = 3000}};
    EXPECT(gt_probe_level_pick(cu, 2, 40 * MiB, &g) == 0 && g == 7000, "cuda 40 MiB: L2");
    EXPECT(gt_probe_level_pick(cu, 2, 60 * MiB, &g) == 1 && g == 3000, "cuda 60 MiB: memory");
    /* L2 size unknown (bytes 0): every hot working set against the L2 figure */
    cu[0].bytes = 0;
    EXPECT(gt_probe_level_pick(cu, 2, 1e10, &g) == 0 && g == 7000, "cuda unknown L2: L2");
}

static void put(const char *dir, const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    fprintf(f, "%s\n", text);
    fclose(f);
}

static void fake_index(const char *root, int i, const char *level, const char *type,
                       const char *size, const char *shared) {
    char d[400];
    snprintf(d, sizeof d, "%s/index%d", root, i);
    mkdir(d, 0700);
    put(d, "level", level);
    put(d, "type", type);
    put(d, "size", size);
    if (shared) put(d, "shared_cpu_list", shared);
}

static void rm_tree(const char *root) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", root);
}

static void test_caches_and_plan(void) {
    char root[] = "/tmp/gt_probe_test_XXXXXX";
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        exit(2);
    }
    /* listed out of order, an instruction cache among them, one without
     * shared_cpu_list (taken as private) */
    fake_index(root, 0, "3", "Unified", "266240K", "0-1");
    fake_index(root, 1, "1", "Instruction", "32K", "0");
    fake_index(root, 2, "1", "Data", "48K", "0");
    fake_index(root, 3, "2", "Unified", "2048K", NULL);
    gt_probe_cache c[4];
    int n = gt_probe_host_caches(root, c, 4);
    EXPECT(n == 3, "3 data caches, got %d", n);
    if (n == 3) {
        EXPECT(c[0].level == 1 && c[0].bytes == 48 * 1024 && c[0].shared_by == 1, "L1 48K private");
        EXPECT(c[1].level == 2 && c[1].bytes == 2048 * 1024 && c[1].shared_by == 1,
               "L2 2M private");
        EXPECT(c[2].level == 3 && c[2].bytes == (size_t)266240 * 1024 && c[2].shared_by == 2,
               "L3 260M shared by 2, got shared_by %d", c[2].shared_by);
    }
    char missing[440];
    snprintf(missing, sizeof missing, "%s/nothing", root);
    EXPECT(gt_probe_host_caches(missing, c, 4) == 0,
           "no such tree: 0 (no sysconf for a given dir)");
    /* a shared_cpu_list with ranges and singles */
    fake_index(root, 4, "3", "Unified", "32M", "0-3,8,10-11");
    gt_probe_cache c5[5];
    n = gt_probe_host_caches(root, c5, 5);
    EXPECT(n == 4 && c5[3].level == 3 && c5[3].bytes == 32u << 20 && c5[3].shared_by == 7,
           "\"0-3,8,10-11\" is 7 cpus, \"32M\" 32 MiB");
    rm_tree(root);

    gt_probe_cache h[3] = {{1, 48 * 1024, 1}, {2, 2048 * 1024, 1}, {3, (size_t)266240 * 1024, 2}};
    gt_probe_level lv[4];
    size_t pb[4];
    int k = gt_probe_host_plan(h, 3, 2, 2, lv, pb, 4);
    EXPECT(k == 3, "3 levels, got %d", k);
    if (k == 3) {
        EXPECT(lv[0].bytes == 96 * KiB && lv[1].bytes == 4 * MiB && lv[2].bytes == 260 * MiB,
               "2 threads: private caches twice, the shared L3 once (%g %g %g)", lv[0].bytes,
               lv[1].bytes, lv[2].bytes);
        /* probe sizes: half of L1; twice the level below for L2 and L3 */
        EXPECT(pb[0] == 48 * 1024 && pb[1] == 192 * 1024 && pb[2] == (8u << 20) / 384 * 384,
               "probe bytes %zu %zu %zu", pb[0], pb[1], pb[2]);
        for (int i = 0; i < k; i++) {
            EXPECT(pb[i] % (3 * 64 * 2) == 0, "level %d: whole lines per array and thread", i);
            EXPECT(pb[i] > (i ? lv[i - 1].bytes : 0) && pb[i] <= lv[i].bytes,
                   "level %d: its probe fits it and not the level below", i);
        }
        EXPECT(strstr(lv[1].how, "L2: 3 x 64 KiB, 2 threads (2 x 2 MiB)") != NULL,
               "how: '%s'", lv[1].how);
    }
    k = gt_probe_host_plan(h, 3, 1, 2, lv, pb, 4);
    EXPECT(k == 3 && lv[0].bytes == 48 * KiB && lv[1].bytes == 2 * MiB, "1 thread: one of each");
    k = gt_probe_host_plan(h, 3, 8, 2, lv, pb, 4);
    EXPECT(k == 3 && lv[0].bytes == 96 * KiB, "8 threads on 2 cpus: 2 L1s, not 8");
    /* an L3 no larger than the threads' L2s together adds nothing */
    gt_probe_cache small[3] = {{1, 32 * 1024, 1}, {2, 1024 * 1024, 1}, {3, 4 * 1024 * 1024, 4}};
    k = gt_probe_host_plan(small, 3, 4, 4, lv, pb, 4);
    EXPECT(k == 2 && lv[1].level == 2, "L3 of 4 MiB under 4 x 1 MiB of L2: dropped (%d)", k);
    EXPECT(gt_probe_host_plan(h, 3, 2, 2, lv, pb, 1) == 1, "at most max levels");
    EXPECT(gt_probe_host_plan(h, 0, 2, 2, lv, pb, 4) == 0, "no caches: no levels");
}

static void test_datasheet(void) {
    EXPECT(gt_probe_datasheet_l2_bytes("NVIDIA H100 80GB HBM3") == 50 * MiB, "H100 50 MiB");
    EXPECT(gt_probe_datasheet_l2_bytes("NVIDIA A100-SXM4-40GB") == 40 * MiB, "A100 40 MiB");
    EXPECT(gt_probe_datasheet_l2_bytes("NVIDIA A10") == 6 * MiB, "A10 6 MiB");
    EXPECT(gt_probe_datasheet_l2_bytes("Tesla T4") == 0, "not in the table: 0");
    EXPECT(gt_probe_datasheet_l2_bytes(NULL) == 0, "NULL: 0");
}

static void test_cache(void) {
    char dir[] = "/tmp/gt_probe_cacheXXXXXX", file[256], tmp[300];
    EXPECT(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(file, sizeof file, "%s/cache.txt", dir);
    gt_backend cpu2 = {.name = "cpu", .threads = 2, .device = GT_DEVICE_HOST};
    gt_backend cpu1 = cpu2, cuda = cpu2;
    cpu1.threads = 1;
    cuda.name = "cuda";
    cuda.device = GT_DEVICE_CUDA;
    gt_probe_peaks p = {.peaks = {.fma_gflops = 80.4377, .sgemm_gflops = 158.88,
                                  .sgemm_best_gflops = 160.365, .sgemm_n = 2048},
                        .mem_gbps = 24.42616, .mem_best_gbps = 25.787, .mem_how = "x"};
    gt_probe_level lv[3] = {{.level = 1, .bytes = 65536, .gbps = 311.5, .how = "L1: probe"},
                            {.level = 3, .bytes = 33554432, .gbps = 124.04, .how = "L3: probe"},
                            {.level = 0, .bytes = 0, .gbps = 37.3687, .how = "memory: probe"}};
    gt_probe_peaks q;
    gt_probe_level r[GT_PROBE_MAX_LEVELS];
    int n = 0;

    unsetenv("GT_PROBE_CACHE");
    gt_probe_cache_store_peaks(&cpu2, &p);
    EXPECT(!gt_probe_cache_load_peaks(&cpu2, &q), "no GT_PROBE_CACHE: nothing read");
    setenv("GT_PROBE_CACHE", file, 1);
    EXPECT(!gt_probe_cache_load_peaks(&cpu2, &q), "no file yet: nothing read");
    gt_probe_cache_store_peaks(&cpu2, &p);
    gt_probe_cache_store_levels(&cpu2, lv, 3);
    gt_probe_cache_store_peaks(&cuda, &p);
    EXPECT(gt_probe_cache_load_peaks(&cpu2, &q) && q.peaks.fma_gflops == p.peaks.fma_gflops &&
               q.peaks.sgemm_gflops == p.peaks.sgemm_gflops &&
               q.peaks.sgemm_best_gflops == p.peaks.sgemm_best_gflops && q.peaks.sgemm_n == 2048 &&
               q.mem_gbps == p.mem_gbps && q.mem_best_gbps == p.mem_best_gbps &&
               strstr(q.mem_how, "GT_PROBE_CACHE"),
           "peaks read back bit for bit, saying where they came from");
    EXPECT(gt_probe_cache_load_levels(&cpu2, r, &n) && n == 3 && r[1].level == 3 &&
               r[1].bytes == lv[1].bytes && r[1].gbps == lv[1].gbps && r[2].level == 0 &&
               strncmp(r[0].how, "L1: probe", 9) == 0 && strstr(r[0].how, "GT_PROBE_CACHE"),
           "levels read back (%d)", n);
    EXPECT(!gt_probe_cache_load_peaks(&cpu1, &q) && !gt_probe_cache_load_levels(&cpu1, r, &n),
           "another thread count: nothing read");
    EXPECT(!gt_probe_cache_load_peaks(&cuda, &q), "a device backend: never cached");
    /* a second store replaces the key's lines instead of adding to them */
    p.peaks.fma_gflops = 99.5;
    gt_probe_cache_store_peaks(&cpu2, &p);
    gt_probe_cache_store_levels(&cpu2, lv, 2); /* no main-memory level: incomplete */
    EXPECT(gt_probe_cache_load_peaks(&cpu2, &q) && q.peaks.fma_gflops == 99.5, "stored again");
    EXPECT(!gt_probe_cache_load_levels(&cpu2, r, &n), "levels without main memory: nothing read");
    FILE *f = fopen(file, "r");
    int lines = 0, c;
    while (f && (c = fgetc(f)) != EOF) lines += c == '\n';
    if (f) fclose(f);
    EXPECT(lines == 1 + 1 + 2, "a header, one peaks line, two level lines: %d lines", lines);
    /* damaged: the file cut inside its peaks line */
    char buf[4096];
    size_t got = 0;
    f = fopen(file, "r");
    if (f) {
        got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
    }
    buf[got] = '\0';
    char *cut = strstr(buf, "\tpeaks\t");
    EXPECT(cut != NULL, "the peaks line is there");
    f = fopen(file, "w");
    if (f && cut) {
        fwrite(buf, 1, (size_t)(cut - buf) + 12, f); /* the key, "peaks", a few digits */
        fclose(f);
    }
    EXPECT(!gt_probe_cache_load_peaks(&cpu2, &q), "a cut file: nothing read");
    gt_probe_cache_store_peaks(&cpu2, &p);
    EXPECT(gt_probe_cache_load_peaks(&cpu2, &q), "a damaged file is written over by a store");
    unsetenv("GT_PROBE_CACHE");
    snprintf(tmp, sizeof tmp, "rm -rf %s", dir);
    EXPECT(system(tmp) == 0, "clean up");
}

int main(void) {
    test_pick();
    test_caches_and_plan();
    test_datasheet();
    test_cache();
    /* this machine: whatever it has, the discovery does not fail or overflow */
    gt_probe_cache c[4];
    int n = gt_probe_host_caches(NULL, c, 4);
    for (int i = 0; i < n; i++)
        printf("host cache L%d: %zu bytes, shared by %d\n", c[i].level, c[i].bytes, c[i].shared_by);
    EXPECT(n >= 0 && n <= 4, "host caches: %d", n);
    printf("probe_test: %d failure(s)\n", g_fails);
    return g_fails ? 1 : 0;
}
