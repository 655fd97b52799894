/* The cuda backend's vision ops (engine/ops.h has the specification of
 * each): conv2d through cuDNN (conv.cu), and batchnorm, relu and global
 * average pooling as own kernels (vision.cu). Exists only when CUDA is
 * compiled in (GT_HAVE_CUDA); device memory of a backend made by
 * gt_backend_cuda_new, queued on that backend's stream like every op.
 *
 * Storage types: those of GT_CUDA_DISPATCH (kernels/cuda/common.cuh) for
 * the own kernels; fp32, bf16 and fp16 for conv2d (GT_ERR_UNSUPPORTED
 * otherwise, or where gt_cuda_begin declines the dtype). Arithmetic is
 * fp32 everywhere (conv2d: cuDNN's compute type FLOAT); batchnorm's
 * statistics and running statistics are fp32 whatever the storage.
 */
#ifndef GT_OPS_CUDA_VISION_H
#define GT_OPS_CUDA_VISION_H

#include "gt_config.h"
#include "kernels/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Present only when cuDNN was found (GT_HAVE_CUDNN); without it the conv
 * slots of gt_ops_cuda stay empty (skipped). The algorithms are chosen
 * among cuDNN's deterministic ones, once per shape, dtype and device in a
 * process (conv.cu says how), and each choice is written to the backend's
 * notes. conv2d_bwd accumulates (beta = 1) into dinp and dweight, and adds
 * into dbias with an own fixed-order reduction. */
gt_status gt_cuda_conv2d_fwd(const gt_kctx *k, void *out, const void *inp, const void *weight,
                             const void *bias, const gt_conv2d_shape *s);
gt_status gt_cuda_conv2d_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                             const void *dout, const void *inp, const void *weight,
                             const gt_conv2d_shape *s);

/* One block per channel for the batch statistics and for the backward's
 * sums: no atomics, the order of every sum depends on N, C and HW only. */
gt_status gt_cuda_batchnorm_fwd(const gt_kctx *k, void *out, float *mean, float *rstd,
                                float *running_mean, float *running_var, const void *inp,
                                const void *weight, const void *bias, int N, int C, int HW,
                                float eps, float momentum, int training);
gt_status gt_cuda_batchnorm_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                                const void *dout, const void *inp, const void *weight,
                                const float *mean, const float *rstd, int N, int C, int HW);
gt_status gt_cuda_relu_fwd(const gt_kctx *k, void *out, const void *inp, size_t n);
gt_status gt_cuda_relu_bwd(const gt_kctx *k, void *dinp, const void *out, const void *dout,
                           size_t n);
gt_status gt_cuda_avgpool_fwd(const gt_kctx *k, void *out, const void *inp, int N, int C, int HW);
gt_status gt_cuda_avgpool_bwd(const gt_kctx *k, void *dinp, const void *dout, int N, int C, int HW);

#ifdef __cplusplus
}
#endif
#endif
