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

#ifdef __cplusplus
}
#endif
#endif
