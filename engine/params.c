/* The parameter store (params.h): the size table, its layout, and every job
 * that only needs the layout. Ops only through be->ops. */
#include "engine/params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- declaring ------------------------------------------------------------------ */

static int add_to(gt_params_tensor *arr, int *count, size_t *total, const char *name, int decay,
                  int layers, int ndim, const int64_t *dims) {
    GT_ASSERT(*count < GT_PARAMS_MAX_TENSORS);
    GT_ASSERT(ndim >= 1 && ndim <= 4);
    GT_ASSERT(layers >= 0 && (layers == 0 || dims[0] % layers == 0));
    gt_params_tensor *t = &arr[*count];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->decay = decay;
    t->layers = layers;
    size_t n = 1;
    for (int d = 0; d < ndim; d++) {
        GT_ASSERT(dims[d] >= 1);
        t->shape[d] = dims[d];
        n *= (size_t)dims[d];
    }
    t->canon = *total;
    t->off = *total;
    t->n = n;
    *total += n;
    return (*count)++;
}

static int slices_of(const gt_params_tensor *t) { return t->layers ? t->layers : 1; }
static size_t slice_len(const gt_params_tensor *t) { return t->n / (size_t)slices_of(t); }

int gt_params_add(gt_params *p, const char *name, int decay, int layers, int ndim, int64_t d0,
                  int64_t d1, int64_t d2, int64_t d3) {
    int64_t dims[4] = {d0, d1, d2, d3};
    GT_ASSERT(p->nplaced == 0); /* placing starts once the table is complete */
    int i = add_to(p->t, &p->nt, &p->num_params, name, decay, layers, ndim, dims);
    p->t[i].first = p->nslices;
    p->nslices += slices_of(&p->t[i]);
    return i;
}

int gt_params_add_state(gt_params *p, const char *name, int64_t n) {
    return add_to(p->s, &p->ns, &p->state_numel, name, 0, 0, 1, &n);
}

void gt_params_place(gt_params *p, int i, int layer) {
    GT_ASSERT(i >= 0 && i < p->nt && layer >= 0 && layer < slices_of(&p->t[i]));
    if (!p->order) {
        p->order = malloc((size_t)p->nslices * sizeof *p->order);
        if (!p->order) { /* gt_params_alloc reports it */
            p->nplaced = -1;
            return;
        }
    }
    if (p->nplaced < 0) return;
    GT_ASSERT(p->nplaced < p->nslices);
    p->order[p->nplaced++] = p->t[i].first + layer;
}

void gt_params_unit_begin(gt_params *p) {
    if (!p->unit_first) {
        p->unit_first = malloc((size_t)(p->nslices ? p->nslices : 1) * sizeof *p->unit_first);
        if (!p->unit_first) { /* gt_params_alloc reports it */
            p->nunits = -1;
            return;
        }
    }
    if (p->nunits < 0) return;
    /* a second mark before any slice was placed starts no empty unit */
    if (p->nunits > 0 && p->unit_first[p->nunits - 1] == p->nplaced) return;
    GT_ASSERT(p->nunits < p->nslices);
    p->unit_first[p->nunits++] = p->nplaced;
}

/* ---- layout and buffers ----------------------------------------------------------- */

/* The tensor slice s belongs to. */
static int tensor_of_slice(const gt_params *p, int s) {
    for (int i = 0; i < p->nt; i++)
        if (s >= p->t[i].first && s < p->t[i].first + slices_of(&p->t[i])) return i;
    return -1;
}

/* The units' ranges from the marks of gt_params_unit_begin (slice indices
 * in the internal order); the first unit always starts at 0. */
static gt_status units(gt_params *p) {
    if (p->nunits < 0) return GT_ERR(GT_ERR_OOM, "out of host memory for the parameter units");
    int n = p->nunits > 0 ? p->nunits : 1;
    p->unit_lo = malloc((size_t)(n + 1) * sizeof *p->unit_lo);
    if (!p->unit_lo) return GT_ERR(GT_ERR_OOM, "out of host memory for the parameter units");
    p->unit_lo[0] = 0;
    for (int u = 1; u < n; u++) {
        int first = p->unit_first[u];
        GT_ASSERT(first < p->nslices); /* a unit marked after the last slice */
        p->unit_lo[u] = p->slice_off[p->order[first]];
    }
    p->unit_lo[n] = p->num_params;
    p->nunits = n;
    p->slice_unit = malloc((size_t)(p->nslices ? p->nslices : 1) * sizeof *p->slice_unit);
    if (!p->slice_unit) return GT_ERR(GT_ERR_OOM, "out of host memory for the parameter units");
    for (int s = 0; s < p->nslices; s++) {
        int u = 0;
        while (u + 1 < n && p->unit_lo[u + 1] <= p->slice_off[s]) u++;
        p->slice_unit[s] = u;
    }
    return GT_OK;
}

static gt_status layout(gt_params *p) {
    if (p->nplaced < 0) return GT_ERR(GT_ERR_OOM, "out of host memory for the parameter layout");
    int n = p->nslices;
    p->slice_off = malloc((n ? n : 1) * sizeof *p->slice_off);
    p->runs = malloc((n ? n : 1) * sizeof *p->runs);
    if (!p->slice_off || !p->runs)
        return GT_ERR(GT_ERR_OOM, "out of host memory for the parameter layout");
    if (p->nplaced == 0) { /* the canonical order */
        if (!p->order) p->order = malloc((n ? n : 1) * sizeof *p->order);
        if (!p->order) return GT_ERR(GT_ERR_OOM, "out of host memory for the parameter layout");
        for (int s = 0; s < n; s++) p->order[s] = s;
        p->nplaced = n;
    }
    GT_ASSERT(p->nplaced == n); /* every slice placed */
    for (int s = 0; s < n; s++) p->slice_off[s] = (size_t)-1;
    size_t off = 0;
    p->nruns = 0;
    for (int k = 0; k < n; k++) {
        int s = p->order[k], i = tensor_of_slice(p, s);
        GT_ASSERT(i >= 0 && p->slice_off[s] == (size_t)-1); /* placed once */
        size_t len = slice_len(&p->t[i]);
        p->slice_off[s] = off;
        if (p->nruns > 0 && p->runs[p->nruns - 1].decay == p->t[i].decay) {
            p->runs[p->nruns - 1].len += len;
        } else {
            p->runs[p->nruns].off = off;
            p->runs[p->nruns].len = len;
            p->runs[p->nruns].decay = p->t[i].decay;
            p->nruns++;
        }
        off += len;
    }
    for (int i = 0; i < p->nt; i++) p->t[i].off = p->slice_off[p->t[i].first];
    return units(p);
}

gt_status gt_params_alloc(gt_params *p, gt_backend *be, gt_dtype dt) {
    p->be = be;
    p->k.be = be;
    p->k.dt = dt;
    if (dt != GT_DTYPE_FP32 && dt != GT_DTYPE_BF16 && dt != GT_DTYPE_FP16)
        return GT_ERR(GT_ERR_INVALID, "storage dtype %s: use fp32, bf16 or fp16",
                      gt_dtype_name(dt));
    p->es = gt_dtype_size(dt);
    GT_TRY(layout(p));
    /* whole norm chunks, so that the gradient norm's chunking never changes;
     * at most ~256 chunks: each is one sumsq call, parallel inside */
    p->norm_chunk = (size_t)1 << 16;
    while (p->norm_chunk * 256 < p->num_params) p->norm_chunk *= 2;
    p->num_alloc = (p->num_params + p->norm_chunk - 1) / p->norm_chunk * p->norm_chunk;
    /* m and v wait for the optimizer range (gt_params_set_opt_range, or
     * the whole model at the first need): a ZeRO rank never holds all of it */
    p->opt_lo = 0;
    p->opt_hi = p->num_params;
    p->opt_alloc = 0;
    size_t pbytes = p->num_alloc * sizeof(float), gbytes = p->num_alloc * p->es;
    /* zeroed without touching them where the memory comes fresh from the
     * system (host backends): 2 GB for gpt2-124m, first written by the
     * initialisation and the first step's threads */
    GT_TRY(gt_backend_alloc_zeroed(be, pbytes, (void **)&p->params));
    GT_TRY(gt_backend_alloc_zeroed(be, gbytes, &p->grads));
    if (dt != GT_DTYPE_FP32) GT_TRY(gt_backend_alloc_zeroed(be, gbytes, &p->wc));
    if (p->state_numel)
        GT_TRY(gt_backend_alloc_zeroed(be, p->state_numel * sizeof(float), (void **)&p->state));
    return GT_OK;
}

void gt_params_release(gt_params *p) {
    if (!p) return;
    if (p->be) {
        gt_backend_dealloc(p->be, p->wc);
        gt_backend_dealloc(p->be, p->params);
        gt_backend_dealloc(p->be, p->grads);
        gt_backend_dealloc(p->be, p->m);
        gt_backend_dealloc(p->be, p->v);
        gt_backend_dealloc(p->be, p->state);
        for (int u = 0; p->unit_grad && u < p->nunits; u++) gt_params_unit_grad_release(p, u);
    }
    free(p->slice_off);
    free(p->order);
    free(p->runs);
    if (p->be) gt_backend_dealloc(p->be, p->whole);
    free(p->unit_first);
    free(p->unit_lo);
    free(p->slice_unit);
    free(p->unit_buf);
    free(p->unit_grad);
    free(p->unit_needed);
    p->unit_grad = NULL;
    p->unit_needed = NULL;
    p->in_backward = 0;
    p->unit_first = NULL;
    p->unit_lo = NULL;
    p->slice_unit = NULL;
    p->unit_buf = NULL;
    p->whole = NULL;
    p->params = p->m = p->v = p->state = NULL;
    p->grads = p->wc = NULL;
    p->slice_off = NULL;
    p->order = NULL;
    p->runs = NULL;
}

void gt_params_set_hook(gt_params *p, gt_params_hook hook, void *ctx) {
    p->hook = hook;
    p->hook_ctx = ctx;
}

gt_status gt_params_ready(gt_params *p, int i, int layer) {
    if (p->grad_err != GT_OK) return p->grad_err;
    if (!p->hook) return GT_OK;
    return p->hook(p->hook_ctx, i < p->nt ? gt_params_offset(p, i, layer) : p->num_params);
}

int gt_params_num_units(const gt_params *p) { return p->nunits; }

void gt_params_unit_range(const gt_params *p, int u, size_t *lo, size_t *hi) {
    GT_ASSERT(u >= 0 && u < p->nunits);
    *lo = p->unit_lo[u];
    *hi = p->unit_lo[u + 1];
}

void gt_params_set_unit_hook(gt_params *p, gt_params_unit_hook hook, void *ctx) {
    p->unit_hook = hook;
    p->unit_ctx = ctx;
}

/* unit u's gradient buffer made now (sharded gradients); the failure's error */
static gt_status open_unit_grad(gt_params *p, int u) {
    if (gt_params_unit_grad(p, u)) return GT_OK;
    gt_status s = p->grad_err;
    return s != GT_OK ? s : GT_ERR(GT_ERR_OOM, "the gradients of unit %d", u);
}

gt_status gt_params_backward_begin(gt_params *p) {
    if (!p->unit_grad) return GT_OK;
    p->in_backward = 1;
    for (int u = 0; u < p->nunits; u++)
        if (p->unit_needed[u]) GT_TRY(open_unit_grad(p, u));
    return GT_OK;
}

void gt_params_backward_end(gt_params *p) { p->in_backward = 0; }

gt_status gt_params_need(gt_params *p, int u, int next) {
    if (p->unit_grad) {
        p->unit_needed[u] = 1;
        if (p->in_backward) GT_TRY(open_unit_grad(p, u));
    }
    if (!p->unit_hook) return GT_OK;
    return p->unit_hook(p->unit_ctx, GT_PARAMS_UNIT_NEED, u, next);
}

gt_status gt_params_done(gt_params *p, int u) {
    if (p->unit_grad) p->unit_needed[u] = 0;
    if (p->grad_err != GT_OK) return p->grad_err;
    if (!p->unit_hook) return GT_OK;
    return p->unit_hook(p->unit_ctx, GT_PARAMS_UNIT_DONE, u, -1);
}

/* ---- host copies -------------------------------------------------------------------- */

static void permute(const gt_params *p, float *dst, const float *src, int to_internal) {
    for (int i = 0; i < p->nt; i++) {
        const gt_params_tensor *t = &p->t[i];
        size_t len = slice_len(t);
        for (int l = 0; l < slices_of(t); l++) {
            size_t c = t->canon + (size_t)l * len, in = gt_params_offset(p, i, l);
            if (to_internal) memcpy(dst + in, src + c, len * sizeof(float));
            else memcpy(dst + c, src + in, len * sizeof(float));
        }
    }
}
void gt_params_to_internal(const gt_params *p, float *dst, const float *src) {
    permute(p, dst, src, 1);
}
void gt_params_to_canonical(const gt_params *p, float *dst, const float *src) {
    permute(p, dst, src, 0);
}

/* 1 when the internal layout is the canonical order. */
static int identity(const gt_params *p) {
    for (int i = 0; i < p->nt; i++)
        for (int l = 0; l < slices_of(&p->t[i]); l++)
            if (gt_params_offset(p, i, l) != p->t[i].canon + (size_t)l * slice_len(&p->t[i]))
                return 0;
    return 1;
}

/* The first num_params elements of `dev` (dtype dt, internal layout) to dst
 * as fp32 in canonical order. */
static gt_status copy_out(gt_params *p, const void *dev, gt_dtype dt, float *dst) {
    size_t n = p->num_params, es = gt_dtype_size(dt);
    int same = identity(p);
    float *tmp = same ? dst : malloc(n * sizeof(float));
    void *raw = dt == GT_DTYPE_FP32 ? (void *)tmp : malloc(n * es);
    if (!tmp || !raw) {
        if (tmp != dst) free(tmp);
        if (raw != (void *)tmp) free(raw);
        return GT_ERR(GT_ERR_OOM, "out of host memory copying %zu parameters", n);
    }
    gt_status s = p->be->copy_to_host(p->be, raw, dev, n * es);
    if (s == GT_OK && raw != (void *)tmp) gt_convert(tmp, GT_DTYPE_FP32, raw, dt, n);
    if (s == GT_OK && tmp != dst) permute(p, dst, tmp, 0);
    if (raw != (void *)tmp) free(raw);
    if (tmp != dst) free(tmp);
    return s;
}

/* The padded masters whole: the buffer itself, or with sharded masters the
 * whole copy while there is one; NULL (and an error set) otherwise. */
static float *whole_masters(gt_params *p, const char *what) {
    if (!p->unit_buf) return p->params;
    if (!p->whole)
        GT_ERR(GT_ERR_INVALID, "%s: the masters are sharded (ZeRO-3); this rank holds [%zu, "
                               "%zu) of them: make them whole first (gt_params_masters_whole)",
               what, p->params_lo, p->params_lo + p->params_n);
    return p->whole;
}

gt_status gt_params_set(gt_params *p, const float *src) {
    gt_status s;
    float *dst = whole_masters(p, "setting the parameters");
    if (!dst) return GT_ERR_INVALID;
    if (identity(p)) {
        s = p->be->copy_to_device(p->be, dst, src, p->num_params * sizeof(float));
    } else {
        float *tmp = malloc(p->num_params * sizeof(float));
        if (!tmp)
            return GT_ERR(GT_ERR_OOM, "out of host memory copying %zu parameters",
                          p->num_params);
        permute(p, tmp, src, 1);
        s = p->be->copy_to_device(p->be, dst, tmp, p->num_params * sizeof(float));
        free(tmp);
    }
    if (s == GT_OK) s = gt_params_sync_weights(p, 0, p->num_params);
    return s;
}

gt_status gt_params_get(gt_params *p, float *dst) {
    const float *src = whole_masters(p, "reading the parameters");
    if (!src) return GT_ERR_INVALID;
    return copy_out(p, src, GT_DTYPE_FP32, dst);
}
gt_status gt_params_get_grads(gt_params *p, float *dst) {
    if (!p->grads)
        return GT_ERR(GT_ERR_INVALID, "the gradients are sharded by unit (ZeRO-2/3): there is "
                                      "no whole gradient buffer to read");
    return copy_out(p, p->grads, p->k.dt, dst);
}
gt_status gt_params_zero_grad(gt_params *p) {
    if (!p->unit_grad) return p->be->memset_zero(p->be, p->grads, p->num_alloc * p->es);
    for (int u = 0; u < p->nunits; u++)
        if (p->unit_grad[u])
            GT_TRY(p->be->memset_zero(p->be, p->unit_grad[u],
                                      (p->unit_lo[u + 1] - p->unit_lo[u]) * p->es));
    return GT_OK;
}

/* ---- sharded gradients -------------------------------------------------------------- */

gt_status gt_params_shard_grads(gt_params *p) {
    if (p->unit_grad) return GT_OK;
    if (p->nunits < 2)
        return GT_ERR(GT_ERR_INVALID, "gradients sharded by unit: the model declares %d unit(s)",
                      p->nunits);
    p->unit_grad = calloc((size_t)p->nunits, sizeof *p->unit_grad);
    p->unit_needed = calloc((size_t)p->nunits, 1);
    if (!p->unit_grad || !p->unit_needed) {
        free(p->unit_grad);
        free(p->unit_needed);
        p->unit_grad = NULL;
        p->unit_needed = NULL;
        return GT_ERR(GT_ERR_OOM, "out of host memory for the units' gradient buffers");
    }
    gt_backend_dealloc(p->be, p->grads);
    p->grads = NULL;
    return GT_OK;
}

void *gt_params_unit_grad(gt_params *p, int u) {
    GT_ASSERT(p->unit_grad && u >= 0 && u < p->nunits);
    if (p->unit_grad[u]) return p->unit_grad[u];
    size_t bytes = (p->unit_lo[u + 1] - p->unit_lo[u]) * p->es;
    gt_status s = gt_backend_alloc_zeroed(p->be, bytes ? bytes : 1, &p->unit_grad[u]);
    if (s != GT_OK) {
        if (p->grad_err == GT_OK)
            p->grad_err = gt_error_wrap(s, "the gradients of unit %d (%zu bytes)", u, bytes);
        p->unit_grad[u] = NULL;
        return NULL;
    }
    p->grad_held += bytes;
    if (p->grad_held > p->grad_peak) p->grad_peak = p->grad_held;
    return p->unit_grad[u];
}

void gt_params_unit_grad_release(gt_params *p, int u) {
    if (!p->unit_grad || !p->unit_grad[u]) return;
    gt_backend_dealloc(p->be, p->unit_grad[u]);
    p->unit_grad[u] = NULL;
    p->grad_held -= (p->unit_lo[u + 1] - p->unit_lo[u]) * p->es;
}

int gt_params_unit_grad_held(const gt_params *p, int u) {
    return p->unit_grad && p->unit_grad[u] != NULL;
}

gt_status gt_params_get_state(gt_params *p, float *dst) {
    if (!p->state_numel) return GT_OK;
    return p->be->copy_to_host(p->be, dst, p->state, p->state_numel * sizeof(float));
}
gt_status gt_params_set_state(gt_params *p, const float *src) {
    if (!p->state_numel) return GT_OK;
    return p->be->copy_to_device(p->be, p->state, src, p->state_numel * sizeof(float));
}

/* ---- optimizer ---------------------------------------------------------------------- */

static gt_status need_op(const gt_params *p, const void *slot, const char *op) {
    if (!slot) return GT_ERR(GT_ERR_UNSUPPORTED, "backend '%s' has no %s op", p->be->name, op);
    return GT_OK;
}

gt_status gt_params_grad_sumsq_chunks(gt_params *p, const void *grads, size_t lo_chunk,
                                      size_t hi_chunk, double *partials) {
    GT_TRY(need_op(p, p->be->ops->sumsq, "sumsq"));
    for (size_t c = lo_chunk; c < hi_chunk; c++) {
        size_t off = c * p->norm_chunk;
        if (off + p->norm_chunk > p->num_alloc)
            return GT_ERR(GT_ERR_INVALID, "norm chunk %zu ends past the %zu padded parameters: "
                                          "pad to a multiple of the norm chunk first",
                          c, p->num_alloc);
        GT_TRY(p->be->ops->sumsq(&p->k, gt_params_at(p, grads, off), p->norm_chunk,
                                 &partials[c - lo_chunk]));
    }
    return GT_OK;
}

gt_status gt_params_grad_norm(gt_params *p, double *out) {
    if (!p->grads)
        return GT_ERR(GT_ERR_INVALID, "gradient norm of a model whose gradients are sharded by "
                                      "unit (ZeRO-2/3): the data-parallel sync computes it");
    size_t nchunks = p->num_alloc / p->norm_chunk;
    double *part = malloc(nchunks * sizeof(double));
    if (!part) return GT_ERR(GT_ERR_OOM, "out of host memory");
    gt_status s = gt_params_grad_sumsq_chunks(p, p->grads, 0, nchunks, part);
    double ss = 0.0;
    for (size_t c = 0; c < nchunks; c++) ss += part[c];
    free(part);
    *out = sqrt(ss);
    return s;
}

gt_status gt_params_sync_weights(gt_params *p, size_t lo, size_t hi) {
    if (lo > hi || hi > p->num_alloc)
        return GT_ERR(GT_ERR_INVALID, "weight range [%zu, %zu) is outside [0, %zu)", lo, hi,
                      p->num_alloc);
    if (!p->wc || lo == hi) return GT_OK;
    GT_TRY(need_op(p, p->be->ops->cast, "cast"));
    return p->be->ops->cast(&p->k, gt_params_at(p, p->wc, lo), p->k.dt, p->params + lo,
                            GT_DTYPE_FP32, hi - lo);
}

/* m and v of [opt_lo, opt_hi) allocated and written with zeros, once:
 * written even where the memory is known to be zero, because AdamW reads
 * them before writing them, and a page first read maps the shared zero
 * page, so its write faults again and copies, with a TLB shootdown to every
 * core of the process (docs/performance.md). Nothing is kept: a new range
 * starts a new state. */
static gt_status opt_alloc(gt_params *p) {
    size_t n = p->opt_hi - p->opt_lo ? p->opt_hi - p->opt_lo : 1;
    if (n != p->opt_alloc) {
        /* the old state first: never both at once */
        gt_backend_dealloc(p->be, p->m);
        gt_backend_dealloc(p->be, p->v);
        p->m = p->v = NULL;
        p->opt_alloc = 0;
        GT_TRY(gt_backend_alloc(p->be, n * sizeof(float), (void **)&p->m));
        GT_TRY(gt_backend_alloc(p->be, n * sizeof(float), (void **)&p->v));
        p->opt_alloc = n;
    }
    GT_TRY(p->be->memset_zero(p->be, p->m, n * sizeof(float)));
    return p->be->memset_zero(p->be, p->v, n * sizeof(float));
}

static gt_status opt_ready(gt_params *p) { return p->m ? GT_OK : opt_alloc(p); }

gt_status gt_params_update_range(gt_params *p, const gt_adamw_config *cfg, int t, float lr,
                                 float grad_scale, const void *grads, size_t lo, size_t hi) {
    if (t < 1) return GT_ERR(GT_ERR_INVALID, "optimizer step must be >= 1, got %d", t);
    GT_TRY(opt_ready(p));
    if (lo < p->opt_lo || hi > p->opt_hi)
        return GT_ERR(GT_ERR_INVALID, "update of [%zu, %zu) outside the optimizer state's "
                                      "range [%zu, %zu)",
                      lo, hi, p->opt_lo, p->opt_hi);
    GT_TRY(need_op(p, p->be->ops->adamw, "adamw"));
    for (int r = 0; r < p->nruns; r++) {
        size_t a = p->runs[r].off, b = a + p->runs[r].len;
        if (a < lo) a = lo;
        if (b > hi) b = hi;
        if (a >= b) continue;
        float wd = p->runs[r].decay ? cfg->weight_decay : 0.0f;
        GT_TRY(p->be->ops->adamw(&p->k, p->params + (a - p->params_lo),
                                 gt_params_at(p, grads, a - lo),
                                 p->m + (a - p->opt_lo), p->v + (a - p->opt_lo), b - a, lr,
                                 cfg->beta1, cfg->beta2, cfg->eps, wd, grad_scale, t));
    }
    return gt_params_sync_weights(p, lo, hi);
}

gt_status gt_params_update(gt_params *p, const gt_adamw_config *cfg, int t, double *grad_norm,
                           float *lr_out) {
    double norm = 0.0;
    GT_TRY(gt_params_grad_norm(p, &norm));
    float lr, clip;
    GT_TRY(gt_adamw_step_scalars(cfg, t, norm, &lr, &clip));
    GT_TRY(gt_params_update_range(p, cfg, t, lr, clip, p->grads, 0, p->num_params));
    if (grad_norm) *grad_norm = norm;
    if (lr_out) *lr_out = lr;
    return GT_OK;
}

/* A zeroed buffer of n elements of es bytes in place of *buf, keeping the
 * first `keep`. */
static gt_status regrow(gt_params *p, void *bufp, size_t es, size_t n, size_t keep) {
    void **buf = bufp;
    void *nb = NULL;
    GT_TRY(gt_backend_alloc_zeroed(p->be, n * es, &nb));
    gt_status s = GT_OK;
    if (keep) s = p->be->copy_device(p->be, nb, *buf, keep * es);
    if (s != GT_OK) {
        gt_backend_dealloc(p->be, nb);
        return s;
    }
    gt_backend_dealloc(p->be, *buf);
    *buf = nb;
    return GT_OK;
}

gt_status gt_params_pad(gt_params *p, size_t n_alloc) {
    if (n_alloc < p->num_params)
        return GT_ERR(GT_ERR_INVALID, "padding %zu is below the %zu parameters", n_alloc,
                      p->num_params);
    if (n_alloc == p->num_alloc) return GT_OK;
    if (p->unit_buf)
        return GT_ERR(GT_ERR_INVALID, "padding sharded masters (ZeRO-3): pad before sharding");
    if (n_alloc % p->norm_chunk != 0)
        return GT_ERR(GT_ERR_INVALID, "padding %zu is not a multiple of the norm chunk %zu",
                      n_alloc, p->norm_chunk);
    size_t keep = p->num_alloc < n_alloc ? p->num_alloc : n_alloc;
    GT_TRY(regrow(p, &p->params, sizeof(float), n_alloc, keep));
    if (p->wc) GT_TRY(regrow(p, &p->wc, p->es, n_alloc, keep));
    if (p->grads) GT_TRY(regrow(p, &p->grads, p->es, n_alloc, keep)); /* NULL: by unit */
    p->num_alloc = n_alloc;
    return GT_OK;
}

gt_status gt_params_set_opt_range(gt_params *p, size_t lo, size_t hi) {
    if (lo > hi || hi > p->num_alloc)
        return GT_ERR(GT_ERR_INVALID, "optimizer range [%zu, %zu) is outside [0, %zu)", lo, hi,
                      p->num_alloc);
    p->opt_lo = lo;
    p->opt_hi = hi;
    return opt_alloc(p);
}

static gt_status opt_state_check(const gt_params *p, size_t lo, size_t hi) {
    /* an empty range is nothing to copy wherever it lies: a ZeRO-1 rank whose
     * shard is all padding asks for [num_params, num_params) */
    if (lo > hi || (lo < hi && (lo < p->opt_lo || hi > p->opt_hi || hi > p->num_params)))
        return GT_ERR(GT_ERR_INVALID,
                      "optimizer state [%zu, %zu) is outside the range this model holds "
                      "[%zu, %zu) or its %zu parameters",
                      lo, hi, p->opt_lo, p->opt_hi, p->num_params);
    return GT_OK;
}

gt_status gt_params_get_opt_state(gt_params *p, size_t lo, size_t hi, float *m_dst,
                                  float *v_dst) {
    GT_TRY(opt_state_check(p, lo, hi));
    if (hi == lo) return GT_OK;
    GT_TRY(opt_ready(p));
    size_t bytes = (hi - lo) * sizeof(float);
    GT_TRY(p->be->copy_to_host(p->be, m_dst, p->m + (lo - p->opt_lo), bytes));
    return p->be->copy_to_host(p->be, v_dst, p->v + (lo - p->opt_lo), bytes);
}

gt_status gt_params_set_opt_state(gt_params *p, size_t lo, size_t hi, const float *m_src,
                                  const float *v_src) {
    GT_TRY(opt_state_check(p, lo, hi));
    if (hi == lo) return GT_OK;
    GT_TRY(opt_ready(p));
    size_t bytes = (hi - lo) * sizeof(float);
    GT_TRY(p->be->copy_to_device(p->be, p->m + (lo - p->opt_lo), m_src, bytes));
    return p->be->copy_to_device(p->be, p->v + (lo - p->opt_lo), v_src, bytes);
}

/* ---- diagnostics and accounting -------------------------------------------------------- */

void gt_params_locate(const gt_params *p, size_t x, gt_params_loc *out) {
    memset(out, 0, sizeof *out);
    out->layer = -1;
    out->internal = x;
    for (int i = 0; i < p->nt; i++) {
        const gt_params_tensor *t = &p->t[i];
        size_t len = slice_len(t);
        for (int l = 0; l < slices_of(t); l++) {
            size_t a = gt_params_offset(p, i, l);
            if (x >= a && x < a + len) {
                out->tensor = i;
                out->layer = t->layers ? l : -1;
                out->element = x - a;
                out->flat = t->canon + (size_t)l * len + (x - a);
                return;
            }
        }
    }
    out->tensor = -1;
    out->element = x;
    out->flat = x;
}

void gt_params_loc_format(const gt_params *p, const gt_params_loc *loc, char *out, size_t n) {
    if (loc->tensor < 0 || loc->tensor >= p->nt)
        snprintf(out, n, "padding element %zu", loc->element);
    else if (loc->layer >= 0)
        snprintf(out, n, "%s layer %d, element %zu", p->t[loc->tensor].name, loc->layer,
                 loc->element);
    else snprintf(out, n, "%s, element %zu", p->t[loc->tensor].name, loc->element);
}

gt_status gt_params_find_nonfinite(gt_params *p, const void *buf, gt_dtype dt, size_t lo,
                                   size_t hi, int *found, gt_params_loc *loc, float *value) {
    *found = 0;
    if (hi > p->num_params) hi = p->num_params;
    if (lo >= hi) return GT_OK;
    size_t n = hi - lo, es = gt_dtype_size(dt);
    float *host = malloc(n * sizeof(float));
    void *raw = dt == GT_DTYPE_FP32 ? (void *)host : malloc(n * es);
    if (!host || !raw) {
        free(host);
        if (raw != (void *)host) free(raw);
        return GT_ERR(GT_ERR_OOM, "out of host memory searching for non-finite values");
    }
    /* widening is exact: NaN stays NaN, Inf stays Inf */
    gt_status s = p->be->copy_to_host(p->be, raw, buf, n * es);
    if (s == GT_OK && raw != (void *)host) gt_convert(host, GT_DTYPE_FP32, raw, dt, n);
    if (raw != (void *)host) free(raw);
    /* canonical order: the first tensor a user would look at in a model file */
    for (int i = 0; i < p->nt && s == GT_OK && !*found; i++) {
        const gt_params_tensor *t = &p->t[i];
        for (int l = 0; l < slices_of(t) && !*found; l++) {
            size_t a = gt_params_offset(p, i, l), b = a + slice_len(t);
            if (a < lo) a = lo;
            if (b > hi) b = hi;
            for (size_t x = a; x < b; x++)
                if (!isfinite(host[x - lo])) {
                    *found = 1;
                    *value = host[x - lo];
                    gt_params_locate(p, x, loc);
                    break;
                }
        }
    }
    free(host);
    return s;
}

/* Elements of fp32 masters held: the padded layout, or a shard (and while
 * made whole, the whole as well). */
static size_t masters_held(const gt_params *p) {
    if (!p->unit_buf) return p->num_alloc;
    return p->params_n + (p->whole ? p->num_alloc : 0);
}

void gt_params_memory(const gt_params *p, size_t *params, size_t *grads, size_t *optim) {
    *params = masters_held(p) * sizeof(float) + (p->wc ? p->num_alloc * p->es : 0) +
              p->state_numel * sizeof(float);
    *grads = p->grads ? p->num_alloc * p->es : p->grad_peak; /* by unit: at their most */
    *optim = 2 * p->opt_alloc * sizeof(float);
}

size_t gt_params_bytes(const gt_params *p) {
    return masters_held(p) * sizeof(float) + (p->grads ? p->num_alloc * p->es : p->grad_held) +
           (p->wc ? p->num_alloc * p->es : 0) +
           2 * p->opt_alloc * sizeof(float) + p->state_numel * sizeof(float);
}

/* ---- sharded masters (ZeRO-3) ------------------------------------------------------- */

gt_status gt_params_shard_masters(gt_params *p, size_t lo, size_t hi) {
    if (p->unit_buf) return GT_ERR(GT_ERR_INVALID, "the masters are sharded already");
    if (lo > hi || hi > p->num_alloc)
        return GT_ERR(GT_ERR_INVALID, "master shard [%zu, %zu) is outside [0, %zu)", lo, hi,
                      p->num_alloc);
    void **bufs = calloc((size_t)p->nunits, sizeof *bufs);
    if (!bufs) return GT_ERR(GT_ERR_OOM, "out of host memory for the units' buffers");
    float *sh = NULL;
    gt_status s = gt_backend_alloc(p->be, (hi > lo ? hi - lo : 1) * sizeof(float), (void **)&sh);
    if (s == GT_OK && hi > lo)
        s = p->be->copy_device(p->be, sh, p->params + lo, (hi - lo) * sizeof(float));
    if (s != GT_OK) {
        gt_backend_dealloc(p->be, sh);
        free(bufs);
        return s;
    }
    /* the whole masters and the compute copy go: every unit's weights are
     * gathered into a buffer of its own (gt_params_unit_bind) */
    gt_backend_dealloc(p->be, p->params);
    gt_backend_dealloc(p->be, p->wc);
    p->params = sh;
    p->wc = NULL;
    p->params_lo = lo;
    p->params_n = hi - lo;
    p->unit_buf = bufs;
    return GT_OK;
}

void gt_params_masters_range(const gt_params *p, size_t *lo, size_t *hi) {
    *lo = p->unit_buf ? p->params_lo : 0;
    *hi = p->unit_buf ? p->params_lo + p->params_n : p->num_alloc;
}

void gt_params_unit_bind(gt_params *p, int u, void *buf) {
    GT_ASSERT(p->unit_buf && u >= 0 && u < p->nunits);
    p->unit_buf[u] = buf;
}

gt_status gt_params_unit_fill_own(gt_params *p, int u, void *buf, size_t *lo, size_t *hi) {
    GT_ASSERT(p->unit_buf && u >= 0 && u < p->nunits && buf);
    size_t ulo = p->unit_lo[u], uhi = p->unit_lo[u + 1];
    size_t a = ulo > p->params_lo ? ulo : p->params_lo;
    size_t b = uhi < p->params_lo + p->params_n ? uhi : p->params_lo + p->params_n;
    *lo = *hi = a;
    if (a >= b) return GT_OK;
    *hi = b;
    void *dst = gt_params_at(p, buf, a - ulo);
    const float *src = p->params + (a - p->params_lo);
    if (p->k.dt == GT_DTYPE_FP32)
        return p->be->copy_device(p->be, dst, src, (b - a) * sizeof(float));
    GT_TRY(need_op(p, p->be->ops->cast, "cast"));
    return p->be->ops->cast(&p->k, dst, p->k.dt, src, GT_DTYPE_FP32, b - a);
}

gt_status gt_params_masters_whole(gt_params *p, gt_params_fill_fn fill, void *ctx) {
    if (!p->unit_buf || p->whole) return GT_OK;
    float *w = NULL;
    GT_TRY(gt_backend_alloc_zeroed(p->be, p->num_alloc * sizeof(float), (void **)&w));
    gt_status s = GT_OK;
    if (p->params_n)
        s = p->be->copy_device(p->be, w + p->params_lo, p->params, p->params_n * sizeof(float));
    if (s == GT_OK) s = fill(ctx, w);
    if (s != GT_OK) {
        gt_backend_dealloc(p->be, w);
        return s;
    }
    p->whole = w;
    return GT_OK;
}

gt_status gt_params_masters_reshard(gt_params *p) {
    if (!p->whole) return GT_OK;
    gt_status s = GT_OK;
    if (p->params_n)
        s = p->be->copy_device(p->be, p->params, p->whole + p->params_lo,
                               p->params_n * sizeof(float));
    gt_backend_dealloc(p->be, p->whole);
    p->whole = NULL;
    return s;
}

gt_status gt_params_get_masters(gt_params *p, size_t lo, size_t hi, float *dst) {
    size_t a, b;
    gt_params_masters_range(p, &a, &b);
    /* an empty range is nothing to copy wherever it lies (a shard of padding
     * only asks for [num_params, num_params)) */
    if (lo == hi) return GT_OK;
    if (lo > hi || lo < a || hi > b)
        return GT_ERR(GT_ERR_INVALID, "masters [%zu, %zu) outside the [%zu, %zu) this rank holds",
                      lo, hi, a, b);
    return p->be->copy_to_host(p->be, dst, p->params + (lo - p->params_lo),
                               (hi - lo) * sizeof(float));
}
