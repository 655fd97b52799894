/* Token data: files, the synthetic source and the batch loader.
 *
 * File formats are specified in docs/formats.md:
 *   - gauntlet token files ("GTTOKENS" magic, version 1, uint16 or uint32
 *     tokens, vocabulary size, token count, source entropy rate when known);
 *   - llm.c token files (256 int32 header, magic 20240520, uint16 tokens),
 *     read only.
 */
#ifndef GT_DATA_H
#define GT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_tokens {
    int32_t *tokens;    /* owned, n values in [0, vocab) */
    int64_t n;
    int vocab;          /* vocabulary size the file declares (llm.c: max(50257, largest + 1)) */
    double entropy;     /* source entropy rate in nats/token; < 0 when unknown */
    char format[16];    /* "gauntlet", "llmc", "synth" or "bytes" */
} gt_tokens;

/* Reads either format (told apart by the magic). Errors name the file and
 * what is wrong (truncated, bad magic, unsupported version, token >= vocab). */
gt_status gt_tokens_read(const char *path, gt_tokens *out);
/* The same reader on the n bytes at `data` (borrowed), the whole content of a
 * token file; `name` (may be NULL: "<memory>") stands for the path in error
 * messages. Used by the fuzz target ci/fuzz/tokens.c. */
gt_status gt_tokens_read_mem(const void *data, size_t n, const char *name, gt_tokens *out);
void gt_tokens_release(gt_tokens *t); /* frees tokens; accepts zeroed struct */

/* Writes a gauntlet token file atomically (temp file + rename).
 * entropy < 0 means unknown. Token width chosen from vocab (uint16 if <= 65536). */
gt_status gt_tokens_write(const char *path, const int32_t *tokens, int64_t n, int vocab,
                          double entropy);

/* The synthetic source: a seeded sparse first-order Markov chain over
 * `vocab` symbols; each state has `branch` successors with random
 * probabilities. Its entropy rate H = sum_s pi(s) H(P(s,.)) (nats/token,
 * pi the stationary distribution, computed exactly by power iteration to
 * 1e-12) is what a perfect model's loss converges to. */
typedef struct gt_synth_config {
    int vocab;       /* 256 */
    int branch;      /* successors per state, 1..vocab; default 4 */
    uint64_t seed;
    int64_t n_tokens;
} gt_synth_config;

gt_synth_config gt_synth_defaults(void);
/* Generates tokens (owned by out) and out->entropy. The first token is drawn
 * from the stationary distribution, so the stream is stationary from the
 * start. GT_ERR_INVALID for a bad config. */
gt_status gt_synth_generate(const gt_synth_config *cfg, gt_tokens *out);

/* The chain behind gt_synth_generate, exposed so that tests, reports and
 * `gauntlet data synth` can inspect it. Row s lists the successors of state
 * s and their probabilities (each row sums to 1). */
typedef struct gt_markov {
    int vocab;
    int branch;
    int32_t *next; /* (vocab, branch), owned */
    double *prob;  /* (vocab, branch), owned */
} gt_markov;

/* Builds the chain of `cfg` (n_tokens is ignored). docs/formats.md says how. */
gt_status gt_markov_build(const gt_synth_config *cfg, gt_markov *out);
void gt_markov_release(gt_markov *m); /* accepts zeroed struct */
/* Entropy rate in nats/token of any chain in this layout (rows must sum to 1,
 * next[] in [0, vocab)). `pi` (vocab values, may be NULL) receives the
 * stationary distribution. Power iteration on the lazy chain (P + I) / 2,
 * which has the same stationary distribution and converges for periodic
 * chains too, from the uniform start, until the L1 change is below 1e-12.
 * GT_ERR_INVALID for a malformed chain, GT_ERR_MISMATCH when it does not
 * converge in 10^6 iterations. */
gt_status gt_markov_entropy(const gt_markov *m, double *nats_per_token, double *pi);

/* Every byte of `path` becomes one token (vocabulary 256, entropy unknown,
 * format "bytes"). gt_synth_generate sets format "synth". */
gt_status gt_tokens_encode_bytes(const char *path, gt_tokens *out);

/* The batch loader. Each call of gt_loader_next gives the inputs (B,T) and
 * targets (B,T) of the next step of this rank. A prefetch thread prepares
 * the next batch while the caller runs the step.
 *
 * Orders (docs/formats.md says the same):
 *   GT_DATA_ORDER_SEQUENTIAL: the global batch of step k covers tokens
 *     [k*Bg*T, k*Bg*T + Bg*T + 1) of the stream (indices mod n), sequence j of
 *     the global batch starting at k*Bg*T + j*T; rank r of R holds sequences
 *     [r*B, (r+1)*B) where B = Bg / R.
 *   GT_DATA_ORDER_SHUFFLED: sequence j of step k starts at a position drawn by
 *     Philox from (seed, stream 0x6c6f6164, k*Bg + j), uniform in [0, n-T-1).
 *     Depends only on the seed, never on the rank count. Exactly:
 *     p = min(floor(gt_rng_uniform_f64(seed, 0x6c6f6164, k*Bg + j) * m), m-1)
 *     with m = n-T-1; p = 0 when m = 0 (n = T+1).
 *   In both, inputs are tokens [p, p+T) and targets [p+1, p+T+1). */
typedef enum gt_data_order {
    GT_DATA_ORDER_SEQUENTIAL = 0,
    GT_DATA_ORDER_SHUFFLED,
    GT_DATA_ORDER_COUNT
} gt_data_order;

const char *gt_data_order_name(gt_data_order o);
gt_status gt_data_order_parse(const char *s, gt_data_order *out);

typedef struct gt_loader_config {
    int global_batch;  /* Bg sequences per step, all ranks */
    int seq_len;       /* T */
    int rank, nranks;  /* this rank's shard; Bg % nranks must be 0 */
    gt_data_order order;
    uint64_t seed;
    int64_t start_step; /* first step to produce (resume) */
    int prefetch;       /* 1: background thread, 0: synchronous */
} gt_loader_config;

typedef struct gt_loader gt_loader;

/* Borrows `tokens` (must outlive the loader). GT_ERR_INVALID when the data is
 * shorter than T + 1 tokens or the batch does not split across ranks. */
gt_status gt_loader_new(const gt_tokens *tokens, const gt_loader_config *cfg, gt_loader **out);
void gt_loader_free(gt_loader *l);
/* inputs and targets: (B,T) int32 each, B = global_batch / nranks, host
 * memory owned by the loader, valid until the next call. `wait_ns`, when not
 * NULL, receives the time spent waiting for the prefetch thread (prefetch 0:
 * the time spent building the batch, which the step waits for just the same).
 * The batches do not depend on `prefetch`. Not thread-safe: one caller. */
gt_status gt_loader_next(gt_loader *l, const int32_t **inputs, const int32_t **targets,
                         uint64_t *wait_ns);
/* The step the next call will produce. */
int64_t gt_loader_step(const gt_loader *l);

#ifdef __cplusplus
}
#endif
#endif
