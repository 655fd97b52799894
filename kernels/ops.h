/* The kernels' side of the op table: each backend's filled table. The
 * table's type, the op list and every op's specification (shapes, what
 * accumulates, errors, determinism) are engine/ops.h's, included here so
 * that kernel code needs this header only. */
#ifndef GT_OPS_H
#define GT_OPS_H

#include "engine/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Op tables of each backend (the cuda one, kernels/cuda/ops_cuda.h, exists
 * only with CUDA). */
extern const gt_ops gt_ops_ref;
extern const gt_ops gt_ops_cpu;

#ifdef __cplusplus
}
#endif
#endif
