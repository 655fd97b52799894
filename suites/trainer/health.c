/* Whether a step may update (train_impl.h): every rank's losses and
 * non-finite flags gathered into the global loss; fp16 overflow left to the
 * loss scaler; a non-finite loss or gradient an error that every rank
 * returns alike. And the other checks across ranks: errors they agree on,
 * parameter hashes. */
#include "suites/trainer/train.h"
#include "suites/trainer/train_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/stats.h"

/* FNV-1a of every parameter tensor (canonical order), compared across
 * ranks: a mismatch names the first tensor that differs and the ranks
 * involved. */
gt_status gt_train_check_consistency(gt_model *model, gt_comm *comm, int step) {
    size_t n = gt_model_num_params(model);
    int NT = gt_model_num_tensors(model);
    int R = gt_comm_size(comm);
    float *host = malloc(n * sizeof(float));
    int64_t *mine = malloc((size_t)NT * sizeof(int64_t));
    int64_t *all = malloc((size_t)R * NT * sizeof(int64_t));
    gt_status s = GT_OK;
    if (!host || !mine || !all)
        s = GT_ERR(GT_ERR_OOM, "out of host memory for the consistency check");
    if (s == GT_OK) s = gt_model_get_params(model, host);
    size_t off = 0;
    for (int i = 0; i < NT && s == GT_OK; i++) {
        size_t len = gt_model_tensor_size(model, i);
        mine[i] = (int64_t)gt_fnv1a64(GT_FNV1A64_INIT, host + off, len * sizeof(float));
        off += len;
    }
    if (s == GT_OK) s = gt_comm_allgather(comm, mine, all, (size_t)NT, GT_DTYPE_INT64, NULL);
    for (int i = 0; i < NT && s == GT_OK; i++)
        for (int r = 1; r < R; r++)
            if (all[(size_t)r * NT + i] != all[i]) {
                s = GT_ERR(GT_ERR_MISMATCH,
                           "parameters differ across ranks %s%.0d: tensor '%s' on rank %d "
                           "(hash %016llx) vs rank 0 (hash %016llx)",
                           step ? "after step " : "at initialisation", step,
                           gt_model_tensor_name(model, i), gt_comm_world_rank(comm, r),
                           (unsigned long long)all[(size_t)r * NT + i],
                           (unsigned long long)all[i]);
                break;
            }
    free(host);
    free(mine);
    free(all);
    return s;
}


/* ---- errors every rank agrees on ----------------------------------------------
 * A check that can fail on one rank only (a file, a non-finite value) must
 * not let the other ranks walk into the next collective and hang there:
 * every rank learns the first failing rank's status and message, and all
 * return the same error together. */
enum { AGREE_WORDS = 256 };

gt_status gt_train_agree(gt_comm *comm, gt_status s, int *collective) {
    int R = gt_comm_size(comm), me = gt_comm_rank(comm);
    if (R == 1) return s;
    int32_t mine[1 + AGREE_WORDS];
    memset(mine, 0, sizeof mine);
    mine[0] = (int32_t)s;
    if (s != GT_OK) snprintf((char *)(mine + 1), AGREE_WORDS * 4, "%s", gt_last_error());
    int32_t *all = malloc((size_t)R * sizeof mine);
    if (!all) return GT_ERR(GT_ERR_OOM, "out of host memory agreeing on an error");
    gt_status cs = gt_comm_allgather(comm, mine, all, 1 + AGREE_WORDS, GT_DTYPE_INT32, NULL);
    if (cs != GT_OK) {
        free(all);
        return cs;
    }
    gt_status out = GT_OK;
    for (int r = 0; r < R; r++) {
        int32_t *e = all + (size_t)r * (1 + AGREE_WORDS);
        if (e[0] == GT_OK) continue;
        out = (gt_status)e[0];
        if (r != me) {
            char msg[AGREE_WORDS * 4];
            memcpy(msg, e + 1, sizeof msg);
            msg[sizeof msg - 1] = 0;
            gt_error_clear();
            gt_error_wrap(out, "%s", msg); /* rank r's words, with its rank and place */
        } else if (s == GT_OK) {
            out = s;
        }
        break;
    }
    /* this rank's own error stays its own when it failed first */
    if (out != GT_OK && s != GT_OK) {
        for (int r = 0; r < R; r++)
            if (all[(size_t)r * (1 + AGREE_WORDS)] != GT_OK) {
                if (r == me) out = s;
                break;
            }
    }
    free(all);
    if (out != GT_OK && collective) *collective = 1;
    return out;
}

/* ---- non-finite values ---------------------------------------------------------------
 * Called on every rank when some rank saw a non-finite loss or gradient norm
 * at `step` (1-based): finds the first non-finite value in llm.c's order,
 * the gradients of each rank's shard first, then the parameters, and
 * returns the same error on every rank. (An fp16 gradient overflow with a
 * finite loss does not come here: the loss scaler skips the step.) */
static gt_status nonfinite_error(gt_model *model, gt_comm *comm, const void *gshard, size_t lo,
                                 size_t hi, int step, int bad_rank, int at_loss, double value) {
    int R = gt_comm_size(comm);
    int found = 0, kind = 2;
    gt_model_loc loc;
    float v = 0;
    memset(&loc, 0, sizeof loc);
    gt_status s = gt_model_find_nonfinite(model, gshard, gt_model_dtype(model), lo, hi, &found,
                                          &loc, &v);
    if (s == GT_OK && found) kind = 0;
    if (s == GT_OK && !found) {
        /* ZeRO-3: each rank searches the masters of its shard */
        size_t plo, phi;
        gt_params_masters_range(model->params, &plo, &phi);
        s = gt_model_find_nonfinite(model, gt_model_params_buffer(model), GT_DTYPE_FP32, plo,
                                    phi, &found, &loc, &v);
        if (s == GT_OK && found) kind = 1;
    }
    if (s != GT_OK) return s;
    /* kind, llm.c flat index: the smallest (kind, index) over ranks is first */
    int32_t bits;
    memcpy(&bits, &v, sizeof bits);
    int64_t mine[4] = {kind, (int64_t)loc.flat, (int64_t)loc.internal, bits};
    int64_t *all = malloc((size_t)R * sizeof mine);
    if (!all) return GT_ERR(GT_ERR_OOM, "out of host memory");
    if ((s = gt_comm_allgather(comm, mine, all, 4, GT_DTYPE_INT64, NULL)) != GT_OK) {
        free(all);
        return s;
    }
    int best = 0;
    for (int r = 1; r < R; r++)
        if (all[4 * r] < all[4 * best] ||
            (all[4 * r] == all[4 * best] && all[4 * r + 1] < all[4 * best + 1]))
            best = r;
    char where[320] = "";
    if (all[4 * best] < 2) {
        gt_model_loc l2;
        size_t x = (size_t)all[4 * best + 2];
        gt_model_locate(model, x, &l2);
        int32_t b32 = (int32_t)all[4 * best + 3];
        float fv;
        memcpy(&fv, &b32, sizeof fv);
        char name[96];
        gt_model_loc_format(model, &l2, name, sizeof name);
        snprintf(where, sizeof where, "the first non-finite value is the %s of %s (%s flat "
                 "index %zu) = %g, held by rank %d",
                 all[4 * best] == 0 ? "gradient" : "parameter", name,
                 strcmp(gt_model_get_info(model)->family, "gpt2") == 0 ? "llm.c" : "canonical",
                 l2.flat, (double)fv, best);
    } else {
        snprintf(where, sizeof where,
                 "no gradient or parameter holds a non-finite value (the loss overflowed)");
    }
    /* a norm assembled from every rank's chunks is non-finite everywhere:
     * the rank to name is the one holding the value */
    if (!at_loss && all[4 * best] < 2) bad_rank = best;
    free(all);
    return GT_ERR(GT_ERR_INVALID,
                  "non-finite %s (%g) at step %d on rank %d: %s. Training diverged or a fault "
                  "corrupted it: lower --lr, enable --grad-clip, check the data, or resume "
                  "from the last checkpoint",
                  at_loss ? "loss" : "gradient norm", value, step, bad_rank, where);
}

/* The global mean loss, summed in global micro-batch order, and which rank
 * first saw a non-finite loss (*at_loss) or gradient norm (without ZeRO
 * each rank computes its own norm from its copy of the sums: one corrupted
 * copy shows only there). -1: none. */
static gt_status gather_losses(gt_trainer *t, gt_train_step *s, int *bad_rank, int *at_loss) {
    int R = t->R, k = t->k_local;
    t->mb_loss[k] = isfinite(s->norm) ? 0.0f : 1.0f;
    GT_TRY(gt_comm_allgather(t->comm, t->mb_loss, t->all_loss, (size_t)k + 1, GT_DTYPE_FP32,
                             NULL));
    double lsum = 0;
    *bad_rank = -1;
    *at_loss = 0;
    for (int r = 0; r < R; r++)
        for (int j = 0; j < k; j++) {
            float v = t->all_loss[(size_t)r * (k + 1) + j];
            lsum += v;
            if (!isfinite(v) && *bad_rank < 0) {
                *bad_rank = r;
                *at_loss = 1;
            }
        }
    s->loss = lsum / (k * R);
    for (int r = 0; r < R && *bad_rank < 0; r++)
        if (t->all_loss[(size_t)r * (k + 1) + k] != 0.0f) *bad_rank = r;
    return GT_OK;
}

gt_status gt_train_step_health(gt_trainer *t, gt_train_step *s) {
    int bad_rank, at_loss;
    GT_TRY(gather_losses(t, s, &bad_rank, &at_loss));
    /* fp16: a finite loss with non-finite gradients is an overflow that
     * the scaler handles; every rank sees the same flags, so every rank
     * skips together. A non-finite loss is never a scaling matter. */
    s->skip = 0;
    if (t->fp16 && isfinite(s->loss) && !at_loss) {
        gt_status e = gt_lossscale_update(&t->ls, bad_rank < 0, &s->skip);
        if (e != GT_OK) {
            t->st->collective_error = t->R > 1;
            return gt_error_wrap(e, "step %d", s->step + 1);
        }
        if (s->skip) {
            fprintf(stderr,
                    "gauntlet: step %d: fp16 gradients overflowed at loss scale %g: step "
                    "skipped, scale now %g\n",
                    s->step + 1, (double)s->scale, (double)t->ls.scale);
            bad_rank = -1;
        }
    }
    if (isfinite(s->loss) && bad_rank < 0) return GT_OK;
    if (bad_rank < 0) {
        bad_rank = 0;
        at_loss = 1;
    }
    gt_status e = nonfinite_error(t->model, t->comm, s->gshard, t->lo, t->hi, s->step + 1,
                                  bad_rank, at_loss, at_loss ? s->loss : NAN);
    t->st->collective_error = t->R > 1;
    return e;
}
