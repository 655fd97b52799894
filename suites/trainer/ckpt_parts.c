/* The checkpoints' parts (train_impl.h; docs/distributed.md): with pipeline
 * stages or tensor ranks each rank holds a part of the model (a stage's
 * parameter range, a tensor rank's slices), so each part is written and
 * resumed on its own, in a folder of the checkpoint directory named for its
 * place in the rank grid: DIR/pp<s>of<P>, DIR/tp<r>of<T>, with both
 * DIR/pp<s>of<P>/tp<r>of<T>. The ranks of a part's data-parallel group write
 * it as without parts (checkpoint.c). A resume reads the same part; a
 * checkpoint of another layout (a part this run needs missing, or parts
 * where this run has none) is refused before anything is written, naming
 * what is there and what to do; parts that end at different steps (a job
 * stopped while they were written) are refused once they are read. */
#include "suites/trainer/train_impl.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* This rank's part below the checkpoint directory ("" without parts). */
static void part_name(const gt_trainer *t, char *out, size_t n) {
    int used = 0;
    out[0] = 0;
    if (t->P > 1) used = snprintf(out, n, "/pp%dof%d", t->stage, t->P);
    if (t->TP > 1 && used >= 0 && (size_t)used < n)
        snprintf(out + used, n - used, "/tp%dof%d", t->tp_rank, t->TP);
}

static int by_name(const void *a, const void *b) {
    return strcmp((const char *)a, (const char *)b);
}

/* The parts at the top of a checkpoint directory in name order ("pp0of2
 * pp1of2"; the first 64), for the refusals; empty when there are none (or
 * `dir` is a file). */
static void parts_in(const char *dir, char *out, size_t n) {
    char names[64][32];
    int k = 0;
    out[0] = 0;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && k < 64) {
        int a, b;
        char tail[2];
        if (strlen(e->d_name) >= sizeof names[0] ||
            (sscanf(e->d_name, "pp%dof%d%1s", &a, &b, tail) != 2 &&
             sscanf(e->d_name, "tp%dof%d%1s", &a, &b, tail) != 2))
            continue;
        snprintf(names[k++], sizeof names[0], "%s", e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)k, sizeof names[0], by_name);
    size_t used = 0;
    for (int i = 0; i < k && used < n; i++)
        used += (size_t)snprintf(out + used, n - used, "%s%s", i ? " " : "", names[i]);
}

/* --resume names this rank's part of the checkpoint (t->ck_resume), or is
 * refused: the part is missing, or this run has none and it has parts. */
static gt_status resume_part(gt_trainer *t, const char *part) {
    const char *dir = t->cfg->resume;
    char have[1024];
    parts_in(dir, have, sizeof have);
    if (!*part) {
        if (!*have) return GT_OK;
        return GT_ERR(GT_ERR_INVALID,
                      "--resume %s: it is a checkpoint in parts (%s), one per pipeline stage "
                      "(pp<s>of<P>) or tensor rank (tp<r>of<T>) of the layout that wrote it, "
                      "and this run's layout has no parts: resume with that layout (--layout "
                      "pp=<P> and/or tp=<T>); nothing was written",
                      dir, have);
    }
    snprintf(t->ck_resume, sizeof t->ck_resume, "%s%s", dir, part);
    t->ck_cfg.resume = t->ck_resume;
    if (is_dir(t->ck_resume)) return GT_OK;
    char lay[64], whose[64];
    if (t->P > 1 && t->TP > 1) {
        snprintf(lay, sizeof lay, "tp=%d,pp=%d", t->TP, t->P);
        snprintf(whose, sizeof whose, "stage %d, tensor rank %d", t->stage, t->tp_rank);
    } else if (t->P > 1) {
        snprintf(lay, sizeof lay, "pp=%d", t->P);
        snprintf(whose, sizeof whose, "stage %d", t->stage);
    } else {
        snprintf(lay, sizeof lay, "tp=%d", t->TP);
        snprintf(whose, sizeof whose, "tensor rank %d", t->tp_rank);
    }
    return GT_ERR(GT_ERR_INVALID,
                  "--resume %s with --layout %s: there is no part %s of %s (the checkpoint "
                  "holds %s%s); a checkpoint in parts is resumed from the --checkpoint-dir it "
                  "was written to, with the layout that wrote it (the same pp and tp): resume "
                  "with that layout; nothing was written",
                  dir, lay, t->ck_resume, whose, *have ? "the parts " : "no parts", have);
}

gt_status gt_train_ckpt_parts(gt_trainer *t) {
    const gt_train_config *cfg = t->cfg;
    char part[64];
    part_name(t, part, sizeof part);
    t->ck = cfg;
    if (*part) {
        t->ck_cfg = *cfg;
        t->ck = &t->ck_cfg;
        if (cfg->checkpoint_dir) {
            snprintf(t->ck_dir, sizeof t->ck_dir, "%s%s", cfg->checkpoint_dir, part);
            t->ck_cfg.checkpoint_dir = t->ck_dir;
        }
    }
    if (!cfg->resume) return GT_OK;
    gt_comm *all = cfg->comm ? cfg->comm : t->comm;
    return gt_train_agree(all, resume_part(t, part), &t->st->collective_error);
}

gt_status gt_train_ckpt_parts_agree(gt_trainer *t) {
    if (!t->cfg->resume || (t->P <= 1 && t->TP <= 1)) return GT_OK;
    gt_comm *all = t->cfg->comm ? t->cfg->comm : t->comm;
    int64_t lo = t->start, hi = t->start;
    GT_TRY(gt_comm_allreduce(all, &lo, &lo, 1, GT_DTYPE_INT64, GT_REDOP_MIN, NULL));
    GT_TRY(gt_comm_allreduce(all, &hi, &hi, 1, GT_DTYPE_INT64, GT_REDOP_MAX, NULL));
    if (lo == hi) return GT_OK;
    t->st->collective_error = 1; /* every rank refuses alike: rank 0 says it */
    return GT_ERR(GT_ERR_MISMATCH,
                  "--resume %s: its parts' latest checkpoints are of different steps (%lld to "
                  "%lld; this rank's part %s: step %lld), as when a job stops while its parts "
                  "are written: move the checkpoints after step %lld out of the parts that "
                  "have them (each part keeps the one of step %lld) and resume again; nothing "
                  "was written",
                  t->cfg->resume, (long long)lo, (long long)hi, t->ck_resume, (long long)t->start,
                  (long long)lo, (long long)lo);
}
