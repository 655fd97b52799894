/* The backends by name: the one place that knows which backends exist and
 * constructs them (ref, cpu, cuda). Every backend can be asked for by name;
 * one that is not compiled in, or has no device here, answers
 * GT_ERR_UNSUPPORTED with a message saying why, never a link error (the
 * cuda backend without CUDA is kernels/cuda/stub.c).
 *
 * The backend interface itself (engine/backend.h) and the op table's type
 * (engine/ops.h) belong to the engine; this header is the kernels' side. */
#ifndef GT_KERNELS_REGISTRY_H
#define GT_KERNELS_REGISTRY_H

#include "engine/backend.h"
#include "engine/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates a backend by name ("ref", "cpu", "cuda"). GT_ERR_INVALID for an
 * unknown name, GT_ERR_UNSUPPORTED when not built in or no device. cfg may
 * be NULL (threads 0, device -1). Calls gt_kernels_init first. Free the
 * backend with gt_backend_free. */
gt_status gt_backend_new(const char *name, const gt_backend_config *cfg, gt_backend **out);

/* Gives the engine what it takes from the kernels without calling up into
 * them: the cuda backend's division kernel behind the nccl communicator's
 * avg (gt_comm_set_divide; nothing without CUDA). Idempotent and cheap;
 * gt_backend_new calls it, and a program that makes an nccl communicator
 * without creating a backend first calls it itself (the gauntlet command
 * does at start). */
void gt_kernels_init(void);

/* Per-backend constructors behind gt_backend_new; the cuda one is a stub
 * returning GT_ERR_UNSUPPORTED when CUDA is not compiled in. */
gt_status gt_backend_ref_new(const gt_backend_config *cfg, gt_backend **out);
gt_status gt_backend_cpu_new(const gt_backend_config *cfg, gt_backend **out);
gt_status gt_backend_cuda_new(const gt_backend_config *cfg, gt_backend **out);
/* kernels/cuda/comm_avg.cu's launcher as gt_comm_set_divide takes it; NULL
 * when CUDA is not compiled in (the stub). */
gt_comm_divide_fn gt_backend_cuda_comm_divide(void);

#ifdef __cplusplus
}
#endif
#endif
