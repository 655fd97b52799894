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

#endif
