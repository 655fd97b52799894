/* cpu pointwise ops: GELU (tanh approximation) forward/backward, the
 * residual add and ReLU. One pass each, OpenMP over blocks, vectorised bodies.
 * Bound: memory bandwidth (gelu_fwd 8 B/elem, gelu_bwd 12, residual_fwd 12,
 * residual_bwd 20) - the exp in GELU is cheap enough to hide behind it.
 *
 * GELU and its derivative: gt_cpu_gelu, gt_cpu_gelu_grad (cpu.h). */
#include "kernels/cpu/cpu.h"

#define BLOCK 4096 /* elements per OpenMP work item */

/* Smallest n that gets a parallel region. A region whose threads have gone
 * to sleep (after a pause longer than the runtime's spin, or under
 * OMP_WAIT_POLICY=passive) costs their wake-up, tens of microseconds on a
 * shared VM: a parallel region only pays where one thread needs well over
 * twice that. A memory-bound op (a load, an add, a store) costs a fraction
 * of a nanosecond an element, GELU several times more (docs/performance.md
 * has the measurements). A case near the break-even point also runs in two modes
 * (fast wake-up or not) from run to run, which the gate sees as noise. */
#define PAR_MIN_MEM (1u << 19)
#define PAR_MIN_GELU (1u << 17)

#ifdef _OPENMP
#define PAR_FOR_BLOCKS_ _Pragma("omp parallel for schedule(static) if (n_ >= min_)")
#else
#define PAR_FOR_BLOCKS_
#endif
/* for (i = 0; i < n; i++) BODY, in OpenMP work items of BLOCK elements, in
 * parallel from MIN elements on (elementwise: the bits do not depend on the
 * thread count). */
#define FOR_EACH_BLOCKED(n, min, i, BODY)                                               \
    do {                                                                                \
        size_t n_ = (n), nb_ = (n_ + BLOCK - 1) / BLOCK, min_ = (min);                  \
        (void)min_;                                                                     \
        PAR_FOR_BLOCKS_                                                                 \
        for (size_t blk_ = 0; blk_ < nb_; blk_++) {                                     \
            size_t end_ = (blk_ + 1) * BLOCK < n_ ? (blk_ + 1) * BLOCK : n_;            \
            for (size_t i = blk_ * BLOCK; i < end_; i++) BODY;                          \
        }                                                                               \
    } while (0)

gt_status gt_cpu_gelu_fwd(const gt_kctx *k, void *out_, const void *inp_, size_t n) {
    GT_CPU_CHECK_DT(k);
    float *restrict out = out_;
    const float *restrict inp = inp_;
    FOR_EACH_BLOCKED(n, PAR_MIN_GELU, i, out[i] = gt_cpu_gelu(inp[i]));
    return GT_OK;
}

gt_status gt_cpu_gelu_bwd(const gt_kctx *k, void *dinp_, const void *inp_, const void *dout_,
                          size_t n) {
    GT_CPU_CHECK_DT(k);
    float *restrict dinp = dinp_;
    const float *restrict inp = inp_;
    const float *restrict dout = dout_;
    FOR_EACH_BLOCKED(n, PAR_MIN_GELU, i, dinp[i] += gt_cpu_gelu_grad(inp[i]) * dout[i]);
    return GT_OK;
}

void gt_cpu_gelu_grad_mul(float *restrict y, const float *restrict pre, size_t n) {
    FOR_EACH_BLOCKED(n, PAR_MIN_GELU, i, y[i] = gt_cpu_gelu_grad(pre[i]) * y[i]);
}

gt_status gt_cpu_residual_fwd(const gt_kctx *k, void *out_, const void *a_, const void *b_,
                              size_t n) {
    GT_CPU_CHECK_DT(k);
    /* No restrict: out may alias a or b (elementwise, so that is safe). */
    float *out = out_;
    const float *a = a_, *b = b_;
    FOR_EACH_BLOCKED(n, PAR_MIN_MEM, i, out[i] = a[i] + b[i]);
    return GT_OK;
}

gt_status gt_cpu_residual_bwd(const gt_kctx *k, void *da_, void *db_, const void *dout_, size_t n) {
    GT_CPU_CHECK_DT(k);
    float *restrict da = da_;
    float *restrict db = db_;
    const float *restrict dout = dout_;
    FOR_EACH_BLOCKED(n, PAR_MIN_MEM, i, {
        da[i] += dout[i];
        db[i] += dout[i];
    });
    return GT_OK;
}

/* ReLU: out = max(x, 0), a NaN passes through as in the ref; the backward
 * reads the forward's output (8 and 16 B/elem). */
gt_status gt_cpu_relu_fwd(const gt_kctx *k, void *out_, const void *inp_, size_t n) {
    GT_CPU_CHECK_DT(k);
    /* No restrict: out may alias inp (elementwise, so that is safe). */
    float *out = out_;
    const float *inp = inp_;
    FOR_EACH_BLOCKED(n, PAR_MIN_MEM, i, out[i] = inp[i] < 0.0f ? 0.0f : inp[i]);
    return GT_OK;
}

gt_status gt_cpu_relu_bwd(const gt_kctx *k, void *dinp_, const void *out_, const void *dout_,
                          size_t n) {
    GT_CPU_CHECK_DT(k);
    float *restrict dinp = dinp_;
    const float *restrict out = out_;
    const float *restrict dout = dout_;
    FOR_EACH_BLOCKED(n, PAR_MIN_MEM, i, dinp[i] += out[i] > 0.0f ? dout[i] : 0.0f);
    return GT_OK;
}
