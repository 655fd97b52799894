/* How much CPU a process is given (suites/cpu_share.h). */
#define _GNU_SOURCE
#include "suites/cpu_share.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Every thread's schedstat: "time on a CPU (ns) run-queue delay (ns) slices" */
static int read_sched(double *run_s, double *wait_s) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return 0;
    double run = 0, wait = 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[96];
        snprintf(path, sizeof path, "/proc/self/task/%.32s/schedstat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue; /* the thread ended meanwhile */
        unsigned long long r = 0, w = 0;
        if (fscanf(f, "%llu %llu", &r, &w) == 2) {
            run += (double)r * 1e-9;
            wait += (double)w * 1e-9;
            n++;
        }
        fclose(f);
    }
    closedir(d);
    *run_s = run;
    *wait_s = wait;
    return n > 0;
}

/* /proc/stat's first line into v: user nice system idle iowait irq softirq
 * steal (clock ticks, summed over the CPUs); the fields read, 0 when none. */
static int read_cpu_line(unsigned long long v[8]) {
    memset(v, 0, 8 * sizeof *v);
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return 0;
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                     &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    return got > 0 ? got : 0;
}

static int read_steal(double *all, double *steal) {
    unsigned long long v[8];
    int got = read_cpu_line(v);
    if (got < 4) return 0;
    double t = 0;
    for (int i = 0; i < 8; i++) t += (double)v[i];
    *all = t;
    *steal = got >= 8 ? (double)v[7] : 0;
    return 1;
}

static int read_file(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t got = fread(buf, 1, n - 1, f);
    fclose(f);
    buf[got] = '\0';
    return got > 0;
}

/* The value after `key` (a line "key value") in a cpu.stat text; -1 if absent. */
static double stat_field(const char *text, const char *key) {
    size_t k = strlen(key);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, key, k) == 0 && p[k] == ' ') return strtod(p + k + 1, NULL);
        p = strchr(p, '\n');
        if (p) p++;
    }
    return -1;
}

/* The cgroup directory holding this process's cpu controller files: v2
 * (cpu.max) or v1 (cpu.cfs_quota_us); 0 when none is found. The path in
 * /proc/self/cgroup is tried under the mount, then the mount itself (a
 * container sees its own cgroup as the root). */
static int cgroup_dir(char *dir, size_t n, int *v2) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return 0;
    char line[512], v1path[256] = "", v2path[256] = "";
    int have_v1 = 0, have_v2 = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c2 = '\0';
        const char *ctrls = c1 + 1, *path = c2 + 1;
        if (!*ctrls) {
            snprintf(v2path, sizeof v2path, "%s", path);
            have_v2 = 1;
            continue;
        }
        char list[128];
        snprintf(list, sizeof list, ",%s,", ctrls);
        if (strstr(list, ",cpu,")) {
            snprintf(v1path, sizeof v1path, "%s", path);
            have_v1 = 1;
        }
    }
    fclose(f);
    static const char *v1_mounts[] = {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct",
                                      "/sys/fs/cgroup/cpuacct,cpu"};
    char probe[640];
    for (int root = 0; root < 2; root++) {
        for (size_t m = 0; have_v1 && m < sizeof v1_mounts / sizeof *v1_mounts; m++) {
            snprintf(dir, n, "%s%s", v1_mounts[m], root ? "" : v1path);
            snprintf(probe, sizeof probe, "%s/cpu.cfs_quota_us", dir);
            if (access(probe, R_OK) == 0) return *v2 = 0, 1;
        }
        if (have_v2) {
            snprintf(dir, n, "/sys/fs/cgroup%s", root ? "" : v2path);
            snprintf(probe, sizeof probe, "%s/cpu.max", dir);
            if (access(probe, R_OK) == 0) return *v2 = 1, 1;
        }
    }
    return 0;
}

static void read_cgroup(gt_cpu_sample *s) {
    char dir[512], path[640], buf[1024];
    int v2 = 0;
    if (!cgroup_dir(dir, sizeof dir, &v2)) return;
    double quota = -1, period = 0;
    if (v2) {
        snprintf(path, sizeof path, "%s/cpu.max", dir);
        if (read_file(path, buf, sizeof buf) && strncmp(buf, "max", 3) != 0)
            sscanf(buf, "%lf %lf", &quota, &period);
    } else {
        snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
        if (read_file(path, buf, sizeof buf)) quota = strtod(buf, NULL);
        snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
        if (read_file(path, buf, sizeof buf)) period = strtod(buf, NULL);
    }
    s->quota_cores = quota > 0 && period > 0 ? quota / period : 0;
    snprintf(path, sizeof path, "%s/cpu.stat", dir);
    if (!read_file(path, buf, sizeof buf)) return;
    s->nr_throttled = stat_field(buf, "nr_throttled");
    double t = v2 ? stat_field(buf, "throttled_usec") : stat_field(buf, "throttled_time");
    s->throttled_s = t < 0 ? 0 : v2 ? t * 1e-6 : t * 1e-9;
    s->has_cgroup = s->nr_throttled >= 0;
    if (s->nr_throttled < 0) s->nr_throttled = 0;
}

int gt_cpu_wait_now(double *wait_s) {
    double run_s;
    return read_sched(&run_s, wait_s);
}

void gt_cpu_sample_now(gt_cpu_sample *s) {
    memset(s, 0, sizeof *s);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s->wall_s = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    s->has_sched = read_sched(&s->run_s, &s->wait_s);
    s->has_steal = read_steal(&s->node_ticks, &s->steal_ticks);
    read_cgroup(s);
}

double gt_cpu_share_of(const gt_cpu_sample *a, const gt_cpu_sample *b) {
    if (!a->has_sched || !b->has_sched) return -1;
    double run = b->run_s - a->run_s, wait = b->wait_s - a->wait_s;
    /* a thread that ended between the samples takes its totals with it */
    if (run < 0) run = 0;
    if (wait < 0) wait = 0;
    return run + wait > 0 ? run / (run + wait) : -1;
}

double gt_cpu_steal_of(const gt_cpu_sample *a, const gt_cpu_sample *b) {
    if (!a->has_steal || !b->has_steal) return -1;
    double all = b->node_ticks - a->node_ticks, st = b->steal_ticks - a->steal_ticks;
    return all > 0 && st >= 0 ? st / all : 0;
}

/* /proc/stat's "cpu" line in seconds: busy (user nice system irq softirq)
 * and idle (idle iowait); steal is neither (the hypervisor's). */
static int read_node(double *busy, double *idle) {
    unsigned long long v[8];
    if (read_cpu_line(v) < 7) return 0;
    double hz = (double)sysconf(_SC_CLK_TCK);
    *busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6]) / hz;
    *idle = (double)(v[3] + v[4]) / hz;
    return 1;
}

/* utime + stime of process `pid` (s), from /proc/pid/stat: fields 14 and
 * 15, counted after the command's closing parenthesis (a name may hold
 * spaces). -1 when unreadable. */
static double proc_cpu(const char *pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%.20s/stat", pid);
    if (!read_file(path, buf, sizeof buf)) return -1;
    const char *p = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    /* after ")": state, then fields 4..13, then utime and stime */
    if (!p ||
        sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* The CPU time of every process running this executable (s). */
static double own_cpu(void) {
    static char self[4096];
    static ssize_t nself = -1;
    if (nself < 0) nself = readlink("/proc/self/exe", self, sizeof self - 1);
    DIR *d = opendir("/proc");
    if (!d || nself <= 0) {
        if (d) closedir(d);
        return 0;
    }
    double sum = 0;
    struct dirent *e;
    char path[96], exe[4096];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/%.32s/exe", e->d_name);
        ssize_t n = readlink(path, exe, sizeof exe - 1);
        if (n != nself || memcmp(exe, self, (size_t)n) != 0) continue;
        double t = proc_cpu(e->d_name);
        if (t > 0) sum += t;
    }
    closedir(d);
    return sum;
}

void gt_node_cpu_now(gt_node_cpu *s) {
    memset(s, 0, sizeof *s);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s->wall_s = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    s->own_s = own_cpu();
    s->ok = read_node(&s->busy_s, &s->idle_s);
}

int gt_node_cpu_between(const gt_node_cpu *a, const gt_node_cpu *b, double *others, double *idle) {
    double wall = b->wall_s - a->wall_s;
    *others = *idle = NAN;
    if (!a->ok || !b->ok || wall <= 0) return 0;
    double o = (b->busy_s - a->busy_s) - (b->own_s - a->own_s);
    *others = o > 0 ? o / wall : 0;
    *idle = fmax(0, b->idle_s - a->idle_s) / wall;
    return 1;
}

/* gt_node_load_*: the marks, oldest first (at most GT_NODE_MARKS; the
 * oldest dropped) */
#define GT_NODE_MARKS 64
static gt_node_cpu g_marks[GT_NODE_MARKS];
static int g_nmarks;

static void push_mark(const gt_node_cpu *s) {
    if (g_nmarks == GT_NODE_MARKS) {
        memmove(g_marks, g_marks + 1, (GT_NODE_MARKS - 1) * sizeof *g_marks);
        g_nmarks--;
    }
    g_marks[g_nmarks++] = *s;
}

void gt_node_load_mark(void) {
    gt_node_cpu now;
    gt_node_cpu_now(&now);
    push_mark(&now);
}

int gt_node_load_since(double min_s, double *others, double *idle) {
    gt_node_cpu now;
    gt_node_cpu_now(&now);
    int from = 0; /* the latest mark at least min_s old, else the oldest */
    for (int i = 0; i < g_nmarks; i++)
        if (now.wall_s - g_marks[i].wall_s >= min_s) from = i;
    *others = *idle = NAN;
    int ok = g_nmarks > 0 && gt_node_cpu_between(&g_marks[from], &now, others, idle);
    push_mark(&now);
    return ok;
}
