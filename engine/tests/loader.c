/* engine.loader.host: the batch loader against the formulas in
 * engine/data.h, sharding across 1/2/4 ranks, shuffled order independent of
 * the rank count, resume via start_step, and prefetch on/off equivalence.
 * Token i of the test stream is i, so a batch shows which positions it read. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "engine/data.h"
#include "engine/rng.h"

enum { N = 1000, T = 8, BG = 4 };

static gt_tokens g_tok;

static gt_loader_config cfg(gt_data_order order, int rank, int nranks, int prefetch) {
    return (gt_loader_config){.global_batch = BG, .seq_len = T, .rank = rank, .nranks = nranks,
                              .order = order, .seed = 1234, .start_step = 0,
                              .prefetch = prefetch};
}

/* The global batch of `steps` steps assembled from `nranks` loaders. */
static void global_batches(gt_data_order order, int nranks, int prefetch, int64_t start,
                           int steps, int32_t *in, int32_t *tg) {
    gt_loader *l[4];
    for (int r = 0; r < nranks; r++) {
        gt_loader_config c = cfg(order, r, nranks, prefetch);
        c.start_step = start;
        CHECK_OK(gt_loader_new(&g_tok, &c, &l[r]));
    }
    int B = BG / nranks;
    for (int k = 0; k < steps; k++) {
        for (int r = 0; r < nranks; r++) {
            const int32_t *x, *y;
            uint64_t w = UINT64_MAX;
            CHECK(gt_loader_step(l[r]) == start + k, "loader_step");
            CHECK_OK(gt_loader_next(l[r], &x, &y, &w));
            CHECK(w != UINT64_MAX, "wait_ns written");
            size_t off = ((size_t)k * BG + (size_t)r * B) * T;
            memcpy(in + off, x, (size_t)B * T * sizeof *x);
            memcpy(tg + off, y, (size_t)B * T * sizeof *y);
        }
    }
    for (int r = 0; r < nranks; r++) gt_loader_free(l[r]);
}

enum { STEPS = 40 }; /* 40 * 32 tokens: wraps around the 1000-token stream */
static int32_t in1[STEPS * BG * T], tg1[STEPS * BG * T], in2[STEPS * BG * T],
    tg2[STEPS * BG * T];

static void test_sequential_formula(void) {
    global_batches(GT_DATA_ORDER_SEQUENTIAL, 1, 1, 0, STEPS, in1, tg1);
    int bad = 0;
    for (int64_t k = 0; k < STEPS && !bad; k++)
        for (int64_t j = 0; j < BG; j++)
            for (int64_t t = 0; t < T; t++) {
                int64_t p = (k * BG * T + j * T + t) % N;
                size_t i = (size_t)((k * BG + j) * T + t);
                if (in1[i] != p || tg1[i] != (p + 1) % N) bad = 1;
            }
    CHECK(!bad, "sequential order follows (k*Bg*T + j*T) mod n, wrapping");
}

static void test_shuffled_formula(void) {
    global_batches(GT_DATA_ORDER_SHUFFLED, 1, 1, 0, STEPS, in1, tg1);
    int bad = 0, distinct_starts = 0;
    for (int64_t k = 0; k < STEPS; k++)
        for (int64_t j = 0; j < BG; j++) {
            int64_t m = N - T - 1;
            int64_t p = (int64_t)(gt_rng_uniform_f64(1234, 0x6c6f6164, (uint64_t)(k * BG + j)) *
                                  (double)m);
            size_t i = (size_t)((k * BG + j) * T);
            for (int t = 0; t < T; t++)
                if (in1[i + t] != p + t || tg1[i + t] != p + t + 1) bad = 1;
            if (p != k * BG * T + j * T) distinct_starts++;
        }
    CHECK(!bad, "shuffled order follows the Philox formula");
    CHECK(distinct_starts > STEPS * BG / 2, "shuffled is not sequential");
}

static void test_sharding(void) {
    for (int order = 0; order < GT_DATA_ORDER_COUNT; order++) {
        global_batches((gt_data_order)order, 1, 0, 0, STEPS, in1, tg1);
        const int ranks[2] = {2, 4};
        for (int i = 0; i < 2; i++) {
            global_batches((gt_data_order)order, ranks[i], 1, 0, STEPS, in2, tg2);
            CHECK(memcmp(in1, in2, sizeof in1) == 0 && memcmp(tg1, tg2, sizeof tg1) == 0,
                  "%s: %d ranks reproduce the 1-rank global batch",
                  gt_data_order_name((gt_data_order)order), ranks[i]);
        }
    }
}

static void test_resume_and_prefetch(void) {
    for (int order = 0; order < GT_DATA_ORDER_COUNT; order++) {
        global_batches((gt_data_order)order, 2, 1, 0, STEPS, in1, tg1);
        /* Resume at step 13: the same batches as the unbroken run from there. */
        global_batches((gt_data_order)order, 2, 1, 13, STEPS - 13, in2, tg2);
        size_t off = (size_t)13 * BG * T, len = (size_t)(STEPS - 13) * BG * T * sizeof(int32_t);
        CHECK(memcmp(in1 + off, in2, len) == 0 && memcmp(tg1 + off, tg2, len) == 0,
              "%s: start_step resumes exactly", gt_data_order_name((gt_data_order)order));
        global_batches((gt_data_order)order, 2, 0, 0, STEPS, in2, tg2);
        CHECK(memcmp(in1, in2, sizeof in1) == 0, "%s: prefetch does not change the batches",
              gt_data_order_name((gt_data_order)order));
    }
}

static void test_slow_consumer(void) {
    /* A consumer slower than the loader finds each batch ready: the wait is
     * far below the time it spent on its "step". */
    gt_loader_config c = cfg(GT_DATA_ORDER_SHUFFLED, 0, 1, 1);
    gt_loader *l;
    CHECK_OK(gt_loader_new(&g_tok, &c, &l));
    uint64_t total = 0;
    for (int k = 0; k < 5; k++) {
        const int32_t *x, *y;
        uint64_t w;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        CHECK_OK(gt_loader_next(l, &x, &y, &w));
        total += w;
    }
    CHECK(total < 50ull * 1000 * 1000, "waited %llu ns for prefetched batches",
          (unsigned long long)total);
    gt_loader_free(l);
    /* Freeing while the thread waits for a slot, or before any call, must not hang. */
    CHECK_OK(gt_loader_new(&g_tok, &c, &l));
    gt_loader_free(l);
    gt_loader_free(NULL);
}

static void test_errors(void) {
    gt_loader *l = NULL;
    gt_loader_config c = cfg(GT_DATA_ORDER_SEQUENTIAL, 0, 3, 1);
    CHECK_STATUS(gt_loader_new(&g_tok, &c, &l), GT_ERR_INVALID); /* 4 % 3 */
    CHECK(l == NULL, "no loader on error");
    c = cfg(GT_DATA_ORDER_SEQUENTIAL, 2, 2, 1);
    CHECK_STATUS(gt_loader_new(&g_tok, &c, &l), GT_ERR_INVALID);
    c = cfg(GT_DATA_ORDER_SEQUENTIAL, 0, 1, 1);
    c.seq_len = N;
    CHECK_STATUS(gt_loader_new(&g_tok, &c, &l), GT_ERR_INVALID); /* needs T + 1 tokens */
    CHECK(strstr(gt_last_error(), "1000") != NULL, "message has the count: %s", gt_last_error());
    c.seq_len = N - 1; /* exactly T + 1 tokens: every sequence starts at 0 */
    for (int order = 0; order < GT_DATA_ORDER_COUNT; order++) {
        c.order = (gt_data_order)order;
        CHECK_OK(gt_loader_new(&g_tok, &c, &l));
        const int32_t *x, *y;
        for (int k = 0; k < 3 && l; k++) {
            CHECK_OK(gt_loader_next(l, &x, &y, NULL));
            if (order == GT_DATA_ORDER_SHUFFLED)
                CHECK(x[0] == 0 && y[N - 2] == N - 1, "n = T+1: start 0");
        }
        gt_loader_free(l);
    }
    gt_data_order o;
    CHECK_OK(gt_data_order_parse("shuffled", &o));
    CHECK(o == GT_DATA_ORDER_SHUFFLED, "parse shuffled");
    CHECK_STATUS(gt_data_order_parse("random", &o), GT_ERR_INVALID);
}

int main(void) {
    g_tok.n = N;
    g_tok.vocab = N;
    g_tok.entropy = -1;
    g_tok.tokens = malloc(N * sizeof(int32_t));
    for (int i = 0; i < N; i++) g_tok.tokens[i] = i;
    test_sequential_formula();
    test_shuffled_formula();
    test_sharding();
    test_resume_and_prefetch();
    test_slow_consumer();
    test_errors();
    gt_tokens_release(&g_tok);
    return check_done("engine.loader.host");
}
