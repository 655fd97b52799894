/* Tensors: a shape, a dtype and memory of one backend.
 *
 * A tensor either owns its memory (gt_tensor_new: from the backend's caching
 * allocator) or is a view into memory owned by someone else (gt_tensor_view:
 * used to carve parameters out of one contiguous buffer).
 */
#ifndef GT_TENSOR_H
#define GT_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "engine/backend.h"
#include "engine/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GT_TENSOR_MAX_DIMS 4

typedef struct gt_tensor {
    gt_dtype dtype;
    int ndim;
    int64_t shape[GT_TENSOR_MAX_DIMS];
    void *data;
    gt_backend *be; /* whose memory `data` is */
    int owns;       /* 1: freed by gt_tensor_free */
} gt_tensor;

/* New tensor with uninitialised memory. ndim in [0, 4], dims >= 0.
 * GT_ERR_INVALID for a bad shape, GT_ERR_OOM when allocation fails. */
gt_status gt_tensor_new(gt_backend *be, gt_dtype dt, int ndim, const int64_t *shape,
                        gt_tensor **out);
/* View over `data` (borrowed, not freed by gt_tensor_free). */
gt_status gt_tensor_view(gt_backend *be, gt_dtype dt, int ndim, const int64_t *shape,
                         void *data, gt_tensor **out);
/* Frees the struct and, when owned, the memory. Accepts NULL. */
void gt_tensor_free(gt_tensor *t);

int64_t gt_tensor_numel(const gt_tensor *t);
size_t gt_tensor_nbytes(const gt_tensor *t);
int64_t gt_shape_numel(int ndim, const int64_t *shape);
/* "(2, 64, 768)" into buf. */
const char *gt_shape_str(int ndim, const int64_t *shape, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
