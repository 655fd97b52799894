/* Caching allocator, used by every backend (host and device memory alike).
 *
 * Memory is obtained from a "raw" allocator (malloc, cudaMalloc) in segments
 * and handed out as blocks. Freed blocks go back to a size-bucketed free list
 * of the allocator, not to the raw allocator, so a training loop that asks for
 * the same sizes every step reaches a steady state with no raw allocations.
 * Adjacent free blocks in a segment are merged; large requests get their own
 * segment. All sizes are rounded up to GT_ALLOC_ALIGN.
 *
 * Sizing (engine/alloc.c): requests below 1 MiB are carved from 2 MiB
 * segments; larger ones come from a separate pool whose new segments are the
 * request rounded up to 512 KiB. Within a pool the free block chosen is the
 * best fit (smallest that fits, lowest address on ties), split to the
 * request. When the raw allocator fails, every completely free segment is
 * released and the raw allocation retried once.
 *
 * Statistics (gt_alloc_stats) are exact at any time:
 *   in_use        bytes in blocks handed out and not yet freed (rounded sizes)
 *   reserved      bytes held from the raw allocator (all segments)
 *   peak_in_use   high-water mark of in_use since creation or reset_peak
 *   peak_reserved high-water mark of reserved
 *   n_raw_allocs  calls made to the raw allocator (n_raw_frees likewise)
 *   largest_free  largest single free block in any segment
 *   fragmentation 1 - largest_free / (reserved - in_use), 0 when nothing free
 *
 * Thread-safe (one mutex): the data loader thread allocates too.
 */
#ifndef GT_ALLOC_H
#define GT_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GT_ALLOC_ALIGN 256

typedef struct gt_raw_allocator {
    const char *name; /* "host", "cuda" */
    /* Returns NULL on failure. Alignment of at least GT_ALLOC_ALIGN. */
    void *(*alloc)(void *ctx, size_t bytes);
    void (*free)(void *ctx, void *p, size_t bytes);
    void *ctx;
    /* 1 when `alloc` returns memory that reads as zero (the host's large
     * segments come from mmap): gt_alloc_zeroed then skips the memset for a
     * block nobody wrote yet, and its pages stay untouched until first use. */
    int zeroed;
} gt_raw_allocator;

typedef struct gt_alloc_stats {
    size_t in_use;
    size_t reserved;
    size_t peak_in_use;
    size_t peak_reserved;
    size_t largest_free;
    double fragmentation;
    uint64_t n_requests;   /* gt_alloc calls */
    uint64_t n_cache_hits; /* gt_alloc calls served without the raw allocator */
    uint64_t n_raw_allocs;
    uint64_t n_raw_frees;
} gt_alloc_stats;

typedef struct gt_allocator gt_allocator;

/* The host raw allocator: anonymous mmap for segments of 1 MiB and more
 * (zero-filled, given back with munmap), aligned_alloc with GT_ALLOC_ALIGN
 * for the small ones. */
gt_raw_allocator gt_raw_allocator_host(void);

/* Creates an allocator over `raw` (copied). GT_ERR_OOM on failure. */
gt_status gt_allocator_new(const gt_raw_allocator *raw, gt_allocator **out);
/* Returns every segment to the raw allocator. Blocks still in use are leaked
 * back too (their pointers become invalid). Accepts NULL. */
void gt_allocator_free(gt_allocator *a);

/* Allocates `bytes` (0 is allowed and returns a valid unique pointer).
 * GT_ERR_OOM (with the sizes in the message) when the raw allocator fails
 * even after the cache was released. */
gt_status gt_alloc(gt_allocator *a, size_t bytes, void **out);
/* As gt_alloc, and the block reads as zero: *fresh is set to 1 when it was
 * carved from memory the raw allocator gave zeroed and nobody has used since
 * (nothing to do), else 0 and the caller zeroes it (the allocator cannot
 * write device memory). fresh may not be NULL. */
gt_status gt_alloc_zeroed(gt_allocator *a, size_t bytes, void **out, int *fresh);
/* Returns a block to the cache. NULL is ignored. A pointer this allocator did
 * not hand out is a programmer error (GT_ASSERT). */
void gt_dealloc(gt_allocator *a, void *p);
/* Gives all completely free segments back to the raw allocator. */
void gt_allocator_trim(gt_allocator *a);

void gt_allocator_stats(gt_allocator *a, gt_alloc_stats *out);
void gt_allocator_reset_peak(gt_allocator *a);

/* A second high-water mark over a window the caller opens (the profiler's
 * peak during one op, engine/profile.h), leaving peak_in_use alone:
 * window_begin starts it at in_use and returns in_use; window_peak is the
 * highest in_use since. One window at a time per allocator. */
size_t gt_allocator_window_begin(gt_allocator *a);
size_t gt_allocator_window_peak(gt_allocator *a);

#ifdef __cplusplus
}
#endif
#endif
