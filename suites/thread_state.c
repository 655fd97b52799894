/* The two pinned helpers of suites/thread_state.h. */
#define _GNU_SOURCE

#include "suites/thread_state.h"

#include "engine/timer.h"
#include "suites/coll_state.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

struct gt_thread_state {
    _Alignas(64) _Atomic uint64_t line; /* the line the helpers bounce, alone on it */
    char pad[64 - sizeof(uint64_t)];
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t asked;       /* probes asked for, numbered from 1 */
    uint64_t finished[2]; /* the last probe each helper (0 the leader) finished */
    int quit, started;    /* helpers running */
    int cpu[2];
    double ns; /* the leader's figure of probe finished[0] */
    pthread_t th[2];
    struct helper {
        gt_thread_state *s;
        int leader;
    } role[2];
};

typedef struct helper helper;

static int pin_self(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

static void *run_helper(void *arg) {
    gt_thread_state *s = ((helper *)arg)->s;
    int leader = ((helper *)arg)->leader;
    int pinned = pin_self(s->cpu[leader ? 0 : 1]);
    uint64_t done = 0;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->quit && s->asked == done) pthread_cond_wait(&s->go, &s->mu);
        if (s->quit) break;
        done = s->asked;
        pthread_mutex_unlock(&s->mu);
        uint64_t j0 = (done - 1) * GT_STATE_TRIPS, deadline = gt_now_ns() + GT_STATE_WAIT_NS;
        double ns = 0;
        if (pinned && leader) ns = gt_state_lead(&s->line, j0, deadline);
        else if (pinned) gt_state_answer(&s->line, j0, deadline);
        pthread_mutex_lock(&s->mu);
        if (leader) s->ns = ns;
        s->finished[leader ? 0 : 1] = done;
        pthread_cond_signal(&s->done);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* The first two CPUs this process may run on; 0 where it has fewer. */
static int two_cpus(int cpu[2]) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    int k = 0;
    for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
        if (CPU_ISSET(c, &set)) cpu[k++] = c;
    return k == 2;
}

gt_thread_state *gt_thread_state_new(void) {
    gt_thread_state *s = calloc(1, sizeof *s);
    if (!s || !two_cpus(s->cpu)) {
        free(s);
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->go, NULL);
    pthread_cond_init(&s->done, NULL);
    atomic_init(&s->line, 0);
    for (int i = 0; i < 2; i++) {
        s->role[i] = (helper){s, i == 0};
        if (pthread_create(&s->th[i], NULL, run_helper, &s->role[i]) != 0) break;
        s->started++;
    }
    if (s->started < 2 || gt_thread_state_probe(s) <= 0) {
        gt_thread_state_free(s);
        return NULL;
    }
    return s;
}

double gt_thread_state_probe(gt_thread_state *s) {
    if (!s) return 0;
    pthread_mutex_lock(&s->mu);
    uint64_t k = ++s->asked;
    pthread_cond_broadcast(&s->go);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 100000000; /* 100 ms: the helpers' own 20 ms and their wake-up */
    if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
    int rc = 0;
    while ((s->finished[0] < k || s->finished[1] < k) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&s->done, &s->mu, &until);
    /* a helper still on an older probe, or one that skipped this one: no figure */
    double ns = s->finished[0] == k && s->finished[1] == k ? s->ns : 0;
    pthread_mutex_unlock(&s->mu);
    return ns;
}

void gt_thread_state_free(gt_thread_state *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->quit = 1;
    pthread_cond_broadcast(&s->go);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->started; i++) pthread_join(s->th[i], NULL);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->go);
    pthread_cond_destroy(&s->done);
    free(s);
}
