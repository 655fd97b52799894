/* The machine's state between two ranks of a node, measured beside every
 * timed block of the collectives suite, through no library at all.
 *
 * Where a node's cores change how close they are while a job runs (a VM
 * whose vCPUs the hypervisor moves between cores that share a cache and
 * cores that do not; docs/ci-gating.md "The machine's state"), every
 * collective between them moves with it: on this project's VM a 1 MiB
 * all-reduce takes 137 us or 580 us by the state alone. The probe is a
 * cache-line ping-pong between the node's first two ranks on a shared page
 * (plain C11 atomics): what it sees does not depend on the MPI, NCCL or
 * driver under test, so compare can judge a stack against another in the
 * same machine state (reports/compare.c, state_adjust).
 *
 * Every function here is called by every rank of the communicator, in the
 * same order. Ranks that are not a node's first two return 0 from the probe;
 * the suite takes the largest value over ranks (the node farthest apart). */
#ifndef GT_SUITES_COLL_STATE_H
#define GT_SUITES_COLL_STATE_H

#include <stdatomic.h>
#include <stdint.h>

#include "engine/comm.h"

typedef struct gt_coll_state gt_coll_state;

/* Sets up the pair of each node (collective over comm). *out NULL where no
 * node holds two ranks, or a node could not share a page: the suite then
 * records no state. Never fails the run for it. */
gt_status gt_coll_state_new(gt_comm *comm, gt_coll_state **out);

/* One probe, right after a barrier of the same ranks: the round trip of a
 * cache line between the pair, in ns (0: this rank is not the node's
 * first, no state, or the partner did not answer within 20 ms); the median
 * of 8 groups of 4 round trips, so that a trip the scheduler interrupted
 * does not count. */
double gt_coll_state_probe(gt_coll_state *s);

void gt_coll_state_free(gt_coll_state *s);

/* The two halves of one probe on a line both sides see (a shared page
 * between ranks, or memory of one process between two threads:
 * suites/thread_state.h). Each side counts the probes alike and starts
 * probe k at j0 = k * GT_STATE_TRIPS; a side that waits past `deadline`
 * (gt_now_ns) gives up and the leader returns 0. The leader returns the
 * round trip in ns. */
#define GT_STATE_TRIPS 33
#define GT_STATE_WAIT_NS 20000000ull
double gt_state_lead(_Atomic uint64_t *flag, uint64_t j0, uint64_t deadline);
void gt_state_answer(_Atomic uint64_t *flag, uint64_t j0, uint64_t deadline);

#endif
