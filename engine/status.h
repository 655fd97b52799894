/* gt_status: the error codes every library function returns, and the
 * thread-local "last error" message that explains the most recent failure.
 *
 * Library code never exits: it records what went wrong with GT_ERR(...) and
 * returns the status to its caller. Only harness/ turns a status into an exit
 * code and a message for the user.
 */
#ifndef GT_STATUS_H
#define GT_STATUS_H

#include <stdio.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gt_status {
    GT_OK = 0,
    GT_ERR_INVALID,     /* bad argument or input: the caller must fix it */
    GT_ERR_OOM,         /* an allocation failed (host or device) */
    GT_ERR_UNSUPPORTED, /* not built in, not available here, or empty op slot */
    GT_ERR_DEVICE,      /* CUDA / cuBLAS / cuDNN failure */
    GT_ERR_COMM,        /* MPI / NCCL failure */
    GT_ERR_IO,          /* file could not be read or written */
    GT_ERR_MISMATCH,    /* data did not match what was expected (checksum, config) */
    GT_ERR_TIMEOUT,     /* a deadline passed */
    GT_STATUS_COUNT
} gt_status;

/* Short stable name of a status ("GT_ERR_IO"). Never NULL. */
const char *gt_status_name(gt_status s);

/* Records the last error of the calling thread: the message (printf format),
 * where it was raised (file:line) and, when set, the rank and device.
 * Returns `s` so that callers can write `return GT_ERR(GT_ERR_IO, ...)`. */
gt_status gt_error_set(gt_status s, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Appends context to the current last error ("while loading X: <old msg>"). */
gt_status gt_error_wrap(gt_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The calling thread's last error message, "" when none. The string is owned
 * by the library and valid until the next error on this thread. */
const char *gt_last_error(void);
gt_status gt_last_status(void);
void gt_error_clear(void);

/* Process-wide context that every later message carries: MPI rank (-1: none)
 * and device index (-1: host). */
void gt_error_set_context(int rank, int device);

#define GT_ERR(status, ...) gt_error_set((status), __FILE__, __LINE__, __VA_ARGS__)

/* Propagates a non-OK status to the caller. */
#define GT_TRY(expr)                                                                   \
    do {                                                                               \
        gt_status gt_try_s_ = (expr);                                                  \
        if (gt_try_s_ != GT_OK) return gt_try_s_;                                      \
    } while (0)

/* Turns a failing CUDA runtime call into GT_ERR_DEVICE with the statement
 * and CUDA's message; only for functions returning gt_status. For the files
 * that call the CUDA runtime (kernels/cuda/, engine/comm_nccl.c): the macro
 * names cudaError_t and cudaGetErrorString only where it is used, so this
 * header needs no CUDA header and host-only builds never see one. */
#define GT_CUDA_TRY(stmt)                                                                          \
    do {                                                                                           \
        cudaError_t gt_cuda_e_ = (stmt);                                                           \
        if (gt_cuda_e_ != cudaSuccess)                                                             \
            return GT_ERR(GT_ERR_DEVICE, "%s failed: %s (%s)", #stmt,                              \
                          cudaGetErrorString(gt_cuda_e_), cudaGetErrorName(gt_cuda_e_));           \
    } while (0)

/* Programmer errors: stays on in release builds, prints and aborts. */
#define GT_ASSERT(cond)                                                                \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "gauntlet: assertion failed: %s (%s:%d)\n", #cond,          \
                    __FILE__, __LINE__);                                               \
            abort();                                                                   \
        }                                                                              \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
