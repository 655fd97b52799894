/* The self backend: a communicator of one process, always built. Every
 * collective is a copy (or nothing, in place): with one rank, sum, avg, max
 * and min of one contribution are the contribution itself. Send/recv to
 * self go through a small queue so that a one-rank program that sends to
 * itself (a ring of size 1) works: a send is copied eagerly and completes at
 * once; a receive matches the oldest queued message with its tag, or waits
 * in FIFO order of posting for a later send. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/comm.h"

typedef struct self_msg {
    struct self_msg *next;
    int tag;
    size_t bytes;
    unsigned char data[];
} self_msg;

typedef struct self_recv {
    struct self_recv *next;
    int tag;
    void *buf;
    size_t cap;
    int done;
    size_t got; /* bytes of the message that matched; > cap: truncation */
} self_recv;

typedef struct self_comm {
    self_msg *msgs;     /* sent, not yet received: oldest first */
    self_recv *pending; /* posted receives waiting for a send: oldest first */
} self_comm;

/* Operations that finish inside start share this handle: nothing to free. */
static int g_done_marker;
#define SELF_DONE ((void *)&g_done_marker)

static gt_status self_world(void **impl, int *rank, int *size) {
    self_comm *s = calloc(1, sizeof *s);
    if (!s) return GT_ERR(GT_ERR_OOM, "self communicator: out of memory");
    *impl = s;
    *rank = 0;
    *size = 1;
    return GT_OK;
}

static void copy_if_apart(void *dst, const void *src, size_t bytes) {
    if (bytes && dst != src) memmove(dst, src, bytes);
}

static gt_status self_send(self_comm *s, const gt_comm_op_desc *d, size_t bytes) {
    for (self_recv **p = &s->pending; *p; p = &(*p)->next) {
        self_recv *r = *p;
        if (r->tag != d->tag) continue;
        /* Truncation is the receive's error, as in MPI. */
        if (bytes <= r->cap) copy_if_apart(r->buf, d->send, bytes);
        r->got = bytes;
        r->done = 1;
        *p = r->next;
        return GT_OK;
    }
    self_msg *m = malloc(sizeof *m + bytes);
    if (!m) return GT_ERR(GT_ERR_OOM, "send to self: %zu bytes", bytes);
    m->next = NULL;
    m->tag = d->tag;
    m->bytes = bytes;
    if (bytes) memcpy(m->data, d->send, bytes);
    self_msg **tail = &s->msgs;
    while (*tail) tail = &(*tail)->next;
    *tail = m;
    return GT_OK;
}

static gt_status self_recv_start(self_comm *s, const gt_comm_op_desc *d, size_t bytes,
                                 void **handle) {
    for (self_msg **p = &s->msgs; *p; p = &(*p)->next) {
        self_msg *m = *p;
        if (m->tag != d->tag) continue;
        *p = m->next;
        gt_status st = GT_OK;
        if (m->bytes > bytes)
            st = GT_ERR(GT_ERR_COMM, "recv from self (tag %d): message of %zu bytes truncated "
                        "to the buffer's %zu", d->tag, m->bytes, bytes);
        else
            memcpy(d->recv, m->data, m->bytes);
        free(m);
        *handle = SELF_DONE;
        return st;
    }
    self_recv *r = calloc(1, sizeof *r);
    if (!r) return GT_ERR(GT_ERR_OOM, "recv from self: out of memory");
    r->tag = d->tag;
    r->buf = d->recv;
    r->cap = bytes;
    self_recv **tail = &s->pending;
    while (*tail) tail = &(*tail)->next;
    *tail = r;
    *handle = r;
    return GT_OK;
}

static gt_status self_start(void *impl, const gt_comm_op_desc *d, void **handle) {
    self_comm *s = impl;
    size_t bytes = d->count * gt_dtype_size(d->dt);
    *handle = SELF_DONE;
    switch (d->coll) {
    case GT_COLL_ALLREDUCE:
    case GT_COLL_REDUCE: /* recv is NULL only when count is 0 */
    case GT_COLL_ALLGATHER:
    case GT_COLL_REDUCE_SCATTER: /* block 0 is at the start of send */
    case GT_COLL_ALLTOALL: copy_if_apart(d->recv, d->send, bytes); return GT_OK;
    case GT_COLL_BROADCAST:
    case GT_COLL_BARRIER: return GT_OK;
    case GT_COLL_SEND: return self_send(s, d, bytes);
    case GT_COLL_RECV: return self_recv_start(s, d, bytes, handle);
    default: return GT_ERR(GT_ERR_INVALID, "self: unknown operation %d", (int)d->coll);
    }
}

static gt_status self_test(void *impl, void *handle, int *done) {
    (void)impl;
    if (handle == SELF_DONE) {
        *done = 1;
        return GT_OK;
    }
    self_recv *r = handle;
    *done = r->done;
    if (!r->done) return GT_OK;
    gt_status st = GT_OK;
    if (r->got > r->cap)
        st = GT_ERR(GT_ERR_COMM, "recv from self (tag %d): message of %zu bytes truncated to "
                    "the buffer's %zu", r->tag, r->got, r->cap);
    free(r);
    return st;
}

static int self_cancel(void *impl, void *handle) {
    self_comm *s = impl;
    if (handle == SELF_DONE) return 1;
    for (self_recv **p = &s->pending; *p; p = &(*p)->next) {
        if (*p == handle) {
            *p = (*p)->next;
            break;
        }
    }
    free(handle);
    return 1;
}

static gt_status self_split(void *impl, int color, int key, void **new_impl, int *new_rank,
                            int *new_size) {
    (void)impl;
    (void)key;
    *new_impl = NULL;
    if (color < 0) return GT_OK;
    return self_world(new_impl, new_rank, new_size);
}

static void *self_native(void *impl) {
    (void)impl;
    return NULL;
}

static const char *self_version(void *impl) {
    (void)impl;
    return "self";
}

static void self_abort(void *impl, int code) {
    (void)impl;
    fflush(NULL);
    /* The one exit in the library: the harness asked to end the job. At once,
     * without exit handlers: the watchdog's thread calls this (through the
     * nccl communicator, whose host side is this one without MPI) while the
     * main thread is stuck inside a library call, and exit() would run the
     * CUDA runtime's and NCCL's teardown under it, as MPI_Abort does not. */
    _Exit(code);
}

static void self_destroy(void *impl) {
    self_comm *s = impl;
    if (!s) return;
    while (s->msgs) {
        self_msg *m = s->msgs;
        s->msgs = m->next;
        free(m);
    }
    /* Pending receives belong to their requests (completed or cancelled by
     * the caller first); unlinking is all that is left to do. */
    free(s);
}

/* No .blocking: every collective completes inside start, so the generic
 * polling path costs one test and never needs the watchdog thread. */
const gt_comm_backend gt_comm_self_backend = {
    .name = "self",
    .world = self_world,
    .start = self_start,
    .test = self_test,
    .cancel = self_cancel,
    .split = self_split,
    .native = self_native,
    .version = self_version,
    .abort = self_abort,
    .destroy = self_destroy,
};
