/* The generic layer of engine/comm.h: argument checks, blocking = start +
 * wait (or the backend's blocking call under the watchdog thread), the
 * watchdog, per-communicator sequence numbers and statistics, and the
 * deterministic tree all-reduce built from send/recv/broadcast so that
 * every backend has it. Backends (comm_self.c, comm_mpi.c, comm_nccl.c) only
 * move bytes. */
#define _POSIX_C_SOURCE 200809L

#include "engine/comm.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "engine/timer.h"

/* Tag of the tree all-reduce's messages: outside the users' range so that a
 * user's pending receive can never match one of them. */
#define GT_COMM_TAG_TREE (GT_COMM_TAG_MAX + 1)

struct gt_comm {
    const gt_comm_backend *be;
    void *impl;
    int rank;
    int size;
    int *world_ranks; /* world rank of each rank of this communicator */
    double timeout_s;
    int broken; /* an operation was abandoned by the watchdog */
    char name[96]; /* what the group is, for the watchdog's messages ("" : none) */
    uint64_t seq[GT_COLL_COUNT];
    uint64_t tree_seq;
    gt_comm_stats stats;
};

struct gt_comm_request {
    void *handle;
    gt_comm_op_desc d; /* kept for the watchdog's message */
    uint64_t seq;
};

/* ---- names ------------------------------------------------------------------ */

static const char *const g_redop_names[GT_REDOP_COUNT] = {"sum", "avg", "max", "min"};
static const char *const g_coll_names[GT_COLL_COUNT] = {
    "allreduce", "reduce", "broadcast", "allgather", "reduce_scatter",
    "alltoall",  "send",   "recv",      "barrier"};

const char *gt_redop_name(gt_redop op) {
    return (unsigned)op < GT_REDOP_COUNT ? g_redop_names[op] : "unknown";
}

gt_status gt_redop_parse(const char *s, gt_redop *out) {
    if (!s || !out) return GT_ERR(GT_ERR_INVALID, "gt_redop_parse: NULL argument");
    for (int i = 0; i < GT_REDOP_COUNT; i++) {
        if (strcasecmp(s, g_redop_names[i]) == 0) {
            *out = (gt_redop)i;
            return GT_OK;
        }
    }
    return GT_ERR(GT_ERR_INVALID, "unknown reduction '%s' (sum, avg, max, min)", s);
}

const char *gt_coll_name(gt_coll c) {
    return (unsigned)c < GT_COLL_COUNT ? g_coll_names[c] : "unknown";
}

/* ---- world, split, free ----------------------------------------------------- */

gt_comm_config gt_comm_defaults(void) {
    gt_comm_config c = {.backend = "auto", .timeout_s = 300.0};
    return c;
}

/* Launched by mpirun / mpiexec / srun / a PMI(x) launcher: each of these sets
 * one of these variables in every rank's environment. */
static int launched_by_launcher(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                       "SLURM_NTASKS", "MPI_LOCALNRANKS", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && v[0]) return 1;
    }
    return 0;
}

/* The tasks of the srun step this process is one of, when no MPI launcher of
 * its own said how many ranks it started (mpirun's OMPI_COMM_WORLD_SIZE,
 * Hydra's PMI_SIZE: they may run in a step of proxies, one per node); 0 when
 * not in an srun step. A world of 1 in a step of N > 1 tasks means the MPI
 * library did not speak the PMI that srun offered: MPICH under srun's
 * default --mpi=pmix here makes N singletons, each running the whole job. */
static long srun_tasks_unseen(void) {
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE")) return 0;
    const char *v = getenv("SLURM_STEP_NUM_TASKS");
    return v && *v ? strtol(v, NULL, 10) : 0;
}

static gt_status comm_wrap(const gt_comm_backend *be, void *impl, int rank, int size,
                           double timeout_s, gt_comm **out) {
    gt_comm *c = calloc(1, sizeof *c);
    int *wr = malloc((size_t)size * sizeof *wr);
    if (!c || !wr) {
        free(c);
        free(wr);
        be->destroy(impl);
        return GT_ERR(GT_ERR_OOM, "communicator of %d ranks: out of memory", size);
    }
    c->be = be;
    c->impl = impl;
    c->rank = rank;
    c->size = size;
    c->world_ranks = wr;
    c->timeout_s = timeout_s;
    for (int i = 0; i < size; i++) wr[i] = i;
    *out = c;
    return GT_OK;
}

/* The launcher's notice that a process of the job failed (see "the
 * launcher's notice" below): set by its signal handler. */
static volatile sig_atomic_t g_peer_failed;
static void notice_init(void);
static gt_status peer_failed_error(const gt_comm *c, const gt_comm_op_desc *d, uint64_t seq);

gt_status gt_comm_world(const gt_comm_config *cfg, gt_comm **out) {
    if (!out) return GT_ERR(GT_ERR_INVALID, "gt_comm_world: out is NULL");
    *out = NULL;
    gt_comm_config def = gt_comm_defaults();
    if (!cfg) cfg = &def;
    const char *name = cfg->backend && cfg->backend[0] ? cfg->backend : "auto";

    const gt_comm_backend *be;
    if (strcmp(name, "self") == 0) {
        be = &gt_comm_self_backend;
    } else if (strcmp(name, "mpi") == 0) {
        be = &gt_comm_mpi_backend;
    } else if (strcmp(name, "nccl") == 0) {
        /* never picked by auto: it needs one GPU per rank */
        be = &gt_comm_nccl_backend;
    } else if (strcmp(name, "auto") == 0) {
        /* Outside a launcher MPI_Init would still work (singleton), but it
         * costs a second and may print warnings; a plain run stays self. */
        be = launched_by_launcher() ? &gt_comm_mpi_backend : &gt_comm_self_backend;
    } else {
        return GT_ERR(GT_ERR_INVALID,
                      "unknown communicator backend '%s' (auto, self, mpi, nccl)", name);
    }

    void *impl = NULL;
    int rank = 0, size = 1;
    gt_status s = be->world(&impl, &rank, &size);
    if (s == GT_ERR_UNSUPPORTED && strcmp(name, "auto") == 0) {
        /* Launched, but this build has no MPI: every process runs alone. */
        be = &gt_comm_self_backend;
        s = be->world(&impl, &rank, &size);
    }
    if (s != GT_OK) return s;
    if (be == &gt_comm_mpi_backend && size == 1) {
        long tasks = srun_tasks_unseen();
        if (tasks > 1) {
            char lib[160];
            snprintf(lib, sizeof lib, "%s", be->version(impl));
            for (char *t = lib; *t; t++)
                if (*t == '\t') *t = ' ';
            be->destroy(impl);
            return GT_ERR(GT_ERR_COMM,
                          "srun started %ld tasks but MPI_Init made a world of 1 rank in each "
                          "(%s): the library did not understand srun's PMI plugin; MPICH "
                          "needs srun --mpi=pmi2, Open MPI --mpi=pmix (docs/clusters.md)",
                          tasks, lib);
        }
    }
    GT_TRY(comm_wrap(be, impl, rank, size, cfg->timeout_s, out));
    gt_error_set_context(rank, -1);
    if (be == &gt_comm_mpi_backend && size > 1) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        pthread_once(&once, notice_init);
    }
    return GT_OK;
}

void gt_comm_free(gt_comm *c) {
    if (!c) return;
    c->be->destroy(c->impl);
    free(c->world_ranks);
    free(c);
}

int gt_comm_rank(const gt_comm *c) { return c->rank; }
int gt_comm_size(const gt_comm *c) { return c->size; }
const char *gt_comm_backend_name(const gt_comm *c) { return c->be->name; }

int gt_comm_world_rank(const gt_comm *c, int r) {
    return r >= 0 && r < c->size ? c->world_ranks[r] : -1;
}

void gt_comm_set_name(gt_comm *c, const char *name) {
    if (c) snprintf(c->name, sizeof c->name, "%s", name ? name : "");
}

void gt_comm_set_timeout(gt_comm *c, double timeout_s) {
    if (c) c->timeout_s = timeout_s;
}

/* ---- the watchdog ----------------------------------------------------------- */

static double now_s(void) { return (double)gt_now_ns() * 1e-9; }

/* "4.0 MiB", "1 KiB", "12 B": sizes as a person reads them in a hang report. */
static void format_bytes(char *buf, size_t n, double bytes) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, n, "%.0f %s", bytes, units[u]);
    else
        snprintf(buf, n, "%.1f %s", bytes, units[u]);
}

/* "world ranks 0-3" when contiguous, else the list (cut after a few). */
static void format_world_ranks(const gt_comm *c, char *buf, size_t n) {
    int contiguous = 1;
    for (int i = 1; i < c->size; i++)
        if (c->world_ranks[i] != c->world_ranks[0] + i) contiguous = 0;
    if (c->size == 1) {
        snprintf(buf, n, "world rank %d", c->world_ranks[0]);
    } else if (contiguous) {
        snprintf(buf, n, "world ranks %d-%d", c->world_ranks[0],
                 c->world_ranks[c->size - 1]);
    } else {
        size_t used = (size_t)snprintf(buf, n, "world ranks ");
        for (int i = 0; i < c->size && used < n; i++) {
            if (i == 8) {
                snprintf(buf + used, n - used, ", ...");
                break;
            }
            used += (size_t)snprintf(buf + used, n - used, "%s%d", i ? "," : "",
                                     c->world_ranks[i]);
        }
    }
}

/* The last operation of this process that timed out or was waiting at a
 * failure notice (gt_comm_last_hang); written by the waiting thread or the
 * watchdog's, read by the trainer's recording. */
static pthread_mutex_t g_hang_mu = PTHREAD_MUTEX_INITIALIZER;
static gt_comm_hang g_hang;
static int g_have_hang;
static unsigned long g_hang_count;

static void keep_hang(const gt_comm *c, const gt_comm_op_desc *d, uint64_t seq, double waited,
                      int notice, double bytes, const char *ranks) {
    gt_comm_hang h;
    memset(&h, 0, sizeof h);
    snprintf(h.operation, sizeof h.operation, "%s",
             d->coll == GT_COLL_BARRIER ? "barrier" : gt_coll_name(d->coll));
    h.seq = (unsigned long long)seq;
    h.bytes = bytes;
    snprintf(h.dtype, sizeof h.dtype, "%s", gt_dtype_name(d->dt));
    snprintf(h.group, sizeof h.group, "%s", c->name);
    snprintf(h.world_ranks, sizeof h.world_ranks, "%s", ranks);
    h.group_size = c->size;
    h.world_rank = c->world_ranks[c->rank];
    int p2p = d->coll == GT_COLL_SEND || d->coll == GT_COLL_RECV;
    int rooted = d->coll == GT_COLL_BROADCAST && c->rank != d->root;
    h.peer = p2p || rooted ? d->root : -1;
    h.peer_world_rank = h.peer >= 0 ? c->world_ranks[h.peer] : -1;
    h.tag = p2p ? d->tag : -1;
    h.waited_s = waited;
    h.timeout_s = c->timeout_s;
    h.notice = notice;
    pthread_mutex_lock(&g_hang_mu);
    g_hang = h;
    g_have_hang = 1;
    g_hang_count++;
    pthread_mutex_unlock(&g_hang_mu);
}

unsigned long gt_comm_hang_count(void) {
    pthread_mutex_lock(&g_hang_mu);
    unsigned long n = g_hang_count;
    pthread_mutex_unlock(&g_hang_mu);
    return n;
}

int gt_comm_last_hang(gt_comm_hang *out) {
    pthread_mutex_lock(&g_hang_mu);
    int have = g_have_hang;
    if (have && out) *out = g_hang;
    pthread_mutex_unlock(&g_hang_mu);
    return have;
}

/* The hang report: operation, sequence number, size, ranks and who it waits
 * for, then `outcome`. Shared by the polling wait and the watchdog thread.
 * notice: the launcher said a process of the job failed while it waited
 * (gt_comm's failure notice), rather than the deadline passing. */
static void format_hang(const gt_comm *c, const gt_comm_op_desc *d, uint64_t seq, double waited,
                        int notice, const char *outcome, char *out, size_t n) {
    char size[32], peers[160], ranks[232], extra[64] = "";
    size_t bytes = d->count * gt_dtype_size(d->dt);
    if (d->coll == GT_COLL_REDUCE_SCATTER || d->coll == GT_COLL_ALLTOALL)
        bytes *= (size_t)c->size;
    format_bytes(size, sizeof size, (double)bytes);
    format_world_ranks(c, ranks, sizeof ranks);
    keep_hang(c, d, seq, waited, notice, (double)bytes, ranks);
    if (c->name[0]) { /* the group named: "world ranks 0-1; the tensor-parallel group ..." */
        size_t used = strlen(ranks);
        snprintf(ranks + used, sizeof ranks - used, "; %s", c->name);
    }
    if (d->coll == GT_COLL_SEND || d->coll == GT_COLL_RECV) {
        snprintf(extra, sizeof extra, ", tag %d, %s rank %d", d->tag,
                 d->coll == GT_COLL_SEND ? "to" : "from", d->root);
        snprintf(peers, sizeof peers, "rank %d (world rank %d) to %s", d->root,
                 c->world_ranks[d->root], d->coll == GT_COLL_SEND ? "receive" : "send");
    } else if (d->coll == GT_COLL_BROADCAST && c->rank != d->root) {
        snprintf(peers, sizeof peers, "root rank %d (world rank %d) and the ranks between",
                 d->root, c->world_ranks[d->root]);
    } else {
        snprintf(peers, sizeof peers, "all other ranks (collective)");
    }
    char opdesc[96];
    if (d->coll == GT_COLL_BARRIER)
        snprintf(opdesc, sizeof opdesc, "barrier #%llu", (unsigned long long)seq);
    else
        snprintf(opdesc, sizeof opdesc, "%s #%llu (%s %s%s)", gt_coll_name(d->coll),
                 (unsigned long long)seq, size, gt_dtype_name(d->dt), extra);
    if (notice)
        snprintf(out, n,
                 "%s on a communicator of %d ranks (%s) was waiting (%.1f s) when the launcher "
                 "said that another process of the job had failed; waiting for: %s; %s",
                 opdesc, c->size, ranks, waited, peers, outcome);
    else
        snprintf(out, n,
                 "%s on a communicator of %d ranks (%s) did not complete within %g s "
                 "(waited %.1f s); waiting for: %s; %s",
                 opdesc, c->size, ranks, c->timeout_s, waited, peers, outcome);
}


static gt_status timeout_error(gt_comm *c, const gt_comm_request *r, double waited,
                               int cancelled) {
    char msg[768];
    format_hang(c, &r->d, r->seq, waited, 0,
                cancelled ? "the operation was cancelled"
                          : "the operation was abandoned: abort the job",
                msg, sizeof msg);
    return GT_ERR(GT_ERR_TIMEOUT, "%s", msg);
}

/* Polls the backend until the request completes or the deadline passes.
 * Spinning first keeps small-message latency at the library's; yielding
 * next shares the core when ranks are oversubscribed; after a second the
 * operation is large or stuck, so a short sleep stops burning the core
 * while still calling test often enough to drive the library's progress.
 * idle: the rank has nothing else to do while its peers work for seconds
 * (gt_comm_wait_idle): it sleeps from the first poll, 50 us doubling to
 * 10 ms, so that it takes no core from the ranks being measured. */
static gt_status comm_wait(gt_comm *c, gt_comm_request *r, int idle) {
    double t0 = now_s();
    double deadline = c->timeout_s > 0 ? t0 + c->timeout_s : 0;
    gt_status s = GT_OK;
    long nap_ns = 50000;
    for (unsigned polls = 0;; polls++) {
        int done = 0;
        s = c->be->test(c->impl, r->handle, &done);
        if (s != GT_OK || done) break;
        if (g_peer_failed) {
            if (!c->be->cancel(c->impl, r->handle)) c->broken = 1;
            s = peer_failed_error(c, &r->d, r->seq);
            break;
        }
        if (idle || (polls & 63u) == 63u || polls > 256) {
            double t = now_s();
            if (deadline > 0 && t >= deadline) {
                int cancelled = c->be->cancel(c->impl, r->handle);
                if (!cancelled) c->broken = 1;
                s = timeout_error(c, r, t - t0, cancelled);
                break;
            }
            if (idle || t - t0 > 1.0) {
                struct timespec ts = {0, idle ? nap_ns : 100000};
                nanosleep(&ts, NULL);
                if (idle && nap_ns < 10000000) nap_ns *= 2;
                continue;
            }
        }
        if (polls > 256) sched_yield();
    }
    c->stats.wait_s += now_s() - t0;
    free(r);
    return s;
}

gt_status gt_comm_wait(gt_comm *c, gt_comm_request *req) {
    if (!c || !req) return GT_ERR(GT_ERR_INVALID, "gt_comm_wait: NULL argument");
    return comm_wait(c, req, 0);
}

gt_status gt_comm_wait_idle(gt_comm *c, gt_comm_request *req) {
    if (!c || !req) return GT_ERR(GT_ERR_INVALID, "gt_comm_wait_idle: NULL argument");
    return comm_wait(c, req, 1);
}

gt_status gt_comm_barrier_idle(gt_comm *c) {
    gt_comm_request *req = NULL;
    GT_TRY(gt_comm_barrier(c, &req));
    return gt_comm_wait_idle(c, req);
}

gt_status gt_comm_test(gt_comm *c, gt_comm_request *req, int *done) {
    if (!c || !req || !done) return GT_ERR(GT_ERR_INVALID, "gt_comm_test: NULL argument");
    *done = 0;
    gt_status s = c->be->test(c->impl, req->handle, done);
    if (s != GT_OK) {
        /* The backend released the handle: the request cannot complete. */
        free(req);
        *done = 1;
        return s;
    }
    if (*done) free(req);
    return GT_OK;
}

/* ---- the watchdog thread (blocking collectives) ------------------------------
 * A library's blocking collective (MPI_Allreduce, ...) cannot be polled, so
 * one thread per process keeps its deadline. The caller arms it before the
 * call and disarms it after; both take an uncontended mutex, and arming
 * signals the condition only when the thread sleeps without a deadline or
 * until a later one than the new deadline. Disarming never wakes it: it
 * wakes at the old deadline, finds nothing armed (or a newer arm, whose
 * deadline it then sleeps until), so a stream of calls costs at most one
 * wake-up per timeout period and no system call on the fast path.
 *
 * One slot: MPI is initialised MPI_THREAD_FUNNELED, so at most one thread
 * per process is inside a blocking library call at a time. */

enum { WD_AWAKE = 0, WD_IDLE, WD_TIMED };

static struct {
    pthread_mutex_t mu; /* guards every field */
    pthread_cond_t cv;  /* on CLOCK_MONOTONIC, the clock of gt_now_ns */
    int started;        /* the thread runs (set once by wd_init) */
    int armed;
    int firing;         /* the deadline passed: the job is being aborted */
    int sleeping;       /* WD_*: what the thread waits for */
    uint64_t until_ns;  /* WD_TIMED: the deadline it sleeps until */
    uint64_t start_ns, deadline_ns;
    /* The armed call: borrowed from the caller, which is blocked in the
     * library (and kept there by disarm while firing) as long as they are read. */
    const gt_comm *c;
    const gt_comm_op_desc *d;
    uint64_t seq;
    gt_comm_timeout_handler handler;
    void *handler_ctx;
} g_wd = {.mu = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t g_wd_once = PTHREAD_ONCE_INIT;

void gt_comm_set_timeout_handler(gt_comm_timeout_handler fn, void *ctx) {
    pthread_mutex_lock(&g_wd.mu);
    g_wd.handler = fn;
    g_wd.handler_ctx = ctx;
    pthread_mutex_unlock(&g_wd.mu);
}

/* Reports the expired call (notice: the call the launcher's failure notice
 * found waiting) and ends the job. Entered with the mutex held and firing
 * set; never returns. */
static void wd_fire(int notice) {
    const gt_comm *c = g_wd.c;
    char msg[768], line[840];
    format_hang(c, g_wd.d, g_wd.seq, (double)(gt_now_ns() - g_wd.start_ns) * 1e-9, notice,
                "a blocking collective cannot be cancelled: aborting the job", msg, sizeof msg);
    snprintf(line, sizeof line, "rank %d: %s", c->world_ranks[c->rank], msg);
    gt_comm_timeout_handler fn = g_wd.handler;
    void *ctx = g_wd.handler_ctx;
    const gt_comm_backend *be = c->be;
    void *impl = c->impl;
    /* Unlocked for the handler, which may take its time writing a report;
     * firing stays set, so the caller cannot return and free c meanwhile. */
    pthread_mutex_unlock(&g_wd.mu);
    fprintf(stderr, "gauntlet: watchdog: %s\n", line);
    fflush(stderr);
    if (fn) fn(line, ctx);
    /* The one MPI call made off the thread that initialised MPI
     * (MPI_THREAD_FUNNELED forbids it in principle): MPI_Abort is meant to
     * work from any state, and Open MPI and MPICH do honour it from another
     * thread while the main thread is inside a collective. */
    be->abort(impl, 3);
    /* A backend whose abort returned: exit() here would run atexit handlers
     * (MPI_Finalize among them) under the thread stuck in the library. */
    fflush(NULL);
    _Exit(3);
}

static void *wd_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&g_wd.mu);
    for (;;) {
        if (!g_wd.armed) {
            g_wd.sleeping = WD_IDLE;
            pthread_cond_wait(&g_wd.cv, &g_wd.mu);
        } else if (gt_now_ns() >= g_wd.deadline_ns) {
            break;
        } else {
            uint64_t until = g_wd.deadline_ns;
            struct timespec ts = {(time_t)(until / 1000000000u), (long)(until % 1000000000u)};
            g_wd.sleeping = WD_TIMED;
            g_wd.until_ns = until;
            pthread_cond_timedwait(&g_wd.cv, &g_wd.mu, &ts);
        }
        g_wd.sleeping = WD_AWAKE;
    }
    g_wd.firing = 1;
    wd_fire(0);
    return NULL;
}

/* Starts fn on a detached thread of its own; 1 when it runs. Signals
 * (SIGINT, SIGTERM, ...) stay with the application's threads: the new
 * thread inherits a mask that blocks them all. */
static int start_detached(void *(*fn)(void *)) {
    pthread_attr_t ta;
    if (pthread_attr_init(&ta) != 0) return 0;
    pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    int started = pthread_create(&t, &ta, fn, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&ta);
    return started;
}

static void wd_init(void) {
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0) return;
    int ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
             pthread_cond_init(&g_wd.cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (ok) g_wd.started = start_detached(wd_main);
}

/* Arms the watchdog for d (blocking, started at t0); 0 when no thread could
 * be started (the caller then polls instead, so the deadline still holds). */
static int wd_arm(const gt_comm *c, const gt_comm_op_desc *d, uint64_t seq, uint64_t t0) {
    pthread_once(&g_wd_once, wd_init);
    if (!g_wd.started) return 0;
    uint64_t deadline = t0 + (uint64_t)(c->timeout_s * 1e9);
    pthread_mutex_lock(&g_wd.mu);
    while (g_wd.firing) pthread_cond_wait(&g_wd.cv, &g_wd.mu); /* until the abort */
    g_wd.c = c;
    g_wd.d = d;
    g_wd.seq = seq;
    g_wd.start_ns = t0;
    g_wd.deadline_ns = deadline;
    g_wd.armed = 1;
    if (g_wd.sleeping == WD_IDLE || (g_wd.sleeping == WD_TIMED && deadline < g_wd.until_ns))
        pthread_cond_signal(&g_wd.cv);
    pthread_mutex_unlock(&g_wd.mu);
    return 1;
}

static void wd_disarm(void) {
    pthread_mutex_lock(&g_wd.mu);
    /* Returning now would let the caller free what the report reads. */
    while (g_wd.firing) pthread_cond_wait(&g_wd.cv, &g_wd.mu);
    g_wd.armed = 0;
    pthread_mutex_unlock(&g_wd.mu);
}

/* ---- the launcher's notice that a process failed ------------------------------
 * Hydra (MPICH's launcher; Intel MPI's is one too) run with
 * -disable-auto-cleanup leaves the survivors of a dead process running and
 * tells each with SIGUSR1, whose default action ends the process on the
 * spot: no report, nothing said about what it waited for. Under Hydra
 * (HYDI_CONTROL_FD in the environment) the signal is taken instead: the
 * handler notes it and wakes a thread that ends a blocking collective in
 * flight as the watchdog would (named, reported, the job aborted), and any
 * later wait of this process fails at once (comm_wait, comm_blocking). */
static int g_notice_fd[2] = {-1, -1};

static void notice_handler(int sig) {
    (void)sig;
    g_peer_failed = 1;
    int saved = errno;
    /* the launcher may be gone next: a write to its pipes then fails
     * instead of ending the process before the report is written */
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, NULL);
    char b = 1;
    if (write(g_notice_fd[1], &b, 1) < 0) { /* full or closed: the flag still holds */
    }
    errno = saved;
}

static void *notice_main(void *arg) {
    (void)arg;
    char b;
    while (read(g_notice_fd[0], &b, 1) < 0 && errno == EINTR) {
    }
    pthread_mutex_lock(&g_wd.mu);
    if (g_wd.armed && !g_wd.firing) {
        g_wd.firing = 1;
        wd_fire(1);
    }
    pthread_mutex_unlock(&g_wd.mu);
    return NULL;
}

static void notice_init(void) {
    if (!getenv("HYDI_CONTROL_FD") || pipe(g_notice_fd) != 0) return;
    pthread_once(&g_wd_once, wd_init); /* the thread that ends a blocking call */
    if (!start_detached(notice_main)) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = notice_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
}

/* The error of an operation started or waited for after the notice. */
static gt_status peer_failed_error(const gt_comm *c, const gt_comm_op_desc *d, uint64_t seq) {
    char msg[768];
    format_hang(c, d, seq, 0.0, 1, "the operation was abandoned: abort the job", msg, sizeof msg);
    return GT_ERR(GT_ERR_COMM, "%s", msg);
}

/* A blocking collective through the backend's blocking call, under the
 * watchdog. 1 when it ran (*s its status), 0 when the watchdog is
 * unavailable and the caller must poll. */
static int comm_blocking(gt_comm *c, const gt_comm_op_desc *d, uint64_t seq, gt_status *s) {
    uint64_t t0 = gt_now_ns();
    if (g_peer_failed) {
        *s = peer_failed_error(c, d, seq);
        return 1;
    }
    int timed = c->timeout_s > 0;
    if (timed && !wd_arm(c, d, seq, t0)) return 0;
    *s = c->be->blocking(c->impl, d);
    if (timed) wd_disarm();
    c->stats.wait_s += (double)(gt_now_ns() - t0) * 1e-9;
    if (*s != GT_OK)
        *s = gt_error_wrap(*s, "%s #%llu", gt_coll_name(d->coll), (unsigned long long)seq);
    return 1;
}

/* ---- starting operations ---------------------------------------------------- */

/* Bytes of this rank's send buffer, for the statistics. */
static size_t send_bytes(const gt_comm *c, const gt_comm_op_desc *d) {
    size_t b = d->count * gt_dtype_size(d->dt);
    switch (d->coll) {
    case GT_COLL_REDUCE_SCATTER:
    case GT_COLL_ALLTOALL: return b * (size_t)c->size;
    case GT_COLL_BROADCAST: return c->rank == d->root ? b : 0;
    case GT_COLL_RECV:
    case GT_COLL_BARRIER: return 0;
    default: return b;
    }
}

/* Starts d; blocking (with the watchdog) when req is NULL. */
static gt_status comm_run(gt_comm *c, const gt_comm_op_desc *d, gt_comm_request **req) {
    if (c->broken)
        return GT_ERR(GT_ERR_COMM,
                      "%s on a communicator whose earlier operation timed out and was "
                      "abandoned: the ranks no longer agree on the order of operations",
                      gt_coll_name(d->coll));
    uint64_t seq = ++c->seq[d->coll];
    size_t sent = send_bytes(c, d);
    c->stats.ops++;
    c->stats.bytes += sent;
    c->stats.coll_ops[d->coll]++;
    c->stats.coll_bytes[d->coll] += sent;
    /* Blocking collectives take the library's blocking call where the
     * backend has one (Open MPI's non-blocking collectives are up to 2x
     * slower). Send/recv keep polling: a receive that times out is
     * cancelled and returns GT_ERR_TIMEOUT instead of ending the job. */
    if (!req && c->be->blocking && d->coll != GT_COLL_SEND && d->coll != GT_COLL_RECV) {
        gt_status s = GT_OK;
        if (comm_blocking(c, d, seq, &s)) return s;
    }
    gt_comm_request *r = malloc(sizeof *r);
    if (!r) return GT_ERR(GT_ERR_OOM, "%s: out of memory for the request", gt_coll_name(d->coll));
    r->d = *d;
    r->seq = seq;
    gt_status s = c->be->start(c->impl, d, &r->handle);
    if (s != GT_OK) {
        unsigned long long seq = r->seq;
        free(r);
        return gt_error_wrap(s, "%s #%llu", gt_coll_name(d->coll), seq);
    }
    if (req) {
        *req = r;
        return GT_OK;
    }
    return comm_wait(c, r, 0);
}

static gt_status check_common(const gt_comm *c, const char *what, const void *buf_a,
                              const void *buf_b, size_t count, gt_dtype dt) {
    if (!c) return GT_ERR(GT_ERR_INVALID, "%s: communicator is NULL", what);
    if ((unsigned)dt >= GT_DTYPE_COUNT)
        return GT_ERR(GT_ERR_INVALID, "%s: unsupported dtype %d", what, (int)dt);
    if (count > 0 && (!buf_a || !buf_b))
        return GT_ERR(GT_ERR_INVALID, "%s: NULL buffer for %zu elements", what, count);
    /* Byte counts must stay representable; MPI's int limit is the backend's
     * concern (it chunks or refuses). */
    if (count > SIZE_MAX / 8 / (size_t)c->size)
        return GT_ERR(GT_ERR_INVALID, "%s: count %zu too large", what, count);
    return GT_OK;
}

static gt_status check_op(const char *what, gt_redop op) {
    if ((unsigned)op >= GT_REDOP_COUNT)
        return GT_ERR(GT_ERR_INVALID, "%s: unknown reduction %d", what, (int)op);
    return GT_OK;
}

static gt_status check_rank(const gt_comm *c, const char *what, const char *role, int r) {
    if (r < 0 || r >= c->size)
        return GT_ERR(GT_ERR_INVALID, "%s: %s %d out of range for a communicator of %d ranks",
                      what, role, r, c->size);
    return GT_OK;
}

gt_status gt_comm_allreduce(gt_comm *c, const void *send, void *recv, size_t count,
                            gt_dtype dt, gt_redop op, gt_comm_request **req) {
    GT_TRY(check_common(c, "allreduce", send, recv, count, dt));
    GT_TRY(check_op("allreduce", op));
    gt_comm_op_desc d = {GT_COLL_ALLREDUCE, send, recv, count, dt, op, 0, 0};
    return comm_run(c, &d, req);
}

gt_status gt_comm_reduce(gt_comm *c, const void *send, void *recv, size_t count, gt_dtype dt,
                         gt_redop op, int root, gt_comm_request **req) {
    GT_TRY(check_common(c, "reduce", send, send, count, dt));
    GT_TRY(check_op("reduce", op));
    GT_TRY(check_rank(c, "reduce", "root", root));
    if (c->rank == root && count > 0 && !recv)
        return GT_ERR(GT_ERR_INVALID, "reduce: recv is NULL on the root");
    if (c->rank != root) recv = NULL; /* ignored off the root, as in MPI */
    gt_comm_op_desc d = {GT_COLL_REDUCE, send, recv, count, dt, op, root, 0};
    return comm_run(c, &d, req);
}

gt_status gt_comm_broadcast(gt_comm *c, void *buf, size_t count, gt_dtype dt, int root,
                            gt_comm_request **req) {
    GT_TRY(check_common(c, "broadcast", buf, buf, count, dt));
    GT_TRY(check_rank(c, "broadcast", "root", root));
    gt_comm_op_desc d = {GT_COLL_BROADCAST, buf, buf, count, dt, GT_REDOP_SUM, root, 0};
    return comm_run(c, &d, req);
}

gt_status gt_comm_allgather(gt_comm *c, const void *send, void *recv, size_t count,
                            gt_dtype dt, gt_comm_request **req) {
    GT_TRY(check_common(c, "allgather", send, recv, count, dt));
    /* Both spellings of in-place mean "my block is already in recv". */
    const char *mine = (const char *)recv + (size_t)c->rank * count * gt_dtype_size(dt);
    if (count > 0 && (const char *)send == mine) send = recv;
    gt_comm_op_desc d = {GT_COLL_ALLGATHER, send, recv, count, dt, GT_REDOP_SUM, 0, 0};
    return comm_run(c, &d, req);
}

gt_status gt_comm_reduce_scatter(gt_comm *c, const void *send, void *recv, size_t count,
                                 gt_dtype dt, gt_redop op, gt_comm_request **req) {
    GT_TRY(check_common(c, "reduce_scatter", send, recv, count, dt));
    GT_TRY(check_op("reduce_scatter", op));
    gt_comm_op_desc d = {GT_COLL_REDUCE_SCATTER, send, recv, count, dt, op, 0, 0};
    return comm_run(c, &d, req);
}

gt_status gt_comm_alltoall(gt_comm *c, const void *send, void *recv, size_t count,
                           gt_dtype dt, gt_comm_request **req) {
    GT_TRY(check_common(c, "alltoall", send, recv, count, dt));
    if (count > 0 && send == recv)
        return GT_ERR(GT_ERR_INVALID, "alltoall: in place is not supported (send == recv)");
    gt_comm_op_desc d = {GT_COLL_ALLTOALL, send, recv, count, dt, GT_REDOP_SUM, 0, 0};
    return comm_run(c, &d, req);
}

static gt_status check_tag(const char *what, int tag) {
    if (tag < 0 || tag > GT_COMM_TAG_MAX)
        return GT_ERR(GT_ERR_INVALID, "%s: tag %d outside 0..%d", what, tag, GT_COMM_TAG_MAX);
    return GT_OK;
}

gt_status gt_comm_send(gt_comm *c, const void *buf, size_t count, gt_dtype dt, int peer,
                       int tag, gt_comm_request **req) {
    GT_TRY(check_common(c, "send", buf, buf, count, dt));
    GT_TRY(check_rank(c, "send", "peer", peer));
    GT_TRY(check_tag("send", tag));
    gt_comm_op_desc d = {GT_COLL_SEND, buf, NULL, count, dt, GT_REDOP_SUM, peer, tag};
    return comm_run(c, &d, req);
}

gt_status gt_comm_recv(gt_comm *c, void *buf, size_t count, gt_dtype dt, int peer, int tag,
                       gt_comm_request **req) {
    GT_TRY(check_common(c, "recv", buf, buf, count, dt));
    GT_TRY(check_rank(c, "recv", "peer", peer));
    GT_TRY(check_tag("recv", tag));
    gt_comm_op_desc d = {GT_COLL_RECV, NULL, buf, count, dt, GT_REDOP_SUM, peer, tag};
    return comm_run(c, &d, req);
}

gt_status gt_comm_barrier(gt_comm *c, gt_comm_request **req) {
    if (!c) return GT_ERR(GT_ERR_INVALID, "barrier: communicator is NULL");
    gt_comm_op_desc d = {GT_COLL_BARRIER, NULL, NULL, 0, GT_DTYPE_INT32, GT_REDOP_SUM, 0, 0};
    return comm_run(c, &d, req);
}

gt_status gt_comm_split(gt_comm *c, int color, int key, gt_comm **out) {
    if (!c || !out) return GT_ERR(GT_ERR_INVALID, "split: NULL argument");
    *out = NULL;
    void *impl = NULL;
    int rank = 0, size = 0;
    GT_TRY(c->be->split(c->impl, color < 0 ? -1 : color, key, &impl, &rank, &size));
    if (!impl) return GT_OK; /* color < 0: not a member */
    gt_comm *n = NULL;
    GT_TRY(comm_wrap(c->be, impl, rank, size, c->timeout_s, &n));
    /* Every member learns the world ranks of the others, so that a hang
     * report on the new communicator names processes a person can find. */
    int32_t mine = c->world_ranks[c->rank];
    int32_t *all = malloc((size_t)size * sizeof *all);
    if (!all) {
        gt_comm_free(n);
        return GT_ERR(GT_ERR_OOM, "split: out of memory");
    }
    gt_comm_op_desc d = {GT_COLL_ALLGATHER, &mine, all, 1, GT_DTYPE_INT32, GT_REDOP_SUM, 0, 0};
    gt_comm_request *r = malloc(sizeof *r);
    gt_status s = r ? GT_OK : GT_ERR(GT_ERR_OOM, "split: out of memory");
    if (s == GT_OK) {
        r->d = d;
        r->seq = 0;
        s = n->be->start(n->impl, &d, &r->handle);
        if (s == GT_OK) {
            s = comm_wait(n, r, 0);
        } else {
            free(r);
        }
    }
    if (s != GT_OK) {
        free(all);
        gt_comm_free(n);
        return gt_error_wrap(s, "split (color %d): exchanging world ranks", color);
    }
    for (int i = 0; i < size; i++) n->world_ranks[i] = all[i];
    free(all);
    /* The exchange is the split's own business, not the user's first op. */
    memset(&n->stats, 0, sizeof n->stats);
    *out = n;
    return GT_OK;
}

/* ---- deterministic tree all-reduce ------------------------------------------ */

static void add_inplace(void *acc, const void *x, size_t n, gt_dtype dt) {
    if (dt == GT_DTYPE_BF16 || dt == GT_DTYPE_FP16) {
        /* in fp32, rounded once: the correctly rounded sum of two 16-bit values */
        uint16_t *a = acc;
        const uint16_t *b = x;
        int bf = dt == GT_DTYPE_BF16;
        for (size_t i = 0; i < n; i++) {
            float v = bf ? gt_bf16_to_fp32(a[i]) + gt_bf16_to_fp32(b[i])
                         : gt_fp16_to_fp32(a[i]) + gt_fp16_to_fp32(b[i]);
            a[i] = bf ? gt_fp32_to_bf16(v) : gt_fp32_to_fp16(v);
        }
    } else if (dt == GT_DTYPE_FP32) {
        float *a = acc;
        const float *b = x;
        for (size_t i = 0; i < n; i++) a[i] = a[i] + b[i]; /* left operand first */
    } else {
        double *a = acc;
        const double *b = x;
        for (size_t i = 0; i < n; i++) a[i] = a[i] + b[i];
    }
}

gt_status gt_comm_allreduce_tree(gt_comm *c, void *buf, size_t count, gt_dtype dt) {
    GT_TRY(check_common(c, "allreduce_tree", buf, buf, count, dt));
    if (dt != GT_DTYPE_FP32 && dt != GT_DTYPE_FP64 && dt != GT_DTYPE_BF16 &&
        dt != GT_DTYPE_FP16)
        return GT_ERR(GT_ERR_INVALID, "allreduce_tree: dtype %s (fp32, fp64, bf16, fp16 only)",
                      gt_dtype_name(dt));
    if (c->size & (c->size - 1))
        return GT_ERR(GT_ERR_INVALID,
                      "allreduce_tree: %d ranks; the fixed tree needs a power of two", c->size);
    if (count > 0 && c->be->device_memory && c->be->device_memory(c->impl, buf))
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "allreduce_tree: buf is device memory (%s communicator); the fixed "
                      "tree adds the partials on the host: copy them to host memory first",
                      c->be->name);
    unsigned long long seq = ++c->tree_seq;
    if (c->size == 1 || count == 0) return GT_OK;
    void *tmp = NULL;
    gt_status s = GT_OK;
    /* Level k pairs r (a multiple of 2^(k+1)) with r + 2^k: the same pairs a
     * sequential balanced tree over the rank partials would combine. */
    for (int step = 1; step < c->size && s == GT_OK; step *= 2) {
        int r = c->rank;
        if (r % (2 * step) == 0) {
            if (!tmp && !(tmp = malloc(count * gt_dtype_size(dt)))) {
                s = GT_ERR(GT_ERR_OOM, "allreduce_tree: %zu elements", count);
                break;
            }
            gt_comm_op_desc d = {GT_COLL_RECV, NULL, tmp, count, dt, GT_REDOP_SUM, r + step,
                                 GT_COMM_TAG_TREE};
            s = comm_run(c, &d, NULL);
            if (s == GT_OK) add_inplace(buf, tmp, count, dt);
        } else {
            gt_comm_op_desc d = {GT_COLL_SEND, buf, NULL, count, dt, GT_REDOP_SUM, r - step,
                                 GT_COMM_TAG_TREE};
            s = comm_run(c, &d, NULL);
            break; /* this rank's partial is now inside its left neighbour's */
        }
    }
    free(tmp);
    if (s == GT_OK) {
        gt_comm_op_desc d = {GT_COLL_BROADCAST, buf, buf, count, dt, GT_REDOP_SUM, 0, 0};
        s = comm_run(c, &d, NULL);
    }
    if (s != GT_OK) return gt_error_wrap(s, "allreduce_tree #%llu (%zu %s)", seq, count,
                                         gt_dtype_name(dt));
    return GT_OK;
}

/* ---- the rest --------------------------------------------------------------- */

void gt_comm_abort(gt_comm *c, int code) {
    if (c) c->be->abort(c->impl, code);
    /* No communicator, or a backend whose abort returned: end this process. */
    fflush(NULL);
    exit(code);
}

void gt_comm_get_stats(const gt_comm *c, gt_comm_stats *out) {
    if (!out) return;
    if (!c) {
        memset(out, 0, sizeof *out);
        return;
    }
    *out = c->stats;
}

void *gt_comm_native_handle(gt_comm *c) { return c ? c->be->native(c->impl) : NULL; }

const char *gt_comm_library_version(const gt_comm *c) {
    return c ? c->be->version(c->impl) : "self";
}

/* Given by the kernels' registry (comm.h); read by the nccl backend's avg. */
static gt_comm_divide_fn g_divide;
void gt_comm_set_divide(gt_comm_divide_fn fn) { g_divide = fn; }
gt_comm_divide_fn gt_comm_divide(void) { return g_divide; }
