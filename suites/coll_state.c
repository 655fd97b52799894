/* The cache-line ping-pong of suites/coll_state.h. */
#define _POSIX_C_SOURCE 200809L

#include "suites/coll_state.h"

#include "engine/env.h"
#include "engine/stats.h"
#include "engine/job.h"
#include "engine/timer.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define GROUP 4                /* round trips timed together */
#define GROUPS 8
#define TRIPS (GROUP * GROUPS)  /* timed round trips a probe (after one to meet) */
#define WAIT_NS 20000000ull    /* a side that waits longer gives up the probe */

enum { ROLE_NONE, ROLE_LEADER, ROLE_PARTNER };

struct gt_coll_state {
    int role;
    _Atomic uint64_t *flag; /* the shared line: the leader writes odd values, the partner even */
    uint64_t trip;          /* round trips so far, counted alike by both */
};

/* This rank's place on its node (0 first, 1 second, ...), how many ranks
 * its node holds, and its host. */
static gt_status local_index(gt_comm *comm, int *idx, int *on_node, char *host, size_t len) {
    int n = gt_comm_size(comm), nodes = 0, me = gt_comm_rank(comm);
    int *node_of = calloc((size_t)n, sizeof *node_of), *local_of = calloc((size_t)n, sizeof(int));
    gt_status s = node_of && local_of ? GT_OK : GT_ERR(GT_ERR_OOM, "collectives: node table");
    if (s == GT_OK) s = gt_comm_nodes(comm, node_of, local_of, &nodes);
    *idx = s == GT_OK ? local_of[me] : 0;
    *on_node = 0;
    for (int r = 0; s == GT_OK && r < n; r++) *on_node += node_of[r] == node_of[me];
    gt_env_hostname(host, len);
    free(node_of);
    free(local_of);
    return s;
}

/* The leader creates the page, the partner maps it after a barrier. */
static int share_page(gt_comm *comm, gt_coll_state *st, const char *name) {
    int ok = 1, fd = -1;
    if (st->role == ROLE_LEADER) {
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        ok = fd >= 0 && ftruncate(fd, 4096) == 0;
    }
    if (gt_comm_barrier(comm, NULL) != GT_OK) ok = 0;
    if (st->role == ROLE_PARTNER) {
        fd = shm_open(name, O_RDWR, 0600);
        ok = fd >= 0;
    }
    if (ok && fd >= 0) {
        void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        ok = p != MAP_FAILED;
        if (ok) st->flag = p;
    }
    if (fd >= 0) close(fd);
    if (gt_comm_barrier(comm, NULL) != GT_OK) ok = 0;
    if (st->role == ROLE_LEADER) shm_unlink(name);
    return ok;
}

gt_status gt_coll_state_new(gt_comm *comm, gt_coll_state **out) {
    *out = NULL;
    if (gt_comm_size(comm) < 2) return GT_OK;
    gt_coll_state *st = calloc(1, sizeof *st);
    if (!st) return GT_ERR(GT_ERR_OOM, "collectives: the state probe");
    char host[64];
    int idx = 0, on_node = 0;
    gt_status s = local_index(comm, &idx, &on_node, host, sizeof host);
    /* one name a job (rank 0's pid and clock) and node */
    int64_t token[2] = {(int64_t)getpid(), (int64_t)gt_now_ns()};
    if (s == GT_OK) s = gt_comm_broadcast(comm, token, 2, GT_DTYPE_INT64, 0, NULL);
    if (s != GT_OK) {
        free(st);
        return s;
    }
    /* a node of one rank has no pair: its rank would wait 20 ms a block */
    st->role = on_node < 2 || idx > 1 ? ROLE_NONE : idx == 0 ? ROLE_LEADER : ROLE_PARTNER;
    char name[160];
    snprintf(name, sizeof name, "/gauntlet-state-%lld-%lld-%s", (long long)token[0],
             (long long)token[1], host);
    for (char *c = name + 1; *c; c++)
        if (*c == '/') *c = '_';
    /* a new shared object is zero-filled: the line starts at 0 */
    double ok = share_page(comm, st, name) ? 1 : 0;
    s = gt_comm_allreduce(comm, &ok, &ok, 1, GT_DTYPE_FP64, GT_REDOP_MIN, NULL);
    /* does any node hold a pair? */
    double pairs = st->role == ROLE_PARTNER;
    if (s == GT_OK) s = gt_comm_allreduce(comm, &pairs, &pairs, 1, GT_DTYPE_FP64, GT_REDOP_SUM, NULL);
    if (s != GT_OK || ok < 1 || pairs < 1) {
        gt_coll_state_free(st);
        return s;
    }
    *out = st;
    return GT_OK;
}

/* Spins until the line holds at least `want`; 0 when WAIT_NS passed. */
static int await(_Atomic uint64_t *f, uint64_t want, uint64_t deadline, uint64_t *seen) {
    for (unsigned spin = 1;; spin++) {
        *seen = atomic_load_explicit(f, memory_order_acquire);
        if (*seen >= want) return 1;
        if ((spin & 255) == 0 && gt_now_ns() > deadline) return 0;
    }
}

/* The median of GROUPS groups of round trips, a trip each: a trip the
 * scheduler took the core in (a neighbour beside the ranks: 4 ms) moves
 * one group, not the figure; a group of GROUP trips keeps the clock's own
 * cost out of it. */
static double lead(gt_coll_state *s, uint64_t j0, uint64_t deadline) {
    uint64_t seen, t0 = 0;
    double group[GROUPS];
    for (uint64_t j = j0; j <= j0 + TRIPS; j++) {
        /* the first trip waits for the partner to arrive: not timed */
        uint64_t k = j - j0 - 1;
        if (j > j0 && k % GROUP == 0) t0 = gt_now_ns();
        atomic_store_explicit(s->flag, 2 * j + 1, memory_order_release);
        if (!await(s->flag, 2 * j + 2, deadline, &seen)) return 0;
        if (j > j0 && k % GROUP == GROUP - 1)
            group[k / GROUP] = (double)(gt_now_ns() - t0) / GROUP;
    }
    return gt_median(group, GROUPS);
}

static void answer(gt_coll_state *s, uint64_t j0, uint64_t deadline) {
    uint64_t seen;
    for (uint64_t j = j0; j <= j0 + TRIPS; j++) {
        if (!await(s->flag, 2 * j + 1, deadline, &seen)) return;
        uint64_t want = 2 * j + 1;
        /* a leader that gave up has moved on: so does the partner */
        if (seen != want ||
            !atomic_compare_exchange_strong_explicit(s->flag, &want, 2 * j + 2,
                                                     memory_order_acq_rel, memory_order_acquire))
            return;
    }
}

double gt_coll_state_probe(gt_coll_state *s) {
    if (!s || s->role == ROLE_NONE) return 0;
    uint64_t j0 = s->trip, deadline = gt_now_ns() + WAIT_NS;
    s->trip += TRIPS + 1;
    if (s->role == ROLE_LEADER) return lead(s, j0, deadline);
    answer(s, j0, deadline);
    return 0;
}

void gt_coll_state_free(gt_coll_state *s) {
    if (!s) return;
    if (s->flag) munmap((void *)s->flag, 4096);
    free(s);
}
