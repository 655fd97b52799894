/* Monotonic time. */
#ifndef GT_TIMER_H
#define GT_TIMER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Nanoseconds from CLOCK_MONOTONIC. */
uint64_t gt_now_ns(void);
/* Seconds since the epoch (CLOCK_REALTIME), for report timestamps. */
double gt_wall_time(void);
/* When this process started, on gt_now_ns's clock: the kernel's record of
 * the start (/proc/self/stat, 10 ms resolution on Linux), which a re-exec
 * keeps (gauntlet runs itself again to set OMP_WAIT_POLICY); where /proc
 * cannot tell, when this library was loaded. */
uint64_t gt_process_start_ns(void);

#ifdef __cplusplus
}
#endif
#endif
