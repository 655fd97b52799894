/* The watchdog's abort against the owner's poll of the nccl communicator
 * (engine.comm_watchdog.nccl_np1, driven by watchdog.sh; emulator builds
 * only: it needs the NCCL stand-in's fault injection, ci/cuda_emu/nccl_emu.cc).
 *
 * Under GT_EMU_NCCL_HANG=1 the allreduce below never completes, and under
 * GT_EMU_NCCL_ASYNC_DELAY_US the owner's every ncclCommGetAsyncError takes
 * that long, so when the 1 s deadline passes the owner is almost certainly
 * inside that call. The watchdog thread must then print its message, call
 * the handler and end the job with the host communicator's abort, without
 * freeing the NCCL communicator under the owner's call (the stand-in stops
 * the process with its own message when a communicator is freed while
 * another thread is inside a call on it; under ASan the freed memory is
 * reported too). Anything printed after the allreduce means the watchdog
 * failed. */
#define _POSIX_C_SOURCE 200809L

#include <cuda_runtime_api.h>
#include <stdio.h>

#include "engine/comm.h"

static void on_timeout(const char *message, void *ctx) {
    fprintf(stderr, "handler called (ctx %s): %s\n", (const char *)ctx, message);
}

int main(void) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        printf("engine.comm_watchdog.nccl: skipped: no CUDA device visible\n");
        return 77;
    }
    gt_comm *c = NULL;
    gt_comm_config cfg = {.backend = "nccl", .timeout_s = 1.0};
    if (gt_comm_world(&cfg, &c) != GT_OK) {
        fprintf(stderr, "nccl world: %s\n", gt_last_error());
        return 1;
    }
    static char ctx[] = "ok";
    gt_comm_set_timeout_handler(on_timeout, ctx);
    float *d = NULL;
    if (cudaMalloc((void **)&d, sizeof *d) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc failed\n");
        return 1;
    }
    fprintf(stderr, "entering the allreduce\n");
    gt_status s = gt_comm_allreduce(c, d, d, 1, GT_DTYPE_FP32, GT_REDOP_SUM, NULL);
    fprintf(stderr, "allreduce returned %s: %s\n", gt_status_name(s), gt_last_error());
    cudaFree(d);
    gt_comm_free(c);
    return 0;
}
