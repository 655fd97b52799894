/* ZeRO-3's parameter units (train_impl.h, gt_train_units): the model's
 * unit hook (engine/params.h) gathers a unit's weights from their owners
 * before its compute (gt_dp_gather_start), starts the gather of the unit
 * the model says comes next while this one computes (prefetch), and
 * releases the unit after.
 *
 * What "released" means here: the weights buffer is the model's own
 * full-size one (the fp32 masters in fp32, the compute copy in bf16 /
 * fp16), filled unit by unit, so a release frees nothing; the parts of
 * the unit this rank does not own are only known to be stale from then
 * on (docs/distributed.md, "ZeRO-3"). GT_ZERO3_POISON=1 (the tests) makes
 * that visible: a release overwrites them with NaN, so a weight read
 * without its unit's gather makes the loss NaN and the run fail. */
#include "suites/trainer/train_impl.h"

#include <stdlib.h>
#include <string.h>

struct gt_train_units {
    int n;
    gt_dp_gather **inflight; /* [n] a started gather, or NULL */
    unsigned char *ready;    /* [n] gathered, not released */
    size_t *cuts;            /* [n] the units' starts: the gradient buckets' cuts */
    int poison;
    void *nan;               /* host bytes of 0xff (NaN in fp32, bf16 and fp16): poison */
    size_t nan_bytes;
};

static gt_status units_alloc(gt_train_units *u, gt_model *m) {
    u->n = gt_model_num_units(m);
    u->inflight = calloc((size_t)u->n, sizeof *u->inflight);
    u->ready = calloc((size_t)u->n, 1);
    u->cuts = calloc((size_t)u->n, sizeof *u->cuts);
    if (!u->inflight || !u->ready || !u->cuts)
        return GT_ERR(GT_ERR_OOM, "out of host memory for %d ZeRO-3 units", u->n);
    size_t most = 0;
    for (int i = 0; i < u->n; i++) {
        size_t lo, hi;
        gt_model_unit_range(m, i, &lo, &hi);
        u->cuts[i] = lo;
        if (hi - lo > most) most = hi - lo;
    }
    const char *p = getenv("GT_ZERO3_POISON");
    u->poison = p && atoi(p) == 1;
    if (!u->poison) return GT_OK;
    u->nan_bytes = most * gt_dtype_size(gt_model_dtype(m));
    if (!(u->nan = malloc(u->nan_bytes ? u->nan_bytes : 1)))
        return GT_ERR(GT_ERR_OOM, "out of host memory for the ZeRO-3 poison");
    memset(u->nan, 0xff, u->nan_bytes);
    return GT_OK;
}

gt_status gt_train_units_cuts(gt_trainer *t, const size_t **cuts, int *n) {
    *cuts = NULL;
    *n = 0;
    if (t->cfg->zero != 3) return GT_OK;
    if (gt_model_num_units(t->model) < 2)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "--zero 3: model '%s' is not declared in sharding units (gpt2 is: its "
                      "blocks; mlp and convnet are not yet): use --zero 2 for it",
                      t->cfg->model_name);
    if (!(t->units = calloc(1, sizeof *t->units)))
        return GT_ERR(GT_ERR_OOM, "out of host memory");
    GT_TRY(units_alloc(t->units, t->model));
    *cuts = t->units->cuts;
    *n = t->units->n;
    return GT_OK;
}

/* The parts of unit i this rank does not own made NaN (GT_ZERO3_POISON). */
static gt_status poison(gt_trainer *t, int i) {
    size_t lo, hi, es = gt_dtype_size(gt_model_dtype(t->model));
    gt_model_unit_range(t->model, i, &lo, &hi);
    char *w = gt_model_weights_buffer(t->model);
    size_t part[2][2] = {{lo, hi < t->lo ? hi : t->lo}, {lo > t->hi ? lo : t->hi, hi}};
    for (int k = 0; k < 2; k++)
        if (part[k][0] < part[k][1])
            GT_TRY(t->be->copy_to_device(t->be, w + part[k][0] * es, t->units->nan,
                                         (part[k][1] - part[k][0]) * es));
    return GT_OK;
}

static gt_status gather_start(gt_trainer *t, int i) {
    size_t lo, hi;
    gt_model_unit_range(t->model, i, &lo, &hi);
    return gt_dp_gather_start(t->dp, gt_model_weights_buffer(t->model),
                              gt_model_dtype(t->model), lo, hi, &t->units->inflight[i]);
}

/* Unit i gathered (waited for when prefetched), the next one's gather
 * started; the other gathers in flight move on (MPI progresses inside MPI
 * calls only). */
static gt_status need(gt_trainer *t, int i, int next) {
    gt_train_units *u = t->units;
    if (!u->ready[i]) {
        if (!u->inflight[i]) GT_TRY(gather_start(t, i));
        gt_dp_gather *g = u->inflight[i];
        u->inflight[i] = NULL;
        GT_TRY(gt_dp_gather_wait(t->dp, g));
        u->ready[i] = 1;
    }
    if (next >= 0 && next < u->n && !u->ready[next] && !u->inflight[next])
        GT_TRY(gather_start(t, next));
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
        u->ready[i] = 0;
        return u->poison ? poison(t, i) : GT_OK;
    }
    size_t b0 = gt_dp_bytes(t->dp);
    gt_profile_region_begin(t->prof, GT_PROF_PARAM_GATHER);
    gt_status s = need(t, i, next);
    gt_profile_region_end(t->prof, GT_PROF_PARAM_GATHER, (double)(gt_dp_bytes(t->dp) - b0));
    return s;
}

gt_status gt_train_units_open(gt_trainer *t) {
    if (!t->units) return GT_OK;
    gt_model_set_unit_hook(t->model, on_unit, t);
    if (!t->units->poison) return GT_OK;
    for (int i = 0; i < t->units->n; i++) GT_TRY(poison(t, i));
    return GT_OK;
}

gt_status gt_train_units_updated(gt_trainer *t) {
    gt_train_units *u = t->units;
    for (int i = 0; u && i < u->n; i++) {
        if (u->inflight[i] || u->ready[i])
            return GT_ERR(GT_ERR_INVALID, "ZeRO-3: unit %d was still %s at the optimizer step "
                                          "(the model did not release it)",
                          i, u->inflight[i] ? "being gathered" : "held");
        /* what the masters' all-gather (gt_train_params_whole) made current
         * is stale again for what this rank does not own */
        if (u->poison) GT_TRY(poison(t, i));
    }
    return GT_OK;
}

void gt_train_units_close(gt_trainer *t) {
    gt_train_units *u = t->units;
    if (!u) return;
    if (t->model) gt_model_set_unit_hook(t->model, NULL, NULL);
    for (int i = 0; i < u->n; i++) {
        if (!u->inflight[i]) continue;
        (void)gt_dp_gather_wait(t->dp, u->inflight[i]); /* an error path: what it says is lost */
    }
    free(u->inflight);
    free(u->ready);
    free(u->cuts);
    free(u->nan);
    free(u);
    t->units = NULL;
}
