/* The op table's own code (engine/ops.h): op names and generic slot access,
 * generated from GT_OP_LIST, and the questions callers ask of a table. */
#include "engine/ops.h"

static const char *const g_op_names[GT_OP_COUNT] = {
#define GT_OP_NAME_(ENUM, name) [GT_OP_##ENUM] = #name,
    GT_OP_LIST(GT_OP_NAME_)
#undef GT_OP_NAME_
};

/* Every slot of struct gt_ops but the attention_state_floats question is an
 * op of the list: a slot added without its list entry fails here. */
_Static_assert(sizeof(gt_ops) == (GT_OP_COUNT + 1) * sizeof(void (*)(void)),
               "struct gt_ops and GT_OP_LIST disagree");

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
#define GT_OP_SLOT_(ENUM, name)                                                                    \
    case GT_OP_##ENUM: return (const void *)ops->name;
        GT_OP_LIST(GT_OP_SLOT_)
#undef GT_OP_SLOT_
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
