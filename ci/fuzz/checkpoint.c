/* Fuzz target: the checkpoint loader (engine/checkpoint.h). The input is
 * written to a file (the loader reads paths), opened with gt_ckpt_open and
 * every tensor small enough is read back with its CRC checked. An error is
 * a fine answer; a crash, a leak, undefined behaviour or a read past the
 * tensor's buffer is not. The header CRC stops most random mutations early:
 * the seeds (ci/fuzz/corpus/checkpoint/) are valid files, and libFuzzer's
 * CRC-aware comparisons get past it only slowly, so the figures in
 * docs/reliability.md mostly measure the header and table checks. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/checkpoint.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_dir[64], g_path[128];

static void cleanup(void) {
    unlink(g_path);
    rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    const char *root = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/gt-fuzz-ckpt-XXXXXX", root);
    if (!mkdtemp(g_dir)) abort();
    snprintf(g_path, sizeof g_path, "%s/in.ckpt", g_dir);
    atexit(cleanup);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FILE *f = fopen(g_path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) abort();
    gt_ckpt_file *c = NULL;
    gt_error_clear();
    gt_status s = gt_ckpt_open(g_path, &c);
    if (s != GT_OK) {
        if (c != NULL || gt_last_error()[0] == '\0') abort();
        return 0;
    }
    (void)gt_ckpt_meta_of(c);
    int n = gt_ckpt_count(c);
    for (int i = 0; i < n; i++) {
        const gt_ckpt_tensor *t = gt_ckpt_tensor_at(c, i);
        if (!t || t->offset + t->nbytes > size) abort(); /* the table was verified */
        if (gt_ckpt_find(c, t->name) < 0) abort();
        void *buf = malloc(t->nbytes ? t->nbytes : 1);
        if (!buf) abort();
        (void)gt_ckpt_read(c, i, buf);
        free(buf);
    }
    gt_ckpt_close(c);
    return 0;
}
