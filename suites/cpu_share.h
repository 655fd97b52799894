/* How much CPU a process is given: the doctor's CPU availability probe
 * (docs/doctor.md, "CPU availability").
 *
 * A sample reads, for the calling process:
 *   - every thread's time on a CPU and time runnable but waiting for one
 *     (/proc/self/task/N/schedstat: the run-queue delay, which includes the
 *     time a cgroup's CPU quota held the thread back);
 *   - the node's steal time (/proc/stat: time the hypervisor ran something
 *     else while this guest's CPUs wanted to run);
 *   - its cgroup's CPU quota and throttling counts (cgroup v2 cpu.max and
 *     cpu.stat, or v1 cpu.cfs_quota_us / cpu.cfs_period_us and cpu.stat).
 * Two samples bracket an interval; gt_cpu_share_of says what fraction of
 * the time the threads wanted a CPU they had one.
 *
 * Not part of the suite interface: include only from suites/. */
#ifndef GT_SUITES_CPU_SHARE_H
#define GT_SUITES_CPU_SHARE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_cpu_sample {
    double wall_s;         /* CLOCK_MONOTONIC */
    double run_s, wait_s;  /* summed over the process's threads */
    int has_sched;         /* schedstat was readable */
    double node_ticks, steal_ticks; /* /proc/stat "cpu" line: all, steal */
    int has_steal;
    double quota_cores;    /* cgroup CPU quota / period; 0: no quota (or unknown) */
    double nr_throttled;   /* cgroup periods throttled so far */
    double throttled_s;    /* cgroup time throttled so far */
    int has_cgroup;        /* the cgroup's cpu files were found */
} gt_cpu_sample;

/* Fills *s (fields it cannot read stay 0 with their has_ flag 0). Cheap: a
 * few small /proc and /sys reads (about 50 us with a handful of threads). */
void gt_cpu_sample_now(gt_cpu_sample *s);

/* This process's threads' time runnable but waiting for a CPU so far,
 * summed (s): the schedstat wait of a sample alone, cheap enough to bracket
 * every timed block (the collectives suite's "cpu_wait"). 0: unreadable. */
int gt_cpu_wait_now(double *wait_s);

/* Of the time between a and b that the threads were runnable, the fraction
 * they ran: run / (run + wait). 1 on a core of its own, 1/3 beside two busy
 * loops on the same core, about the quota under a cgroup quota below one
 * core. -1 when schedstat was not readable or nothing ran. */
double gt_cpu_share_of(const gt_cpu_sample *a, const gt_cpu_sample *b);

/* The node's steal between a and b: steal ticks / all ticks, 0..1; -1 when
 * /proc/stat was not readable. */
double gt_cpu_steal_of(const gt_cpu_sample *a, const gt_cpu_sample *b);

/* The node's CPU as every process used it: /proc/stat's busy time (user,
 * nice, system, irq, softirq; not steal) and idle time (idle, iowait), and
 * the CPU time of every process on the node running this executable (the
 * job's ranks, an idle rank spinning in MPI too; /proc/N/stat), each in
 * seconds summed over the CPUs. */
typedef struct gt_node_cpu {
    double wall_s; /* CLOCK_MONOTONIC */
    double busy_s, idle_s, own_s;
    int ok; /* /proc/stat was readable */
} gt_node_cpu;

/* Fills *s: a scan of /proc (docs/performance.md, "The train suite's node
 * record"), for a case's edges, not for a timed block. */
void gt_node_cpu_now(gt_node_cpu *s);

/* Between a and b, averaged over the wall time: the cores other processes
 * kept busy (others: busy less this executable's processes, at least 0) and
 * the cores left idle. 0 when a sample was unreadable or no time passed
 * (both NAN then), else 1. A process of this executable that ended between
 * the samples takes its time with it (others then reads high). */
int gt_node_cpu_between(const gt_node_cpu *a, const gt_node_cpu *b, double *others, double *idle);

/* The node's CPU since the latest mark at least min_s old (or the oldest,
 * when none is), then a mark now: gt_node_load_mark() at a suite's start,
 * gt_node_load_since() at each case's end, so that a case of a few
 * milliseconds is judged over at least min_s (the clock ticks /proc/stat
 * counts in are 10 ms). 0 and NANs as gt_node_cpu_between. */
void gt_node_load_mark(void);
int gt_node_load_since(double min_s, double *others, double *idle);

#ifdef __cplusplus
}
#endif
#endif
