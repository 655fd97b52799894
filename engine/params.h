/* The parameter store: every model's parameters, gradients, AdamW state and
 * non-trained state tensors, the llm.c way (fill_in_parameter_sizes,
 * malloc_and_point_parameters): a model declares a size table, the store
 * carves one buffer per kind out of backend memory and does every job that
 * only needs the layout. A model then only declares its tensors and does
 * forward and backward (models/model.h); gpt2, mlp and convnet all use it.
 *
 * Buffers, each num_alloc elements (a whole number of norm chunks; the
 * padding is zero):
 *   params  fp32 master weights: what AdamW updates, what get/set_params,
 *           checkpoints and the cross-rank hash see;
 *   wc      the compute copy of the weights in the storage dtype k.dt when
 *           that is bf16 or fp16 (made with the backend's cast op whenever
 *           the masters change); NULL in fp32, where the masters are read;
 *   grads   gradients in k.dt (they accumulate in k.dt across micro-batches);
 *           NULL once sharded by unit (gt_params_shard_grads: each unit's
 *           in a buffer of its own while the backward and the reduce need it);
 *   m, v    AdamW state, fp32, for the optimizer range [opt_lo, opt_hi)
 *           only (ZeRO-1/2 keep a shard), allocated when the range is set
 *           (or, never set, at the first update or state access: the whole
 *           model), so a sharded rank never holds the whole state;
 *   state   fp32 state tensors (BatchNorm running statistics): not trained,
 *           not in the gradient, but saved by checkpoints.
 *
 * Two orders. The CANONICAL order is the order of declaration (tensor by
 * tensor, each tensor whole): get/set_params, get_grads, files. The
 * INTERNAL layout is the order in the buffers: by default the canonical
 * one; a tensor declared with `layers` >= 1 is cut into that many equal
 * slices along its dimension 0, and the model may place every (tensor,
 * slice) where it likes (gt_params_place), e.g. gpt2 keeps each layer's
 * slices together, so that the backward finalises a suffix of the layout
 * at a time (what the grad hook and bucketed all-reduce need).
 *
 * The gradient norm is a sum of fp64 sums of squares of fixed chunks of
 * norm_chunk elements (65536, doubled until there are at most 256 chunks)
 * added in chunk order: its bits depend only on the parameter count and the
 * layout, so a norm assembled from chunks computed on different ranks
 * (ZeRO) has the same bits.
 *
 * The store calls ops only through the backend's op table (be->ops: cast,
 * sumsq, adamw), never a kernel's function.
 */
#ifndef GT_PARAMS_H
#define GT_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/backend.h"
#include "engine/dtype.h"
#include "engine/optim.h"
#include "engine/status.h"
#include "engine/ops.h" /* gt_kctx, gt_ops: the op table's type */

#ifdef __cplusplus
extern "C" {
#endif

enum { GT_PARAMS_MAX_TENSORS = 128, GT_PARAMS_NAME_LEN = 32 };

/* One entry of the size table. */
typedef struct gt_params_tensor {
    char name[GT_PARAMS_NAME_LEN];
    int ndim;
    int64_t shape[4]; /* unused dimensions 0 */
    size_t n;         /* elements */
    int layers;       /* 0: one piece; L >= 1: L slices along dimension 0 (per layer) */
    int decay;        /* AdamW weight decay applies (weights, not biases or norms) */
    size_t canon;     /* offset in the canonical order (state: in the state buffer) */
    size_t off;       /* internal offset of slice 0 (of the tensor when not per layer) */
    int first;        /* index of slice 0 in the slice table */
} gt_params_tensor;

/* Where an element of the internal layout lives. tensor: canonical index
 * (-1: padding); layer: the slice of a per-layer tensor, else -1; element:
 * within that (layer's) slice; flat: index in the canonical order. */
typedef struct gt_params_loc {
    int tensor;
    int layer;
    size_t element;
    size_t flat;
    size_t internal; /* the index asked about */
} gt_params_loc;

/* Called each time the gradients in [frontier, num_params) of the internal
 * layout became final, ending with 0. An error stops the backward. */
typedef gt_status (*gt_params_hook)(void *ctx, size_t frontier);

/* Sharding units (ZeRO-3): a model declares its parameters in units (a
 * transformer block, the embeddings) and tells, around the compute of
 * each, that it needs the unit's weights (NEED; `next` is the unit it
 * will need after this one, -1 when it does not know or there is none:
 * the hook may start fetching it) and that it is done with them (DONE).
 * Without a hook both are no-ops: every weight is always resident. */
typedef enum gt_params_unit_event {
    GT_PARAMS_UNIT_NEED = 0,
    GT_PARAMS_UNIT_DONE,
    GT_PARAMS_UNIT_EVENT_COUNT
} gt_params_unit_event;
typedef gt_status (*gt_params_unit_hook)(void *ctx, gt_params_unit_event ev, int unit,
                                         int next);

typedef struct gt_params {
    gt_backend *be;
    gt_kctx k; /* k.dt: storage dtype of the compute copy and the gradients */
    size_t es; /* its bytes per element */
    int nt, ns;
    gt_params_tensor t[GT_PARAMS_MAX_TENSORS]; /* parameters, canonical order */
    gt_params_tensor s[GT_PARAMS_MAX_TENSORS]; /* state tensors */
    int nslices;       /* slices of all tensors (a tensor not per layer is one) */
    size_t *slice_off; /* [nslices] internal offset of slice l of tensor i at t[i].first + l */
    int *order;        /* [nslices] slice indices in internal order (gt_params_place) */
    int nplaced;
    struct gt_params_run {
        size_t off, len;
        int decay;
    } *runs; /* runs of equal weight decay in the internal layout, for AdamW */
    int nruns;
    size_t num_params, num_alloc, norm_chunk, state_numel;
    size_t opt_lo, opt_hi, opt_alloc; /* the range m and v hold; floats allocated for each */
    float *params, *m, *v, *state;    /* fp32 */
    void *grads;                      /* k.dt */
    void *wc;                         /* k.dt compute copy; NULL in fp32 */
    gt_params_hook hook;
    void *hook_ctx;
    /* sharding units (gt_params_unit_begin): unit u is the internal range
     * [unit_lo[u], unit_lo[u + 1]) (unit_lo[nunits] = num_params) */
    int nunits;
    int *unit_first;  /* [nslices] while declaring: the placed slice that starts unit u */
    size_t *unit_lo;  /* [nunits + 1] after gt_params_alloc */
    int *slice_unit;  /* [nslices] the unit of each slice */
    gt_params_unit_hook unit_hook;
    void *unit_ctx;
    /* sharded masters (gt_params_shard_masters): params holds [params_lo,
     * params_lo + params_n) only, there is no wc, and unit u's weights are
     * read from unit_buf[u] (bound by whoever gathers them) */
    size_t params_lo, params_n;
    void **unit_buf;  /* [nunits] NULL: not resident; NULL array: not sharded */
    float *whole;     /* sharded, made whole for a while (gt_params_masters_whole): the
                         padded masters; NULL otherwise */
    /* sharded gradients (gt_params_shard_grads): grads is NULL and unit u's
     * gradients live in unit_grad[u] (k.dt, the unit's elements), allocated
     * zeroed at the first gt_params_grad of the unit and freed by
     * gt_params_unit_grad_release; grad_held / grad_peak: their bytes now
     * and at most; grad_err: an allocation that failed, returned by the
     * next gt_params_ready / gt_params_done */
    void **unit_grad;
    size_t grad_held, grad_peak;
    gt_status grad_err;
    /* with sharded gradients: the units needed and not yet done (gt_params_need
     * / _done), and whether a backward runs (gt_params_backward_begin / _end):
     * a unit's gradient buffer is then made when its backward begins, so that
     * an allocation that fails is an error before any kernel, never a NULL
     * gradient handed to one */
    unsigned char *unit_needed;
    int in_backward;
} gt_params;

/* ---- declaring (before gt_params_alloc; programmer errors assert) ------------ */

/* Appends parameter tensor `name` of shape (d0 .. d{ndim-1}) (ndim 1..4,
 * dims >= 1) to the canonical order; layers >= 1 cuts it into that many
 * slices along d0 (d0 a multiple of layers). Returns its index. */
int gt_params_add(gt_params *p, const char *name, int decay, int layers, int ndim, int64_t d0,
                  int64_t d1, int64_t d2, int64_t d3);
/* Appends an fp32 state tensor of n elements; returns its index. */
int gt_params_add_state(gt_params *p, const char *name, int64_t n);
/* Places slice `layer` of tensor i (0 for a tensor not per layer) next in
 * the internal layout. Either every slice is placed, or none (the internal
 * layout is then the canonical order). */
void gt_params_place(gt_params *p, int i, int layer);
/* The next slice placed starts a new sharding unit (call it before the
 * first gt_params_place of each unit; the first unit starts at the first
 * slice whether or not it is called). Without any call the model is one
 * unit. */
void gt_params_unit_begin(gt_params *p);

/* Lays out the table and allocates every buffer, zeroed, on `be`
 * (borrowed) for storage dtype dt: GT_ERR_INVALID unless fp32, bf16 or
 * fp16. Whether the backend can compute in dt is the model's question
 * (gt_ops_probe_dtype). */
gt_status gt_params_alloc(gt_params *p, gt_backend *be, gt_dtype dt);
/* Frees the buffers and tables; accepts a zeroed store. */
void gt_params_release(gt_params *p);

/* ---- pointers for forward and backward ----------------------------------------- */

/* Internal offset of slice `layer` of tensor i (0 when not per layer). */
static inline size_t gt_params_offset(const gt_params *p, int i, int layer) {
    return p->slice_off[p->t[i].first + layer];
}
/* Element n of a k.dt buffer. */
static inline void *gt_params_at(const gt_params *p, const void *base, size_t n) {
    return (char *)base + n * p->es;
}
/* Compute weights (k.dt), gradient (k.dt) and fp32 masters of a slice.
 * Sharded masters: the weights of a unit that is not resident (no buffer
 * bound) are a programmer error (the model did not gt_params_need it). */
static inline void *gt_params_weight(const gt_params *p, int i, int layer) {
    size_t off = gt_params_offset(p, i, layer);
    if (p->unit_buf) {
        int u = p->slice_unit[p->t[i].first + layer];
        GT_ASSERT(p->unit_buf[u] != NULL);
        return gt_params_at(p, p->unit_buf[u], off - p->unit_lo[u]);
    }
    return gt_params_at(p, p->wc ? p->wc : (void *)p->params, off);
}
void *gt_params_unit_grad(gt_params *p, int u);
/* The backward begins: with sharded gradients the buffers of the units
 * needed and not done (those the forward left for the backward's start)
 * are made now, and every gt_params_need until gt_params_backward_end makes
 * its unit's; an allocation that fails is returned (GT_ERR_OOM, naming the
 * unit). Without sharded gradients both do nothing. */
gt_status gt_params_backward_begin(gt_params *p);
void gt_params_backward_end(gt_params *p);
static inline void *gt_params_grad(const gt_params *p, int i, int layer) {
    size_t off = gt_params_offset(p, i, layer);
    if (p->unit_grad) {
        int u = p->slice_unit[p->t[i].first + layer];
        char *g = (char *)gt_params_unit_grad((gt_params *)p, u);
        return g ? gt_params_at(p, g, off - p->unit_lo[u]) : NULL;
    }
    return gt_params_at(p, p->grads, off);
}
static inline float *gt_params_master(const gt_params *p, int i, int layer) {
    return p->params + (gt_params_offset(p, i, layer) - p->params_lo);
}
static inline float *gt_params_state(const gt_params *p, int i) { return p->state + p->s[i].off; }

/* The backward tells the hook (when set) that the gradients from slice
 * `layer` of tensor i to the end of the layout are final; i == nt: none
 * yet (frontier num_params). */
void gt_params_set_hook(gt_params *p, gt_params_hook hook, void *ctx);
gt_status gt_params_ready(gt_params *p, int i, int layer);

/* Sharding units: how many (>= 1 after gt_params_alloc), and the internal
 * range [*lo, *hi) of unit u. */
int gt_params_num_units(const gt_params *p);
void gt_params_unit_range(const gt_params *p, int u, size_t *lo, size_t *hi);
/* The forward / backward brackets the compute of unit u with these (see
 * gt_params_unit_hook); no-ops without a hook. */
void gt_params_set_unit_hook(gt_params *p, gt_params_unit_hook hook, void *ctx);
gt_status gt_params_need(gt_params *p, int u, int next);
gt_status gt_params_done(gt_params *p, int u);

/* ---- sharded masters (ZeRO-3) ----------------------------------------------------
 * After the starting parameters are in place: the fp32 masters are cut to
 * [lo, hi) of the padded layout (the rest freed), and so is the compute
 * copy (freed: the forward reads each unit from the buffer bound to it).
 * From then on gt_params_set / get / pad / sync_weights over the whole model
 * are GT_ERR_INVALID until the masters are made whole again. */
gt_status gt_params_shard_masters(gt_params *p, size_t lo, size_t hi);
/* The range [*lo, *hi) of the padded layout the masters buffer holds. */
void gt_params_masters_range(const gt_params *p, size_t *lo, size_t *hi);
/* Host copy of the fp32 masters [lo, hi) of the internal layout (inside
 * the range the masters buffer holds): the checkpoint of a shard. */
gt_status gt_params_get_masters(gt_params *p, size_t lo, size_t hi, float *dst);
/* Unit u's weights: buf (backend memory, k.dt, the unit's elements; NULL:
 * none) bound for the forward and backward to read (only with sharded
 * masters; bind it once it is complete). fill_own writes this rank's part
 * of unit u into buf from the masters (cast to k.dt), and returns that part
 * [*lo, *hi) (empty: lo == hi). */
void gt_params_unit_bind(gt_params *p, int u, void *buf);
gt_status gt_params_unit_fill_own(gt_params *p, int u, void *buf, size_t *lo, size_t *hi);
/* Sharded masters made whole for a while (checkpoints, the cross-rank
 * hash): a padded fp32 buffer is allocated with this rank's shard in
 * place, fill(ctx, buf) fills the rest (an all-gather), and the store
 * reads it as its masters until gt_params_masters_reshard, which keeps the
 * shard again (copied back from it) and frees it. */
typedef gt_status (*gt_params_fill_fn)(void *ctx, float *whole);
gt_status gt_params_masters_whole(gt_params *p, gt_params_fill_fn fill, void *ctx);
gt_status gt_params_masters_reshard(gt_params *p);

/* ---- sharded gradients (ZeRO-2/3 with units) ------------------------------------
 * The whole gradient buffer is freed; each unit's gradients get a buffer of
 * their own when the unit's backward begins (gt_params_backward_begin,
 * gt_params_need inside the backward) or at the first gt_params_grad (zeroed:
 * they accumulate there across micro-batches), and whoever reduced them
 * frees it (gt_params_unit_grad_release), so a rank holds the gradients of
 * the units between their backward and the end of their reduction only.
 * From then on gt_params_get_grads, gt_params_grad_norm, gt_params_update and
 * the whole buffer (gt_model_grads_buffer: NULL) are not available; zero_grad
 * zeroes the buffers held. GT_ERR_INVALID without units (fewer than 2). */
gt_status gt_params_shard_grads(gt_params *p);
/* Unit u's gradient buffer (allocated zeroed when there is none; NULL when
 * that failed: the error comes back from the next gt_params_ready or
 * gt_params_done), and its release (no-op when there is none). */
void gt_params_unit_grad_release(gt_params *p, int u);
/* 1 when unit u's gradient buffer is held. */
int gt_params_unit_grad_held(const gt_params *p, int u);

/* ---- host copies (canonical order, fp32) --------------------------------------- */

/* Converts between the canonical order and the internal layout (num_params
 * host floats each; dst and src do not overlap). */
void gt_params_to_internal(const gt_params *p, float *dst, const float *src);
void gt_params_to_canonical(const gt_params *p, float *dst, const float *src);
/* Masters from/to the host, then the compute copy refreshed. */
gt_status gt_params_set(gt_params *p, const float *src);
gt_status gt_params_get(gt_params *p, float *dst);
/* Gradients, widened exactly from k.dt. */
gt_status gt_params_get_grads(gt_params *p, float *dst);
gt_status gt_params_zero_grad(gt_params *p);
/* All state tensors, concatenated in order. */
gt_status gt_params_get_state(gt_params *p, float *dst);
gt_status gt_params_set_state(gt_params *p, const float *src);

/* ---- optimizer ----------------------------------------------------------------- */

/* partials[c - lo_chunk] = sum of squares of chunk c of `grads` (laid out
 * like the gradients, in k.dt), c in [lo_chunk, hi_chunk). */
gt_status gt_params_grad_sumsq_chunks(gt_params *p, const void *grads, size_t lo_chunk,
                                      size_t hi_chunk, double *partials);
gt_status gt_params_grad_norm(gt_params *p, double *out);
/* AdamW on parameters [lo, hi) of the internal layout (within the optimizer
 * range) with gradients grads[0 .. hi-lo) (k.dt), one call per run of equal
 * weight decay; then the compute copy of [lo, hi) is refreshed. */
gt_status gt_params_update_range(gt_params *p, const gt_adamw_config *cfg, int t, float lr,
                                 float grad_scale, const void *grads, size_t lo, size_t hi);
/* One whole step t >= 1: norm, lr and clipping (gt_adamw_step_scalars), update. */
gt_status gt_params_update(gt_params *p, const gt_adamw_config *cfg, int t, double *grad_norm,
                           float *lr);
/* Refreshes the compute copy of [lo, hi) from the masters (nothing in fp32). */
gt_status gt_params_sync_weights(gt_params *p, size_t lo, size_t hi);
/* Grows params, compute copy and grads to n_alloc elements (a multiple of
 * the norm chunk, >= num_params), keeping their contents. */
gt_status gt_params_pad(gt_params *p, size_t n_alloc);
/* m and v are kept for [lo, hi) only, zeroed (ZeRO-1/2 shards): the old
 * state freed before the new one is allocated. */
gt_status gt_params_set_opt_range(gt_params *p, size_t lo, size_t hi);
/* Host copies of m and v for [lo, hi) (inside the optimizer range and
 * [0, num_params)). */
gt_status gt_params_get_opt_state(gt_params *p, size_t lo, size_t hi, float *m_dst,
                                  float *v_dst);
gt_status gt_params_set_opt_state(gt_params *p, size_t lo, size_t hi, const float *m_src,
                                  const float *v_src);

/* ---- diagnostics and accounting ------------------------------------------------ */

void gt_params_locate(const gt_params *p, size_t internal, gt_params_loc *out);
/* "qkvw layer 3, element 17", "block1.conv2.w, element 17", "padding element 5" */
void gt_params_loc_format(const gt_params *p, const gt_params_loc *loc, char *out, size_t n);
/* First NaN or infinity of buf (backend memory of dtype dt holding the
 * internal range [lo, hi)), searched in canonical order (tensor by tensor,
 * layer by layer); *found 0 when all are finite. */
gt_status gt_params_find_nonfinite(gt_params *p, const void *buf, gt_dtype dt, size_t lo,
                                   size_t hi, int *found, gt_params_loc *loc, float *value);
/* Bytes of backend memory the store holds. */
size_t gt_params_bytes(const gt_params *p);
/* The same by kind, as allocated (padding included): the fp32 masters, the
 * compute copy and the state tensors (*params), the gradients (*grads), AdamW's
 * m and v where they exist (*optim). */
void gt_params_memory(const gt_params *p, size_t *params, size_t *grads, size_t *optim);

#ifdef __cplusplus
}
#endif
#endif
