/* GT_PROBE_CACHE=FILE: the host peaks and memory levels of suites/probe.c
 * kept in FILE between processes (probe.h, "Probe cache").
 *
 * One line per figure, tab-separated, keyed by what the figures depend on
 * (backend, its threads, the CPU model, the online CPUs):
 *
 *   KEY  peaks  fma sgemm sgemm_best sgemm_n mem mem_best
 *   KEY  level  i level bytes gbps  how
 *
 * A reader takes the first complete set of its key; a writer rewrites the
 * file with its key's old lines replaced, through a temporary file and a
 * rename, so that a reader never sees half a file. Two writers at once may
 * lose one's lines: the next process measures them again. */
#include "suites/probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_LEN 512

static const char *cache_file(const gt_backend *be) {
    const char *f = getenv("GT_PROBE_CACHE");
    /* host backends only: a device's clocks and its libraries change between processes */
    return f && *f && be->device == GT_DEVICE_HOST ? f : NULL;
}

static void cache_key(const gt_backend *be, char *key, size_t cap) {
    char model[128];
    gt_env_cpu_model(model, sizeof model);
    snprintf(key, cap, "%s threads=%d ncpu=%ld %s", be->name, be->threads,
             sysconf(_SC_NPROCESSORS_ONLN), model);
}

/* The line's fields after KEY<TAB>, or NULL when the line is not KEY's. */
static char *own_line(char *line, const char *key) {
    size_t kl = strlen(key);
    return strncmp(line, key, kl) == 0 && line[kl] == '\t' ? line + kl + 1 : NULL;
}

int gt_probe_cache_load_peaks(const gt_backend *be, gt_probe_peaks *out) {
    const char *file = cache_file(be);
    FILE *f = file ? fopen(file, "r") : NULL;
    if (!f) return 0;
    char key[256], line[LINE_MAX_LEN];
    cache_key(be, key, sizeof key);
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char *rest = own_line(line, key);
        gt_probe_peaks p;
        memset(&p, 0, sizeof p);
        found = rest && sscanf(rest, "peaks\t%lf %lf %lf %d %lf %lf", &p.peaks.fma_gflops,
                               &p.peaks.sgemm_gflops, &p.peaks.sgemm_best_gflops,
                               &p.peaks.sgemm_n, &p.mem_gbps, &p.mem_best_gbps) == 6 &&
                p.peaks.sgemm_gflops > 0 && p.mem_best_gbps > 0;
        if (found) {
            p.mem_how = "host triad, 3 x 64 MiB (from GT_PROBE_CACHE)";
            *out = p;
        }
    }
    fclose(f);
    return found;
}

int gt_probe_cache_load_levels(const gt_backend *be, gt_probe_level *lv, int *n) {
    const char *file = cache_file(be);
    FILE *f = file ? fopen(file, "r") : NULL;
    if (!f) return 0;
    char key[256], line[LINE_MAX_LEN];
    cache_key(be, key, sizeof key);
    gt_probe_level got[GT_PROBE_MAX_LEVELS];
    int k = 0, ok = 1;
    while (ok && fgets(line, sizeof line, f)) {
        char *rest = own_line(line, key);
        int i, used = 0;
        gt_probe_level l;
        memset(&l, 0, sizeof l);
        if (!rest || strncmp(rest, "level\t", 6) != 0) continue;
        ok = sscanf(rest + 6, "%d %d %lf %lf\t%n", &i, &l.level, &l.bytes, &l.gbps, &used) == 4 &&
             used > 0 && i == k && k < GT_PROBE_MAX_LEVELS && l.gbps > 0;
        if (!ok) break;
        char *how = rest + 6 + used;
        how[strcspn(how, "\n")] = '\0';
        snprintf(l.how, sizeof l.how, "%s (from GT_PROBE_CACHE)", how);
        got[k++] = l;
    }
    fclose(f);
    /* complete: the last level is main memory */
    if (!ok || k == 0 || got[k - 1].level != 0) return 0;
    memcpy(lv, got, (size_t)k * sizeof *got);
    *n = k;
    return 1;
}

/* FILE with KEY's lines of `kind` ("peaks", "level") replaced by `lines`. */
static void store(const char *file, const char *key, const char *kind, const char *lines) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", file, (long)getpid()) >= (int)sizeof tmp) return;
    FILE *out = fopen(tmp, "w");
    if (!out) return;
    FILE *in = fopen(file, "r");
    char line[LINE_MAX_LEN];
    int header = 0;
    while (in && fgets(line, sizeof line, in)) {
        char *rest = own_line(line, key);
        if (rest && strncmp(rest, kind, strlen(kind)) == 0 && rest[strlen(kind)] == '\t') continue;
        header |= line[0] == '#';
        fputs(line, out);
    }
    if (in) fclose(in);
    if (!header)
        fputs("# gauntlet's measured peaks (GT_PROBE_CACHE, docs/suites.md \"Peaks\");"
              " delete to measure again\n", out);
    fputs(lines, out);
    if (fclose(out) != 0 || rename(tmp, file) != 0) unlink(tmp);
}

void gt_probe_cache_store_peaks(const gt_backend *be, const gt_probe_peaks *p) {
    const char *file = cache_file(be);
    if (!file) return;
    char key[256], lines[LINE_MAX_LEN];
    cache_key(be, key, sizeof key);
    snprintf(lines, sizeof lines, "%s\tpeaks\t%.17g %.17g %.17g %d %.17g %.17g\n", key,
             p->peaks.fma_gflops, p->peaks.sgemm_gflops, p->peaks.sgemm_best_gflops,
             p->peaks.sgemm_n, p->mem_gbps, p->mem_best_gbps);
    store(file, key, "peaks", lines);
}

void gt_probe_cache_store_levels(const gt_backend *be, const gt_probe_level *lv, int n) {
    const char *file = cache_file(be);
    if (!file || n <= 0) return;
    char key[256], lines[GT_PROBE_MAX_LEVELS * LINE_MAX_LEN];
    cache_key(be, key, sizeof key);
    size_t used = 0;
    for (int i = 0; i < n && i < GT_PROBE_MAX_LEVELS && used < sizeof lines; i++)
        used += (size_t)snprintf(lines + used, sizeof lines - used, "%s\tlevel\t%d %d %.17g %.17g\t%s\n",
                                 key, i, lv[i].level, lv[i].bytes, lv[i].gbps, lv[i].how);
    if (used < sizeof lines) store(file, key, "level", lines);
}
