/* Caching allocator (engine/alloc.h).
 *
 * Two pools, as in PyTorch's CUDA caching allocator, so that small blocks do
 * not pin large segments:
 *   small: requests below GT_SMALL_LIMIT (1 MiB) are carved from 2 MiB
 *          segments;
 *   large: requests of 1 MiB and more are served from large segments, and a
 *          new segment is exactly the request rounded up to 512 KiB.
 * A block is split when it is larger than the request; the rest stays a free
 * block of the same segment. Freeing merges a block with free neighbours of
 * its segment, so a segment whose blocks are all free is one free block
 * again and can be trimmed.
 *
 * Free blocks sit in per-pool lists bucketed by floor(log2(size)), each list
 * sorted by (size, address). Best fit is then the first fitting block of the
 * request's bucket, else the first block of the next non-empty bucket; the
 * address tie-break makes the choice (and therefore the addresses and
 * fragmentation numbers) deterministic for a given sequence of calls.
 *
 * Every block (free or in use) is in an address-keyed hash table so that
 * gt_dealloc finds it in O(1).
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#define _POSIX_C_SOURCE 200809L
#include "engine/alloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Under AddressSanitizer every byte of a segment that no live block asked
 * for is poisoned: free blocks, and the tail of a block past the bytes
 * requested (sizes are rounded up to GT_ALLOC_ALIGN). A kernel reading or
 * writing past its tensor then faults as it would past a malloc'd array,
 * although segments are carved into many tensors. */
#if defined(__SANITIZE_ADDRESS__)
#define GT_ALLOC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GT_ALLOC_ASAN 1
#endif
#endif
#ifdef GT_ALLOC_ASAN
#include <sanitizer/asan_interface.h>
#define GT_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define GT_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define GT_POISON(p, n) ((void)(p), (void)(n))
#define GT_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define GT_SMALL_LIMIT ((size_t)1 << 20)
#define GT_SMALL_SEGMENT ((size_t)2 << 20)
#define GT_LARGE_ROUND ((size_t)512 << 10)
#define GT_NBUCKETS 64

typedef struct gt_segment gt_segment;
typedef struct gt_block gt_block;

struct gt_block {
    char *ptr;
    size_t size;
    int free;
    int used; /* handed out at least once since its memory came from the raw allocator */
    gt_segment *seg;
    gt_block *prev, *next;   /* address neighbours within the segment */
    gt_block *fprev, *fnext; /* free list links (free blocks only) */
    gt_block *hnext;         /* hash chain */
};

struct gt_segment {
    char *base;
    size_t size;
    int pool; /* 0 small, 1 large */
    gt_block *first;
    gt_segment *prev, *next;
};

typedef struct gt_pool {
    gt_block *buckets[GT_NBUCKETS];
} gt_pool;

struct gt_allocator {
    gt_raw_allocator raw;
    pthread_mutex_t mu;
    gt_pool pools[2];
    gt_segment *segments;
    gt_block **table;
    size_t table_size; /* power of two */
    size_t table_count;
    gt_alloc_stats st;
    size_t window_peak; /* gt_allocator_window_begin's high-water mark */
};

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

static int bucket_of(size_t size) {
    int b = 0;
    while (size > 1 && b < GT_NBUCKETS - 1) {
        size >>= 1;
        b++;
    }
    return b;
}

static size_t hash_ptr(const void *p, size_t mask) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & mask;
}

/* ---- hash table ------------------------------------------------------------ */

static int table_grow(gt_allocator *a) {
    size_t n = a->table_size ? a->table_size * 2 : 256;
    gt_block **t = calloc(n, sizeof *t);
    if (!t) return 0;
    for (size_t i = 0; i < a->table_size; i++) {
        gt_block *b = a->table[i];
        while (b) {
            gt_block *nx = b->hnext;
            size_t h = hash_ptr(b->ptr, n - 1);
            b->hnext = t[h];
            t[h] = b;
            b = nx;
        }
    }
    free(a->table);
    a->table = t;
    a->table_size = n;
    return 1;
}

/* The caller has made room (table_reserve) so inserting cannot fail. */
static void table_insert(gt_allocator *a, gt_block *b) {
    size_t h = hash_ptr(b->ptr, a->table_size - 1);
    b->hnext = a->table[h];
    a->table[h] = b;
    a->table_count++;
}

static int table_reserve(gt_allocator *a, size_t extra) {
    while (a->table_count + extra > a->table_size)
        if (!table_grow(a)) return 0;
    return 1;
}

static void table_remove(gt_allocator *a, gt_block *b) {
    gt_block **pp = &a->table[hash_ptr(b->ptr, a->table_size - 1)];
    while (*pp && *pp != b) pp = &(*pp)->hnext;
    GT_ASSERT(*pp == b);
    *pp = b->hnext;
    a->table_count--;
}

static gt_block *table_find(gt_allocator *a, const void *p) {
    if (!a->table_size) return NULL;
    gt_block *b = a->table[hash_ptr(p, a->table_size - 1)];
    while (b && b->ptr != (const char *)p) b = b->hnext;
    return b;
}

/* ---- free lists ------------------------------------------------------------ */

static int block_before(const gt_block *x, const gt_block *y) {
    if (x->size != y->size) return x->size < y->size;
    return (uintptr_t)x->ptr < (uintptr_t)y->ptr;
}

static void free_insert(gt_allocator *a, gt_block *b) {
    gt_block **head = &a->pools[b->seg->pool].buckets[bucket_of(b->size)];
    gt_block *prev = NULL, *cur = *head;
    while (cur && block_before(cur, b)) {
        prev = cur;
        cur = cur->fnext;
    }
    b->fprev = prev;
    b->fnext = cur;
    if (cur) cur->fprev = b;
    if (prev)
        prev->fnext = b;
    else
        *head = b;
    b->free = 1;
}

static void free_remove(gt_allocator *a, gt_block *b) {
    gt_block **head = &a->pools[b->seg->pool].buckets[bucket_of(b->size)];
    if (b->fprev)
        b->fprev->fnext = b->fnext;
    else
        *head = b->fnext;
    if (b->fnext) b->fnext->fprev = b->fprev;
    b->fprev = b->fnext = NULL;
    b->free = 0;
}

static gt_block *best_fit(gt_allocator *a, int pool, size_t size) {
    for (int k = bucket_of(size); k < GT_NBUCKETS; k++) {
        for (gt_block *b = a->pools[pool].buckets[k]; b; b = b->fnext)
            if (b->size >= size) return b;
    }
    return NULL;
}

/* ---- segments -------------------------------------------------------------- */

static void segment_release(gt_allocator *a, gt_segment *s) {
    gt_block *b = s->first;
    while (b) {
        gt_block *nx = b->next;
        if (b->free) free_remove(a, b);
        table_remove(a, b);
        free(b);
        b = nx;
    }
    if (s->prev)
        s->prev->next = s->next;
    else
        a->segments = s->next;
    if (s->next) s->next->prev = s->prev;
    GT_UNPOISON(s->base, s->size);
    a->raw.free(a->raw.ctx, s->base, s->size);
    a->st.reserved -= s->size;
    a->st.n_raw_frees++;
    free(s);
}

static void trim_locked(gt_allocator *a) {
    gt_segment *s = a->segments;
    while (s) {
        gt_segment *nx = s->next;
        if (s->first->free && s->first->next == NULL) segment_release(a, s);
        s = nx;
    }
}

/* Returns NULL with *raw_failed = 1 when the raw allocator refused, NULL with
 * *raw_failed = 0 when our own bookkeeping could not be allocated. */
static gt_block *segment_new(gt_allocator *a, int pool, size_t size, int *raw_failed) {
    *raw_failed = 0;
    gt_segment *s = calloc(1, sizeof *s);
    gt_block *b = calloc(1, sizeof *b);
    if (!s || !b || !table_reserve(a, 1)) {
        free(s);
        free(b);
        return NULL;
    }
    s->base = a->raw.alloc(a->raw.ctx, size);
    if (!s->base) {
        *raw_failed = 1;
        free(s);
        free(b);
        return NULL;
    }
    GT_POISON(s->base, size);
    a->st.n_raw_allocs++;
    a->st.reserved += size;
    if (a->st.reserved > a->st.peak_reserved) a->st.peak_reserved = a->st.reserved;
    s->size = size;
    s->pool = pool;
    s->first = b;
    s->next = a->segments;
    if (a->segments) a->segments->prev = s;
    a->segments = s;
    b->ptr = s->base;
    b->size = size;
    b->seg = s;
    table_insert(a, b);
    free_insert(a, b);
    return b;
}

/* Cuts `b` (free, in its free list) down to `size`; the tail becomes a new
 * free block. Returns 0 when the bookkeeping allocation failed. */
static int block_split(gt_allocator *a, gt_block *b, size_t size) {
    if (b->size == size) return 1;
    gt_block *t = calloc(1, sizeof *t);
    if (!t || !table_reserve(a, 1)) {
        free(t);
        return 0;
    }
    free_remove(a, b);
    t->ptr = b->ptr + size;
    t->size = b->size - size;
    t->seg = b->seg;
    t->used = b->used;
    t->prev = b;
    t->next = b->next;
    if (b->next) b->next->prev = t;
    b->next = t;
    b->size = size;
    table_insert(a, t);
    free_insert(a, t);
    free_insert(a, b);
    return 1;
}

/* Merges free block `b` into its free predecessor `p`; returns `p`. */
static gt_block *block_merge(gt_allocator *a, gt_block *p, gt_block *b) {
    free_remove(a, p);
    free_remove(a, b);
    table_remove(a, b);
    p->size += b->size;
    p->used |= b->used;
    p->next = b->next;
    if (b->next) b->next->prev = p;
    free(b);
    free_insert(a, p);
    return p;
}

/* ---- public API ------------------------------------------------------------ */

/* Large segments straight from mmap: zero-filled by the kernel, so a block
 * that must start at zero (gradients, optimizer state) needs no memset, and
 * its pages are faulted in by whatever first writes them (a training step's
 * threads) instead of all at start-up on one thread. Small segments (2 MiB,
 * many tensors each) from aligned_alloc. */
#define HOST_MMAP_MIN ((size_t)1 << 20)

/* GT_HUGEPAGES=1: the mmap segments of 2 MiB and more are advised to the
 * kernel as transparent huge pages (MADV_HUGEPAGE), 512 times fewer faults
 * where the kernel's THP mode is madvise or always (docs/performance.md,
 * "Start-up"). Read once. */
static int host_hugepages(void) {
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("GT_HUGEPAGES");
        v = e && strcmp(e, "1") == 0;
    }
    return v;
}

static void *host_raw_alloc(void *ctx, size_t bytes) {
    (void)ctx;
    if (bytes >= HOST_MMAP_MIN) {
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
        if (bytes >= ((size_t)2 << 20) && host_hugepages()) (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
        return p;
    }
    /* C11 requires the size to be a multiple of the alignment; aligned_alloc
     * does not zero, calloc cannot align: zeroed here (small segments). */
    size_t n = round_up(bytes ? bytes : 1, GT_ALLOC_ALIGN);
    void *p = aligned_alloc(GT_ALLOC_ALIGN, n);
    if (p) memset(p, 0, n);
    return p;
}

static void host_raw_free(void *ctx, void *p, size_t bytes) {
    (void)ctx;
    if (bytes >= HOST_MMAP_MIN)
        munmap(p, bytes);
    else
        free(p);
}

gt_raw_allocator gt_raw_allocator_host(void) {
    return (gt_raw_allocator){.name = "host",
                              .alloc = host_raw_alloc,
                              .free = host_raw_free,
                              .ctx = NULL,
                              .zeroed = 1};
}

gt_status gt_allocator_new(const gt_raw_allocator *raw, gt_allocator **out) {
    if (!raw || !raw->alloc || !raw->free || !out)
        return GT_ERR(GT_ERR_INVALID,
                      "gt_allocator_new: raw allocator with alloc and free functions required");
    *out = NULL;
    gt_allocator *a = calloc(1, sizeof *a);
    if (!a) return GT_ERR(GT_ERR_OOM, "gt_allocator_new: out of host memory for the allocator");
    a->raw = *raw;
    if (!a->raw.name) a->raw.name = "raw";
    if (pthread_mutex_init(&a->mu, NULL) != 0) {
        free(a);
        return GT_ERR(GT_ERR_OOM, "gt_allocator_new: could not create the allocator's mutex");
    }
    if (!table_grow(a)) {
        pthread_mutex_destroy(&a->mu);
        free(a);
        return GT_ERR(GT_ERR_OOM, "gt_allocator_new: out of host memory for the allocator");
    }
    *out = a;
    return GT_OK;
}

void gt_allocator_free(gt_allocator *a) {
    if (!a) return;
    while (a->segments) segment_release(a, a->segments);
    free(a->table);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

static void update_free_stats(gt_allocator *a) {
    size_t largest = 0;
    for (int p = 0; p < 2; p++) {
        for (int k = GT_NBUCKETS - 1; k >= 0; k--) {
            gt_block *b = a->pools[p].buckets[k];
            if (!b) continue;
            /* Sorted by size: the last block of the highest bucket is largest. */
            while (b->fnext) b = b->fnext;
            if (b->size > largest) largest = b->size;
            break;
        }
    }
    a->st.largest_free = largest;
    size_t free_bytes = a->st.reserved - a->st.in_use;
    a->st.fragmentation = free_bytes ? 1.0 - (double)largest / (double)free_bytes : 0.0;
}

gt_status gt_alloc(gt_allocator *a, size_t bytes, void **out) {
    int fresh;
    return gt_alloc_zeroed(a, bytes, out, &fresh);
}

gt_status gt_alloc_zeroed(gt_allocator *a, size_t bytes, void **out, int *fresh) {
    GT_ASSERT(a && out && fresh);
    *out = NULL;
    *fresh = 0;
    if (bytes > SIZE_MAX / 2)
        return GT_ERR(GT_ERR_OOM, "%s allocator: request of %zu bytes is impossibly large",
                      a->raw.name, bytes);
    /* 0 bytes still takes one aligned unit so that the pointer is unique. */
    size_t size = round_up(bytes ? bytes : 1, GT_ALLOC_ALIGN);
    int pool = size < GT_SMALL_LIMIT ? 0 : 1;

    pthread_mutex_lock(&a->mu);
    a->st.n_requests++;
    gt_block *b = best_fit(a, pool, size);
    if (b) {
        a->st.n_cache_hits++;
    } else {
        size_t seg = pool == 0 ? GT_SMALL_SEGMENT : round_up(size, GT_LARGE_ROUND);
        int raw_failed = 0;
        b = segment_new(a, pool, seg, &raw_failed);
        if (!b && raw_failed) {
            /* Cached free segments may be what stands between us and success
             * (memory is reserved but the wrong shape): give them back, once. */
            trim_locked(a);
            b = segment_new(a, pool, seg, &raw_failed);
        }
        if (!b) {
            update_free_stats(a);
            gt_alloc_stats s = a->st;
            pthread_mutex_unlock(&a->mu);
            if (!raw_failed)
                return GT_ERR(GT_ERR_OOM, "%s allocator: out of host memory for bookkeeping",
                              a->raw.name);
            return GT_ERR(GT_ERR_OOM,
                          "%s allocator: out of memory allocating %zu bytes (segment of %zu "
                          "bytes) after releasing the cache; in use %zu, reserved %zu, peak in "
                          "use %zu, largest free block %zu, fragmentation %.3f. Reduce the "
                          "batch size or the model size",
                          a->raw.name, bytes, seg, s.in_use, s.reserved, s.peak_in_use,
                          s.largest_free, s.fragmentation);
        }
    }
    if (!block_split(a, b, size)) {
        pthread_mutex_unlock(&a->mu);
        return GT_ERR(GT_ERR_OOM, "%s allocator: out of host memory for bookkeeping",
                      a->raw.name);
    }
    free_remove(a, b);
    *fresh = a->raw.zeroed && !b->used;
    b->used = 1;
    a->st.in_use += b->size;
    if (a->st.in_use > a->st.peak_in_use) a->st.peak_in_use = a->st.in_use;
    if (a->st.in_use > a->window_peak) a->window_peak = a->st.in_use;
    GT_UNPOISON(b->ptr, bytes);
    *out = b->ptr;
    pthread_mutex_unlock(&a->mu);
    return GT_OK;
}

void gt_dealloc(gt_allocator *a, void *p) {
    if (!p) return;
    GT_ASSERT(a);
    pthread_mutex_lock(&a->mu);
    gt_block *b = table_find(a, p);
    if (!b || b->free) {
        pthread_mutex_unlock(&a->mu);
        fprintf(stderr, "gauntlet: %s allocator: %p was not allocated here or is already freed\n",
                a->raw.name, p);
        GT_ASSERT(b && !b->free);
    }
    a->st.in_use -= b->size;
    GT_POISON(b->ptr, b->size);
    free_insert(a, b);
    if (b->next && b->next->free) b = block_merge(a, b, b->next);
    if (b->prev && b->prev->free) b = block_merge(a, b->prev, b);
    pthread_mutex_unlock(&a->mu);
}

void gt_allocator_trim(gt_allocator *a) {
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    trim_locked(a);
    pthread_mutex_unlock(&a->mu);
}

void gt_allocator_stats(gt_allocator *a, gt_alloc_stats *out) {
    GT_ASSERT(a && out);
    pthread_mutex_lock(&a->mu);
    update_free_stats(a);
    *out = a->st;
    pthread_mutex_unlock(&a->mu);
}

void gt_allocator_reset_peak(gt_allocator *a) {
    GT_ASSERT(a);
    pthread_mutex_lock(&a->mu);
    a->st.peak_in_use = a->st.in_use;
    a->st.peak_reserved = a->st.reserved;
    pthread_mutex_unlock(&a->mu);
}

size_t gt_allocator_window_begin(gt_allocator *a) {
    GT_ASSERT(a);
    pthread_mutex_lock(&a->mu);
    size_t now = a->window_peak = a->st.in_use;
    pthread_mutex_unlock(&a->mu);
    return now;
}

size_t gt_allocator_window_peak(gt_allocator *a) {
    GT_ASSERT(a);
    pthread_mutex_lock(&a->mu);
    size_t peak = a->window_peak;
    pthread_mutex_unlock(&a->mu);
    return peak;
}
