/* The self communicator and the generic layer of engine/comm.h on one
 * process: names, validation, every collective as a copy, send/recv to self
 * through the queue, split, the tree all-reduce's size-1 case, statistics,
 * the watchdog on a receive that no one sends, and the abort. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/comm.h"
#include "engine/tests/check.h"
#include "engine/timer.h"
#include "gt_config.h"

static const gt_dtype k_dtypes[] = {GT_DTYPE_FP32, GT_DTYPE_FP64, GT_DTYPE_BF16,
                                    GT_DTYPE_FP16, GT_DTYPE_INT32, GT_DTYPE_INT64};

/* Distinct bytes per element: a copy that misses or shifts shows. */
static void fill(unsigned char *p, size_t bytes, unsigned seed) {
    for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)(i * 7u + seed * 13u + 1u);
}

static void test_names(void) {
    gt_redop op;
    for (int i = 0; i < GT_REDOP_COUNT; i++) {
        CHECK_OK(gt_redop_parse(gt_redop_name((gt_redop)i), &op));
        CHECK(op == (gt_redop)i, "redop %d round trip", i);
    }
    CHECK_STATUS(gt_redop_parse("prod", &op), GT_ERR_INVALID);
    CHECK(strcmp(gt_coll_name(GT_COLL_REDUCE_SCATTER), "reduce_scatter") == 0, "coll name");
    CHECK(strcmp(gt_coll_name(GT_COLL_BARRIER), "barrier") == 0, "coll name");
    gt_comm_config d = gt_comm_defaults();
    CHECK(strcmp(d.backend, "auto") == 0 && d.timeout_s == 300.0, "defaults %s %g", d.backend,
          d.timeout_s);
}

static void test_world(void) {
    gt_comm *c = NULL;
    gt_comm_config cfg = {.backend = "bogus", .timeout_s = 1};
    CHECK_STATUS(gt_comm_world(&cfg, &c), GT_ERR_INVALID);
    CHECK(c == NULL, "no communicator on error");
#if !GT_HAVE_MPI
    cfg.backend = "mpi";
    CHECK_STATUS(gt_comm_world(&cfg, &c), GT_ERR_UNSUPPORTED);
    CHECK(strstr(gt_last_error(), "not built") != NULL, "message: %s", gt_last_error());
#endif
    /* ctest runs outside any launcher: auto is self. */
    CHECK_OK(gt_comm_world(NULL, &c));
    if (!c) return;
    CHECK(strcmp(gt_comm_backend_name(c), "self") == 0, "backend %s", gt_comm_backend_name(c));
    CHECK(gt_comm_rank(c) == 0 && gt_comm_size(c) == 1, "rank/size");
    CHECK(gt_comm_world_rank(c, 0) == 0, "world rank");
    CHECK(gt_comm_native_handle(c) == NULL, "self has no native handle");
    CHECK(strcmp(gt_comm_library_version(c), "self") == 0, "version");
    gt_comm_free(c);
    gt_comm_free(NULL);
}

static void test_collectives(gt_comm *c) {
    enum { N = 37 };
    for (size_t k = 0; k < sizeof k_dtypes / sizeof k_dtypes[0]; k++) {
        gt_dtype dt = k_dtypes[k];
        size_t bytes = N * gt_dtype_size(dt);
        unsigned char in[N * 8], out[N * 8], want[N * 8];
        for (int op = 0; op < GT_REDOP_COUNT; op++) {
            fill(in, bytes, (unsigned)op);
            memcpy(want, in, bytes);
            memset(out, 0xEE, sizeof out);
            CHECK_OK(gt_comm_allreduce(c, in, out, N, dt, (gt_redop)op, NULL));
            CHECK(memcmp(out, want, bytes) == 0, "allreduce %s %s", gt_dtype_name(dt),
                  gt_redop_name((gt_redop)op));
            CHECK_OK(gt_comm_allreduce(c, in, in, N, dt, (gt_redop)op, NULL));
            CHECK(memcmp(in, want, bytes) == 0, "allreduce in place");
            memset(out, 0xEE, sizeof out);
            CHECK_OK(gt_comm_reduce(c, in, out, N, dt, (gt_redop)op, 0, NULL));
            CHECK(memcmp(out, want, bytes) == 0, "reduce");
            memset(out, 0xEE, sizeof out);
            CHECK_OK(gt_comm_reduce_scatter(c, in, out, N, dt, (gt_redop)op, NULL));
            CHECK(memcmp(out, want, bytes) == 0, "reduce_scatter");
            CHECK_OK(gt_comm_reduce_scatter(c, in, in, N, dt, (gt_redop)op, NULL));
            CHECK(memcmp(in, want, bytes) == 0, "reduce_scatter in place");
        }
        fill(in, bytes, 9);
        memcpy(want, in, bytes);
        CHECK_OK(gt_comm_broadcast(c, in, N, dt, 0, NULL));
        CHECK(memcmp(in, want, bytes) == 0, "broadcast");
        memset(out, 0, sizeof out);
        CHECK_OK(gt_comm_allgather(c, in, out, N, dt, NULL));
        CHECK(memcmp(out, want, bytes) == 0, "allgather");
        CHECK_OK(gt_comm_allgather(c, in, in, N, dt, NULL));
        CHECK(memcmp(in, want, bytes) == 0, "allgather in place");
        memset(out, 0, sizeof out);
        CHECK_OK(gt_comm_alltoall(c, in, out, N, dt, NULL));
        CHECK(memcmp(out, want, bytes) == 0, "alltoall");
    }
    CHECK_OK(gt_comm_barrier(c, NULL));
    /* Zero elements: legal, with NULL buffers. */
    CHECK_OK(gt_comm_allreduce(c, NULL, NULL, 0, GT_DTYPE_FP32, GT_REDOP_SUM, NULL));
}

static void test_invalid(gt_comm *c) {
    float x[4] = {0};
    CHECK_STATUS(gt_comm_allreduce(c, x, x, 4, GT_DTYPE_COUNT, GT_REDOP_SUM, NULL),
                 GT_ERR_INVALID);
    CHECK_STATUS(gt_comm_allreduce(c, x, x, 4, GT_DTYPE_FP32, GT_REDOP_COUNT, NULL),
                 GT_ERR_INVALID);
    CHECK_STATUS(gt_comm_allreduce(c, NULL, x, 4, GT_DTYPE_FP32, GT_REDOP_SUM, NULL),
                 GT_ERR_INVALID);
    CHECK_STATUS(gt_comm_broadcast(c, x, 4, GT_DTYPE_FP32, 1, NULL), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "rank 0") != NULL, "error context names the rank: %s",
          gt_last_error());
    CHECK_STATUS(gt_comm_reduce(c, x, x, 4, GT_DTYPE_FP32, GT_REDOP_SUM, -1, NULL),
                 GT_ERR_INVALID);
    CHECK_STATUS(gt_comm_send(c, x, 4, GT_DTYPE_FP32, 1, 0, NULL), GT_ERR_INVALID);
    CHECK_STATUS(gt_comm_send(c, x, 4, GT_DTYPE_FP32, 0, GT_COMM_TAG_MAX + 1, NULL),
                 GT_ERR_INVALID);
    CHECK_STATUS(gt_comm_alltoall(c, x, x, 4, GT_DTYPE_FP32, NULL), GT_ERR_INVALID);
    CHECK_STATUS(gt_comm_allreduce_tree(c, x, 4, GT_DTYPE_INT32), GT_ERR_INVALID);
    CHECK_STATUS(gt_comm_allreduce_tree(c, x, 4, GT_DTYPE_INT64), GT_ERR_INVALID);
    /* 16-bit floats are summed (engine/dp.c's bf16/fp16 gradients) */
    CHECK_OK(gt_comm_allreduce_tree(c, x, 4, GT_DTYPE_BF16));
}

static void test_send_recv(gt_comm *c) {
    int32_t a[5] = {1, 2, 3, 4, 5}, b[5] = {10, 20, 30, 40, 50}, r[5] = {0};
    /* Send first, then receive: the queue holds the copy. */
    CHECK_OK(gt_comm_send(c, a, 5, GT_DTYPE_INT32, 0, 1, NULL));
    CHECK_OK(gt_comm_send(c, b, 5, GT_DTYPE_INT32, 0, 2, NULL));
    a[0] = -1; /* the send completed: the buffer is the caller's again */
    CHECK_OK(gt_comm_recv(c, r, 5, GT_DTYPE_INT32, 0, 2, NULL));
    CHECK(r[0] == 10 && r[4] == 50, "tag 2 matched the second message: %d", r[0]);
    CHECK_OK(gt_comm_recv(c, r, 5, GT_DTYPE_INT32, 0, 1, NULL));
    CHECK(r[0] == 1 && r[4] == 5, "tag 1 got the first message's copy: %d", r[0]);

    /* Receive posted first, non-blocking: completes when the send arrives. */
    gt_comm_request *req = NULL;
    memset(r, 0, sizeof r);
    CHECK_OK(gt_comm_recv(c, r, 5, GT_DTYPE_INT32, 0, 7, &req));
    int done = -1;
    CHECK_OK(gt_comm_test(c, req, &done));
    CHECK(done == 0, "no message yet");
    CHECK_OK(gt_comm_send(c, b, 5, GT_DTYPE_INT32, 0, 7, NULL));
    CHECK_OK(gt_comm_test(c, req, &done));
    CHECK(done == 1 && r[2] == 30, "posted receive matched: done %d r[2] %d", done, r[2]);

    /* A message larger than the receive buffer is the receive's error. */
    CHECK_OK(gt_comm_send(c, b, 5, GT_DTYPE_INT32, 0, 3, NULL));
    CHECK_STATUS(gt_comm_recv(c, r, 2, GT_DTYPE_INT32, 0, 3, NULL), GT_ERR_COMM);

    /* Non-blocking collective + wait. */
    float x[3] = {1, 2, 3}, y[3] = {0};
    CHECK_OK(gt_comm_allreduce(c, x, y, 3, GT_DTYPE_FP32, GT_REDOP_AVG, &req));
    CHECK_OK(gt_comm_wait(c, req));
    CHECK(y[0] == 1 && y[2] == 3, "non-blocking allreduce");
}

static void test_split_tree_stats(void) {
    gt_comm *c = NULL;
    gt_comm_config cfg = {.backend = "self", .timeout_s = 10};
    CHECK_OK(gt_comm_world(&cfg, &c));
    if (!c) return;
    gt_comm *s = NULL;
    CHECK_OK(gt_comm_split(c, 3, 0, &s));
    CHECK(s && gt_comm_size(s) == 1 && gt_comm_rank(s) == 0, "split to size 1");
    gt_comm_free(s);
    s = (gt_comm *)1;
    CHECK_OK(gt_comm_split(c, -1, 0, &s));
    CHECK(s == NULL, "color < 0 gives no communicator");

    double v[4] = {0.1, 0.2, 0.3, 0.4};
    CHECK_OK(gt_comm_allreduce_tree(c, v, 4, GT_DTYPE_FP64));
    CHECK(v[0] == 0.1 && v[3] == 0.4, "tree on one rank leaves the partial");

    gt_comm_stats st;
    gt_comm_get_stats(c, &st);
    CHECK(st.ops == 0, "fresh communicator: %llu ops", (unsigned long long)st.ops);
    float f[8] = {0};
    CHECK_OK(gt_comm_allreduce(c, f, f, 8, GT_DTYPE_FP32, GT_REDOP_SUM, NULL));
    CHECK_OK(gt_comm_alltoall(c, f, v, 2, GT_DTYPE_FP32, NULL));
    gt_comm_get_stats(c, &st);
    CHECK(st.ops == 2 && st.bytes == 32 + 8, "stats ops %llu bytes %llu",
          (unsigned long long)st.ops, (unsigned long long)st.bytes);
    CHECK(st.wait_s >= 0, "wait time");
    gt_comm_free(c);
}

static void test_watchdog(void) {
    gt_comm *c = NULL;
    gt_comm_config cfg = {.backend = "self", .timeout_s = 0.2};
    CHECK_OK(gt_comm_world(&cfg, &c));
    if (!c) return;
    int32_t r[4];
    uint64_t t0 = gt_now_ns();
    CHECK_STATUS(gt_comm_recv(c, r, 4, GT_DTYPE_INT32, 0, 5, NULL), GT_ERR_TIMEOUT);
    double dt = (double)(gt_now_ns() - t0) * 1e-9;
    const char *msg = gt_last_error();
    CHECK(dt >= 0.19 && dt < 1.0, "timed out after %.3f s", dt);
    CHECK(strstr(msg, "recv #1") && strstr(msg, "rank 0") && strstr(msg, "0.2 s") &&
              strstr(msg, "tag 5"),
          "message: %s", msg);
    /* The receive was cancelled: a later message with that tag stays queued
     * for the next receive instead of landing in a dead buffer. */
    int32_t a[4] = {4, 3, 2, 1};
    CHECK_OK(gt_comm_send(c, a, 4, GT_DTYPE_INT32, 0, 5, NULL));
    CHECK_OK(gt_comm_recv(c, r, 4, GT_DTYPE_INT32, 0, 5, NULL));
    CHECK(r[0] == 4 && r[3] == 1, "communicator usable after a cancelled receive");
    gt_comm_free(c);
}

/* The abort as the watchdog makes it: from another thread while the main
 * thread is busy (here asleep; in a job, stuck inside NCCL). The process must
 * end at once with the code, running no exit handler: the
 * CUDA runtime's and NCCL's teardown would run under the stuck thread. */
static int g_abort_pipe = -1;
static void abort_atexit(void) {
    if (write(g_abort_pipe, "atexit ran\n", 11) < 0) _exit(99);
}
static void *abort_thread(void *arg) {
    gt_comm_abort((gt_comm *)arg, 7);
    return NULL; /* not reached */
}
static void test_abort(void) {
    int fds[2];
    CHECK(pipe(fds) == 0, "pipe");
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        close(fds[0]);
        g_abort_pipe = fds[1];
        atexit(abort_atexit);
        gt_comm *c = NULL;
        gt_comm_config cfg = {.backend = "self", .timeout_s = 30};
        if (gt_comm_world(&cfg, &c) != GT_OK) _exit(98);
        pthread_t t;
        if (pthread_create(&t, NULL, abort_thread, c) != 0) _exit(97);
        struct timespec ts = {10, 0};
        nanosleep(&ts, NULL);
        _exit(96); /* the abort did not end the process */
    }
    close(fds[1]);
    char buf[64] = "";
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7, "abort from a second thread: exit status %d",
          WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    CHECK(n <= 0, "an exit handler ran on abort: '%s'", n > 0 ? buf : "");
}

int main(void) {
    test_names();
    test_world();
    gt_comm *c = NULL;
    gt_comm_config cfg = {.backend = "self", .timeout_s = 30};
    CHECK_OK(gt_comm_world(&cfg, &c));
    if (c) {
        test_collectives(c);
        test_invalid(c);
        test_send_recv(c);
        gt_comm_free(c);
    }
    test_split_tree_stats();
    test_watchdog();
    test_abort();
    return check_done("engine.comm.self");
}
