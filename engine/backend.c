/* What every backend shares (freeing, allocation through its caching
 * allocator) and the pieces shared by host-memory backends (ref, cpu):
 * synchronous memcpy/memset copies and a caching allocator over the host raw
 * allocator. Construction by name is the kernels' (kernels/registry.c). */
#include "engine/backend.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gt_config.h"

void gt_backend_free(gt_backend *be) {
    if (!be) return;
    if (be->destroy) be->destroy(be);
    gt_allocator_free(be->alloc);
    free(be);
}

gt_status gt_backend_alloc(gt_backend *be, size_t bytes, void **out) {
    if (!be || !out) return GT_ERR(GT_ERR_INVALID, "gt_backend_alloc: NULL backend or out");
    return gt_alloc(be->alloc, bytes, out);
}

gt_status gt_backend_alloc_zeroed(gt_backend *be, size_t bytes, void **out) {
    if (!be || !out) return GT_ERR(GT_ERR_INVALID, "gt_backend_alloc_zeroed: NULL backend or out");
    int fresh = 0;
    GT_TRY(gt_alloc_zeroed(be->alloc, bytes, out, &fresh));
    if (fresh) return GT_OK;
    gt_status s = be->memset_zero(be, *out, bytes);
    if (s != GT_OK) {
        gt_dealloc(be->alloc, *out);
        *out = NULL;
    }
    return s;
}

void gt_backend_dealloc(gt_backend *be, void *p) {
    if (!be || !p) return;
    gt_dealloc(be->alloc, p);
}

/* Copies and zeroing of many MiB (a model's parameters, gradients and
 * optimizer state at start-up) are shared among the OpenMP threads in 1 MiB
 * pieces: a fresh buffer's page faults and the kernel's zeroing of its pages
 * then run on every core instead of one. */
#define HOST_PIECE ((size_t)1 << 20)
#define HOST_PARALLEL_MIN ((size_t)8 << 20)

static gt_status host_copy(gt_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (bytes == 0) return GT_OK;
    if (!dst || !src) return GT_ERR(GT_ERR_INVALID, "copy of %zu bytes with a NULL pointer", bytes);
    uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    if (bytes < HOST_PARALLEL_MIN || (d < s + bytes && s < d + bytes)) {
        /* memmove: a copy within one buffer (checkpoint shuffles, views) may overlap */
        memmove(dst, src, bytes);
        return GT_OK;
    }
    long pieces = (long)((bytes + HOST_PIECE - 1) / HOST_PIECE);
#if GT_HAVE_OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (long p = 0; p < pieces; p++) {
        size_t o = (size_t)p * HOST_PIECE, n = bytes - o < HOST_PIECE ? bytes - o : HOST_PIECE;
        memcpy((char *)dst + o, (const char *)src + o, n);
    }
    return GT_OK;
}

static gt_status host_memset_zero(gt_backend *be, void *dst, size_t bytes) {
    (void)be;
    if (bytes == 0) return GT_OK;
    if (!dst) return GT_ERR(GT_ERR_INVALID, "memset of %zu bytes on NULL", bytes);
    long pieces = (long)((bytes + HOST_PIECE - 1) / HOST_PIECE);
#if GT_HAVE_OPENMP
#pragma omp parallel for schedule(static) if (bytes >= HOST_PARALLEL_MIN)
#endif
    for (long p = 0; p < pieces; p++) {
        size_t o = (size_t)p * HOST_PIECE, n = bytes - o < HOST_PIECE ? bytes - o : HOST_PIECE;
        memset((char *)dst + o, 0, n);
    }
    return GT_OK;
}

static gt_status host_synchronize(gt_backend *be) {
    (void)be;
    return GT_OK; /* host ops are synchronous */
}

static const char *host_describe(gt_backend *be) { return be->name; }

static void host_destroy(gt_backend *be) {
    free(be->impl);
    be->impl = NULL;
}

gt_status gt_host_backend_init(gt_backend *be, const char *name, const gt_ops *ops) {
    if (!be || !name || !ops)
        return GT_ERR(GT_ERR_INVALID, "gt_host_backend_init: NULL backend, name or ops");
    be->name = name;
    be->device = GT_DEVICE_HOST;
    be->threads = 1;
    be->ops = ops;
    be->copy_to_device = host_copy;
    be->copy_to_host = host_copy;
    be->copy_device = host_copy;
    be->memset_zero = host_memset_zero;
    be->synchronize = host_synchronize;
    be->describe = host_describe;
    be->destroy = host_destroy;
    be->impl = NULL;
    gt_raw_allocator raw = gt_raw_allocator_host();
    be->alloc = NULL;
    gt_status s = gt_allocator_new(&raw, &be->alloc);
    if (s != GT_OK) return gt_error_wrap(s, "creating the %s backend's allocator", name);
    return GT_OK;
}
