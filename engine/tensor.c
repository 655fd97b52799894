/* Tensors (engine/tensor.h). Memory comes from the backend's caching
 * allocator, so creating and freeing tensors every step is cheap once the
 * allocator has reached its steady state. */
#include "engine/tensor.h"

#include <stdlib.h>
#include <string.h>

int64_t gt_shape_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

const char *gt_shape_str(int ndim, const int64_t *shape, char *buf, size_t len) {
    if (!buf || len == 0) return buf;
    size_t used = 0;
    int w = snprintf(buf, len, "(");
    used = w > 0 ? (size_t)w : 0;
    for (int i = 0; i < ndim && used < len; i++) {
        w = snprintf(buf + used, len - used, i ? ", %lld" : "%lld", (long long)shape[i]);
        if (w > 0) used += (size_t)w;
    }
    /* A 1-d shape gets Python's trailing comma so that "(5,)" is not read
     * as a parenthesised number. */
    if (used < len) snprintf(buf + used, len - used, ndim == 1 ? ",)" : ")");
    return buf;
}

/* Validates the shape and computes its byte size without overflow. */
static gt_status check_shape(gt_dtype dt, int ndim, const int64_t *shape, size_t *nbytes) {
    if ((int)dt < 0 || dt >= GT_DTYPE_COUNT)
        return GT_ERR(GT_ERR_INVALID, "tensor: dtype %d is not a gt_dtype", (int)dt);
    if (ndim < 0 || ndim > GT_TENSOR_MAX_DIMS)
        return GT_ERR(GT_ERR_INVALID, "tensor: ndim %d outside [0, %d]", ndim,
                      GT_TENSOR_MAX_DIMS);
    if (ndim > 0 && !shape)
        return GT_ERR(GT_ERR_INVALID, "tensor: ndim %d but shape is NULL", ndim);
    size_t bytes = gt_dtype_size(dt);
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return GT_ERR(GT_ERR_INVALID, "tensor: dimension %d is %lld, must be >= 0", i,
                          (long long)shape[i]);
        if (shape[i] > 0 && bytes > SIZE_MAX / (uint64_t)shape[i]) {
            char s[128];
            return GT_ERR(GT_ERR_INVALID, "tensor: shape %s overflows the address space",
                          gt_shape_str(ndim, shape, s, sizeof s));
        }
        bytes *= (size_t)shape[i];
    }
    *nbytes = bytes;
    return GT_OK;
}

static gt_status tensor_make(gt_backend *be, gt_dtype dt, int ndim, const int64_t *shape,
                             gt_tensor **out) {
    gt_tensor *t = calloc(1, sizeof *t);
    if (!t) return GT_ERR(GT_ERR_OOM, "tensor: out of host memory for the tensor struct");
    t->dtype = dt;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->be = be;
    *out = t;
    return GT_OK;
}

gt_status gt_tensor_new(gt_backend *be, gt_dtype dt, int ndim, const int64_t *shape,
                        gt_tensor **out) {
    if (!out) return GT_ERR(GT_ERR_INVALID, "gt_tensor_new: out is NULL");
    *out = NULL;
    if (!be) return GT_ERR(GT_ERR_INVALID, "gt_tensor_new: backend is NULL");
    size_t nbytes;
    GT_TRY(check_shape(dt, ndim, shape, &nbytes));
    gt_tensor *t = NULL;
    GT_TRY(tensor_make(be, dt, ndim, shape, &t));
    gt_status s = gt_backend_alloc(be, nbytes, &t->data);
    if (s != GT_OK) {
        free(t);
        char buf[128];
        return gt_error_wrap(s, "allocating a %s tensor of shape %s (%zu bytes) on %s",
                             gt_dtype_name(dt), gt_shape_str(ndim, shape, buf, sizeof buf),
                             nbytes, be->name ? be->name : "backend");
    }
    t->owns = 1;
    *out = t;
    return GT_OK;
}

gt_status gt_tensor_view(gt_backend *be, gt_dtype dt, int ndim, const int64_t *shape,
                         void *data, gt_tensor **out) {
    if (!out) return GT_ERR(GT_ERR_INVALID, "gt_tensor_view: out is NULL");
    *out = NULL;
    size_t nbytes;
    GT_TRY(check_shape(dt, ndim, shape, &nbytes));
    if (!data && nbytes > 0)
        return GT_ERR(GT_ERR_INVALID, "gt_tensor_view: data is NULL for %zu bytes", nbytes);
    gt_tensor *t = NULL;
    GT_TRY(tensor_make(be, dt, ndim, shape, &t));
    t->data = data;
    t->owns = 0;
    *out = t;
    return GT_OK;
}

void gt_tensor_free(gt_tensor *t) {
    if (!t) return;
    if (t->owns && t->be) gt_backend_dealloc(t->be, t->data);
    free(t);
}

int64_t gt_tensor_numel(const gt_tensor *t) { return gt_shape_numel(t->ndim, t->shape); }

size_t gt_tensor_nbytes(const gt_tensor *t) {
    return (size_t)gt_tensor_numel(t) * gt_dtype_size(t->dtype);
}
