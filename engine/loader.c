/* The batch loader (engine/data.h): which tokens step k of rank r sees, and a
 * prefetch thread that prepares step k+1 while the caller runs step k.
 *
 * Batch contents are a pure function of (tokens, order, seed, Bg, T, step,
 * rank, nranks), never of timing or of whether prefetching is on, so a
 * resumed run (start_step) and a run on another number of ranks see the same
 * global batches: the resume and topology determinism checks rely on it.
 *
 * Prefetching uses two slots. The caller holds the slot it was last given
 * until its next call; the thread fills the other one. When the caller asks
 * for step k, it gives back the slot of step k-1, which the thread then
 * fills with step k+1 while the caller works on step k.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/data.h"
#include "engine/rng.h"
#include "engine/timer.h"

#define LOADER_STREAM 0x6c6f6164u /* "load" */

enum { SLOT_FREE = 0, SLOT_FILLING, SLOT_READY };

typedef struct slot {
    int32_t *inputs;  /* (B, T) */
    int32_t *targets; /* (B, T) */
    int64_t step;
    int state;
} slot;

struct gt_loader {
    const gt_tokens *tok;
    gt_loader_config cfg;
    int B; /* sequences of this rank per step */
    slot slots[2];
    int64_t next_step; /* the step the caller gets next */
    int held;          /* slot the caller holds, -1: none */

    int threaded;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv_ready; /* a slot became READY */
    pthread_cond_t cv_free;  /* a slot became FREE, or stop */
    int stop;
};

static const char *const g_order_names[GT_DATA_ORDER_COUNT] = {
    [GT_DATA_ORDER_SEQUENTIAL] = "sequential",
    [GT_DATA_ORDER_SHUFFLED] = "shuffled",
};

const char *gt_data_order_name(gt_data_order o) {
    return (int)o >= 0 && o < GT_DATA_ORDER_COUNT ? g_order_names[o] : "unknown";
}

gt_status gt_data_order_parse(const char *s, gt_data_order *out) {
    if (!s || !out) return GT_ERR(GT_ERR_INVALID, "gt_data_order_parse: NULL argument");
    for (int i = 0; i < GT_DATA_ORDER_COUNT; i++) {
        if (strcmp(s, g_order_names[i]) == 0) {
            *out = (gt_data_order)i;
            return GT_OK;
        }
    }
    return GT_ERR(GT_ERR_INVALID, "unknown data order '%s': use sequential or shuffled", s);
}

/* (a * b) mod m without overflow for any a, b < m < 2^63: k * Bg * T grows
 * past 2^63 long before a run ends on a large corpus. */
static uint64_t mulmod(uint64_t a, uint64_t b, uint64_t m) {
    uint64_t r = 0;
    a %= m;
    b %= m;
    while (b) {
        if (b & 1) r = (r >= m - a) ? r - (m - a) : r + a;
        a = (a >= m - a) ? a - (m - a) : a + a;
        b >>= 1;
    }
    return r;
}

/* Start position of sequence j (0 <= j < Bg) of the global batch of `step`. */
static int64_t seq_start(const gt_loader *l, int64_t step, int64_t j) {
    const gt_loader_config *c = &l->cfg;
    uint64_t n = (uint64_t)l->tok->n, T = (uint64_t)c->seq_len, Bg = (uint64_t)c->global_batch;
    if (c->order == GT_DATA_ORDER_SEQUENTIAL) {
        /* (k*Bg*T + j*T) mod n */
        uint64_t base = mulmod((uint64_t)step, (Bg * T) % n, n);
        return (int64_t)((base + mulmod((uint64_t)j, T, n)) % n);
    }
    /* Uniform in [0, n-T-1); the range is empty when n == T+1, where the only
     * possible start, 0, is used. */
    int64_t m = (int64_t)(n - T - 1);
    if (m < 1) return 0;
    uint64_t idx = (uint64_t)step * Bg + (uint64_t)j;
    int64_t p = (int64_t)(gt_rng_uniform_f64(c->seed, LOADER_STREAM, idx) * (double)m);
    return p < m ? p : m - 1;
}

static void fill(const gt_loader *l, int64_t step, slot *s) {
    const int32_t *tok = l->tok->tokens;
    int64_t n = l->tok->n, T = l->cfg.seq_len;
    int64_t j0 = (int64_t)l->cfg.rank * l->B;
    for (int64_t b = 0; b < l->B; b++) {
        int64_t p = seq_start(l, step, j0 + b);
        int32_t *in = s->inputs + b * T, *tg = s->targets + b * T;
        if (p + T + 1 <= n) {
            memcpy(in, tok + p, (size_t)T * sizeof *in);
            memcpy(tg, tok + p + 1, (size_t)T * sizeof *tg);
        } else {
            /* The sequential order wraps around the end of the stream. */
            for (int64_t t = 0; t < T; t++) {
                in[t] = tok[(p + t) % n];
                tg[t] = tok[(p + t + 1) % n];
            }
        }
    }
    s->step = step;
}

static void *prefetch_main(void *arg) {
    gt_loader *l = arg;
    int64_t step = l->cfg.start_step;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        slot *s = &l->slots[step % 2];
        while (!l->stop && s->state != SLOT_FREE) pthread_cond_wait(&l->cv_free, &l->mu);
        if (l->stop) break;
        s->state = SLOT_FILLING;
        pthread_mutex_unlock(&l->mu);
        fill(l, step, s);
        pthread_mutex_lock(&l->mu);
        s->state = SLOT_READY;
        pthread_cond_signal(&l->cv_ready);
        step++;
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

static gt_status check_config(const gt_tokens *tokens, const gt_loader_config *c) {
    if (!tokens || !c) return GT_ERR(GT_ERR_INVALID, "gt_loader_new: NULL argument");
    if (!tokens->tokens && tokens->n > 0)
        return GT_ERR(GT_ERR_INVALID, "loader: token array is NULL");
    if (c->global_batch < 1 || c->seq_len < 1)
        return GT_ERR(GT_ERR_INVALID, "loader: global_batch %d and seq_len %d must be >= 1",
                      c->global_batch, c->seq_len);
    if (c->nranks < 1 || c->rank < 0 || c->rank >= c->nranks)
        return GT_ERR(GT_ERR_INVALID, "loader: rank %d of %d ranks is not a valid shard", c->rank,
                      c->nranks);
    if (c->global_batch % c->nranks != 0)
        return GT_ERR(GT_ERR_INVALID,
                      "loader: global batch %d does not split across %d ranks; use a multiple "
                      "of the rank count",
                      c->global_batch, c->nranks);
    if ((int)c->order < 0 || c->order >= GT_DATA_ORDER_COUNT)
        return GT_ERR(GT_ERR_INVALID, "loader: data order %d is not a gt_data_order",
                      (int)c->order);
    if (c->start_step < 0)
        return GT_ERR(GT_ERR_INVALID, "loader: start_step %lld must be >= 0",
                      (long long)c->start_step);
    if (tokens->n < (int64_t)c->seq_len + 1)
        return GT_ERR(GT_ERR_INVALID,
                      "loader: %lld tokens are fewer than seq_len + 1 = %d; use a longer token "
                      "file or a shorter sequence",
                      (long long)tokens->n, c->seq_len + 1);
    return GT_OK;
}

gt_status gt_loader_new(const gt_tokens *tokens, const gt_loader_config *cfg, gt_loader **out) {
    if (!out) return GT_ERR(GT_ERR_INVALID, "gt_loader_new: out is NULL");
    *out = NULL;
    GT_TRY(check_config(tokens, cfg));
    gt_loader *l = calloc(1, sizeof *l);
    if (!l) return GT_ERR(GT_ERR_OOM, "loader: out of host memory");
    l->tok = tokens;
    l->cfg = *cfg;
    l->B = cfg->global_batch / cfg->nranks;
    l->next_step = cfg->start_step;
    l->held = -1;
    size_t n = (size_t)l->B * (size_t)cfg->seq_len;
    for (int i = 0; i < 2; i++) {
        l->slots[i].inputs = malloc(n * sizeof(int32_t));
        l->slots[i].targets = malloc(n * sizeof(int32_t));
        l->slots[i].step = -1;
        if (!l->slots[i].inputs || !l->slots[i].targets) {
            gt_loader_free(l);
            return GT_ERR(GT_ERR_OOM, "loader: out of host memory for two (%d, %d) batches",
                          l->B, cfg->seq_len);
        }
    }
    if (cfg->prefetch) {
        if (pthread_mutex_init(&l->mu, NULL) != 0) {
            gt_loader_free(l);
            return GT_ERR(GT_ERR_OOM, "loader: could not create a mutex");
        }
        pthread_cond_init(&l->cv_ready, NULL);
        pthread_cond_init(&l->cv_free, NULL);
        l->threaded = 1;
        int rc = pthread_create(&l->thread, NULL, prefetch_main, l);
        if (rc != 0) {
            pthread_cond_destroy(&l->cv_ready);
            pthread_cond_destroy(&l->cv_free);
            pthread_mutex_destroy(&l->mu);
            l->threaded = 0;
            gt_loader_free(l);
            return GT_ERR(GT_ERR_OOM, "loader: could not start the prefetch thread: %s",
                          strerror(rc));
        }
    }
    *out = l;
    return GT_OK;
}

void gt_loader_free(gt_loader *l) {
    if (!l) return;
    if (l->threaded) {
        pthread_mutex_lock(&l->mu);
        l->stop = 1;
        pthread_cond_broadcast(&l->cv_free);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->thread, NULL);
        pthread_cond_destroy(&l->cv_ready);
        pthread_cond_destroy(&l->cv_free);
        pthread_mutex_destroy(&l->mu);
    }
    for (int i = 0; i < 2; i++) {
        free(l->slots[i].inputs);
        free(l->slots[i].targets);
    }
    free(l);
}

gt_status gt_loader_next(gt_loader *l, const int32_t **inputs, const int32_t **targets,
                         uint64_t *wait_ns) {
    if (!l || !inputs || !targets) return GT_ERR(GT_ERR_INVALID, "gt_loader_next: NULL argument");
    int64_t step = l->next_step;
    int k = (int)(step % 2);
    slot *s = &l->slots[k];
    uint64_t t0 = gt_now_ns();
    if (l->threaded) {
        pthread_mutex_lock(&l->mu);
        if (l->held >= 0) {
            l->slots[l->held].state = SLOT_FREE;
            pthread_cond_signal(&l->cv_free);
        }
        while (s->state != SLOT_READY) pthread_cond_wait(&l->cv_ready, &l->mu);
        pthread_mutex_unlock(&l->mu);
        GT_ASSERT(s->step == step);
    } else {
        /* Without the thread the caller waits for the whole batch build:
         * reported as wait time, which is what it costs the step. */
        fill(l, step, s);
    }
    if (wait_ns) *wait_ns = gt_now_ns() - t0;
    l->held = k;
    l->next_step = step + 1;
    *inputs = s->inputs;
    *targets = s->targets;
    return GT_OK;
}

int64_t gt_loader_step(const gt_loader *l) { return l ? l->next_step : 0; }
