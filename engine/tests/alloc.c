/* engine.alloc.host: the caching allocator's statistics, reuse, best fit,
 * coalescing, fragmentation numbers, OOM handling and thread safety, over a
 * raw allocator that counts (and can refuse) what it hands out. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/alloc.h"
#include "engine/rng.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

typedef struct counting {
    size_t live_bytes;
    size_t limit; /* 0: none */
    int live_segments;
    uint64_t calls, frees;
} counting;

static void *c_alloc(void *ctx, size_t bytes) {
    counting *c = ctx;
    c->calls++;
    if (c->limit && c->live_bytes + bytes > c->limit) return NULL;
    void *p = aligned_alloc(GT_ALLOC_ALIGN, bytes);
    if (p) {
        c->live_bytes += bytes;
        c->live_segments++;
    }
    return p;
}

static void c_free(void *ctx, void *p, size_t bytes) {
    counting *c = ctx;
    c->frees++;
    c->live_bytes -= bytes;
    c->live_segments--;
    free(p);
}

static gt_allocator *make(counting *c) {
    memset(c, 0, sizeof *c);
    gt_raw_allocator raw = {.name = "test", .alloc = c_alloc, .free = c_free, .ctx = c};
    gt_allocator *a = NULL;
    CHECK_OK(gt_allocator_new(&raw, &a));
    return a;
}

static size_t rnd(size_t x) { return (x + GT_ALLOC_ALIGN - 1) / GT_ALLOC_ALIGN * GT_ALLOC_ALIGN; }

static void test_basics(void) {
    counting c;
    gt_allocator *a = make(&c);
    gt_alloc_stats s;
    void *p0, *p1, *p2, *big;
    CHECK_OK(gt_alloc(a, 0, &p0));
    CHECK_OK(gt_alloc(a, 0, &p1));
    CHECK(p0 && p1 && p0 != p1, "0-byte allocations give distinct pointers");
    CHECK_OK(gt_alloc(a, 1000, &p2));
    CHECK(((uintptr_t)p0 | (uintptr_t)p1 | (uintptr_t)p2) % GT_ALLOC_ALIGN == 0, "alignment");
    gt_allocator_stats(a, &s);
    CHECK(s.in_use == 2 * GT_ALLOC_ALIGN + 1024, "in_use %zu", s.in_use);
    CHECK(s.reserved == 2 * MiB && c.live_bytes == 2 * MiB, "small requests share one 2 MiB "
          "segment: reserved %zu", s.reserved);
    CHECK(s.n_raw_allocs == 1 && s.n_requests == 3 && s.n_cache_hits == 2, "counts %llu %llu %llu",
          (unsigned long long)s.n_raw_allocs, (unsigned long long)s.n_requests,
          (unsigned long long)s.n_cache_hits);
    CHECK(s.largest_free == 2 * MiB - s.in_use, "largest_free %zu", s.largest_free);
    CHECK(s.fragmentation == 0.0, "one free block: no fragmentation (%g)", s.fragmentation);

    CHECK_OK(gt_alloc(a, 3 * MiB + 1, &big));
    gt_allocator_stats(a, &s);
    CHECK(s.reserved == 2 * MiB + 3 * MiB + 512 * KiB, "large segment rounded to 512 KiB: %zu",
          s.reserved);
    CHECK(s.in_use == 2 * GT_ALLOC_ALIGN + 1024 + 3 * MiB + 256, "in_use %zu", s.in_use);
    size_t peak = s.in_use;
    gt_dealloc(a, big);
    gt_dealloc(a, NULL);
    gt_allocator_stats(a, &s);
    CHECK(s.peak_in_use == peak && s.in_use == peak - 3 * MiB - 256, "peak %zu in_use %zu",
          s.peak_in_use, s.in_use);
    CHECK(s.largest_free == 3 * MiB + 512 * KiB, "freed large block merged back: %zu",
          s.largest_free);
    gt_allocator_reset_peak(a);
    gt_allocator_stats(a, &s);
    CHECK(s.peak_in_use == s.in_use && s.peak_reserved == s.reserved, "reset_peak");
    gt_allocator_trim(a);
    gt_allocator_stats(a, &s);
    CHECK(s.reserved == 2 * MiB && c.live_bytes == 2 * MiB && s.n_raw_frees == 1,
          "trim frees only the empty segment: %zu", s.reserved);
    gt_dealloc(a, p0);
    gt_dealloc(a, p1);
    gt_dealloc(a, p2);
    gt_allocator_trim(a);
    gt_allocator_stats(a, &s);
    CHECK(s.reserved == 0 && s.in_use == 0 && c.live_bytes == 0 && c.live_segments == 0,
          "all returned after trim");
    gt_allocator_free(a);
    gt_allocator_free(NULL);
}

static void test_steady_state(void) {
    counting c;
    gt_allocator *a = make(&c);
    static const size_t sizes[] = {768 * 3 * 4, 4 * MiB, 123456, 64, 2 * MiB + 7, 50000, 1 * MiB};
    enum { NS = sizeof sizes / sizeof sizes[0] };
    void *p[NS];
    gt_alloc_stats s0, s;
    for (int it = 0; it < 50; it++) {
        for (int i = 0; i < NS; i++) CHECK_OK(gt_alloc(a, sizes[i], &p[i]));
        /* Free in a different order than allocated, as a training step does. */
        for (int i = NS - 1; i >= 0; i -= 2) gt_dealloc(a, p[i]);
        for (int i = NS - 2; i >= 0; i -= 2) gt_dealloc(a, p[i]);
        if (it == 0) gt_allocator_stats(a, &s0);
    }
    gt_allocator_stats(a, &s);
    CHECK(s.n_raw_allocs == s0.n_raw_allocs && s.reserved == s0.reserved,
          "steady state: raw allocations %llu -> %llu", (unsigned long long)s0.n_raw_allocs,
          (unsigned long long)s.n_raw_allocs);
    CHECK(s.n_cache_hits - s0.n_cache_hits == 49 * NS, "every later request is a cache hit");
    CHECK(s.in_use == 0 && s.n_requests == 50 * NS, "in_use %zu requests %llu", s.in_use,
          (unsigned long long)s.n_requests);
    gt_allocator_free(a);
    CHECK(c.live_bytes == 0, "allocator_free returns every segment");
}

/* Eight 256 KiB blocks fill one 2 MiB small segment exactly; freeing every
 * other one leaves 1 MiB free in four 256 KiB pieces. */
static void test_fragmentation(void) {
    counting c;
    gt_allocator *a = make(&c);
    void *p[8];
    gt_alloc_stats s;
    for (int i = 0; i < 8; i++) CHECK_OK(gt_alloc(a, 256 * KiB, &p[i]));
    gt_allocator_stats(a, &s);
    CHECK(s.reserved == 2 * MiB && s.n_raw_allocs == 1 && s.largest_free == 0 &&
              s.fragmentation == 0.0,
          "full segment: reserved %zu largest %zu", s.reserved, s.largest_free);
    for (int i = 0; i < 8; i += 2) gt_dealloc(a, p[i]);
    gt_allocator_stats(a, &s);
    CHECK(s.largest_free == 256 * KiB, "largest_free %zu", s.largest_free);
    CHECK_NEAR(s.fragmentation, 0.75, 1e-12);
    gt_dealloc(a, p[1]); /* merges 0, 1, 2 */
    gt_allocator_stats(a, &s);
    CHECK(s.largest_free == 768 * KiB, "coalesced: largest_free %zu", s.largest_free);
    CHECK_NEAR(s.fragmentation, 1.0 - 768.0 / 1280.0, 1e-12);
    /* Best fit: 200 KiB goes into a 256 KiB hole (block 4 before 6 by address),
     * not into the 768 KiB one. */
    void *q, *r;
    CHECK_OK(gt_alloc(a, 200 * KiB, &q));
    CHECK(q == p[4], "best fit picked %p, want %p", q, p[4]);
    CHECK_OK(gt_alloc(a, 700 * KiB, &r));
    CHECK(r == p[0], "700 KiB reuses the merged hole at %p, got %p", p[0], r);
    gt_allocator_stats(a, &s);
    CHECK(s.n_raw_allocs == 1, "served from the cache: %llu raw",
          (unsigned long long)s.n_raw_allocs);
    /* A request bigger than any hole needs a new segment although 1 MiB+ is free. */
    void *t;
    CHECK_OK(gt_alloc(a, 300 * KiB, &t));
    gt_allocator_stats(a, &s);
    CHECK(s.n_raw_allocs == 2 && s.reserved == 4 * MiB, "no hole of 300 KiB: new segment");
    gt_dealloc(a, t);
    gt_dealloc(a, q);
    gt_dealloc(a, r);
    for (int i = 3; i < 8; i += 2) gt_dealloc(a, p[i]);
    gt_allocator_stats(a, &s);
    CHECK(s.in_use == 0 && s.largest_free == 2 * MiB, "everything merged: %zu", s.largest_free);
    CHECK_NEAR(s.fragmentation, 0.5, 1e-12); /* two free 2 MiB segments */
    gt_allocator_free(a);
}

static void test_oom(void) {
    counting c;
    gt_allocator *a = make(&c);
    c.limit = 5 * MiB;
    void *small, *big, *big2;
    CHECK_OK(gt_alloc(a, 4096, &small));
    gt_dealloc(a, small); /* a free, cached 2 MiB segment */
    CHECK_OK(gt_alloc(a, 3 * MiB + 512 * KiB, &big));
    gt_alloc_stats s;
    gt_allocator_stats(a, &s);
    CHECK(s.n_raw_frees == 1 && s.reserved == 3 * MiB + 512 * KiB,
          "cache released and retried: frees %llu reserved %zu",
          (unsigned long long)s.n_raw_frees, s.reserved);
    gt_error_clear();
    CHECK_STATUS(gt_alloc(a, 3 * MiB, &big2), GT_ERR_OOM);
    CHECK(big2 == NULL, "out set to NULL on failure");
    CHECK(strstr(gt_last_error(), "3145728") && strstr(gt_last_error(), "in use"),
          "OOM message has the size and the stats: %s", gt_last_error());
    gt_dealloc(a, big);
    gt_allocator_free(a);
    CHECK(c.live_bytes == 0, "nothing leaked");
}

/* Random sizes and frees; after every operation the statistics must agree
 * with a shadow count and with what the raw allocator saw, and no two live
 * blocks may overlap (each carries its own fill byte). */
static void test_stress(void) {
    counting c;
    gt_allocator *a = make(&c);
    enum { SLOTS = 64, OPS = 6000 };
    void *ptr[SLOTS] = {0};
    size_t len[SLOTS] = {0};
    size_t shadow_in_use = 0, shadow_peak = 0;
    int bad = 0;
    for (uint64_t op = 0; op < OPS && !bad; op++) {
        uint32_t r = gt_rng_u32(42, 1, op);
        int i = (int)(r % SLOTS);
        if (ptr[i]) {
            unsigned char *b = ptr[i];
            for (size_t k = 0; k < len[i]; k += 97)
                if (b[k] != (unsigned char)i) bad = 1;
            CHECK(!bad, "block %d was overwritten", i);
            gt_dealloc(a, ptr[i]);
            shadow_in_use -= rnd(len[i] ? len[i] : 1);
            ptr[i] = NULL;
        } else {
            uint32_t r2 = gt_rng_u32(42, 2, op);
            /* Mostly small, some large, a few zero-sized. */
            size_t n = r2 % 16 == 0 ? 0 : r2 % 8 == 0 ? MiB + r2 % (5 * MiB) : r2 % (300 * KiB);
            CHECK_OK(gt_alloc(a, n, &ptr[i]));
            len[i] = n;
            memset(ptr[i], i, n);
            shadow_in_use += rnd(n ? n : 1);
            if (shadow_in_use > shadow_peak) shadow_peak = shadow_in_use;
        }
        if (op % 500 == 250) gt_allocator_trim(a);
        gt_alloc_stats s;
        gt_allocator_stats(a, &s);
        if (s.in_use != shadow_in_use || s.peak_in_use != shadow_peak ||
            s.reserved != c.live_bytes || s.reserved < s.in_use ||
            s.largest_free > s.reserved - s.in_use || s.fragmentation < 0 ||
            s.fragmentation > 1 || s.peak_reserved < s.reserved ||
            s.n_raw_allocs - s.n_raw_frees != (uint64_t)c.live_segments ||
            s.n_raw_allocs != c.calls || s.n_requests < s.n_cache_hits) {
            CHECK(0, "op %llu: in_use %zu/%zu peak %zu/%zu reserved %zu/%zu largest %zu frag %g",
                  (unsigned long long)op, s.in_use, shadow_in_use, s.peak_in_use, shadow_peak,
                  s.reserved, c.live_bytes, s.largest_free, s.fragmentation);
            bad = 1;
        }
    }
    for (int i = 0; i < SLOTS; i++) gt_dealloc(a, ptr[i]);
    gt_alloc_stats s;
    gt_allocator_stats(a, &s);
    CHECK(s.in_use == 0, "in_use %zu after freeing all", s.in_use);
    gt_allocator_trim(a);
    gt_allocator_stats(a, &s);
    CHECK(s.reserved == 0 && c.live_bytes == 0 && s.largest_free == 0, "trim returns all");
    gt_allocator_free(a);
}

typedef struct worker {
    gt_allocator *a;
    int id;
    int failures;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    void *p[16] = {0};
    for (uint64_t op = 0; op < 20000; op++) {
        int i = (int)(gt_rng_u32(7, (uint64_t)w->id, op) % 16);
        if (p[i]) {
            if (*(int *)p[i] != w->id * 1000 + i) w->failures++;
            gt_dealloc(w->a, p[i]);
            p[i] = NULL;
        } else {
            if (gt_alloc(w->a, 64 + (op % 50) * 1000, &p[i]) != GT_OK) w->failures++;
            *(int *)p[i] = w->id * 1000 + i;
        }
    }
    for (int i = 0; i < 16; i++) gt_dealloc(w->a, p[i]);
    return NULL;
}

static void test_threads(void) {
    gt_raw_allocator raw = gt_raw_allocator_host();
    gt_allocator *a = NULL;
    CHECK_OK(gt_allocator_new(&raw, &a));
    pthread_t th[4];
    worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){.a = a, .id = i};
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(w[i].failures == 0, "thread %d saw %d failures", i, w[i].failures);
    }
    gt_alloc_stats s;
    gt_allocator_stats(a, &s);
    CHECK(s.in_use == 0 && s.n_requests == s.n_cache_hits + s.n_raw_allocs,
          "threads: in_use %zu", s.in_use);
    gt_allocator_free(a);
}

/* gt_alloc_zeroed: a block nobody used since the host gave it (mmap'd or
 * zeroed segments) is fresh and reads as zero; once handed out and freed it
 * is not fresh any more, and neither is a block merged with it; a raw
 * allocator that does not zero never gives fresh blocks. */
static int all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

static void test_zeroed(void) {
    gt_raw_allocator raw = gt_raw_allocator_host();
    gt_allocator *a = NULL;
    CHECK_OK(gt_allocator_new(&raw, &a));
    const size_t big = (size_t)3 << 20, small = 4096;
    void *p = NULL, *q = NULL;
    int fresh = -1;
    CHECK_OK(gt_alloc_zeroed(a, big, &p, &fresh));
    CHECK(fresh == 1 && all_zero(p, big), "a new large segment is fresh and zero");
    memset(p, 0xab, big);
    gt_dealloc(a, p);
    CHECK_OK(gt_alloc_zeroed(a, big, &q, &fresh));
    CHECK(q == p && fresh == 0, "the same block again is not fresh (it was written)");
    gt_dealloc(a, q);
    /* small pool: the first block of a segment and its untouched tail */
    CHECK_OK(gt_alloc_zeroed(a, small, &p, &fresh));
    CHECK(fresh == 1 && all_zero(p, small), "a new small segment is fresh and zero");
    CHECK_OK(gt_alloc_zeroed(a, small, &q, &fresh));
    CHECK(fresh == 1 && all_zero(q, small), "the untouched rest of the segment is fresh");
    memset(p, 1, small);
    gt_dealloc(a, p);
    gt_dealloc(a, q); /* merges with p's written block */
    CHECK_OK(gt_alloc_zeroed(a, 2 * small, &p, &fresh));
    CHECK(fresh == 0, "a block merged with a written one is not fresh");
    gt_dealloc(a, p);
    gt_allocator_free(a);

    counting c = {0};
    gt_raw_allocator plain = {.name = "test", .alloc = c_alloc, .free = c_free, .ctx = &c};
    CHECK_OK(gt_allocator_new(&plain, &a));
    CHECK_OK(gt_alloc_zeroed(a, big, &p, &fresh));
    CHECK(fresh == 0, "a raw allocator that does not promise zeros gives no fresh block");
    gt_dealloc(a, p);
    gt_allocator_free(a);
}

int main(void) {
    test_basics();
    test_zeroed();
    test_steady_state();
    test_fragmentation();
    test_oom();
    test_stress();
    test_threads();
    return check_done("engine.alloc.host");
}
