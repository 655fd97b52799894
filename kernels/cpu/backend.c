/* The cpu backend: host memory, OpenMP over independent outputs, GEMM
 * through OpenBLAS (or the own blocked SGEMM), fused passes where they save
 * memory traffic. Results do not depend on the thread count. */
#include <stdio.h>
#include <stdlib.h>

#include "gt_config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/registry.h"

#ifdef _OPENMP
#include <omp.h>
#endif

const gt_ops gt_ops_cpu = {
    .encoder_fwd = gt_cpu_encoder_fwd,
    .encoder_bwd = gt_cpu_encoder_bwd,
    .layernorm_fwd = gt_cpu_layernorm_fwd,
    .layernorm_bwd = gt_cpu_layernorm_bwd,
    .matmul_fwd = gt_cpu_matmul_fwd,
    .matmul_bwd = gt_cpu_matmul_bwd,
    .attention_fwd = gt_cpu_attention_fwd,
    .attention_bwd = gt_cpu_attention_bwd,
    .gelu_fwd = gt_cpu_gelu_fwd,
    .gelu_bwd = gt_cpu_gelu_bwd,
    .residual_fwd = gt_cpu_residual_fwd,
    .residual_bwd = gt_cpu_residual_bwd,
    .classifier_fwd = gt_cpu_classifier_fwd,
    .classifier_bwd = gt_cpu_classifier_bwd,
    .adamw = gt_cpu_adamw,
    .sumsq = gt_cpu_sumsq,
    .cast = gt_cpu_cast,
    .conv2d_fwd = gt_cpu_conv2d_fwd,
    .conv2d_bwd = gt_cpu_conv2d_bwd,
    .batchnorm_fwd = gt_cpu_batchnorm_fwd,
    .batchnorm_bwd = gt_cpu_batchnorm_bwd,
    .relu_fwd = gt_cpu_relu_fwd,
    .relu_bwd = gt_cpu_relu_bwd,
    .avgpool_fwd = gt_cpu_avgpool_fwd,
    .avgpool_bwd = gt_cpu_avgpool_bwd,
    .matmul_gelu_fwd = gt_cpu_matmul_gelu_fwd,
    .matmul_dgelu_bwd = gt_cpu_matmul_dgelu_bwd,
};

typedef struct cpu_impl {
    char desc[320];
} cpu_impl;

static const char *cpu_describe(gt_backend *be) { return ((cpu_impl *)be->impl)->desc; }

gt_status gt_backend_cpu_new(const gt_backend_config *cfg, gt_backend **out) {
    if (!out) return GT_ERR(GT_ERR_INVALID, "gt_backend_cpu_new: out is NULL");
    *out = NULL;
    int threads = cfg ? cfg->threads : 0;
    if (threads < 0) return GT_ERR(GT_ERR_INVALID, "cpu backend: threads=%d, must be >= 0", threads);
    gt_backend *be = calloc(1, sizeof *be);
    if (!be) return GT_ERR(GT_ERR_OOM, "allocating the cpu backend (%zu bytes)", sizeof *be);
    gt_status s = gt_host_backend_init(be, "cpu", &gt_ops_cpu);
    if (s != GT_OK) {
        gt_backend_free(be);
        return s;
    }
    cpu_impl *impl = calloc(1, sizeof *impl);
    if (!impl) {
        gt_backend_free(be);
        return GT_ERR(GT_ERR_OOM, "allocating the cpu backend state");
    }
    be->impl = impl; /* freed by the host destroy */
#ifdef _OPENMP
    /* Process-wide, like the BLAS setting: the last cpu backend created wins. */
    if (threads > 0) omp_set_num_threads(threads);
    be->threads = omp_get_max_threads();
#else
    be->threads = 1;
#endif
    gt_status sel = gt_cpu_sgemm_select();
    if (sel != GT_OK) {
        gt_backend_free(be);
        return sel;
    }
    const char *omp =
#ifdef _OPENMP
        ", OpenMP";
#else
        ", no OpenMP";
#endif
    if (gt_cpu_sgemm_uses_blas())
        snprintf(impl->desc, sizeof impl->desc, "cpu: %d thread%s, GEMM %s (%s, one call per tile)%s",
                 be->threads, be->threads == 1 ? "" : "s", GT_BLAS_DESC, gt_cpu_sgemm_choice(), omp);
    else
        snprintf(impl->desc, sizeof impl->desc, "cpu: %d thread%s, GEMM own blocked SGEMM (%s%s%s)%s",
                 be->threads, be->threads == 1 ? "" : "s", gt_cpu_sgemm_tile(),
                 GT_HAVE_BLAS ? "; " : "", GT_HAVE_BLAS ? gt_cpu_sgemm_choice() : "", omp);
    be->describe = cpu_describe;
    *out = be;
    return GT_OK;
}
