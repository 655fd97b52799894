#define _GNU_SOURCE /* CLOCK_BOOTTIME */
#include "engine/timer.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t gt_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double gt_wall_time(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The library's load: the fallback origin where /proc cannot say more. */
static uint64_t g_loaded_ns;
__attribute__((constructor)) static void note_load(void) { g_loaded_ns = gt_now_ns(); }

uint64_t gt_process_start_ns(void) {
    /* Field 22 of /proc/self/stat is the start in clock ticks after boot,
     * CLOCK_BOOTTIME's origin; the fields before it end with ") " after the
     * command name, which may itself hold spaces or parentheses. */
    FILE *f = fopen("/proc/self/stat", "r");
    char buf[1024];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    long tck = sysconf(_SC_CLK_TCK);
    unsigned long long ticks = 0;
    if (p && tck > 0 &&
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d "
                      "%*d %llu",
               &ticks) == 1) {
        struct timespec bt;
        clock_gettime(CLOCK_BOOTTIME, &bt);
        uint64_t boot_now = (uint64_t)bt.tv_sec * 1000000000ull + (uint64_t)bt.tv_nsec;
        uint64_t since = boot_now - (uint64_t)(ticks * (1000000000.0 / (double)tck));
        uint64_t now = gt_now_ns();
        if (since < now && since < 86400ull * 1000000000ull) return now - since;
    }
    return g_loaded_ns;
}
