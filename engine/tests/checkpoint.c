/* Checkpoint container: CRC32C test vectors, a round trip, and refusals of a
 * flipped data byte, a flipped header byte and a truncated file. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
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

/* The 2-tensor table the tests write: w [2, 3] over a, adamw.m [3] over b. */
static void two_tensors(gt_ckpt_tensor t[2], float *a, float *b) {
    memset(t, 0, 2 * sizeof t[0]);
    snprintf(t[0].name, sizeof t[0].name, "w");
    t[0].dtype = GT_DTYPE_FP32, t[0].ndim = 2, t[0].shape[0] = 2, t[0].shape[1] = 3, t[0].data = a;
    snprintf(t[1].name, sizeof t[1].name, "adamw.m");
    t[1].dtype = GT_DTYPE_FP32, t[1].ndim = 1, t[1].shape[0] = 3, t[1].data = b;
}

static void test_roundtrip(void) {
    char dir[] = "/tmp/gt_ckpt_XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/a.gtck", dir);
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {-1, -2, -3};
    gt_ckpt_tensor t[2];
    two_tensors(t, a, b);
    t[1].range_lo = 7;
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


/* ---- crafted files: each table or header field that lies is refused, even
 * with a header checksum that matches (fix_hcrc) ---------------------------- */

static uint32_t rd32(const char *path, long off) {
    unsigned char b[4] = {0};
    FILE *f = fopen(path, "rb");
    fseek(f, off, SEEK_SET);
    if (fread(b, 1, 4, f) != 4) b[0] = b[1] = b[2] = b[3] = 0;
    fclose(f);
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void wr32(const char *path, long off, uint32_t v) {
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    FILE *f = fopen(path, "r+b");
    fseek(f, off, SEEK_SET);
    fwrite(b, 1, 4, f);
    fclose(f);
}

/* Recomputes the header CRC32C over [0, hb - 4) for the header length hb. */
static void fix_hcrc(const char *path, uint32_t hb) {
    unsigned char *h = calloc(1, hb);
    FILE *f = fopen(path, "rb");
    size_t got = fread(h, 1, hb - 4, f);
    fclose(f);
    CHECK(got == hb - 4, "fix_hcrc: read %zu of %u", got, hb);
    wr32(path, (long)hb - 4, gt_crc32c(0, h, hb - 4));
    free(h);
}

enum { FIXED = 928, FIXED_V1 = 432, ENTRY = 128 }; /* docs/formats.md, format version 2 and 1 */

/* a fresh copy of the 2-tensor checkpoint: w [2, 3], adamw.m [3] */
static uint64_t write_two(const char *path) {
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {-1, -2, -3};
    gt_ckpt_tensor t[2];
    two_tensors(t, a, b);
    gt_ckpt_meta m;
    memset(&m, 0, sizeof m);
    m.nranks = 1;
    uint64_t bytes = 0;
    CHECK_OK(gt_ckpt_write(path, &m, t, 2, NULL, &bytes));
    return bytes;
}

static void expect_refused(const char *path, gt_status want, const char *says, const char *what) {
    gt_ckpt_file *f = NULL;
    gt_status s = gt_ckpt_open(path, &f);
    CHECK(s == want && strstr(gt_last_error(), says) != NULL, "%s: %s, want %s with '%s' (%s)",
          what, gt_status_name(s), gt_status_name(want), says, s == GT_OK ? "" : gt_last_error());
    gt_ckpt_close(f);
}

static void test_crafted(void) {
    char dir[] = "/tmp/gt_ckpt_XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/c.gtck", dir);
    const uint32_t hb = FIXED + 2 * ENTRY + 4;

    /* every meta field round trips, each with a value of its own */
    {
        float x = 1;
        gt_ckpt_tensor t;
        memset(&t, 0, sizeof t);
        snprintf(t.name, sizeof t.name, "x");
        t.dtype = GT_DTYPE_FP32, t.ndim = 1, t.shape[0] = 1, t.data = &x;
        gt_ckpt_meta m;
        memset(&m, 0, sizeof m);
        for (int i = 0; i < GT_CKPT_MODEL_FIELDS; i++) m.model[i] = 100 + i;
        m.dtype = GT_DTYPE_FP32, m.step = 11, m.seed = 12, m.loader_step = 13, m.data_order = 14;
        m.global_batch = 15, m.seq_len = 16, m.rank = 17, m.nranks = 18, m.precision = 19;
        m.num_params = 20, m.opt.lr = 21, m.opt.beta1 = 22, m.opt.beta2 = 23, m.opt.eps = 24;
        m.opt.weight_decay = 25, m.opt.grad_clip = 26, m.opt.warmup_steps = 27;
        m.opt.total_steps = 28, m.opt.lr_min_frac = 29;
        snprintf(m.backend, sizeof m.backend, "be");
        snprintf(m.library, sizeof m.library, "lib");
        /* version 2's fields */
        snprintf(m.family, sizeof m.family, "mlp");
        m.data_kind = GT_CKPT_DATA_FILE, m.data_vocab = 30, m.data_tokens = 31;
        m.data_bytes = 32, m.data_crc = 33, m.synth_branch = 34, m.world_size = 35;
        m.zero = 36, m.deterministic = 37, m.micro_batch = 38;
        snprintf(m.data_path, sizeof m.data_path, "corpus.tok");
        CHECK_OK(gt_ckpt_write(path, &m, &t, 1, NULL, NULL));
        gt_ckpt_file *f = NULL;
        CHECK_OK(gt_ckpt_open(path, &f));
        if (f) {
            const gt_ckpt_meta *g = gt_ckpt_meta_of(f);
            int model_ok = 1;
            for (int i = 0; i < GT_CKPT_MODEL_FIELDS; i++) model_ok &= g->model[i] == 100 + i;
            CHECK(model_ok && g->dtype == GT_DTYPE_FP32 && g->step == 11 && g->seed == 12 &&
                      g->loader_step == 13 && g->data_order == 14 && g->global_batch == 15 &&
                      g->seq_len == 16 && g->rank == 17 && g->nranks == 18 &&
                      g->precision == 19 && g->num_params == 20,
                  "meta round trip of every field");
            CHECK(g->opt.lr == 21 && g->opt.beta1 == 22 && g->opt.beta2 == 23 &&
                      g->opt.eps == 24 && g->opt.weight_decay == 25 && g->opt.grad_clip == 26 &&
                      g->opt.warmup_steps == 27 && g->opt.total_steps == 28 &&
                      g->opt.lr_min_frac == 29,
                  "optimizer config round trip");
            CHECK(strcmp(g->backend, "be") == 0 && strcmp(g->library, "lib") == 0,
                  "strings round trip");
            CHECK(g->format_version == GT_CKPT_FORMAT_VERSION && strcmp(g->family, "mlp") == 0 &&
                      g->data_kind == GT_CKPT_DATA_FILE && g->data_vocab == 30 &&
                      g->data_tokens == 31 && g->data_bytes == 32 && g->data_crc == 33 &&
                      g->synth_branch == 34 && g->world_size == 35 && g->zero == 36 &&
                      g->deterministic == 37 && g->micro_batch == 38 &&
                      strcmp(g->data_path, "corpus.tok") == 0,
                  "version 2 fields round trip");
            gt_ckpt_close(f);
        }
        /* the version 1 layout (what older gauntlets wrote) still reads: its own
         * fields as written, the version 2 ones empty */
        m.format_version = 1;
        CHECK_OK(gt_ckpt_write(path, &m, &t, 1, NULL, NULL));
        CHECK(rd32(path, 8) == 1 && rd32(path, 12) == FIXED_V1 + ENTRY + 4,
              "a version 1 header: version %u, %u bytes", rd32(path, 8), rd32(path, 12));
        f = NULL;
        CHECK_OK(gt_ckpt_open(path, &f));
        if (f) {
            const gt_ckpt_meta *g = gt_ckpt_meta_of(f);
            float got = 0;
            CHECK(g->format_version == 1 && g->step == 11 && g->seed == 12 &&
                      g->opt.lr_min_frac == 29 && g->family[0] == 0 && g->data_tokens == 0 &&
                      g->world_size == 0 && g->data_path[0] == 0,
                  "version 1: old fields read, new ones empty");
            CHECK_OK(gt_ckpt_read(f, 0, &got));
            CHECK(got == 1, "version 1: the tensor reads");
            gt_ckpt_close(f);
        }
        m.format_version = 0;
        CHECK_OK(gt_ckpt_write(path, &m, &t, 1, NULL, NULL));
        /* a rank-0 tensor is not in the format, even when its one element fits */
        wr32(path, FIXED + 36, 0);
        fix_hcrc(path, FIXED + ENTRY + 4);
        expect_refused(path, GT_ERR_MISMATCH, "bad dtype", "rank 0");
    }

    /* tensor counts outside [0, GT_CKPT_MAX_TENSORS] are refused before writing */
    {
        float x = 1;
        gt_ckpt_tensor *many = calloc(GT_CKPT_MAX_TENSORS + 1, sizeof *many);
        for (int i = 0; i <= GT_CKPT_MAX_TENSORS; i++) {
            snprintf(many[i].name, sizeof many[i].name, "t%d", i);
            many[i].dtype = GT_DTYPE_FP32, many[i].ndim = 1, many[i].shape[0] = 1;
            many[i].data = &x;
        }
        gt_ckpt_meta m;
        memset(&m, 0, sizeof m);
        CHECK_STATUS(gt_ckpt_write(path, &m, many, GT_CKPT_MAX_TENSORS + 1, NULL, NULL),
                     GT_ERR_INVALID);
        CHECK_STATUS(gt_ckpt_write(path, &m, many, -1, NULL, NULL), GT_ERR_INVALID);
        free(many);
    }

    /* reading past the table */
    write_two(path);
    gt_ckpt_file *f = NULL;
    CHECK_OK(gt_ckpt_open(path, &f));
    if (f) {
        float big[64];
        CHECK_STATUS(gt_ckpt_read(f, gt_ckpt_count(f), big), GT_ERR_INVALID);
        CHECK_STATUS(gt_ckpt_read(f, -1, big), GT_ERR_INVALID);
        gt_ckpt_close(f);
    }
    /* another format version, even with a matching header checksum */
    for (uint32_t v = 0; v <= GT_CKPT_FORMAT_VERSION + 1; v += GT_CKPT_FORMAT_VERSION + 1) {
        write_two(path);
        wr32(path, 8, v);
        fix_hcrc(path, hb);
        expect_refused(path, GT_ERR_MISMATCH, "format version", "format version");
    }
    /* a header length below the fixed part: 804 = header_bytes(-1) modulo 2^64,
     * with a tensor count of -1 that matches it and a valid checksum */
    uint64_t size = write_two(path);
    CHECK(rd32(path, 12) == hb, "header length %u", rd32(path, 12));
    wr32(path, 12, FIXED - ENTRY + 4);
    wr32(path, 16, 0xffffffffu);
    fix_hcrc(path, FIXED - ENTRY + 4);
    expect_refused(path, GT_ERR_MISMATCH, "header length 804 is impossible", "short header");
    /* a tensor count that does not fit the header length */
    write_two(path);
    wr32(path, 16, 1);
    fix_hcrc(path, hb);
    expect_refused(path, GT_ERR_MISMATCH, "1 tensors do not fit", "count vs length");
    /* the first tensor's data placed over the header */
    write_two(path);
    wr32(path, FIXED + 80, 0);
    wr32(path, FIXED + 84, 0);
    fix_hcrc(path, hb);
    expect_refused(path, GT_ERR_MISMATCH, "contradicts", "offset inside the header");
    /* bytes after the last tensor */
    write_two(path);
    FILE *a = fopen(path, "ab");
    fputs("trailing", a);
    fclose(a);
    expect_refused(path, GT_ERR_MISMATCH, "bytes after the last tensor", "trailing bytes");
    /* cut inside the header: truncated, named as such */
    write_two(path);
    CHECK(truncate(path, (off_t)hb - 8) == 0, "truncate");
    expect_refused(path, GT_ERR_IO, "shorter than its", "cut inside the header");
    (void)size;
    unlink(path);
    rmdir(dir);
}

/* ---- manifests and --resume of a directory -------------------------------------- */

static void touch_bytes(const char *path, size_t n) {
    FILE *f = fopen(path, "wb");
    for (size_t i = 0; i < n; i++) fputc('x', f);
    fclose(f);
}

/* MANIFEST = text + its crc32c line (as the writer does), that line
 * without its newline when `cut` (the file ends right after the checksum) */
static void write_manifest_ex(const char *folder, const char *text, int cut) {
    char path[512];
    snprintf(path, sizeof path, "%s/MANIFEST", folder);
    FILE *f = fopen(path, "wb");
    fprintf(f, "%scrc32c %08x%s", text, gt_crc32c(0, text, strlen(text)), cut ? "" : "\n");
    fclose(f);
}
static void write_manifest(const char *folder, const char *text) {
    write_manifest_ex(folder, text, 0);
}

static void expect_manifest(const char *folder, gt_status want, const char *what) {
    int64_t step = -1;
    int nr = -1;
    uint64_t bytes[4];
    uint32_t crcs[4];
    gt_status s = gt_ckpt_manifest_read(folder, &step, &nr, 4, bytes, crcs);
    CHECK(s == want, "%s: %s, want %s (%s)", what, gt_status_name(s), gt_status_name(want),
          s == GT_OK ? "" : gt_last_error());
}

static void test_manifest(void) {
    char dir[] = "/tmp/gt_ckpt_XXXXXX", p[512];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char folder[300];
    snprintf(folder, sizeof folder, "%s/ckpt_00000006", dir);
    CHECK(mkdir(folder, 0755) == 0, "mkdir");
    for (int r = 0; r < 5; r++) {
        gt_ckpt_shard_name(p, sizeof p, folder, r);
        touch_bytes(p, 10 + 10 * (size_t)r);
    }
    uint64_t bytes[2] = {10, 20};
    uint32_t crcs[2] = {0xabcu, 0xdefu};
    CHECK_OK(gt_ckpt_manifest_write(folder, 6, 2, bytes, crcs));
    int64_t step = 0;
    int nr = 0;
    uint64_t gb[4] = {0};
    uint32_t gc[4] = {0};
    CHECK_OK(gt_ckpt_manifest_read(folder, &step, &nr, 4, gb, gc));
    CHECK(step == 6 && nr == 2 && gb[0] == 10 && gb[1] == 20 && gc[0] == 0xabcu && gc[1] == 0xdefu,
          "manifest round trip");
    /* "step 6" made "step 7" without a new checksum */
    snprintf(p, sizeof p, "%s/MANIFEST", folder);
    FILE *mf = fopen(p, "r+b");
    fseek(mf, (long)strlen("gauntlet checkpoint manifest 1\nstep "), SEEK_SET);
    fputc('7', mf);
    fclose(mf);
    expect_manifest(folder, GT_ERR_MISMATCH, "a changed byte");
    /* well-formed, checksummed, and wrong */
    const char *shards = "shard 0 rank_00000.gtck 10 00000abc\nshard 1 rank_00001.gtck 20 00000def\n";
    char text[512];
    snprintf(text, sizeof text, "gauntlet checkpoint manifest 2\nstep 6\nranks 2\n%s", shards);
    write_manifest(folder, text);
    expect_manifest(folder, GT_ERR_MISMATCH, "another manifest version");
    write_manifest(folder, "gauntlet checkpoint manifest 1\nstep 6\nranks 0\n");
    expect_manifest(folder, GT_ERR_MISMATCH, "no ranks");
    /* more ranks than the reader holds (4), every shard present */
    write_manifest(folder, "gauntlet checkpoint manifest 1\nstep 6\nranks 5\n"
                           "shard 0 rank_00000.gtck 10 0\nshard 1 rank_00001.gtck 20 0\n"
                           "shard 2 rank_00002.gtck 30 0\nshard 3 rank_00003.gtck 40 0\n"
                           "shard 4 rank_00004.gtck 50 0\n");
    expect_manifest(folder, GT_ERR_MISMATCH, "more ranks than the reader holds");
    write_manifest(folder, "gauntlet checkpoint manifest 1\nstep 6\nranks 2\n"
                           "shard 0 rank_00000.gtck 10 00000abc\n"
                           "shard 0 rank_00001.gtck 20 00000def\n");
    expect_manifest(folder, GT_ERR_MISMATCH, "a shard listed twice");
    write_manifest(folder, "gauntlet checkpoint manifest 1\nstep 6\nranks 2\n"
                           "shard 0 rank_00000.gtck 10 00000abc\n"
                           "shard 1 rank_00001.gtck 15 00000def\n");
    expect_manifest(folder, GT_ERR_IO, "a shard longer than listed");
    /* cut after the version line or the step line (checksum recomputed):
     * there is no next line to read (this crashed the reader) */
    write_manifest_ex(folder, "gauntlet checkpoint manifest 1", 1);
    expect_manifest(folder, GT_ERR_MISMATCH, "nothing after the version line");
    write_manifest_ex(folder, "gauntlet checkpoint manifest 1\nstep 6", 1);
    expect_manifest(folder, GT_ERR_MISMATCH, "nothing after the step line");
    snprintf(text, sizeof text, "gauntlet checkpoint manifest 1\nstep 6\nranks 2\n%s", shards);
    write_manifest(folder, text);
    expect_manifest(folder, GT_OK, "the rewritten manifest");

    /* --resume DIR: the latest complete checkpoint; an incomplete folder (no
     * MANIFEST) does not count, whatever its step */
    static const int steps[] = {3, 12, 9, 15, 1, 7, 4, 10};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        gt_ckpt_name(p, sizeof p, dir, steps[i], 0);
        touch_bytes(p, 1);
    }
    snprintf(p, sizeof p, "%s/ckpt_00000099", dir);
    CHECK(mkdir(p, 0755) == 0, "mkdir");
    /* the temporary file of an interrupted write (write_atomic's name) */
    char tmpf[512];
    snprintf(tmpf, sizeof tmpf, "%s/ckpt_00000050.gtck.tmp.4242", dir);
    touch_bytes(tmpf, 1);
    char out[512], want[512];
    int sharded = -1;
    /* (the complete sharded folder of step 6 is older) */
    CHECK_OK(gt_ckpt_resolve(dir, out, sizeof out, &sharded));
    gt_ckpt_name(want, sizeof want, dir, 15, 0);
    CHECK(strcmp(out, want) == 0 && sharded == 0, "resolve: %s, want %s", out, want);
    rmdir(p);
    unlink(tmpf);
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        gt_ckpt_name(p, sizeof p, dir, steps[i], 0);
        unlink(p);
    }
    /* only the sharded one is left */
    CHECK_OK(gt_ckpt_resolve(dir, out, sizeof out, &sharded));
    CHECK(strcmp(out, folder) == 0 && sharded == 1, "resolve: %s, want %s", out, folder);
    for (int r = 0; r < 5; r++) {
        gt_ckpt_shard_name(p, sizeof p, folder, r);
        unlink(p);
    }
    snprintf(p, sizeof p, "%s/MANIFEST", folder);
    unlink(p);
    rmdir(folder);
    rmdir(dir);
}

int main(void) {
    test_crc();
    test_roundtrip();
    test_crafted();
    test_manifest();
    return check_done("engine.checkpoint.host");
}
