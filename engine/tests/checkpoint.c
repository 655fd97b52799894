/* Checkpoint container: CRC32C test vectors, a round trip, and refusals of a
 * flipped data byte, a flipped header byte and a truncated file. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "engine/checkpoint.h"
#include "engine/tests/check.h"

static void test_crc(void) {
    CHECK(gt_crc32c(0, "123456789", 9) == 0xE3069283u, "crc32c(123456789) = %08x",
          gt_crc32c(0, "123456789", 9));
    CHECK(gt_crc32c(0, "", 0) == 0, "crc32c of nothing");
    unsigned char z[32] = {0};
    CHECK(gt_crc32c(0, z, 32) == 0x8A9136AAu, "crc32c(32 zero bytes) = %08x", gt_crc32c(0, z, 32));
    /* running CRC: in pieces as in one call */
    CHECK(gt_crc32c(gt_crc32c(0, "12345", 5), "6789", 4) == 0xE3069283u, "running crc");
}

static void flip(const char *path, long off) {
    FILE *f = fopen(path, "r+b");
    fseek(f, off, SEEK_SET);
    int c = fgetc(f);
    fseek(f, off, SEEK_SET);
    fputc(c ^ 0x40, f);
    fclose(f);
}

static void test_roundtrip(void) {
    char dir[] = "/tmp/gt_ckpt_XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/a.gtck", dir);
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {-1, -2, -3};
    gt_ckpt_tensor t[2];
    memset(t, 0, sizeof t);
    snprintf(t[0].name, sizeof t[0].name, "w");
    t[0].dtype = GT_DTYPE_FP32, t[0].ndim = 2, t[0].shape[0] = 2, t[0].shape[1] = 3, t[0].data = a;
    snprintf(t[1].name, sizeof t[1].name, "adamw.m");
    t[1].dtype = GT_DTYPE_FP32, t[1].ndim = 1, t[1].shape[0] = 3, t[1].range_lo = 7, t[1].data = b;
    gt_ckpt_meta m;
    memset(&m, 0, sizeof m);
    m.step = 5, m.seed = 42, m.nranks = 1, m.model[3] = 12, m.opt.lr = 1e-3f;
    uint32_t crc = 0;
    uint64_t bytes = 0;
    CHECK_OK(gt_ckpt_write(path, &m, t, 2, &crc, &bytes));
    gt_ckpt_file *f = NULL;
    CHECK_OK(gt_ckpt_open(path, &f));
    if (f) {
        CHECK(gt_ckpt_header_crc(f) == crc, "header crc");
        CHECK(gt_ckpt_meta_of(f)->step == 5 && gt_ckpt_meta_of(f)->seed == 42 &&
                  gt_ckpt_meta_of(f)->model[3] == 12 && gt_ckpt_meta_of(f)->opt.lr == 1e-3f,
              "meta round trip");
        int i = gt_ckpt_find(f, "adamw.m");
        float got[3] = {0};
        CHECK(i == 1 && gt_ckpt_tensor_at(f, i)->range_lo == 7, "tensor table");
        CHECK_OK(gt_ckpt_read(f, i, got));
        CHECK(memcmp(got, b, sizeof b) == 0, "data round trip");
        gt_ckpt_close(f);
    }
    /* a data byte of the last tensor: refused naming it */
    flip(path, (long)bytes - 2);
    CHECK_OK(gt_ckpt_open(path, &f));
    if (f) {
        float got[3];
        CHECK_STATUS(gt_ckpt_read(f, 1, got), GT_ERR_MISMATCH);
        CHECK(strstr(gt_last_error(), "'adamw.m'") != NULL, "names the tensor: %s",
              gt_last_error());
        gt_ckpt_close(f);
    }
    flip(path, 100); /* inside the header */
    CHECK_STATUS(gt_ckpt_open(path, &f), GT_ERR_MISMATCH);
    flip(path, 100);
    CHECK(truncate(path, (off_t)bytes - 4) == 0, "truncate");
    CHECK_STATUS(gt_ckpt_open(path, &f), GT_ERR_IO);
    CHECK(strstr(gt_last_error(), "truncated") != NULL, "says truncated: %s", gt_last_error());
    unlink(path);
    rmdir(dir);
}

int main(void) {
    test_crc();
    test_roundtrip();
    return check_done("engine.checkpoint.host");
}
