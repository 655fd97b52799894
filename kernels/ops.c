/* Op names and generic slot access for the op table (kernels/ops.h). */
#include "kernels/ops.h"

static const char *const g_op_names[GT_OP_COUNT] = {
    [GT_OP_ENCODER_FWD] = "encoder_fwd",       [GT_OP_ENCODER_BWD] = "encoder_bwd",
    [GT_OP_LAYERNORM_FWD] = "layernorm_fwd",   [GT_OP_LAYERNORM_BWD] = "layernorm_bwd",
    [GT_OP_MATMUL_FWD] = "matmul_fwd",         [GT_OP_MATMUL_BWD] = "matmul_bwd",
    [GT_OP_ATTENTION_FWD] = "attention_fwd",   [GT_OP_ATTENTION_BWD] = "attention_bwd",
    [GT_OP_GELU_FWD] = "gelu_fwd",             [GT_OP_GELU_BWD] = "gelu_bwd",
    [GT_OP_RESIDUAL_FWD] = "residual_fwd",     [GT_OP_RESIDUAL_BWD] = "residual_bwd",
    [GT_OP_CLASSIFIER_FWD] = "classifier_fwd", [GT_OP_CLASSIFIER_BWD] = "classifier_bwd",
    [GT_OP_ADAMW] = "adamw",                   [GT_OP_SUMSQ] = "sumsq",
    [GT_OP_CONV2D_FWD] = "conv2d_fwd",         [GT_OP_CONV2D_BWD] = "conv2d_bwd",
    [GT_OP_BATCHNORM_FWD] = "batchnorm_fwd",   [GT_OP_BATCHNORM_BWD] = "batchnorm_bwd",
    [GT_OP_RELU_FWD] = "relu_fwd",             [GT_OP_RELU_BWD] = "relu_bwd",
    [GT_OP_AVGPOOL_FWD] = "avgpool_fwd",       [GT_OP_AVGPOOL_BWD] = "avgpool_bwd",
    [GT_OP_CAST] = "cast",
    [GT_OP_MATMUL_GELU_FWD] = "matmul_gelu_fwd", [GT_OP_MATMUL_DGELU_BWD] = "matmul_dgelu_bwd",
};

static int conv_out(int in, int k, int stride, int pad) {
    if (in < 1 || k < 1 || stride < 1 || pad < 0) return 0;
    long span = (long)in + 2L * pad - k;
    return span < 0 ? 0 : (int)(span / stride + 1);
}
int gt_conv2d_out_h(const gt_conv2d_shape *s) {
    return s ? conv_out(s->H, s->KH, s->stride, s->pad) : 0;
}
int gt_conv2d_out_w(const gt_conv2d_shape *s) {
    return s ? conv_out(s->W, s->KW, s->stride, s->pad) : 0;
}

const char *gt_op_name(gt_op op) {
    if ((int)op < 0 || op >= GT_OP_COUNT) return "unknown_op";
    return g_op_names[op];
}

const void *gt_ops_slot(const gt_ops *ops, gt_op op) {
    if (!ops) return NULL;
    /* A function pointer as void * is not ISO C but POSIX guarantees it
     * (dlsym relies on it); callers only test it for NULL. */
    switch (op) {
    case GT_OP_ENCODER_FWD: return (const void *)ops->encoder_fwd;
    case GT_OP_ENCODER_BWD: return (const void *)ops->encoder_bwd;
    case GT_OP_LAYERNORM_FWD: return (const void *)ops->layernorm_fwd;
    case GT_OP_LAYERNORM_BWD: return (const void *)ops->layernorm_bwd;
    case GT_OP_MATMUL_FWD: return (const void *)ops->matmul_fwd;
    case GT_OP_MATMUL_BWD: return (const void *)ops->matmul_bwd;
    case GT_OP_ATTENTION_FWD: return (const void *)ops->attention_fwd;
    case GT_OP_ATTENTION_BWD: return (const void *)ops->attention_bwd;
    case GT_OP_GELU_FWD: return (const void *)ops->gelu_fwd;
    case GT_OP_GELU_BWD: return (const void *)ops->gelu_bwd;
    case GT_OP_RESIDUAL_FWD: return (const void *)ops->residual_fwd;
    case GT_OP_RESIDUAL_BWD: return (const void *)ops->residual_bwd;
    case GT_OP_CLASSIFIER_FWD: return (const void *)ops->classifier_fwd;
    case GT_OP_CLASSIFIER_BWD: return (const void *)ops->classifier_bwd;
    case GT_OP_ADAMW: return (const void *)ops->adamw;
    case GT_OP_SUMSQ: return (const void *)ops->sumsq;
    case GT_OP_CONV2D_FWD: return (const void *)ops->conv2d_fwd;
    case GT_OP_CONV2D_BWD: return (const void *)ops->conv2d_bwd;
    case GT_OP_BATCHNORM_FWD: return (const void *)ops->batchnorm_fwd;
    case GT_OP_BATCHNORM_BWD: return (const void *)ops->batchnorm_bwd;
    case GT_OP_RELU_FWD: return (const void *)ops->relu_fwd;
    case GT_OP_RELU_BWD: return (const void *)ops->relu_bwd;
    case GT_OP_AVGPOOL_FWD: return (const void *)ops->avgpool_fwd;
    case GT_OP_AVGPOOL_BWD: return (const void *)ops->avgpool_bwd;
    case GT_OP_CAST: return (const void *)ops->cast;
    case GT_OP_MATMUL_GELU_FWD: return (const void *)ops->matmul_gelu_fwd;
    case GT_OP_MATMUL_DGELU_BWD: return (const void *)ops->matmul_dgelu_bwd;
    default: return NULL;
    }
}

size_t gt_attention_state_floats(const gt_ops *ops, const gt_kctx *k, int B, int T, int C,
                                 int NH) {
    if (B <= 0 || T <= 0 || NH <= 0) return 0;
    if (ops && ops->attention_state_floats)
        return ops->attention_state_floats(k, B, T, C, NH);
    return (size_t)B * NH * T * T;
}

gt_status gt_ops_probe_dtype(gt_backend *be, gt_dtype dt) {
    if (dt == GT_DTYPE_FP32) return GT_OK;
    if (!be->ops->cast)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "backend '%s' has no cast op: it cannot keep a %s copy of the fp32 "
                      "weights; use --precision fp32 or a backend that stores %s",
                      be->name, gt_dtype_name(dt), gt_dtype_name(dt));
    if (!be->ops->matmul_fwd)
        return GT_ERR(GT_ERR_UNSUPPORTED, "backend '%s' has no matmul_fwd op", be->name);
    /* out, inp, weight of a (1,1) @ (1,1)^T, zeroed */
    char *buf = NULL;
    GT_TRY(gt_backend_alloc(be, 3 * 256, (void **)&buf));
    gt_kctx k = {be, dt};
    gt_status s = be->memset_zero(be, buf, 3 * 256);
    if (s == GT_OK) s = be->ops->matmul_fwd(&k, buf, buf + 256, buf + 512, NULL, 1, 1, 1);
    if (s == GT_OK) s = be->synchronize(be);
    gt_backend_dealloc(be, buf);
    if (s == GT_ERR_UNSUPPORTED)
        return gt_error_wrap(s, "--precision %s: backend '%s' does not store %s activations "
                                "and weights; use --precision fp32 there, or a backend that "
                                "does (ref, cuda)",
                             gt_dtype_name(dt), be->name, gt_dtype_name(dt));
    return s;
}
