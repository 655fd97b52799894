/* Token files, the synthetic Markov source and byte encoding (engine/data.h).
 * docs/formats.md is the specification of the file layouts and of how the
 * synthetic chain is built; this file follows it. */
#define _POSIX_C_SOURCE 200809L
#include "engine/data.h"

#include "engine/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "engine/rng.h"

#define GT_TOKENS_MAGIC "GTTOKENS"
#define GT_TOKENS_VERSION 1u
#define GT_TOKENS_HEADER 40
#define LLMC_MAGIC 20240520
#define LLMC_HEADER_INTS 256
#define LLMC_GPT2_VOCAB 50257
#define IO_CHUNK (1 << 20)

/* Philox streams of the synthetic source ("syn" + a use). */
#define SYNTH_STREAM_PERM 0x73796e01u
#define SYNTH_STREAM_NEXT 0x73796e02u
#define SYNTH_STREAM_PROB 0x73796e03u
#define SYNTH_STREAM_SAMPLE 0x73796e04u

/* ---- little-endian helpers: the files are LE whatever the host is ---------- */

static uint32_t rd_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd_u64(const unsigned char *p) {
    return (uint64_t)rd_u32(p) | (uint64_t)rd_u32(p + 4) << 32;
}

static void wr_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void wr_u64(unsigned char *p, uint64_t v) {
    wr_u32(p, (uint32_t)v);
    wr_u32(p + 4, (uint32_t)(v >> 32));
}

/* ---- reading ----------------------------------------------------------------- */

void gt_tokens_release(gt_tokens *t) {
    if (!t) return;
    free(t->tokens);
    memset(t, 0, sizeof *t);
    t->entropy = -1.0;
}

/* Reads `count` tokens of `width` bytes at the current position, checking
 * each against `vocab` (0: no check, the caller derives the vocabulary). */
static gt_status read_tokens(FILE *f, const char *path, int width, int64_t count, int64_t vocab,
                             int32_t *dst) {
    unsigned char *buf = malloc(IO_CHUNK);
    if (!buf) return GT_ERR(GT_ERR_OOM, "token file '%s': out of host memory for reading", path);
    int64_t per = IO_CHUNK / width, done = 0;
    while (done < count) {
        int64_t k = count - done < per ? count - done : per;
        size_t got = fread(buf, (size_t)width, (size_t)k, f);
        if ((int64_t)got != k) {
            free(buf);
            if (ferror(f))
                return GT_ERR(GT_ERR_IO, "token file '%s': read error after %lld tokens: %s", path,
                              (long long)(done + (int64_t)got), strerror(errno));
            return GT_ERR(GT_ERR_IO,
                          "token file '%s': truncated: the header declares %lld tokens but the "
                          "file ends after %lld",
                          path, (long long)count, (long long)(done + (int64_t)got));
        }
        for (int64_t i = 0; i < k; i++) {
            const unsigned char *p = buf + i * width;
            uint32_t v = width == 2 ? (uint32_t)p[0] | (uint32_t)p[1] << 8 : rd_u32(p);
            if (vocab > 0 && (int64_t)v >= vocab) {
                free(buf);
                return GT_ERR(GT_ERR_INVALID,
                              "token file '%s': token %lld is %u, not below the declared "
                              "vocabulary size %lld",
                              path, (long long)(done + i), v, (long long)vocab);
            }
            dst[done + i] = (int32_t)v;
        }
        done += k;
    }
    free(buf);
    return GT_OK;
}

/* Size check before reading, so that a truncated file is reported with both
 * numbers and trailing garbage (a concatenation, a wrong count) is caught.
 * `size` is the whole input's length in bytes, < 0 when unknown (a pipe:
 * fread finds truncation). */
static gt_status check_size(int64_t size, const char *path, int64_t header, int64_t count,
                            int width) {
    /* A count no file can hold (header + count * width would overflow). */
    if (count > (INT64_MAX - header) / width)
        return GT_ERR(GT_ERR_INVALID,
                      "token file '%s': the header declares %lld tokens, more than any file "
                      "can hold",
                      path, (long long)count);
    if (size < 0) return GT_OK;
    int64_t want = header + count * width;
    if (size < want)
        return GT_ERR(GT_ERR_IO,
                      "token file '%s': truncated: the header declares %lld tokens (%lld bytes "
                      "in all) but the file has %lld bytes",
                      path, (long long)count, (long long)want, (long long)size);
    if (size > want)
        return GT_ERR(GT_ERR_INVALID,
                      "token file '%s': %lld bytes after the %lld tokens the header declares; "
                      "the count in the header is wrong or the file was appended to",
                      path, (long long)(size - want), (long long)count);
    return GT_OK;
}

static gt_status read_gauntlet(FILE *f, int64_t size, const char *path, gt_tokens *out) {
    unsigned char h[GT_TOKENS_HEADER];
    if (fread(h, 1, sizeof h, f) != sizeof h)
        return GT_ERR(GT_ERR_IO, "token file '%s': truncated: shorter than the %d-byte header",
                      path, GT_TOKENS_HEADER);
    uint32_t version = rd_u32(h + 8), width = rd_u32(h + 12), vocab = rd_u32(h + 16);
    int64_t count = (int64_t)rd_u64(h + 24);
    uint64_t ebits = rd_u64(h + 32);
    double entropy;
    memcpy(&entropy, &ebits, sizeof entropy);
    if (version != GT_TOKENS_VERSION)
        return GT_ERR(GT_ERR_INVALID,
                      "token file '%s': format version %u is not supported (this build reads "
                      "version %u)",
                      path, version, GT_TOKENS_VERSION);
    if (width != 2 && width != 4)
        return GT_ERR(GT_ERR_INVALID, "token file '%s': token width %u bytes, must be 2 or 4",
                      path, width);
    if (vocab == 0 || vocab > (uint32_t)INT32_MAX || (width == 2 && vocab > 65536))
        return GT_ERR(GT_ERR_INVALID,
                      "token file '%s': vocabulary size %u is impossible for %u-byte tokens", path,
                      vocab, width);
    if (count < 0)
        return GT_ERR(GT_ERR_INVALID, "token file '%s': negative token count %lld", path,
                      (long long)count);
    if (isnan(entropy))
        return GT_ERR(GT_ERR_INVALID, "token file '%s': entropy field is NaN", path);
    GT_TRY(check_size(size, path, GT_TOKENS_HEADER, count, (int)width));
    int32_t *tok = malloc((size_t)(count ? count : 1) * sizeof *tok);
    if (!tok)
        return GT_ERR(GT_ERR_OOM, "token file '%s': out of host memory for %lld tokens", path,
                      (long long)count);
    gt_status s = read_tokens(f, path, (int)width, count, vocab, tok);
    if (s != GT_OK) {
        free(tok);
        return s;
    }
    out->tokens = tok;
    out->n = count;
    out->vocab = (int)vocab;
    out->entropy = entropy < 0 ? -1.0 : entropy;
    snprintf(out->format, sizeof out->format, "gauntlet");
    return GT_OK;
}

static gt_status read_llmc(FILE *f, int64_t size, const char *path, gt_tokens *out) {
    unsigned char h[LLMC_HEADER_INTS * 4];
    if (fread(h, 1, sizeof h, f) != sizeof h)
        return GT_ERR(GT_ERR_IO,
                      "token file '%s': truncated: an llm.c file needs a %d-byte header", path,
                      (int)sizeof h);
    int32_t version = (int32_t)rd_u32(h + 4);
    int64_t count = (int32_t)rd_u32(h + 8);
    if (version != 1)
        return GT_ERR(GT_ERR_INVALID,
                      "token file '%s': llm.c format version %d is not supported (version 1: "
                      "uint16 GPT-2 tokens)",
                      path, version);
    if (count < 0)
        return GT_ERR(GT_ERR_INVALID, "token file '%s': negative token count %lld", path,
                      (long long)count);
    GT_TRY(check_size(size, path, (int64_t)sizeof h, count, 2));
    int32_t *tok = malloc((size_t)(count ? count : 1) * sizeof *tok);
    if (!tok)
        return GT_ERR(GT_ERR_OOM, "token file '%s': out of host memory for %lld tokens", path,
                      (long long)count);
    gt_status s = read_tokens(f, path, 2, count, 0, tok);
    if (s != GT_OK) {
        free(tok);
        return s;
    }
    int32_t mx = -1;
    for (int64_t i = 0; i < count; i++)
        if (tok[i] > mx) mx = tok[i];
    out->tokens = tok;
    out->n = count;
    out->vocab = mx + 1 > LLMC_GPT2_VOCAB ? mx + 1 : LLMC_GPT2_VOCAB;
    out->entropy = -1.0;
    snprintf(out->format, sizeof out->format, "llmc");
    return GT_OK;
}

/* Tells the formats apart by the magic and reads one from `f`, positioned at
 * the start; `size` as for check_size. Does not close `f`. */
static gt_status read_stream(FILE *f, int64_t size, const char *path, gt_tokens *out) {
    unsigned char magic[8];
    size_t got = fread(magic, 1, sizeof magic, f);
    if (got >= 4 && (int32_t)rd_u32(magic) == LLMC_MAGIC) {
        rewind(f);
        return read_llmc(f, size, path, out);
    }
    if (got == sizeof magic && memcmp(magic, GT_TOKENS_MAGIC, 8) == 0) {
        rewind(f);
        return read_gauntlet(f, size, path, out);
    }
    if (got < sizeof magic && ferror(f))
        return GT_ERR(GT_ERR_IO, "token file '%s': read error: %s", path, strerror(errno));
    if (got < sizeof magic)
        return GT_ERR(GT_ERR_IO,
                      "token file '%s': truncated: only %zu bytes, too short for any token file "
                      "header",
                      path, got);
    return GT_ERR(GT_ERR_INVALID,
                  "token file '%s': bad magic (neither \"GTTOKENS\" nor llm.c's %d); not a "
                  "token file. Make one with `gauntlet data synth` or `gauntlet data encode`",
                  path, LLMC_MAGIC);
}

gt_status gt_tokens_read(const char *path, gt_tokens *out) {
    if (!path || !out) return GT_ERR(GT_ERR_INVALID, "gt_tokens_read: NULL argument");
    memset(out, 0, sizeof *out);
    out->entropy = -1.0;
    FILE *f = fopen(path, "rb");
    if (!f) return GT_ERR(GT_ERR_IO, "token file '%s': cannot open: %s", path, strerror(errno));
    struct stat st;
    gt_status s = GT_OK;
    if (fstat(fileno(f), &st) != 0)
        s = GT_ERR(GT_ERR_IO, "token file '%s': cannot stat: %s", path, strerror(errno));
    else
        s = read_stream(f, S_ISREG(st.st_mode) ? (int64_t)st.st_size : -1, path, out);
    fclose(f);
    return s;
}

gt_status gt_tokens_read_mem(const void *data, size_t n, const char *name, gt_tokens *out) {
    if (!out || (!data && n > 0))
        return GT_ERR(GT_ERR_INVALID, "gt_tokens_read_mem: NULL argument");
    memset(out, 0, sizeof *out);
    out->entropy = -1.0;
    if (!name) name = "<memory>";
    /* fmemopen of 0 bytes is unspecified by POSIX; 0 bytes is too short anyway. */
    if (n == 0)
        return GT_ERR(GT_ERR_IO,
                      "token file '%s': truncated: only 0 bytes, too short for any token file "
                      "header",
                      name);
    if (n > (size_t)INT64_MAX)
        return GT_ERR(GT_ERR_INVALID, "token file '%s': %zu bytes is too large", name, n);
    /* Mode "r": the buffer is only read, so dropping const is safe. */
    FILE *f = fmemopen((void *)data, n, "r");
    if (!f)
        return GT_ERR(GT_ERR_IO, "token file '%s': fmemopen failed: %s", name, strerror(errno));
    gt_status s = read_stream(f, (int64_t)n, name, out);
    fclose(f);
    return s;
}

/* ---- writing ----------------------------------------------------------------- */

gt_status gt_tokens_write(const char *path, const int32_t *tokens, int64_t n, int vocab,
                          double entropy) {
    if (!path) return GT_ERR(GT_ERR_INVALID, "gt_tokens_write: path is NULL");
    if (n < 0 || (n > 0 && !tokens))
        return GT_ERR(GT_ERR_INVALID, "writing '%s': %lld tokens at %p", path, (long long)n,
                      (const void *)tokens);
    if (vocab < 1)
        return GT_ERR(GT_ERR_INVALID, "writing '%s': vocabulary size %d, must be >= 1", path,
                      vocab);
    if (isnan(entropy)) return GT_ERR(GT_ERR_INVALID, "writing '%s': entropy is NaN", path);
    for (int64_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= vocab)
            return GT_ERR(GT_ERR_INVALID,
                          "writing '%s': token %lld is %d, outside the vocabulary [0, %d)", path,
                          (long long)i, tokens[i], vocab);
    int width = vocab <= 65536 ? 2 : 4;

    unsigned char h[GT_TOKENS_HEADER] = {0};
    memcpy(h, GT_TOKENS_MAGIC, 8);
    wr_u32(h + 8, GT_TOKENS_VERSION);
    wr_u32(h + 12, (uint32_t)width);
    wr_u32(h + 16, (uint32_t)vocab);
    wr_u32(h + 20, 0);
    wr_u64(h + 24, (uint64_t)n);
    double e = entropy < 0 ? -1.0 : entropy;
    uint64_t ebits;
    memcpy(&ebits, &e, sizeof ebits);
    wr_u64(h + 32, ebits);

    /* Readers never see a half-written file (engine/fileio.h). */
    gt_atomic_file af;
    GT_TRY(gt_atomic_open(path, "token file", "choose a writable --out path", &af));
    fwrite(h, 1, sizeof h, af.f);
    unsigned char *buf = malloc(IO_CHUNK);
    if (!buf) {
        gt_atomic_discard(&af);
        return GT_ERR(GT_ERR_OOM, "writing '%s': out of host memory", path);
    }
    int64_t per = IO_CHUNK / width;
    for (int64_t done = 0; done < n && !ferror(af.f); done += per) {
        int64_t k = n - done < per ? n - done : per;
        for (int64_t i = 0; i < k; i++) {
            uint32_t v = (uint32_t)tokens[done + i];
            if (width == 2) {
                buf[2 * i] = (unsigned char)v;
                buf[2 * i + 1] = (unsigned char)(v >> 8);
            } else {
                wr_u32(buf + 4 * i, v);
            }
        }
        fwrite(buf, 1, (size_t)(k * width), af.f);
    }
    free(buf);
    /* a failed fwrite leaves the stream's error flag: commit reports it */
    return gt_atomic_commit(&af);
}

/* ---- byte encoding ----------------------------------------------------------- */

gt_status gt_tokens_encode_bytes(const char *path, gt_tokens *out) {
    if (!path || !out) return GT_ERR(GT_ERR_INVALID, "gt_tokens_encode_bytes: NULL argument");
    memset(out, 0, sizeof *out);
    out->entropy = -1.0;
    FILE *f = fopen(path, "rb");
    if (!f) return GT_ERR(GT_ERR_IO, "encoding '%s': cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    int32_t *tok = malloc(cap * sizeof *tok);
    unsigned char *buf = malloc(IO_CHUNK);
    gt_status s = GT_OK;
    if (!tok || !buf) s = GT_ERR(GT_ERR_OOM, "encoding '%s': out of host memory", path);
    while (s == GT_OK) {
        size_t got = fread(buf, 1, IO_CHUNK, f);
        if (n + got > cap) {
            while (n + got > cap) cap *= 2;
            int32_t *t = realloc(tok, cap * sizeof *tok);
            if (!t) {
                s = GT_ERR(GT_ERR_OOM, "encoding '%s': out of host memory at %zu bytes", path, n);
                break;
            }
            tok = t;
        }
        for (size_t i = 0; i < got; i++) tok[n + i] = buf[i];
        n += got;
        if (got < IO_CHUNK) {
            if (ferror(f))
                s = GT_ERR(GT_ERR_IO, "encoding '%s': read error after %zu bytes: %s", path, n,
                           strerror(errno));
            break;
        }
    }
    free(buf);
    fclose(f);
    if (s != GT_OK) {
        free(tok);
        return s;
    }
    out->tokens = tok;
    out->n = (int64_t)n;
    out->vocab = 256;
    snprintf(out->format, sizeof out->format, "bytes");
    return GT_OK;
}

/* ---- synthetic source -------------------------------------------------------- */

gt_synth_config gt_synth_defaults(void) {
    return (gt_synth_config){.vocab = 256, .branch = 4, .seed = 0, .n_tokens = 1 << 20};
}

static gt_status synth_check(const gt_synth_config *cfg) {
    if (!cfg) return GT_ERR(GT_ERR_INVALID, "synthetic source: config is NULL");
    if (cfg->vocab < 1)
        return GT_ERR(GT_ERR_INVALID, "synthetic source: vocab is %d, must be >= 1", cfg->vocab);
    if (cfg->branch < 1 || cfg->branch > cfg->vocab)
        return GT_ERR(GT_ERR_INVALID, "synthetic source: branch is %d, must be in [1, vocab=%d]",
                      cfg->branch, cfg->vocab);
    if ((size_t)cfg->vocab > SIZE_MAX / sizeof(double) / (size_t)cfg->branch)
        return GT_ERR(GT_ERR_INVALID, "synthetic source: vocab x branch = %d x %d is too large",
                      cfg->vocab, cfg->branch);
    return GT_OK;
}

/* floor(u * m) for a uniform u in [0, 1), clamped: u*m can round up to m. */
static int64_t draw_below(uint64_t seed, uint64_t stream, uint64_t index, int64_t m) {
    int64_t v = (int64_t)(gt_rng_uniform_f64(seed, stream, index) * (double)m);
    return v < m ? v : m - 1;
}

void gt_markov_release(gt_markov *m) {
    if (!m) return;
    free(m->next);
    free(m->prob);
    memset(m, 0, sizeof *m);
}

gt_status gt_markov_build(const gt_synth_config *cfg, gt_markov *out) {
    if (!out) return GT_ERR(GT_ERR_INVALID, "gt_markov_build: out is NULL");
    memset(out, 0, sizeof *out);
    GT_TRY(synth_check(cfg));
    int V = cfg->vocab, K = cfg->branch;
    uint64_t seed = cfg->seed;
    int32_t *next = malloc((size_t)V * (size_t)K * sizeof *next);
    double *prob = malloc((size_t)V * (size_t)K * sizeof *prob);
    int32_t *perm = malloc((size_t)V * sizeof *perm);
    int32_t *mark = malloc((size_t)V * sizeof *mark);
    if (!next || !prob || !perm || !mark) {
        free(next);
        free(prob);
        free(perm);
        free(mark);
        return GT_ERR(GT_ERR_OOM, "synthetic source: out of host memory for a %d x %d chain", V,
                      K);
    }
    /* A random cycle through all states as every state's first successor
     * makes the chain irreducible, so its stationary distribution is unique
     * and the entropy rate is that of any sample path. */
    for (int i = 0; i < V; i++) perm[i] = i;
    for (int i = V - 1; i > 0; i--) {
        int j = (int)draw_below(seed, SYNTH_STREAM_PERM, (uint64_t)i, i + 1);
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int i = 0; i < V; i++) {
        next[(size_t)perm[i] * K] = perm[(i + 1) % V];
        mark[i] = -1;
    }
    /* The other K-1 successors: distinct, uniform draws with rejection. */
    for (int s = 0; s < V; s++) {
        int32_t *row = next + (size_t)s * K;
        mark[row[0]] = s;
        uint64_t d = 0;
        for (int j = 1; j < K; j++) {
            int32_t c;
            do {
                c = (int32_t)draw_below(seed, SYNTH_STREAM_NEXT, ((uint64_t)s << 32) + d++, V);
            } while (mark[c] == s);
            mark[c] = s;
            row[j] = c;
        }
        /* Weights 1e-3 - ln(u), u in (0, 1]: Dirichlet(1)-like spread, and
         * strictly positive so that the cycle edge never disappears. */
        double w_sum = 0.0;
        for (int j = 0; j < K; j++) {
            uint64_t idx = (uint64_t)s * (uint64_t)K + (uint64_t)j;
            double u = (double)((gt_rng_u64(seed, SYNTH_STREAM_PROB, idx) >> 11) + 1) * 0x1p-53;
            prob[(size_t)s * K + j] = 1e-3 - log(u);
            w_sum += prob[(size_t)s * K + j];
        }
        for (int j = 0; j < K; j++) prob[(size_t)s * K + j] /= w_sum;
    }
    free(perm);
    free(mark);
    out->vocab = V;
    out->branch = K;
    out->next = next;
    out->prob = prob;
    return GT_OK;
}

gt_status gt_markov_entropy(const gt_markov *m, double *nats_per_token, double *pi_out) {
    if (!m || !m->next || !m->prob || m->vocab < 1 || m->branch < 1 || !nats_per_token)
        return GT_ERR(GT_ERR_INVALID, "gt_markov_entropy: empty or NULL chain");
    int V = m->vocab, K = m->branch;
    for (int s = 0; s < V; s++) {
        double sum = 0.0;
        for (int j = 0; j < K; j++) {
            int32_t c = m->next[(size_t)s * K + j];
            double p = m->prob[(size_t)s * K + j];
            if (c < 0 || c >= V || !(p >= 0.0))
                return GT_ERR(GT_ERR_INVALID,
                              "markov chain: state %d successor %d is %d with probability %g",
                              s, j, c, p);
            sum += p;
        }
        if (fabs(sum - 1.0) > 1e-9)
            return GT_ERR(GT_ERR_INVALID, "markov chain: row %d sums to %.17g, not 1", s, sum);
    }
    double *pi = malloc((size_t)V * sizeof *pi);
    double *nx = malloc((size_t)V * sizeof *nx);
    if (!pi || !nx) {
        free(pi);
        free(nx);
        return GT_ERR(GT_ERR_OOM, "markov chain: out of host memory for %d states", V);
    }
    for (int s = 0; s < V; s++) pi[s] = 1.0 / V;
    int converged = 0;
    for (int it = 0; it < 1000000 && !converged; it++) {
        for (int s = 0; s < V; s++) nx[s] = 0.5 * pi[s];
        for (int s = 0; s < V; s++) {
            double h = 0.5 * pi[s];
            for (int j = 0; j < K; j++)
                nx[m->next[(size_t)s * K + j]] += h * m->prob[(size_t)s * K + j];
        }
        double total = 0.0;
        for (int s = 0; s < V; s++) total += nx[s];
        double diff = 0.0;
        for (int s = 0; s < V; s++) {
            nx[s] /= total; /* keeps rounding drift from accumulating */
            diff += fabs(nx[s] - pi[s]);
        }
        double *t = pi;
        pi = nx;
        nx = t;
        converged = diff < 1e-12;
    }
    free(nx);
    if (!converged) {
        free(pi);
        return GT_ERR(GT_ERR_MISMATCH,
                      "markov chain: stationary distribution did not converge to 1e-12 in 10^6 "
                      "iterations (%d states)",
                      V);
    }
    double H = 0.0;
    for (int s = 0; s < V; s++) {
        double hs = 0.0;
        for (int j = 0; j < K; j++) {
            double p = m->prob[(size_t)s * K + j];
            if (p > 0.0) hs -= p * log(p);
        }
        H += pi[s] * hs;
    }
    if (pi_out) memcpy(pi_out, pi, (size_t)V * sizeof *pi);
    free(pi);
    *nats_per_token = H;
    return GT_OK;
}

/* Index of the first cumulative probability above u; the last entry also
 * takes u values that rounding left above the row's sum. */
static int pick(const double *p, int k, double u) {
    double c = 0.0;
    for (int j = 0; j < k - 1; j++) {
        c += p[j];
        if (u < c) return j;
    }
    return k - 1;
}

gt_status gt_synth_generate(const gt_synth_config *cfg, gt_tokens *out) {
    if (!out) return GT_ERR(GT_ERR_INVALID, "gt_synth_generate: out is NULL");
    memset(out, 0, sizeof *out);
    out->entropy = -1.0;
    GT_TRY(synth_check(cfg));
    if (cfg->n_tokens < 0)
        return GT_ERR(GT_ERR_INVALID, "synthetic source: n_tokens is %lld, must be >= 0",
                      (long long)cfg->n_tokens);
    gt_markov m;
    GT_TRY(gt_markov_build(cfg, &m));
    double *pi = malloc((size_t)m.vocab * sizeof *pi);
    int32_t *tok = malloc((size_t)(cfg->n_tokens ? cfg->n_tokens : 1) * sizeof *tok);
    if (!pi || !tok) {
        free(pi);
        free(tok);
        gt_markov_release(&m);
        return GT_ERR(GT_ERR_OOM, "synthetic source: out of host memory for %lld tokens",
                      (long long)cfg->n_tokens);
    }
    double H;
    gt_status s = gt_markov_entropy(&m, &H, pi);
    if (s != GT_OK) {
        free(pi);
        free(tok);
        gt_markov_release(&m);
        return s;
    }
    int K = m.branch;
    if (cfg->n_tokens > 0) {
        double u = gt_rng_uniform_f64(cfg->seed, SYNTH_STREAM_SAMPLE, 0);
        int32_t cur = (int32_t)pick(pi, m.vocab, u);
        tok[0] = cur;
        for (int64_t t = 1; t < cfg->n_tokens; t++) {
            u = gt_rng_uniform_f64(cfg->seed, SYNTH_STREAM_SAMPLE, (uint64_t)t);
            int j = pick(m.prob + (size_t)cur * K, K, u);
            cur = m.next[(size_t)cur * K + j];
            tok[t] = cur;
        }
    }
    free(pi);
    gt_markov_release(&m);
    out->tokens = tok;
    out->n = cfg->n_tokens;
    out->vocab = cfg->vocab;
    out->entropy = H;
    snprintf(out->format, sizeof out->format, "synth");
    return GT_OK;
}
