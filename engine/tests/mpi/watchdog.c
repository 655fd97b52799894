/* A blocking collective that never completes ends the job
 * (engine.comm_watchdog.mpi_np2, driven by watchdog.sh, which checks the
 * exit status, the messages and the time).
 *
 * Rank 0 calls a blocking allreduce with a 1 s deadline; rank 1 never does
 * and sleeps far longer than the test allows. The watchdog thread on rank 0
 * must print its message, call the handler, and MPI_Abort the whole job:
 * rank 1 is killed too, so "rank 1 woke up" never appears and the job ends
 * in a few seconds with a non-zero status. Anything this program prints
 * after the allreduce means the watchdog failed. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <time.h>

#include "engine/comm.h"

static void on_timeout(const char *message, void *ctx) {
    fprintf(stderr, "handler called (ctx %s): %s\n", (const char *)ctx, message);
}

int main(void) {
    gt_comm *c = NULL;
    gt_comm_config cfg = {.backend = "mpi", .timeout_s = 1.0};
    if (gt_comm_world(&cfg, &c) != GT_OK) {
        fprintf(stderr, "mpi world: %s\n", gt_last_error());
        return 1;
    }
    if (gt_comm_size(c) != 2) {
        fprintf(stderr, "needs 2 ranks, got %d\n", gt_comm_size(c));
        gt_comm_free(c);
        return 77;
    }
    static char ctx[] = "ok";
    gt_comm_set_timeout_handler(on_timeout, ctx);
    int rank = gt_comm_rank(c);
    /* A first collective that completes: the watchdog thread is started and
     * armed once before the one that hangs, as in a real run. A barrier, so
     * that the allreduce stays #1 (sequence numbers count per operation). */
    if (gt_comm_barrier(c, NULL) != GT_OK) {
        fprintf(stderr, "rank %d: barrier failed: %s\n", rank, gt_last_error());
        return 1;
    }
    float x = 1, y = 0;
    if (rank == 0) {
        fprintf(stderr, "rank 0 entering the allreduce\n");
        gt_status s = gt_comm_allreduce(c, &x, &y, 1, GT_DTYPE_FP32, GT_REDOP_SUM, NULL);
        fprintf(stderr, "rank 0: allreduce returned %d (%s)\n", (int)s, gt_last_error());
    } else {
        struct timespec ts = {60, 0};
        nanosleep(&ts, NULL);
        fprintf(stderr, "rank 1 woke up\n");
    }
    gt_comm_free(c);
    return 0;
}
