/* Checkpoint files (see checkpoint.h; the bytes are in docs/formats.md). */
#define _POSIX_C_SOURCE 200809L
#define _FILE_OFFSET_BITS 64
#include "engine/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "gt_config.h"

/* ---- CRC32C ---------------------------------------------------------------
 * Slicing-by-8 over the reflected Castagnoli table: a few GB/s, so checking
 * a checkpoint costs little next to reading it. */
static uint32_t g_crc_table[8][256];
static int g_crc_ready;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        g_crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            g_crc_table[t][i] = (g_crc_table[t - 1][i] >> 8) ^
                                g_crc_table[0][g_crc_table[t - 1][i] & 0xff];
    g_crc_ready = 1;
}

uint32_t gt_crc32c(uint32_t crc, const void *data, size_t n) {
    /* the table is a pure function of the polynomial: a race only writes the
     * same values twice */
    if (!g_crc_ready) crc_init();
    const unsigned char *p = data;
    uint32_t c = ~crc;
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
                      (uint32_t)p[7] << 24;
        c = g_crc_table[7][lo & 0xff] ^ g_crc_table[6][(lo >> 8) & 0xff] ^
            g_crc_table[5][(lo >> 16) & 0xff] ^ g_crc_table[4][lo >> 24] ^
            g_crc_table[3][hi & 0xff] ^ g_crc_table[2][(hi >> 8) & 0xff] ^
            g_crc_table[1][(hi >> 16) & 0xff] ^ g_crc_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) c = (c >> 8) ^ g_crc_table[0][(c ^ *p++) & 0xff];
    return ~c;
}

static const char *const g_model_fields[GT_CKPT_MODEL_FIELDS] = {
    "max_seq_len", "vocab_size", "padded_vocab_size", "num_layers", "num_heads", "channels",
};

const char *gt_ckpt_model_field(int i) {
    return i >= 0 && i < GT_CKPT_MODEL_FIELDS ? g_model_fields[i] : "?";
}

/* ---- header serialisation ---------------------------------------------------- */

enum {
    HDR_FIXED_V1 = 432, /* bytes before the tensor table, format version 1 */
    HDR_FIXED = 928,    /* version 2: the run's data source, world and layout added */
    HDR_ENTRY = 128,    /* bytes per tensor table entry */
    DATA_ALIGN = 64,
};
static const char g_magic[8] = {'G', 'T', 'C', 'K', 'P', 'T', 0, 0};

static void put32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void putf(unsigned char *p, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    put32(p, u);
}
static uint32_t get32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const unsigned char *p) {
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}
static float getf(const unsigned char *p) {
    uint32_t u = get32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static void putstr(unsigned char *p, size_t n, const char *s) {
    memset(p, 0, n);
    size_t l = strlen(s);
    memcpy(p, s, l < n - 1 ? l : n - 1);
}
static void getstr(char *dst, size_t n, const unsigned char *p) {
    memcpy(dst, p, n - 1);
    dst[n - 1] = 0;
}

static size_t fixed_bytes(int version) { return version == 1 ? HDR_FIXED_V1 : HDR_FIXED; }
static size_t header_bytes(int version, int n) {
    return fixed_bytes(version) + (size_t)n * HDR_ENTRY + 4;
}
static uint64_t align_up(uint64_t x) { return (x + DATA_ALIGN - 1) / DATA_ALIGN * DATA_ALIGN; }
static int host_little_endian(void) {
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

static void encode_meta(unsigned char *h, const gt_ckpt_meta *m, int version, int n) {
    memcpy(h, g_magic, 8);
    put32(h + 8, (uint32_t)version);
    put32(h + 12, (uint32_t)header_bytes(version, n));
    put32(h + 16, (uint32_t)n);
    put32(h + 20, (uint32_t)m->dtype);
    putstr(h + 24, 32, m->engine_version);
    putstr(h + 56, 128, m->backend);
    putstr(h + 184, 128, m->library);
    for (int i = 0; i < GT_CKPT_MODEL_FIELDS; i++) put32(h + 312 + 4 * i, (uint32_t)m->model[i]);
    put64(h + 336, (uint64_t)m->step);
    put64(h + 344, m->seed);
    put64(h + 352, (uint64_t)m->loader_step);
    put32(h + 360, (uint32_t)m->data_order);
    put32(h + 364, (uint32_t)m->global_batch);
    put32(h + 368, (uint32_t)m->seq_len);
    put32(h + 372, (uint32_t)m->rank);
    put32(h + 376, (uint32_t)m->nranks);
    put32(h + 380, (uint32_t)m->precision);
    put64(h + 384, m->num_params);
    const gt_adamw_config *o = &m->opt;
    putf(h + 392, o->lr);
    putf(h + 396, o->beta1);
    putf(h + 400, o->beta2);
    putf(h + 404, o->eps);
    putf(h + 408, o->weight_decay);
    putf(h + 412, o->grad_clip);
    put32(h + 416, (uint32_t)o->warmup_steps);
    put32(h + 420, (uint32_t)o->total_steps);
    putf(h + 424, o->lr_min_frac);
    put32(h + 428, 0);
    if (version == 1) return;
    putstr(h + 432, 16, m->family);
    put32(h + 448, (uint32_t)m->data_kind);
    put32(h + 452, (uint32_t)m->data_vocab);
    put64(h + 456, (uint64_t)m->data_tokens);
    put64(h + 464, (uint64_t)m->data_bytes);
    put32(h + 472, m->data_crc);
    put32(h + 476, (uint32_t)m->synth_branch);
    put32(h + 480, (uint32_t)m->world_size);
    put32(h + 484, (uint32_t)m->zero);
    put32(h + 488, (uint32_t)m->deterministic);
    put32(h + 492, (uint32_t)m->micro_batch);
    putstr(h + 496, 256, m->data_path);
    /* [752, 928) reserved, zero (calloc'ed) */
}

static void decode_meta(const unsigned char *h, int version, gt_ckpt_meta *m) {
    memset(m, 0, sizeof *m);
    m->format_version = version;
    m->dtype = (int32_t)get32(h + 20);
    getstr(m->engine_version, sizeof m->engine_version, h + 24);
    getstr(m->backend, sizeof m->backend, h + 56);
    getstr(m->library, sizeof m->library, h + 184);
    for (int i = 0; i < GT_CKPT_MODEL_FIELDS; i++) m->model[i] = (int32_t)get32(h + 312 + 4 * i);
    m->step = (int64_t)get64(h + 336);
    m->seed = get64(h + 344);
    m->loader_step = (int64_t)get64(h + 352);
    m->data_order = (int32_t)get32(h + 360);
    m->global_batch = (int32_t)get32(h + 364);
    m->seq_len = (int32_t)get32(h + 368);
    m->rank = (int32_t)get32(h + 372);
    m->nranks = (int32_t)get32(h + 376);
    m->precision = (int32_t)get32(h + 380);
    m->num_params = get64(h + 384);
    gt_adamw_config *o = &m->opt;
    o->lr = getf(h + 392);
    o->beta1 = getf(h + 396);
    o->beta2 = getf(h + 400);
    o->eps = getf(h + 404);
    o->weight_decay = getf(h + 408);
    o->grad_clip = getf(h + 412);
    o->warmup_steps = (int)get32(h + 416);
    o->total_steps = (int)get32(h + 420);
    o->lr_min_frac = getf(h + 424);
    if (version == 1) return;
    getstr(m->family, sizeof m->family, h + 432);
    m->data_kind = (int32_t)get32(h + 448);
    m->data_vocab = (int32_t)get32(h + 452);
    m->data_tokens = (int64_t)get64(h + 456);
    m->data_bytes = (int64_t)get64(h + 464);
    m->data_crc = get32(h + 472);
    m->synth_branch = (int32_t)get32(h + 476);
    m->world_size = (int32_t)get32(h + 480);
    m->zero = (int32_t)get32(h + 484);
    m->deterministic = (int32_t)get32(h + 488);
    m->micro_batch = (int32_t)get32(h + 492);
    getstr(m->data_path, sizeof m->data_path, h + 496);
}

/* ---- atomic writes ------------------------------------------------------------- */

static gt_status write_all(int fd, const void *buf, size_t n, const char *path) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return GT_ERR(GT_ERR_IO, "writing '%s': %s", path, strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return GT_OK;
}

/* fsync of the directory holding `path`, so that the rename itself survives
 * a power loss (POSIX leaves it in the page cache otherwise). */
static gt_status fsync_parent(const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
    int fd = open(dir, O_RDONLY);
    if (fd < 0) return GT_ERR(GT_ERR_IO, "opening directory '%s' to fsync it: %s", dir,
                              strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    /* some file systems refuse fsync on a directory: the data is already safe */
    if (rc != 0 && e != EINVAL && e != EROFS)
        return GT_ERR(GT_ERR_IO, "fsync of directory '%s': %s", dir, strerror(e));
    return GT_OK;
}

/* Writes the pieces to a temporary file, then renames it over `path`. */
typedef struct piece {
    const void *data;
    uint64_t n;
} piece;

static gt_status write_atomic(const char *path, const piece *pc, int npc, int fail_half) {
    char tmp[4400];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp)
        return GT_ERR(GT_ERR_INVALID, "checkpoint path '%s' is too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return GT_ERR(GT_ERR_IO, "writing '%s': cannot create the temporary file '%s': %s", path,
                      tmp, strerror(errno));
    gt_status s = GT_OK;
    uint64_t total = 0, done = 0;
    for (int i = 0; i < npc; i++) total += pc[i].n;
    for (int i = 0; i < npc && s == GT_OK; i++) {
        const char *p = pc[i].data;
        uint64_t n = pc[i].n;
        while (n > 0 && s == GT_OK) {
            size_t k = n > ((size_t)1 << 30) ? (size_t)1 << 30 : (size_t)n;
            if (fail_half && done + k > total / 2) {
                s = GT_ERR(GT_ERR_IO,
                           "writing '%s': injected failure after %llu of %llu bytes "
                           "(GT_FAULT_CKPT_FAIL)",
                           path, (unsigned long long)done, (unsigned long long)total);
                break;
            }
            s = write_all(fd, p, k, tmp);
            p += k;
            n -= k;
            done += k;
        }
    }
    if (s == GT_OK && fsync(fd) != 0)
        s = GT_ERR(GT_ERR_IO, "writing '%s': fsync failed: %s", tmp, strerror(errno));
    if (close(fd) != 0 && s == GT_OK)
        s = GT_ERR(GT_ERR_IO, "writing '%s': close failed: %s", tmp, strerror(errno));
    if (s == GT_OK && rename(tmp, path) != 0)
        s = GT_ERR(GT_ERR_IO, "writing '%s': rename from '%s' failed: %s", path, tmp,
                   strerror(errno));
    if (s != GT_OK) {
        unlink(tmp);
        return gt_error_wrap(s, "the previous checkpoints are untouched");
    }
    return fsync_parent(path);
}

gt_status gt_ckpt_write(const char *path, const gt_ckpt_meta *meta, const gt_ckpt_tensor *t,
                        int n, uint32_t *header_crc, uint64_t *file_bytes) {
    if (!host_little_endian())
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "checkpoints are little-endian; this big-endian host cannot write them");
    if (n < 0 || n > GT_CKPT_MAX_TENSORS)
        return GT_ERR(GT_ERR_INVALID, "checkpoint '%s': %d tensors (at most %d)", path, n,
                      GT_CKPT_MAX_TENSORS);
    int version = meta->format_version == 1 ? 1 : GT_CKPT_FORMAT_VERSION;
    size_t hb = header_bytes(version, n);
    unsigned char *h = calloc(1, hb);
    piece *pc = calloc((size_t)(2 * n + 1), sizeof *pc);
    static const unsigned char zeros[DATA_ALIGN];
    if (!h || !pc) {
        free(h);
        free(pc);
        return GT_ERR(GT_ERR_OOM, "writing '%s': out of host memory", path);
    }
    gt_ckpt_meta m = *meta;
    snprintf(m.engine_version, sizeof m.engine_version, "%s", GT_VERSION);
    encode_meta(h, &m, version, n);
    uint64_t off = align_up(hb);
    int npc = 0;
    pc[npc++] = (piece){h, hb};
    uint64_t end = hb;
    for (int i = 0; i < n; i++) {
        unsigned char *e = h + fixed_bytes(version) + (size_t)i * HDR_ENTRY;
        uint64_t count = 1;
        for (int d = 0; d < t[i].ndim; d++) count *= (uint64_t)t[i].shape[d];
        uint64_t nbytes = count * gt_dtype_size((gt_dtype)t[i].dtype);
        putstr(e, GT_CKPT_NAME_LEN, t[i].name);
        put32(e + 32, (uint32_t)t[i].dtype);
        put32(e + 36, (uint32_t)t[i].ndim);
        for (int d = 0; d < GT_CKPT_MAX_DIMS; d++)
            put64(e + 40 + 8 * d, d < t[i].ndim ? (uint64_t)t[i].shape[d] : 0);
        put64(e + 72, t[i].range_lo);
        put64(e + 80, off);
        put64(e + 88, nbytes);
        put32(e + 96, gt_crc32c(0, t[i].data, (size_t)nbytes));
        if (off > end) pc[npc++] = (piece){zeros, off - end};
        pc[npc++] = (piece){t[i].data, nbytes};
        end = off + nbytes;
        off = align_up(end);
    }
    uint32_t hcrc = gt_crc32c(0, h, hb - 4);
    put32(h + hb - 4, hcrc);
    const char *fault = getenv("GT_FAULT_CKPT_FAIL");
    int fail = fault && atoll(fault) == meta->step;
    gt_status s = write_atomic(path, pc, npc, fail);
    free(h);
    free(pc);
    if (s == GT_OK) {
        if (header_crc) *header_crc = hcrc;
        if (file_bytes) *file_bytes = end;
    }
    return s;
}

/* ---- reading -------------------------------------------------------------------- */

struct gt_ckpt_file {
    char path[4096];
    FILE *f;
    gt_ckpt_meta meta;
    uint32_t hcrc;
    int n;
    gt_ckpt_tensor *t;
};

void gt_ckpt_close(gt_ckpt_file *f) {
    if (!f) return;
    if (f->f) fclose(f->f);
    free(f->t);
    free(f);
}

const char *gt_ckpt_path(const gt_ckpt_file *f) { return f->path; }
const gt_ckpt_meta *gt_ckpt_meta_of(const gt_ckpt_file *f) { return &f->meta; }
uint32_t gt_ckpt_header_crc(const gt_ckpt_file *f) { return f->hcrc; }
int gt_ckpt_count(const gt_ckpt_file *f) { return f->n; }
const gt_ckpt_tensor *gt_ckpt_tensor_at(const gt_ckpt_file *f, int i) { return &f->t[i]; }

int gt_ckpt_find(const gt_ckpt_file *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->t[i].name, name) == 0) return i;
    return -1;
}

static gt_status open_body(gt_ckpt_file *cf, const char *path) {
    unsigned char fixed[16];
    struct stat sb;
    if (fstat(fileno(cf->f), &sb) != 0)
        return GT_ERR(GT_ERR_IO, "checkpoint '%s': cannot stat: %s", path, strerror(errno));
    uint64_t size = (uint64_t)sb.st_size;
    if (fread(fixed, 1, 16, cf->f) != 16)
        return GT_ERR(GT_ERR_IO, "checkpoint '%s' is truncated: %llu bytes, shorter than the "
                                 "16-byte preamble",
                      path, (unsigned long long)size);
    if (memcmp(fixed, g_magic, 8) != 0)
        return GT_ERR(GT_ERR_MISMATCH, "'%s' is not a gauntlet checkpoint (bad magic)", path);
    uint32_t version = get32(fixed + 8), hb = get32(fixed + 12);
    if (version < 1 || version > GT_CKPT_FORMAT_VERSION)
        return GT_ERR(GT_ERR_MISMATCH,
                      "checkpoint '%s' has format version %u; this gauntlet reads versions 1 to "
                      "%d",
                      path, version, GT_CKPT_FORMAT_VERSION);
    int v = (int)version;
    if (hb < header_bytes(v, 0) || hb > header_bytes(v, GT_CKPT_MAX_TENSORS) ||
        (hb - header_bytes(v, 0)) % HDR_ENTRY != 0)
        return GT_ERR(GT_ERR_MISMATCH, "checkpoint '%s': header length %u is impossible "
                                       "(corrupted header)",
                      path, hb);
    if (hb > size)
        return GT_ERR(GT_ERR_IO, "checkpoint '%s' is truncated: %llu bytes, shorter than its "
                                 "%u-byte header",
                      path, (unsigned long long)size, hb);
    unsigned char *h = malloc(hb);
    if (!h) return GT_ERR(GT_ERR_OOM, "reading '%s': out of host memory", path);
    memcpy(h, fixed, 16);
    if (fread(h + 16, 1, hb - 16, cf->f) != hb - 16) {
        free(h);
        return GT_ERR(GT_ERR_IO, "checkpoint '%s': reading the header failed", path);
    }
    uint32_t want = get32(h + hb - 4), got = gt_crc32c(0, h, hb - 4);
    if (want != got) {
        free(h);
        return GT_ERR(GT_ERR_MISMATCH,
                      "checkpoint '%s': header checksum mismatch (CRC32C %08x, stored %08x): "
                      "the file is corrupted",
                      path, got, want);
    }
    cf->hcrc = want;
    int nt = (int)get32(h + 16);
    if (header_bytes(v, nt) != hb) {
        free(h);
        return GT_ERR(GT_ERR_MISMATCH, "checkpoint '%s': %d tensors do not fit a %u-byte header",
                      path, nt, hb);
    }
    decode_meta(h, v, &cf->meta);
    cf->n = nt;
    cf->t = calloc((size_t)(nt ? nt : 1), sizeof *cf->t);
    if (!cf->t) {
        free(h);
        return GT_ERR(GT_ERR_OOM, "reading '%s': out of host memory", path);
    }
    gt_status s = GT_OK;
    uint64_t end = hb;
    for (int i = 0; i < nt && s == GT_OK; i++) {
        const unsigned char *e = h + fixed_bytes(v) + (size_t)i * HDR_ENTRY;
        gt_ckpt_tensor *t = &cf->t[i];
        getstr(t->name, sizeof t->name, e);
        t->dtype = (int32_t)get32(e + 32);
        t->ndim = (int32_t)get32(e + 36);
        for (int d = 0; d < GT_CKPT_MAX_DIMS; d++) t->shape[d] = (int64_t)get64(e + 40 + 8 * d);
        t->range_lo = get64(e + 72);
        t->offset = get64(e + 80);
        t->nbytes = get64(e + 88);
        t->crc = get32(e + 96);
        if (t->dtype < 0 || t->dtype >= GT_DTYPE_COUNT || t->ndim < 1 ||
            t->ndim > GT_CKPT_MAX_DIMS) {
            s = GT_ERR(GT_ERR_MISMATCH, "checkpoint '%s', tensor '%s': bad dtype %d or rank %d",
                       path, t->name, t->dtype, t->ndim);
            break;
        }
        uint64_t count = 1;
        for (int d = 0; d < t->ndim; d++) count *= (uint64_t)t->shape[d];
        if (count * gt_dtype_size((gt_dtype)t->dtype) != t->nbytes || t->offset < end) {
            s = GT_ERR(GT_ERR_MISMATCH,
                       "checkpoint '%s', tensor '%s': its size or offset contradicts its shape "
                       "or the previous tensor (corrupted table)",
                       path, t->name);
            break;
        }
        if (t->offset + t->nbytes > size) {
            s = GT_ERR(GT_ERR_IO,
                       "checkpoint '%s' is truncated: tensor '%s' needs bytes [%llu, %llu) but "
                       "the file has %llu",
                       path, t->name, (unsigned long long)t->offset,
                       (unsigned long long)(t->offset + t->nbytes), (unsigned long long)size);
            break;
        }
        end = t->offset + t->nbytes;
    }
    if (s == GT_OK && end != size)
        s = GT_ERR(GT_ERR_MISMATCH, "checkpoint '%s': %llu bytes after the last tensor",
                   path, (unsigned long long)(size - end));
    free(h);
    return s;
}

gt_status gt_ckpt_open(const char *path, gt_ckpt_file **out) {
    *out = NULL;
    if (!host_little_endian())
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "checkpoints are little-endian; this big-endian host cannot read them");
    gt_ckpt_file *cf = calloc(1, sizeof *cf);
    if (!cf) return GT_ERR(GT_ERR_OOM, "out of host memory");
    snprintf(cf->path, sizeof cf->path, "%s", path);
    cf->f = fopen(path, "rb");
    if (!cf->f) {
        gt_status s = GT_ERR(GT_ERR_IO, "cannot open checkpoint '%s': %s", path,
                             strerror(errno));
        gt_ckpt_close(cf);
        return s;
    }
    gt_status s = open_body(cf, path);
    if (s != GT_OK) {
        gt_ckpt_close(cf);
        return s;
    }
    *out = cf;
    return GT_OK;
}

gt_status gt_ckpt_read(gt_ckpt_file *f, int i, void *dst) {
    if (i < 0 || i >= f->n)
        return GT_ERR(GT_ERR_INVALID, "checkpoint '%s': no tensor %d", f->path, i);
    const gt_ckpt_tensor *t = &f->t[i];
    if (fseeko(f->f, (off_t)t->offset, SEEK_SET) != 0 ||
        fread(dst, 1, (size_t)t->nbytes, f->f) != t->nbytes)
        return GT_ERR(GT_ERR_IO, "checkpoint '%s', tensor '%s': reading %llu bytes at %llu "
                                 "failed (truncated?)",
                      f->path, t->name, (unsigned long long)t->nbytes,
                      (unsigned long long)t->offset);
    uint32_t got = gt_crc32c(0, dst, (size_t)t->nbytes);
    if (got != t->crc)
        return GT_ERR(GT_ERR_MISMATCH,
                      "checkpoint '%s', tensor '%s': checksum mismatch (CRC32C %08x, stored "
                      "%08x): the data is corrupted; resume from an earlier checkpoint",
                      f->path, t->name, got, t->crc);
    return GT_OK;
}

/* ---- directories and manifests -------------------------------------------------- */

gt_status gt_ckpt_dir_prepare(const char *dir) {
    char buf[4096];
    if (!dir || !*dir) return GT_ERR(GT_ERR_INVALID, "--checkpoint-dir is empty");
    snprintf(buf, sizeof buf, "%s", dir);
    /* mkdir -p: each prefix in turn; another rank may create it meanwhile */
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return GT_ERR(GT_ERR_IO, "checkpoint directory '%s': cannot create '%s': %s",
                              dir, buf, strerror(errno));
            *p = c;
            if (!c) break;
        }
    }
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return GT_ERR(GT_ERR_IO, "checkpoint directory '%s' is not a directory", dir);
    snprintf(buf, sizeof buf, "%s/.probe.%ld", dir, (long)getpid());
    int fd = open(buf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return GT_ERR(GT_ERR_IO, "checkpoint directory '%s' is not writable: %s; pick another "
                                 "--checkpoint-dir",
                      dir, strerror(errno));
    int ok = write(fd, "x", 1) == 1;
    int e = errno;
    close(fd);
    unlink(buf);
    if (!ok)
        return GT_ERR(GT_ERR_IO, "checkpoint directory '%s' is not writable: %s", dir,
                      strerror(e));
    return GT_OK;
}

void gt_ckpt_name(char *out, size_t n, const char *dir, int64_t step, int sharded) {
    snprintf(out, n, "%s/ckpt_%08lld%s", dir, (long long)step, sharded ? "" : ".gtck");
}

void gt_ckpt_shard_name(char *out, size_t n, const char *folder, int rank) {
    snprintf(out, n, "%s/rank_%05d.gtck", folder, rank);
}

gt_status gt_ckpt_manifest_write(const char *folder, int64_t step, int nranks,
                                 const uint64_t *bytes, const uint32_t *header_crcs) {
    size_t cap = 128 + (size_t)nranks * 96;
    char *text = malloc(cap);
    if (!text) return GT_ERR(GT_ERR_OOM, "out of host memory for the manifest");
    size_t len = (size_t)snprintf(text, cap, "gauntlet checkpoint manifest %d\nstep %lld\nranks %d\n",
                                  GT_CKPT_MANIFEST_VERSION, (long long)step, nranks);
    for (int r = 0; r < nranks; r++)
        len += (size_t)snprintf(text + len, cap - len, "shard %d rank_%05d.gtck %llu %08x\n", r,
                                r, (unsigned long long)bytes[r], header_crcs[r]);
    len += (size_t)snprintf(text + len, cap - len, "crc32c %08x\n", gt_crc32c(0, text, len));
    char path[4200];
    snprintf(path, sizeof path, "%s/MANIFEST", folder);
    piece pc = {text, len};
    gt_status s = write_atomic(path, &pc, 1, 0);
    free(text);
    return s;
}

gt_status gt_ckpt_manifest_read(const char *folder, int64_t *step, int *nranks, int max_ranks,
                                uint64_t *bytes, uint32_t *header_crcs) {
    char path[4200];
    snprintf(path, sizeof path, "%s/MANIFEST", folder);
    FILE *f = fopen(path, "rb");
    if (!f)
        return GT_ERR(GT_ERR_IO,
                      "sharded checkpoint '%s' has no MANIFEST (%s): it is incomplete (the "
                      "writer stopped before finishing); resume from an earlier one",
                      folder, strerror(errno));
    char text[1 << 16];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = 0;
    char *crc_line = strstr(text, "crc32c ");
    unsigned want = 0;
    if (!crc_line || sscanf(crc_line, "crc32c %x", &want) != 1 ||
        gt_crc32c(0, text, (size_t)(crc_line - text)) != want)
        return GT_ERR(GT_ERR_MISMATCH, "'%s' is corrupted (checksum mismatch or no crc32c line)",
                      path);
    int version = 0, nr = 0;
    long long st = 0;
    char *line = text;
    if (sscanf(line, "gauntlet checkpoint manifest %d", &version) != 1 ||
        version != GT_CKPT_MANIFEST_VERSION)
        return GT_ERR(GT_ERR_MISMATCH, "'%s': not a version %d manifest", path,
                      GT_CKPT_MANIFEST_VERSION);
    /* each line must end: a manifest cut after its version or step line
     * (its checksum recomputed) has no next line to read */
    line = strchr(line, '\n');
    if (!line || sscanf(line + 1, "step %lld", &st) != 1)
        return GT_ERR(GT_ERR_MISMATCH, "'%s': no step line", path);
    line = strchr(line + 1, '\n');
    if (!line || sscanf(line + 1, "ranks %d", &nr) != 1 || nr < 1 || nr > max_ranks)
        return GT_ERR(GT_ERR_MISMATCH, "'%s': bad rank count (at most %d)", path, max_ranks);
    line++; /* the ranks line; each shard line follows the previous line's end */
    for (int r = 0; r < nr; r++) {
        line = strchr(line, '\n');
        if (!line)
            return GT_ERR(GT_ERR_MISMATCH, "'%s': shard %d is not listed", path, r);
        line++;
        int rr = -1;
        char name[64];
        unsigned long long b = 0;
        unsigned c = 0;
        if (sscanf(line, "shard %d %63s %llu %x", &rr, name, &b, &c) != 4 || rr != r)
            return GT_ERR(GT_ERR_MISMATCH, "'%s': shard %d is not listed", path, r);
        char shard[4200];
        gt_ckpt_shard_name(shard, sizeof shard, folder, r);
        struct stat sb;
        if (stat(shard, &sb) != 0)
            return GT_ERR(GT_ERR_IO,
                          "sharded checkpoint '%s': shard file '%s' of rank %d is missing (%s); "
                          "the checkpoint cannot be used",
                          folder, shard, r, strerror(errno));
        if ((unsigned long long)sb.st_size != b)
            return GT_ERR(GT_ERR_IO,
                          "sharded checkpoint '%s': shard file '%s' has %llu bytes, the manifest "
                          "says %llu (truncated or replaced)",
                          folder, shard, (unsigned long long)sb.st_size, b);
        if (bytes) bytes[r] = b;
        if (header_crcs) header_crcs[r] = c;
    }
    *step = st;
    *nranks = nr;
    return GT_OK;
}

static int is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}
static int is_file(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

gt_status gt_ckpt_resolve(const char *path, char *out, size_t n, int *sharded) {
    char buf[4200];
    if (is_file(path)) {
        snprintf(out, n, "%s", path);
        *sharded = 0;
        return GT_OK;
    }
    if (!is_dir(path))
        return GT_ERR(GT_ERR_IO, "--resume '%s': no such file or directory", path);
    snprintf(buf, sizeof buf, "%s/rank_00000.gtck", path);
    int has_shards = is_file(buf);
    /* a folder named like a sharded checkpoint is one, complete or not */
    const char *base = strrchr(path, '/');
    base = base && base[1] ? base + 1 : path;
    long long st;
    char tail[8];
    if (sscanf(base, "ckpt_%lld%7s", &st, tail) == 1) has_shards = 1;
    snprintf(buf, sizeof buf, "%s/MANIFEST", path);
    if (is_file(buf) || has_shards) {
        /* a sharded folder; an incomplete one is refused by the manifest read */
        snprintf(out, n, "%s", path);
        *sharded = 1;
        return GT_OK;
    }
    DIR *d = opendir(path);
    if (!d) return GT_ERR(GT_ERR_IO, "--resume '%s': cannot list: %s", path, strerror(errno));
    long long best = -1;
    int best_sharded = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long long st;
        char tail[16] = "";
        int k = sscanf(e->d_name, "ckpt_%lld%15s", &st, tail);
        if (k < 1 || st <= best) continue;
        if (k == 2 && strcmp(tail, ".gtck") == 0) {
            snprintf(buf, sizeof buf, "%s/%s", path, e->d_name);
            if (!is_file(buf)) continue;
            best = st;
            best_sharded = 0;
        } else if (k == 1) {
            /* a folder counts only once its manifest is written */
            snprintf(buf, sizeof buf, "%s/%s/MANIFEST", path, e->d_name);
            if (!is_file(buf)) continue;
            best = st;
            best_sharded = 1;
        }
    }
    closedir(d);
    if (best < 0)
        return GT_ERR(GT_ERR_IO,
                      "--resume '%s': no complete checkpoint in it (looked for ckpt_<step>.gtck "
                      "files and ckpt_<step>/ folders with a MANIFEST)",
                      path);
    gt_ckpt_name(out, n, path, best, best_sharded);
    *sharded = best_sharded;
    return GT_OK;
}
