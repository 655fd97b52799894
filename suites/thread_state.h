/* The machine's state between two cores of one process, measured beside the
 * kernels suite's timed batches, through no library at all.
 *
 * The collectives' probe (suites/coll_state.h) between two threads instead
 * of two ranks: a cache-line ping-pong between two helper threads pinned to
 * the first two CPUs the process may run on. On a VM whose vCPUs the
 * hypervisor moves between cores that share a cache and cores that do not,
 * a kernel that runs on two threads moves with that state: on this
 * project's VM a two-thread 192x192 SGEMM took 86 us while the round trip
 * was 59 ns and 154 us while it was 339 ns (docs/ci-gating.md, "The
 * kernels' state"). compare then judges both stacks in one state, as it
 * does the collectives (reports/compare_state.h).
 *
 * The helpers sleep between probes (a spinning helper would take a core
 * from the kernel under test); a probe wakes both, and the caller waits for
 * the leader's figure. */
#ifndef GT_SUITES_THREAD_STATE_H
#define GT_SUITES_THREAD_STATE_H

typedef struct gt_thread_state gt_thread_state;

/* NULL where the process may run on fewer than two CPUs, or its helpers
 * cannot be started or pinned: the suite then records no state. */
gt_thread_state *gt_thread_state_new(void);

/* One probe: the round trip in ns between the two pinned helpers (the
 * median of 8 groups of 4 trips); 0 where s is NULL or a helper did not
 * answer within 20 ms. */
double gt_thread_state_probe(gt_thread_state *s);

void gt_thread_state_free(gt_thread_state *s);

#endif
