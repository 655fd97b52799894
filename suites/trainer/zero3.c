/* ZeRO-3's parameter units (train_impl.h, gt_train_units): the fp32
 * masters are cut to this rank's shard and the compute copy freed
 * (gt_params_shard_masters); the model's unit hook (engine/params.h) gives
 * each unit a buffer of its own before its compute, with this rank's part
 * written from the masters and the rest gathered from the other ranks
 * (gt_dp_gather_start), starts the gather of the unit the model says comes
 * next while this one computes (prefetch), and frees the buffer after. A
 * weight read outside its unit's NEED and DONE has no buffer: GT_ASSERT in
 * gt_params_weight ends the run there. The buffers come from the backend's
 * caching allocator, so a step's allocations reuse the same blocks. */
#include "suites/trainer/train_impl.h"

#include <stdlib.h>
#include <string.h>

#include "engine/timer.h"

struct gt_train_units {
    int n;
    gt_dp_gather **inflight; /* [n] a started gather, or NULL */
    unsigned char *ready;    /* [n] gathered, not released */
    void **buf;              /* [n] the unit's weights (backend memory, model dtype), or NULL */
    size_t *cuts;            /* [n] the units' starts: the gradient buckets' cuts */
    size_t held, peak;       /* bytes of unit buffers held now, and at most */
    uint64_t need_ns;        /* time in need() since the last gt_train_units_take_exposed */
};

static gt_status units_alloc(gt_train_units *u, gt_model *m) {
    u->n = gt_model_num_units(m);
    u->inflight = calloc((size_t)u->n, sizeof *u->inflight);
    u->ready = calloc((size_t)u->n, 1);
    u->buf = calloc((size_t)u->n, sizeof *u->buf);
    u->cuts = calloc((size_t)u->n, sizeof *u->cuts);
    if (!u->inflight || !u->ready || !u->buf || !u->cuts)
        return GT_ERR(GT_ERR_OOM, "out of host memory for %d ZeRO-3 units", u->n);
    for (int i = 0; i < u->n; i++) {
        size_t hi;
        gt_model_unit_range(m, i, &u->cuts[i], &hi);
    }
    return GT_OK;
}

gt_status gt_train_units_cuts(gt_trainer *t, const size_t **cuts, int *n) {
    *cuts = NULL;
    *n = 0;
    if (t->cfg->zero != 3) return GT_OK;
    if (gt_model_num_units(t->model) < 2)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "--zero 3: model '%s' is not declared in sharding units (gpt2, mlp and "
                      "convnet are: their blocks and layers): use --zero 2 for it",
                      t->cfg->model_name);
    if (!(t->units = calloc(1, sizeof *t->units)))
        return GT_ERR(GT_ERR_OOM, "out of host memory");
    GT_TRY(units_alloc(t->units, t->model));
    *cuts = t->units->cuts;
    *n = t->units->n;
    return GT_OK;
}

static size_t unit_bytes(const gt_trainer *t, int i, size_t *lo, size_t *hi) {
    gt_model_unit_range(t->model, i, lo, hi);
    return (*hi - *lo) * gt_dtype_size(gt_model_dtype(t->model));
}

/* Unit i's buffer, this rank's part of it written, the rest's gather
 * started (the model reads it once need() has waited and bound it). */
static gt_status gather_start(gt_trainer *t, int i) {
    gt_train_units *u = t->units;
    size_t lo, hi, olo, ohi, bytes = unit_bytes(t, i, &lo, &hi);
    GT_TRY(gt_backend_alloc(t->be, bytes ? bytes : 1, &u->buf[i]));
    u->held += bytes;
    if (u->held > u->peak) u->peak = u->held;
    GT_TRY(gt_params_unit_fill_own(t->model->params, i, u->buf[i], &olo, &ohi));
    return gt_dp_gather_start(t->dp, u->buf[i], gt_model_dtype(t->model), lo, hi,
                              &u->inflight[i]);
}

/* Unit i's buffer freed (the gather done or abandoned). */
static void release(gt_trainer *t, int i) {
    gt_train_units *u = t->units;
    size_t lo, hi, bytes = unit_bytes(t, i, &lo, &hi);
    if (!u->buf[i]) return;
    gt_params_unit_bind(t->model->params, i, NULL);
    gt_backend_dealloc(t->be, u->buf[i]);
    u->buf[i] = NULL;
    u->held -= bytes;
    u->ready[i] = 0;
}

/* Unit i gathered (waited for when prefetched), the next one's gather
 * started; the other gathers in flight move on (MPI progresses inside MPI
 * calls only). */
static gt_status need(gt_trainer *t, int i, int next) {
    gt_train_units *u = t->units;
    if (!u->ready[i]) {
        if (!u->inflight[i] && !u->buf[i]) GT_TRY(gather_start(t, i));
        gt_dp_gather *g = u->inflight[i];
        u->inflight[i] = NULL;
        GT_TRY(gt_dp_gather_wait(t->dp, g));
        gt_params_unit_bind(t->model->params, i, u->buf[i]);
        u->ready[i] = 1;
    }
    if (next >= 0 && next < u->n && !u->buf[next]) GT_TRY(gather_start(t, next));
    for (int j = 0; j < u->n; j++)
        if (u->inflight[j]) GT_TRY(gt_dp_gather_test(t->dp, u->inflight[j]));
    return GT_OK;
}

/* The model's unit hook; the profile's param_gather region. */
static gt_status on_unit(void *ctx, gt_params_unit_event ev, int i, int next) {
    gt_trainer *t = ctx;
    gt_train_units *u = t->units;
    if (i < 0 || i >= u->n)
        return GT_ERR(GT_ERR_INVALID, "ZeRO-3: unit %d of a model of %d units", i, u->n);
    if (ev == GT_PARAMS_UNIT_DONE) {
        if (!u->inflight[i]) {
            release(t, i);
            return GT_OK;
        }
        /* a prefetched unit released unused: its gather completes first (the
         * other ranks take part in it), then the error */
        gt_status s = gt_dp_gather_wait(t->dp, u->inflight[i]);
        u->inflight[i] = NULL;
        release(t, i);
        if (s != GT_OK) return s;
        return GT_ERR(GT_ERR_INVALID, "ZeRO-3: unit %d released before it was needed", i);
    }
    size_t b0 = gt_dp_bytes(t->dp);
    uint64_t t0 = gt_now_ns();
    gt_profile_region_begin(t->prof, GT_PROF_PARAM_GATHER);
    gt_status s = need(t, i, next);
    gt_profile_region_end(t->prof, GT_PROF_PARAM_GATHER, (double)(gt_dp_bytes(t->dp) - b0));
    u->need_ns += gt_now_ns() - t0;
    return s;
}

gt_status gt_train_units_open(gt_trainer *t) {
    if (!t->units) return GT_OK;
    GT_TRY(gt_params_shard_masters(t->model->params, t->lo, t->hi));
    gt_model_set_unit_hook(t->model, on_unit, t);
    return GT_OK;
}

gt_status gt_train_units_updated(gt_trainer *t) {
    gt_train_units *u = t->units;
    for (int i = 0; u && i < u->n; i++)
        if (u->inflight[i] || u->buf[i])
            return GT_ERR(GT_ERR_INVALID, "ZeRO-3: unit %d was still %s at the optimizer step "
                                          "(the model did not release it)",
                          i, u->inflight[i] ? "being gathered" : "held");
    return GT_OK;
}

size_t gt_train_units_peak_bytes(const gt_trainer *t) { return t->units ? t->units->peak : 0; }

double gt_train_units_take_exposed(gt_trainer *t) {
    if (!t->units) return 0;
    double s = (double)t->units->need_ns * 1e-9;
    t->units->need_ns = 0;
    return s;
}

/* The padded masters from every rank's shard (the all-gather ZeRO-1 makes
 * after its update). */
static gt_status fill_whole(void *ctx, float *whole) {
    gt_trainer *t = ctx;
    return gt_dp_gather_params(t->dp, whole);
}

gt_status gt_train_units_whole(gt_trainer *t) {
    return gt_params_masters_whole(t->model->params, fill_whole, t);
}

gt_status gt_train_units_reshard(gt_trainer *t) {
    return gt_params_masters_reshard(t->model->params);
}

void gt_train_units_close(gt_trainer *t) {
    gt_train_units *u = t->units;
    if (!u) return;
    if (t->model) gt_model_set_unit_hook(t->model, NULL, NULL);
    for (int i = 0; i < u->n; i++) {
        if (u->inflight[i])
            (void)gt_dp_gather_wait(t->dp, u->inflight[i]); /* an error path: its word is lost */
        u->inflight[i] = NULL;
        if (t->model) release(t, i);
    }
    free(u->inflight);
    free(u->ready);
    free(u->buf);
    free(u->cuts);
    free(u);
    t->units = NULL;
}
