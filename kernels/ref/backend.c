/* The ref backend: the oracle every other backend is compared with.
 * Plain loops, fp64 accumulation, one thread, never tuned: its only job is
 * to be obviously correct. Every op stores fp32, bf16 or fp16 (each
 * element loaded to fp64, rounded once on store: ref.h). */
#include <stdlib.h>

#include "kernels/ref/ref.h"
#include "kernels/registry.h"

const gt_ops gt_ops_ref = {
    .encoder_fwd = gt_ref_encoder_fwd,
    .encoder_bwd = gt_ref_encoder_bwd,
    .layernorm_fwd = gt_ref_layernorm_fwd,
    .layernorm_bwd = gt_ref_layernorm_bwd,
    .matmul_fwd = gt_ref_matmul_fwd,
    .matmul_bwd = gt_ref_matmul_bwd,
    .attention_fwd = gt_ref_attention_fwd,
    .attention_bwd = gt_ref_attention_bwd,
    .gelu_fwd = gt_ref_gelu_fwd,
    .gelu_bwd = gt_ref_gelu_bwd,
    .residual_fwd = gt_ref_residual_fwd,
    .residual_bwd = gt_ref_residual_bwd,
    .classifier_fwd = gt_ref_classifier_fwd,
    .classifier_bwd = gt_ref_classifier_bwd,
    .adamw = gt_ref_adamw,
    .sumsq = gt_ref_sumsq,
    .cast = gt_ref_cast,
    .conv2d_fwd = gt_ref_conv2d_fwd,
    .conv2d_bwd = gt_ref_conv2d_bwd,
    .batchnorm_fwd = gt_ref_batchnorm_fwd,
    .batchnorm_bwd = gt_ref_batchnorm_bwd,
    .relu_fwd = gt_ref_relu_fwd,
    .relu_bwd = gt_ref_relu_bwd,
    .avgpool_fwd = gt_ref_avgpool_fwd,
    .avgpool_bwd = gt_ref_avgpool_bwd,
    .matmul_gelu_fwd = gt_ref_matmul_gelu_fwd,
    .matmul_dgelu_bwd = gt_ref_matmul_dgelu_bwd,
};

static const char *ref_describe(gt_backend *be) {
    (void)be;
    return "ref: plain loops, fp64 accumulation, 1 thread (oracle)";
}

gt_status gt_backend_ref_new(const gt_backend_config *cfg, gt_backend **out) {
    (void)cfg;
    if (!out) return GT_ERR(GT_ERR_INVALID, "gt_backend_ref_new: out is NULL");
    *out = NULL;
    gt_backend *be = calloc(1, sizeof *be);
    if (!be) return GT_ERR(GT_ERR_OOM, "allocating the ref backend (%zu bytes)", sizeof *be);
    gt_status s = gt_host_backend_init(be, "ref", &gt_ops_ref);
    if (s != GT_OK) {
        gt_backend_free(be);
        return s;
    }
    be->threads = 1;
    be->describe = ref_describe;
    *out = be;
    return GT_OK;
}
