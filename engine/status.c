#include "engine/status.h"

#include <stdarg.h>
#include <string.h>

#define GT_ERR_MSG_LEN 1024

static _Thread_local char g_msg[GT_ERR_MSG_LEN];
static _Thread_local gt_status g_status;
static int g_rank = -1;
static int g_device = -1;

static const char *const g_names[GT_STATUS_COUNT] = {
    [GT_OK] = "GT_OK",
    [GT_ERR_INVALID] = "GT_ERR_INVALID",
    [GT_ERR_OOM] = "GT_ERR_OOM",
    [GT_ERR_UNSUPPORTED] = "GT_ERR_UNSUPPORTED",
    [GT_ERR_DEVICE] = "GT_ERR_DEVICE",
    [GT_ERR_COMM] = "GT_ERR_COMM",
    [GT_ERR_IO] = "GT_ERR_IO",
    [GT_ERR_MISMATCH] = "GT_ERR_MISMATCH",
    [GT_ERR_TIMEOUT] = "GT_ERR_TIMEOUT",
};

const char *gt_status_name(gt_status s) {
    if ((int)s < 0 || s >= GT_STATUS_COUNT) return "GT_ERR_UNKNOWN";
    return g_names[s];
}

void gt_error_set_context(int rank, int device) {
    g_rank = rank;
    g_device = device;
}

gt_status gt_error_set(gt_status s, const char *file, int line, const char *fmt, ...) {
    char body[GT_ERR_MSG_LEN - 192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    /* Only the file's base name: messages stay short and do not leak build paths. */
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    char where[96] = "";
    if (g_rank >= 0 && g_device >= 0)
        snprintf(where, sizeof where, ", rank %d, device %d", g_rank, g_device);
    else if (g_rank >= 0)
        snprintf(where, sizeof where, ", rank %d", g_rank);
    else if (g_device >= 0)
        snprintf(where, sizeof where, ", device %d", g_device);
    snprintf(g_msg, sizeof g_msg, "%s (%s:%d%s)", body, base, line, where);
    g_status = s;
    return s;
}

gt_status gt_error_wrap(gt_status s, const char *fmt, ...) {
    char prefix[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char old[GT_ERR_MSG_LEN - 260];
    memcpy(old, g_msg, sizeof old - 1); /* keeps the start of a long message */
    old[sizeof old - 1] = '\0';
    if (old[0])
        snprintf(g_msg, sizeof g_msg, "%s: %s", prefix, old);
    else
        snprintf(g_msg, sizeof g_msg, "%s", prefix);
    g_status = s;
    return s;
}

const char *gt_last_error(void) { return g_msg; }
gt_status gt_last_status(void) { return g_status; }

void gt_error_clear(void) {
    g_msg[0] = '\0';
    g_status = GT_OK;
}
