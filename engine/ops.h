/* The op table: one slot per op, the same signatures on every backend. Its
 * type belongs to the engine (a backend carries one, engine/backend.h); the
 * backends' tables are filled in kernels/ (kernels/ops.h).
 *
 * A backend fills a `gt_ops` with designated initialisers; an empty (NULL)
 * slot means "not supported here" and callers report it as skipped.
 *
 * Conventions (llm.c's):
 *   - All pointers are memory of the backend (host for ref/cpu, device for
 *     cuda). Shapes are written at every parameter, row-major, last index
 *     fastest. N = B*T rows where the op is per token.
 *   - Activations, weights and their gradients are stored in `k->dt`
 *     (fp32 on cpu; fp32, bf16 or fp16 on ref, every op, and on cuda).
 *     LayerNorm and BatchNorm statistics (BatchNorm's running ones too),
 *     losses and AdamW state are always fp32. Token ids are int32.
 *   - Backward ops ACCUMULATE (+=) into every gradient they write, except
 *     where marked "overwrites" (the input gradients of matmul_bwd and
 *     matmul_dgelu_bwd, classifier_bwd's dlogits). The caller zeroes the
 *     parameter gradients once per step.
 *   - No op may reduce in an order that depends on the thread count, block
 *     count or timing: results are bitwise reproducible for a fixed shape.
 *   - Ops return GT_OK, GT_ERR_INVALID (bad shape), GT_ERR_UNSUPPORTED
 *     (dtype not handled), GT_ERR_OOM (a scratch buffer could not be had:
 *     ref and cpu allocate some, e.g. attention's and the GEMM tiles'
 *     packing) or GT_ERR_DEVICE on the GPU.
 */
#ifndef GT_ENGINE_OPS_H
#define GT_ENGINE_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/backend.h"
#include "engine/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-call context. */
typedef struct gt_kctx {
    gt_backend *be;
    gt_dtype dt; /* storage dtype of activations / weights / gradients */
} gt_kctx;

/* The ops, written once (an X-macro): X(ENUM, name) in the order of their
 * enum values, from which the enum gt_op (GT_OP_<ENUM>), gt_op_name ("name")
 * and gt_ops_slot (the slot `name` of struct gt_ops) are made. The order and
 * the names are recorded in reports and profiles: append, never reorder. */
#define GT_OP_LIST(X)                                                                              \
    X(ENCODER_FWD, encoder_fwd)                                                                    \
    X(ENCODER_BWD, encoder_bwd)                                                                    \
    X(LAYERNORM_FWD, layernorm_fwd)                                                                \
    X(LAYERNORM_BWD, layernorm_bwd)                                                                \
    X(MATMUL_FWD, matmul_fwd)                                                                      \
    X(MATMUL_BWD, matmul_bwd)                                                                      \
    X(ATTENTION_FWD, attention_fwd)                                                                \
    X(ATTENTION_BWD, attention_bwd)                                                                \
    X(GELU_FWD, gelu_fwd)                                                                          \
    X(GELU_BWD, gelu_bwd)                                                                          \
    X(RESIDUAL_FWD, residual_fwd)                                                                  \
    X(RESIDUAL_BWD, residual_bwd)                                                                  \
    X(CLASSIFIER_FWD, classifier_fwd)                                                              \
    X(CLASSIFIER_BWD, classifier_bwd)                                                              \
    X(ADAMW, adamw)                                                                                \
    X(SUMSQ, sumsq)                                                                                \
    /* vision and MLP ops and the precision cast */                                                \
    X(CONV2D_FWD, conv2d_fwd)                                                                      \
    X(CONV2D_BWD, conv2d_bwd)                                                                      \
    X(BATCHNORM_FWD, batchnorm_fwd)                                                                \
    X(BATCHNORM_BWD, batchnorm_bwd)                                                                \
    X(RELU_FWD, relu_fwd)                                                                          \
    X(RELU_BWD, relu_bwd)                                                                          \
    X(AVGPOOL_FWD, avgpool_fwd)                                                                    \
    X(AVGPOOL_BWD, avgpool_bwd)                                                                    \
    X(CAST, cast)                                                                                  \
    /* a linear layer fused with GELU: the MLP of a transformer block */                           \
    X(MATMUL_GELU_FWD, matmul_gelu_fwd)                                                            \
    X(MATMUL_DGELU_BWD, matmul_dgelu_bwd)

typedef enum gt_op {
#define GT_OP_ENUM_(ENUM, name) GT_OP_##ENUM,
    GT_OP_LIST(GT_OP_ENUM_)
#undef GT_OP_ENUM_
    GT_OP_COUNT
} gt_op;

/* Shape of a 2-D convolution, NCHW activations, (OC, C, KH, KW) weights,
 * zero padding `pad` on every side, the same stride in both directions,
 * no dilation, no groups. OH = (H + 2 pad - KH) / stride + 1, likewise OW;
 * both must be >= 1. */
typedef struct gt_conv2d_shape {
    int N, C, H, W; /* input */
    int OC, KH, KW;
    int stride, pad;
} gt_conv2d_shape;
/* OH and OW of s (0 when the shape is invalid). */
int gt_conv2d_out_h(const gt_conv2d_shape *s);
int gt_conv2d_out_w(const gt_conv2d_shape *s);

/* "encoder_fwd", ... */
const char *gt_op_name(gt_op op);

struct gt_ops {
    /* out(B,T,C) = wte(V,C)[inp(B,T)] + wpe(maxT,C)[t].  inp values in [0,V);
     * checked by callers, not here. */
    gt_status (*encoder_fwd)(const gt_kctx *k, void *out, const int32_t *inp, const void *wte,
                             const void *wpe, int B, int T, int C);
    /* dwte(V,C) += scatter of dout(B,T,C) by token; dwpe(maxT,C) += sum over b.
     * Summation per token in (b, t) order, whatever the threads. */
    gt_status (*encoder_bwd)(const gt_kctx *k, void *dwte, void *dwpe, const void *dout,
                             const int32_t *inp, int B, int T, int C);

    /* out(N,C) = (inp - mean) * rstd * weight(C) + bias(C); mean(N), rstd(N)
     * fp32 saved for backward; rstd = 1/sqrt(var + eps), biased variance. */
    gt_status (*layernorm_fwd)(const gt_kctx *k, void *out, float *mean, float *rstd,
                               const void *inp, const void *weight, const void *bias, int N,
                               int C, float eps);
    /* dinp(N,C) +=, dweight(C) +=, dbias(C) += . */
    gt_status (*layernorm_bwd)(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                               const void *dout, const void *inp, const void *weight,
                               const float *mean, const float *rstd, int N, int C);

    /* out(N,OC) = inp(N,C) @ weight(OC,C)^T + bias(OC); bias may be NULL.
     * Overwrites out. */
    gt_status (*matmul_fwd)(const gt_kctx *k, void *out, const void *inp, const void *weight,
                            const void *bias, int N, int C, int OC);
    /* dinp(N,C) = dout(N,OC) @ weight(OC,C), OVERWRITES dinp (llm.c's
     * contract: every caller's dinp is a fresh buffer, and a GEMM that need
     * not read it back is cheaper); dweight(OC,C) += dout^T @ inp;
     * dbias(OC) += column sums of dout. dinp and dbias may be NULL (skipped). */
    gt_status (*matmul_bwd)(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                            const void *dout, const void *inp, const void *weight, int N, int C,
                            int OC);

    /* Causal multi-head self-attention. qkv(B,T,3C) holds q, k, v side by
     * side, each C = NH * hs with head h at columns [h*hs, (h+1)*hs).
     * out(B,T,C) = softmax(q k^T / sqrt(hs) + causal mask) v, heads
     * concatenated. Overwrites out.
     * att: backend-owned saved state for the backward, fp32, room for
     * gt_attention_state_floats(ops, k, B, T, C, NH) floats (below); ref
     * and cpu store the softmax probabilities there (B,NH,T,T), cuda's
     * cuDNN path the row logsumexp (B,NH,T) (docs/cuda.md). Callers must
     * not interpret it. */
    gt_status (*attention_fwd)(const gt_kctx *k, void *out, float *att, const void *qkv, int B,
                               int T, int C, int NH);
    /* dqkv(B,T,3C) += from dout(B,T,C) and the forward's qkv, out(B,T,C)
     * and att, unchanged since that forward of this backend (same k->dt
     * and shape). out must not be NULL: cuda's cuDNN path reads it (ref
     * and cpu do not; GT_ERR_INVALID on every backend when NULL). */
    gt_status (*attention_bwd)(const gt_kctx *k, void *dqkv, const void *dout, const void *qkv,
                               const void *out, const float *att, int B, int T, int C, int NH);
    /* Not an op but a question, optional (NULL: B*NH*T*T): how many fp32
     * floats of att attention_fwd/bwd use for (k->dt, B, T, C, NH), exactly
     * what the path the ops will take for that shape needs, so that a
     * caller may reserve only that. The answer is fixed for a backend and
     * shape; it never fails (a shape the ops refuse answers B*NH*T*T).
     * Call it through gt_attention_state_floats. */
    size_t (*attention_state_floats)(const gt_kctx *k, int B, int T, int C, int NH);

    /* GELU, tanh approximation:
     * out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Overwrites out. */
    gt_status (*gelu_fwd)(const gt_kctx *k, void *out, const void *inp, size_t n);
    /* dinp(n) += gelu'(inp) * dout. */
    gt_status (*gelu_bwd)(const gt_kctx *k, void *dinp, const void *inp, const void *dout,
                          size_t n);

    /* out(n) = a + b. Overwrites out; out may alias a or b. */
    gt_status (*residual_fwd)(const gt_kctx *k, void *out, const void *a, const void *b,
                              size_t n);
    /* da(n) += dout; db(n) += dout. */
    gt_status (*residual_bwd)(const gt_kctx *k, void *da, void *db, const void *dout, size_t n);

    /* Softmax cross-entropy over the first V of Vp columns of logits(N,Vp)
     * (columns >= V are padding and never change the loss, whatever they
     * hold, NaN and Inf included):
     * losses(N, fp32) = logsumexp(logits[i,:V]) - logits[i, targets[i]].
     * targets in [0, V). Overwrites losses.
     * Non-finite logits, on every backend in every storage dtype (as the
     * formula evaluates in IEEE arithmetic, max-shifted; the tests
     * kernels.classifier_nan and kernels.classifier_inf hold them to it):
     *   - a -Inf logit (a masked class) has probability exactly 0: it adds
     *     nothing to the row's sum, and its dlogit below is exactly 0;
     *   - a -Inf target logit gives a loss of +Inf; the dlogits are still
     *     the formula's: exactly -dloss at the target (its probability is
     *     0), dloss * p over the row's finite logits elsewhere;
     *   - a row whose V logits are all -Inf has no softmax (0 / 0): its
     *     loss and its V dlogits are NaN;
     *   - a NaN or a +Inf logit (an overflow upstream: Inf - Inf in the
     *     shifted sum) makes the row's loss and its V dlogits NaN, so that
     *     the training loop reports a non-finite loss instead of training
     *     on; the other rows are unaffected.
     * Padding dlogits are 0 in every case. */
    gt_status (*classifier_fwd)(const gt_kctx *k, float *losses, const void *logits,
                                const int32_t *targets, int N, int V, int Vp);
    /* Fused forward + backward, one pass over the logits:
     * losses(N) as above (overwrites; may be NULL), and
     * dlogits(N,Vp) = dloss * (softmax(logits[i,:V]) - onehot(targets[i]))
     * for columns < V, 0 for padding columns (non-finite logits: as
     * above). OVERWRITES dlogits, which may alias logits (the
     * memory-saving path). */
    gt_status (*classifier_bwd)(const gt_kctx *k, void *dlogits, float *losses,
                                const void *logits, const int32_t *targets, float dloss, int N,
                                int V, int Vp);

    /* AdamW (torch.optim.AdamW semantics) on n parameters, step t >= 1:
     *   g = grads * grad_scale
     *   m = beta1 m + (1-beta1) g ;  v = beta2 v + (1-beta2) g^2
     *   params -= lr * ( (m / (1-beta1^t)) / (sqrt(v / (1-beta2^t)) + eps)
     *                    + weight_decay * params )
     * params, m, v fp32 (master weights); grads in k->dt. */
    gt_status (*adamw)(const gt_kctx *k, float *params, const void *grads, float *m, float *v,
                       size_t n, float lr, float beta1, float beta2, float eps,
                       float weight_decay, float grad_scale, int t);

    /* *out_host = sum of x[i]^2 in fp64, reduced in a fixed order
     * (for the global gradient norm). Synchronous. */
    gt_status (*sumsq)(const gt_kctx *k, const void *x, size_t n, double *out_host);

    /* ---- vision / MLP ops ---------------------------------------------------
     * out(N,OC,OH,OW) = cross-correlation of inp(N,C,H,W) with
     * weight(OC,C,KH,KW) (torch.nn.Conv2d), + bias(OC) when bias != NULL.
     * Overwrites out. A backend may use workspace from its allocator. */
    gt_status (*conv2d_fwd)(const gt_kctx *k, void *out, const void *inp, const void *weight,
                            const void *bias, const gt_conv2d_shape *s);
    /* dinp(N,C,H,W) +=, dweight(OC,C,KH,KW) +=, dbias(OC) += ; dinp and
     * dbias may be NULL (skipped). Deterministic like every op: on cuda the
     * algorithms are chosen among cuDNN's deterministic ones. */
    gt_status (*conv2d_bwd)(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                            const void *dout, const void *inp, const void *weight,
                            const gt_conv2d_shape *s);

    /* Batch normalisation over (N, HW) per channel of inp(N,C,HW)
     * (torch.nn.BatchNorm2d; HW = 1 for BatchNorm1d on (N,C)).
     * training != 0: batch statistics; mean(C), rstd(C) fp32 are saved for
     * the backward (rstd = 1/sqrt(biased var + eps)); running_mean(C) and
     * running_var(C) (fp32) become (1-momentum) running + momentum batch,
     * with the UNBIASED batch variance (count N*HW; var unchanged when the
     * count is 1). training == 0: normalises with the running statistics
     * and writes neither mean/rstd nor the running ones (mean, rstd may be
     * NULL). out = (inp - mu) * r * weight(C) + bias(C). Overwrites out. */
    gt_status (*batchnorm_fwd)(const gt_kctx *k, void *out, float *mean, float *rstd,
                               float *running_mean, float *running_var, const void *inp,
                               const void *weight, const void *bias, int N, int C, int HW,
                               float eps, float momentum, int training);
    /* Training-mode backward: dinp(N,C,HW) +=, dweight(C) +=, dbias(C) +=,
     * from the forward's mean and rstd. */
    gt_status (*batchnorm_bwd)(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                               const void *dout, const void *inp, const void *weight,
                               const float *mean, const float *rstd, int N, int C, int HW);

    /* out(n) = max(inp, 0). Overwrites out; out may alias inp. */
    gt_status (*relu_fwd)(const gt_kctx *k, void *out, const void *inp, size_t n);
    /* dinp(n) += dout where out > 0 (out: the forward's output; the
     * derivative at 0 is 0, like torch). */
    gt_status (*relu_bwd)(const gt_kctx *k, void *dinp, const void *out, const void *dout,
                          size_t n);

    /* Global average pooling: out(N,C) = mean over HW of inp(N,C,HW).
     * Overwrites out. */
    gt_status (*avgpool_fwd)(const gt_kctx *k, void *out, const void *inp, int N, int C, int HW);
    /* dinp(N,C,HW) += dout(N,C) / HW. */
    gt_status (*avgpool_bwd)(const gt_kctx *k, void *dinp, const void *dout, int N, int C,
                             int HW);

    /* dst(n) in dst_dt = src(n) in src_dt, floating-point dtypes fp32, bf16,
     * fp16 (fp64 where the backend handles it), rounding to nearest even;
     * k->dt is ignored. dst and src must not overlap unless the dtypes are
     * equal (a copy). For mixed precision: the compute copy of the fp32
     * master weights. */
    gt_status (*cast)(const gt_kctx *k, void *dst, gt_dtype dst_dt, const void *src,
                      gt_dtype src_dt, size_t n);

    /* ---- a linear layer fused with GELU (a transformer's MLP) -----------------
     * Optional: a backend without them leaves both slots empty and callers
     * compose matmul_fwd + gelu_fwd and matmul_bwd + gelu_bwd instead. They
     * exist so that the GPU can apply GELU in the GEMM's epilogue (cuBLASLt
     * GELU_AUX_BIAS / DGELU) rather than in separate passes over memory.
     *
     * pre(N,OC) = inp(N,C) @ weight(OC,C)^T + bias(OC) (bias may be NULL),
     * out(N,OC) = gelu(pre), the tanh approximation of gelu_fwd. Overwrites
     * both. gelu may be taken of pre before or after its rounding to the
     * storage type (the fused GPU path has the fp32 accumulator): the two
     * differ by |gelu'(pre)| times pre's rounding. */
    gt_status (*matmul_gelu_fwd)(const gt_kctx *k, void *out, void *pre, const void *inp,
                                 const void *weight, const void *bias, int N, int C, int OC);
    /* The backward of y(N,OC) = inp(N,C) @ weight(OC,C)^T + b whose input
     * was inp = gelu(pre), pre(N,C) (matmul_gelu_fwd's out and pre):
     * dpre(N,C) = (dout(N,OC) @ weight) * gelu'(pre), OVERWRITES dpre;
     * dweight(OC,C) += dout^T @ inp; dbias(OC) += column sums of dout
     * (dbias may be NULL). */
    gt_status (*matmul_dgelu_bwd)(const gt_kctx *k, void *dpre, void *dweight, void *dbias,
                                  const void *dout, const void *inp, const void *weight,
                                  const void *pre, int N, int C, int OC);
};

/* The slot of `op` in `ops` as a generic pointer, NULL when empty. */
const void *gt_ops_slot(const gt_ops *ops, gt_op op);

/* Floats of attention state (att) that ops->attention_fwd needs for
 * (k->dt, B, T, C, NH): ops->attention_state_floats when the backend has
 * it, B*NH*T*T otherwise; 0 when B, T or NH is not positive. */
size_t gt_attention_state_floats(const gt_ops *ops, const gt_kctx *k, int B, int T, int C,
                                 int NH);

/* GT_OK when `be` can train with storage dtype dt: fp32 always; bf16 and
 * fp16 when it has a cast op (the compute copy of the fp32 masters) and
 * its matmul_fwd accepts dt, asked once on a (1,1) product in scratch
 * memory so that a refusal comes before any work and names the precision
 * (GT_ERR_UNSUPPORTED). Models call it when they are created. */
gt_status gt_ops_probe_dtype(gt_backend *be, gt_dtype dt);

#ifdef __cplusplus
}
#endif
#endif
