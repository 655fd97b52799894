/* The training loop's checkpoints (train.h): what a run records, saving
 * (one file, or a ZeRO-1 folder of shards with a MANIFEST), and resuming
 * (the checkpoint's run checked against this one, field by field). The
 * file format is engine/checkpoint.h's. */
#include "suites/trainer/train.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/backend.h"
#include "engine/checkpoint.h"
#include "models/model.h"
#include "suites/trainer/train_impl.h"


/* ---- checkpoints ------------------------------------------------------------------ */

/* The parameter tensors (when `params`), canonical order (llm.c's for
 * gpt2), pointing into `host` (that layout), then the state tensors
 * (BatchNorm running statistics) pointing into `state`. Returns the count. */
static int param_tensors(gt_model *model, float *host, float *state, gt_ckpt_tensor *t,
                         int params) {
    size_t off = 0;
    int NT = params ? gt_model_num_tensors(model) : 0, n = 0;
    for (int i = 0; i < NT; i++, n++) {
        memset(&t[n], 0, sizeof t[n]);
        snprintf(t[n].name, sizeof t[n].name, "%s", gt_model_tensor_name(model, i));
        t[n].dtype = GT_DTYPE_FP32;
        t[n].ndim = gt_model_tensor_shape(model, i, t[n].shape);
        t[n].data = host ? host + off : NULL;
        off += gt_model_tensor_size(model, i);
    }
    off = 0;
    for (int i = 0; i < gt_model_num_state_tensors(model); i++, n++) {
        memset(&t[n], 0, sizeof t[n]);
        snprintf(t[n].name, sizeof t[n].name, "%s", gt_model_state_name(model, i));
        t[n].dtype = GT_DTYPE_FP32;
        t[n].ndim = gt_model_state_shape(model, i, t[n].shape);
        t[n].data = state ? state + off : NULL;
        off += gt_model_state_size(model, i);
    }
    return n;
}

/* Room for param_tensors' list plus the loss scaler, ZeRO-3's masters and
 * AdamW m, v. */
static int max_ckpt_tensors(const gt_model *model) {
    return gt_model_num_tensors(model) + gt_model_num_state_tensors(model) + 4;
}

/* ZeRO-3: a rank's range of the fp32 masters, internal layout, in its file
 * (rank 0's file has no whole parameters then). */
static const char *const PARAMS_SHARD = "params.shard";


gt_status gt_train_identify_data(const gt_train_config *cfg, const gt_tokens *tok, int M,
                                 gt_train_run_id *id) {
    memset(id, 0, sizeof *id);
    id->micro_batch = M;
    if (gt_train_dense(cfg)) return GT_OK; /* the task is a function of preset and seed */
    id->data_vocab = tok->vocab;
    id->data_tokens = tok->n;
    if (!cfg->data_path) {
        gt_synth_config sc = gt_synth_defaults();
        id->synth_branch = cfg->synth_branch > 0 ? cfg->synth_branch : sc.branch;
        return GT_OK;
    }
    id->data_kind = GT_CKPT_DATA_FILE;
    struct stat sb;
    if (stat(cfg->data_path, &sb) != 0)
        return GT_ERR(GT_ERR_IO, "'%s': cannot stat the token file: %s", cfg->data_path,
                      strerror(errno));
    id->data_bytes = (int64_t)sb.st_size;
    /* only checkpointing and resuming need the digest: 100M tokens cost ~0.3 s.
     * The tokens as little-endian uint32 (the host is little-endian: checkpoints
     * refuse big-endian hosts), the same for a gauntlet and an llm.c file */
    if (cfg->resume || cfg->checkpoint_every > 0)
        id->data_crc = gt_crc32c(0, tok->tokens, (size_t)tok->n * sizeof *tok->tokens);
    return GT_OK;
}

static void fill_meta(const gt_train_config *cfg, gt_model *model, gt_comm *comm,
                      const char *backend_desc, const gt_train_run_id *id, int done, int rank,
                      int nranks, gt_ckpt_meta *m) {
    memset(m, 0, sizeof *m);
    snprintf(m->backend, sizeof m->backend, "%.*s", (int)sizeof m->backend - 1, backend_desc);
    snprintf(m->library, sizeof m->library, "%s %s", gt_comm_backend_name(comm),
             gt_comm_library_version(comm));
    int32_t fields[GT_MODEL_CONFIG_FIELDS];
    gt_model_config_fields(model, fields);
    memcpy(m->model, fields, sizeof m->model);
    m->dtype = GT_DTYPE_FP32;
    m->step = done;
    m->seed = cfg->seed;
    m->loader_step = done; /* the loader's next step is the next optimizer step */
    m->data_order = (int32_t)cfg->data_order;
    m->global_batch = cfg->batch;
    m->seq_len = cfg->seq_len;
    m->rank = rank;
    m->nranks = nranks;
    m->num_params = gt_model_num_params(model);
    m->opt = cfg->opt;
    m->precision = (int32_t)cfg->precision;
    const char *fam = gt_model_family_of(cfg->model_name);
    snprintf(m->family, sizeof m->family, "%s", fam ? fam : "gpt2");
    m->data_kind = id->data_kind;
    m->data_vocab = id->data_vocab;
    m->data_tokens = id->data_tokens;
    m->data_bytes = id->data_bytes;
    m->data_crc = id->data_crc;
    m->synth_branch = id->synth_branch;
    m->world_size = gt_comm_size(comm);
    m->zero = cfg->zero;
    m->deterministic = cfg->deterministic;
    m->micro_batch = id->micro_batch;
    if (cfg->data_path) snprintf(m->data_path, sizeof m->data_path, "%s", cfg->data_path);
}

/* The loss scaler's state in a checkpoint (fp16 runs, rank 0's file): fp64
 * [scale, consecutive good steps, skipped steps], all exact in fp64. */
static const char *const LOSS_SCALER = "loss_scaler";

/* The host copies one rank's checkpoint file is written from. */
typedef struct ckpt_bufs {
    float *host, *sth; /* rank 0: the parameters (canonical; not with ZeRO-3), the state */
    float *mh, *vh;    /* this rank's range of AdamW's m and v */
    float *ph;         /* ZeRO-3: this rank's range of the masters (internal layout) */
    gt_ckpt_tensor *t;
} ckpt_bufs;

static void ckpt_bufs_free(ckpt_bufs *b) {
    free(b->host);
    free(b->sth);
    free(b->mh);
    free(b->vh);
    free(b->ph);
    free(b->t);
}

/* Allocates and fills b for [slo, shi): rank 0 the state tensors and,
 * unless the masters are sharded (pshard), the whole parameters. */
static gt_status stage_rank_file(gt_model *model, int rank, int pshard, size_t slo, size_t shi,
                                 ckpt_bufs *b) {
    memset(b, 0, sizeof *b);
    size_t np = gt_model_num_params(model), n = shi - slo;
    int whole = rank == 0 && !pshard;
    if (whole) b->host = malloc(np * sizeof(float));
    if (rank == 0) b->sth = malloc((gt_model_state_numel(model) + 1) * sizeof(float));
    if (pshard) b->ph = malloc((n ? n : 1) * sizeof(float));
    b->mh = malloc((n ? n : 1) * sizeof(float));
    b->vh = malloc((n ? n : 1) * sizeof(float));
    b->t = malloc((size_t)max_ckpt_tensors(model) * sizeof *b->t);
    if ((whole && !b->host) || (rank == 0 && !b->sth) || (pshard && !b->ph) || !b->mh ||
        !b->vh || !b->t)
        return GT_ERR(GT_ERR_OOM, "out of host memory staging a checkpoint of %zu parameters",
                      np);
    if (whole) GT_TRY(gt_model_get_params(model, b->host));
    if (rank == 0) GT_TRY(gt_model_get_state(model, b->sth));
    if (pshard) GT_TRY(gt_params_get_masters(model->params, slo, shi, b->ph));
    return gt_model_get_opt_state(model, slo, shi, b->mh, b->vh);
}

/* A 1-D fp32 tensor holding elements [lo, lo + n) of the internal layout. */
static void range_tensor(gt_ckpt_tensor *e, const char *name, float *data, size_t lo, size_t n) {
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->dtype = GT_DTYPE_FP32;
    e->ndim = 1;
    e->shape[0] = (int64_t)n;
    e->range_lo = lo;
    e->data = data;
}

/* b->t: rank 0's parameters (whole) or state, its loss scaler (scaler:
 * fp16 runs), every rank's ranges (the masters' with pshard, m, v).
 * Returns the count. */
static int list_rank_file(gt_model *model, int rank, int pshard, size_t slo, size_t shi,
                          double *scaler, ckpt_bufs *b) {
    gt_ckpt_tensor *t = b->t;
    int nt = rank == 0 ? param_tensors(model, b->host, b->sth, t, !pshard) : 0;
    if (rank == 0 && scaler) {
        gt_ckpt_tensor *e = &t[nt++];
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%s", LOSS_SCALER);
        e->dtype = GT_DTYPE_FP64;
        e->ndim = 1;
        e->shape[0] = 3;
        e->data = scaler;
    }
    if (pshard) range_tensor(&t[nt++], PARAMS_SHARD, b->ph, slo, shi - slo);
    range_tensor(&t[nt++], "adamw.m", b->mh, slo, shi - slo);
    range_tensor(&t[nt++], "adamw.v", b->vh, slo, shi - slo);
    return nt;
}

/* After `done` steps: one file (rank 0 writes it; every rank holds the same
 * state; a pipeline stage's part holds m and v of the stage's range [lo, hi)
 * only), or with ZeRO-1 a folder with every rank's shard of m and v (rank 0's
 * also holds the parameters) and a MANIFEST that rank 0 writes once all
 * shards are safely on disk. */
gt_status gt_train_save_checkpoint(const gt_train_config *cfg, gt_model *model, gt_comm *comm,
                                   size_t lo, size_t hi, int done, const char *backend_desc,
                                   const gt_train_run_id *id, const gt_lossscale *ls,
                                   int *collective) {
    int R = gt_comm_size(comm), rank = gt_comm_rank(comm);
    int sharded = cfg->zero;
    size_t np = gt_model_num_params(model);
    /* the optimizer range this rank holds: its ZeRO shard, its pipeline stage's
     * range, or all of it (replicated: lo 0, hi past np) */
    size_t slo = lo < np ? lo : np, shi = hi < np ? hi : np;
    char where[4096], path[4200];
    gt_ckpt_name(where, sizeof where, cfg->checkpoint_dir, done, sharded);
    gt_status s = GT_OK;
    if (sharded) {
        if (rank == 0) {
            /* a rerun into the same folder: the old manifest must not vouch
             * for a mix of old and new shards while they are rewritten */
            snprintf(path, sizeof path, "%s/MANIFEST", where);
            if (mkdir(where, 0755) != 0 && errno != EEXIST)
                s = GT_ERR(GT_ERR_IO, "cannot create checkpoint folder '%s': %s", where,
                           strerror(errno));
            else if (unlink(path) != 0 && errno != ENOENT)
                s = GT_ERR(GT_ERR_IO, "cannot remove the old '%s': %s", path, strerror(errno));
        }
        GT_TRY(gt_train_agree(comm, s, collective));
    }
    uint64_t bytes = 0;
    uint32_t crc = 0;
    if (sharded || rank == 0) {
        ckpt_bufs b;
        int pshard = cfg->zero == 3; /* ZeRO-3: every rank holds its masters only */
        double scaler[3] = {ls ? ls->scale : 1.0, ls ? (double)ls->good_steps : 0.0,
                            ls ? (double)ls->skipped : 0.0};
        s = stage_rank_file(model, rank, pshard, slo, shi, &b);
        if (s == GT_OK) {
            int nt = list_rank_file(model, rank, pshard, slo, shi, ls ? scaler : NULL, &b);
            gt_ckpt_meta meta;
            fill_meta(cfg, model, comm, backend_desc, id, done, sharded ? rank : 0,
                      sharded ? R : 1, &meta);
            /* tests: the version 1 layout older gauntlets wrote, to check that
             * resuming from one still works and says what it could not check */
            const char *old = getenv("GT_TEST_CKPT_VERSION");
            if (old && atoi(old) == 1) meta.format_version = 1;
            if (sharded) gt_ckpt_shard_name(path, sizeof path, where, rank);
            else snprintf(path, sizeof path, "%s", where);
            s = gt_ckpt_write(path, &meta, b.t, nt, &crc, &bytes);
        }
        ckpt_bufs_free(&b);
    }
    GT_TRY(gt_train_agree(comm, s, collective));
    if (!sharded) return GT_OK;
    int64_t mine[2] = {(int64_t)bytes, (int64_t)crc};
    int64_t *all = malloc((size_t)R * sizeof mine);
    uint64_t *b = malloc((size_t)R * sizeof *b);
    uint32_t *c = malloc((size_t)R * sizeof *c);
    if (!all || !b || !c) s = GT_ERR(GT_ERR_OOM, "out of host memory for the manifest");
    if (s == GT_OK) s = gt_comm_allgather(comm, mine, all, 2, GT_DTYPE_INT64, NULL);
    if (s == GT_OK && rank == 0) {
        for (int r = 0; r < R; r++) {
            b[r] = (uint64_t)all[2 * r];
            c[r] = (uint32_t)all[2 * r + 1];
        }
        s = gt_ckpt_manifest_write(where, done, R, b, c);
    }
    free(all);
    free(b);
    free(c);
    return gt_train_agree(comm, s, collective);
}

/* ---- resume: the checkpoint's run against this one -------------------------------- */

static const char *const RESUME_FIELDS[] = {
    "data", "data_order", "seed", "batch", "seq", "precision", "lr", "beta1", "beta2", "eps",
    "weight_decay", "grad_clip", "warmup", "lr_min_frac", "steps", "world_size", "zero",
    "micro_batch", "deterministic",
};

const char *gt_train_resume_field(int i) {
    return i >= 0 && i < (int)(sizeof RESUME_FIELDS / sizeof *RESUME_FIELDS) ? RESUME_FIELDS[i]
                                                                             : NULL;
}

/* `name` is one of the comma-separated items of `list` (NULL: none). */
static int listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

typedef struct resume_check {
    const char *file;
    const char *allow;   /* cfg->resume_allow */
    gt_train_stats *st;  /* receives the changes allowed */
    gt_status s;
} resume_check;

/* One recorded field: equal; different and allowed by --resume-allow (noted
 * in st->resume_overrides); or the refusal, naming it with both values.
 * `fix` says how to resume as the checkpoint was written; `fixed` fields
 * (the model's shape) cannot be allowed: the tensors would not fit. */
static void field(resume_check *rc, const char *name, int fixed, const char *was,
                  const char *now, const char *fix) {
    if (rc->s != GT_OK || strcmp(was, now) == 0) return;
    if (!fixed && listed(rc->allow, name)) {
        char *o = rc->st->resume_overrides;
        size_t used = strlen(o);
        snprintf(o + used, sizeof rc->st->resume_overrides - used, "%s%s: %s -> %s",
                 used ? "; " : "", name, was, now);
        return;
    }
    if (fixed)
        rc->s = GT_ERR(GT_ERR_MISMATCH,
                       "checkpoint '%s' does not match this run: %s is %s in the checkpoint, "
                       "%s here; resume with the settings it was written with (%s)",
                       rc->file, name, was, now, fix);
    else
        rc->s = GT_ERR(GT_ERR_MISMATCH,
                       "checkpoint '%s' does not match this run: %s is %s in the checkpoint, "
                       "%s here; %s, or continue with the change with --resume-allow %s "
                       "(recorded in the report)",
                       rc->file, name, was, now, fix, name);
}

static void field_i(resume_check *rc, const char *name, int fixed, long long was, long long now,
                    const char *fix) {
    char a[32], b[32];
    snprintf(a, sizeof a, "%lld", was);
    snprintf(b, sizeof b, "%lld", now);
    field(rc, name, fixed, a, b, fix);
}

/* floats compare bitwise (the schedule must be the same bits), print as %g
 * unless that hides the difference */
static void field_f(resume_check *rc, const char *name, float was, float now, const char *fix) {
    char a[32], b[32];
    if (memcmp(&was, &now, sizeof was) == 0) return;
    snprintf(a, sizeof a, "%g", (double)was);
    snprintf(b, sizeof b, "%g", (double)now);
    if (strcmp(a, b) == 0) {
        snprintf(a, sizeof a, "%.9g", (double)was);
        snprintf(b, sizeof b, "%.9g", (double)now);
    }
    field(rc, name, 0, a, b, fix);
}

static void describe_data(const gt_ckpt_meta *m, char *out, size_t n) {
    if (m->data_kind == GT_CKPT_DATA_FILE)
        snprintf(out, n, "the token file '%s' (%lld tokens, vocab %d, %lld bytes, CRC32C %08x)",
                 m->data_path, (long long)m->data_tokens, m->data_vocab,
                 (long long)m->data_bytes, m->data_crc);
    else if (m->data_tokens > 0)
        snprintf(out, n, "the synthetic source (vocab %d, branch %d, %lld tokens)",
                 m->data_vocab, m->synth_branch, (long long)m->data_tokens);
    else
        snprintf(out, n, "the model's synthetic task");
}

/* Refuses a checkpoint written by another run, naming the field and both
 * values, unless --resume-allow lists it. `here` is what this run would
 * write (fill_meta). */
static gt_status check_meta(const char *file, const gt_ckpt_meta *m, const gt_ckpt_meta *here,
                            const gt_train_config *cfg, gt_model *model, gt_train_stats *st) {
    resume_check rc = {.file = file, .allow = cfg->resume_allow, .st = st, .s = GT_OK};
    st->resume_overrides[0] = 0;
    const char *same = "resume with the settings it was written with";
    if (m->format_version >= 2)
        field(&rc, "model family", 1, m->family, here->family, "--model of that family");
    for (int i = 0; i < GT_CKPT_MODEL_FIELDS && i < GT_MODEL_CONFIG_FIELDS; i++)
        field_i(&rc, gt_model_config_field_name(model, i), 1, m->model[i], here->model[i],
                "--model and its overrides");
    field_i(&rc, "dtype (0 = fp32)", 1, m->dtype, GT_DTYPE_FP32, "a gauntlet that reads it");
    field_i(&rc, "num_params", 1, (long long)m->num_params, (long long)here->num_params,
            "the same model");
    if (rc.s != GT_OK) return rc.s;
    if (m->format_version >= 2) {
        char a[400], b[400], fix[400];
        describe_data(m, a, sizeof a);
        describe_data(here, b, sizeof b);
        if (m->data_kind == GT_CKPT_DATA_FILE)
            snprintf(fix, sizeof fix, "resume with --data %s (the same tokens)", m->data_path);
        else if (here->data_kind == GT_CKPT_DATA_FILE)
            snprintf(fix, sizeof fix, "resume without --data");
        else if (m->synth_branch != here->synth_branch)
            snprintf(fix, sizeof fix, "resume with --synth-branch %d", m->synth_branch);
        else /* its default length follows --steps */
            snprintf(fix, sizeof fix, "resume with --synth-tokens %lld",
                     (long long)m->data_tokens);
        /* the path is information: the same tokens elsewhere are the same data */
        if (m->data_kind != here->data_kind || m->data_vocab != here->data_vocab ||
            m->data_tokens != here->data_tokens || m->data_crc != here->data_crc ||
            m->synth_branch != here->synth_branch)
            field(&rc, "data", 0, a, b, fix);
    }
    field(&rc, "data_order", 0, gt_data_order_name((gt_data_order)m->data_order),
          gt_data_order_name((gt_data_order)here->data_order), "resume with that --data-order");
    field_i(&rc, "seed", 0, (long long)m->seed, (long long)here->seed, same);
    field_i(&rc, "batch", 0, m->global_batch, here->global_batch, same);
    field_i(&rc, "seq", 0, m->seq_len, here->seq_len, same);
    {
        char fix[64];
        snprintf(fix, sizeof fix, "resume with --precision %s",
                 gt_dtype_name((gt_dtype)m->precision));
        if (m->precision != here->precision && !listed(cfg->resume_allow, "precision") &&
            rc.s == GT_OK)
            /* the wording the precision tests and docs/reliability.md know */
            rc.s = GT_ERR(GT_ERR_MISMATCH,
                          "checkpoint '%s' does not match this run: it was trained with "
                          "--precision %s, this run asks for %s; %s, or continue with the "
                          "change with --resume-allow precision (recorded in the report)",
                          file, gt_dtype_name((gt_dtype)m->precision),
                          gt_dtype_name(cfg->precision), fix);
        field(&rc, "precision", 0, gt_dtype_name((gt_dtype)m->precision),
              gt_dtype_name((gt_dtype)here->precision), fix);
    }
    field_f(&rc, "lr", m->opt.lr, here->opt.lr, same);
    field_f(&rc, "beta1", m->opt.beta1, here->opt.beta1, same);
    field_f(&rc, "beta2", m->opt.beta2, here->opt.beta2, same);
    field_f(&rc, "eps", m->opt.eps, here->opt.eps, same);
    field_f(&rc, "weight_decay", m->opt.weight_decay, here->opt.weight_decay, same);
    field_f(&rc, "grad_clip", m->opt.grad_clip, here->opt.grad_clip, same);
    field_f(&rc, "lr_min_frac", m->opt.lr_min_frac, here->opt.lr_min_frac, same);
    field_i(&rc, "warmup", 0, m->opt.warmup_steps, here->opt.warmup_steps, same);
    {
        char fix[64];
        snprintf(fix, sizeof fix, "resume with --steps %d (the lr schedule spans it)",
                 m->opt.total_steps);
        field_i(&rc, "steps", 0, m->opt.total_steps, here->opt.total_steps, fix);
    }
    if (m->format_version >= 2) {
        field(&rc, "deterministic", 0, m->deterministic ? "on" : "off",
              here->deterministic ? "on" : "off",
              m->deterministic ? "resume with --deterministic" : "resume without --deterministic");
        /* --deterministic sums one fixed tree whatever the ranks and the ZeRO
         * stage (bitwise the same weights, docs/distributed.md): there they do not
         * decide the continuation; otherwise the order of every sum does */
        if (!(m->deterministic && here->deterministic)) {
            char fix[96];
            snprintf(fix, sizeof fix, "resume on %d rank(s) (mpirun -np %d)", m->world_size,
                     m->world_size);
            field_i(&rc, "world_size", 0, m->world_size, here->world_size, fix);
            snprintf(fix, sizeof fix, "resume with --zero %d", m->zero);
            field_i(&rc, "zero", 0, m->zero, here->zero, fix);
        }
        /* the default micro-batch is a rank's share (batch / ranks): when that
         * changed, so did the micro-batch, and the change was already named */
        if ((int64_t)m->global_batch * here->world_size ==
            (int64_t)here->global_batch * m->world_size) {
            char fix[96];
            snprintf(fix, sizeof fix, "resume with --micro-batch %d", m->micro_batch);
            field_i(&rc, "micro_batch", 0, m->micro_batch, here->micro_batch, fix);
        }
    } else {
        snprintf(st->resume_unchecked, sizeof st->resume_unchecked,
                 "a format version %d checkpoint: it does not record the data source "
                 "(token file or synthetic parameters), the model family, the world size, the "
                 "ZeRO stage, --deterministic or the micro-batch, so these were not checked: "
                 "make sure they are what it was trained with",
                 m->format_version);
    }
    if (rc.s != GT_OK) return rc.s;
    if (m->loader_step != m->step)
        return GT_ERR(GT_ERR_MISMATCH,
                      "checkpoint '%s' is inconsistent: its data position (loader step %lld) "
                      "is not its step %lld",
                      file, (long long)m->loader_step, (long long)m->step);
    if (m->step < 0 || m->step >= cfg->steps)
        return GT_ERR(GT_ERR_INVALID,
                      "checkpoint '%s' is at step %lld: nothing is left of --steps %d",
                      file, (long long)m->step, cfg->steps);
    return GT_OK;
}

enum { MAX_SHARDS = 1 << 16 };

/* Where a file's range tensor lands: dst holds [lo, hi) of the internal
 * layout; *covered counts the elements written. */
typedef struct range_dst {
    const char *name;
    float *dst;
    size_t lo, hi, covered;
} range_dst;

/* Reads the part of range tensor d->name of file f (path) that falls in
 * [d->lo, d->hi) (nothing read when none does); tmp: a host buffer grown
 * as needed. */
static gt_status read_range(gt_ckpt_file *f, const char *path, size_t np, range_dst *d,
                            float **tmp) {
    int idx = gt_ckpt_find(f, d->name);
    const gt_ckpt_tensor *t = idx >= 0 ? gt_ckpt_tensor_at(f, idx) : NULL;
    if (!t || t->dtype != GT_DTYPE_FP32 || t->ndim != 1 ||
        t->range_lo + (uint64_t)t->shape[0] > np)
        return GT_ERR(GT_ERR_MISMATCH,
                      "checkpoint '%s': tensor '%s' is missing or not a 1-D fp32 range "
                      "inside the %zu parameters",
                      path, d->name, np);
    size_t a = (size_t)t->range_lo, b = a + (size_t)t->shape[0];
    size_t ia = a > d->lo ? a : d->lo, ib = b < d->hi ? b : d->hi;
    if (ia >= ib) return GT_OK; /* not this rank's part: not even read */
    float *nt = realloc(*tmp, (size_t)t->nbytes);
    if (!nt) return GT_ERR(GT_ERR_OOM, "out of host memory reading '%s'", path);
    *tmp = nt;
    GT_TRY(gt_ckpt_read(f, idx, *tmp));
    memcpy(d->dst + (ia - d->lo), *tmp + (ia - a), (ib - ia) * sizeof(float));
    d->covered += ib - ia;
    return GT_OK;
}

/* ZeRO-3's checkpoint: the masters from every shard's "params.shard"
 * (internal layout, pin) to the canonical order (host). */
static gt_status params_from_shards(gt_model *model, const char *where, const range_dst *p,
                                    float *host) {
    if (p->covered != p->hi)
        return GT_ERR(GT_ERR_MISMATCH,
                      "checkpoint '%s' holds %zu of the %zu parameters in its shards "
                      "(overlapping or missing shards)",
                      where, p->covered, p->hi);
    gt_params_to_canonical(model->params, host, p->dst);
    return GT_OK;
}

/* Loads parameters, this rank's range [lo, hi) of m and v (from whichever
 * files hold it: a sharded checkpoint resumes on any rank count, with or
 * without ZeRO) and the step. */
gt_status gt_train_load_checkpoint(const gt_train_config *cfg, gt_model *model, gt_comm *comm,
                                   const gt_train_run_id *id, gt_train_stats *st, size_t lo,
                                   size_t hi, gt_lossscale *ls, int64_t *start) {
    char where[4096], path[4200];
    int sharded = 0, nfiles = 1;
    int64_t mstep = -1;
    GT_TRY(gt_ckpt_resolve(cfg->resume, where, sizeof where, &sharded));
    uint32_t *crcs = NULL;
    if (sharded) {
        crcs = malloc(MAX_SHARDS * sizeof *crcs);
        if (!crcs) return GT_ERR(GT_ERR_OOM, "out of host memory");
        gt_status s = gt_ckpt_manifest_read(where, &mstep, &nfiles, MAX_SHARDS, NULL, crcs);
        if (s != GT_OK) {
            free(crcs);
            return s;
        }
    }
    size_t np = gt_model_num_params(model), nst = gt_model_state_numel(model);
    size_t nlo = lo < np ? lo : np, nhi = hi < np ? hi : np, need = nhi - nlo;
    float *host = malloc(np * sizeof(float));
    float *sth = malloc((nst + 1) * sizeof(float));
    gt_ckpt_tensor *want = malloc((size_t)max_ckpt_tensors(model) * sizeof *want);
    float *mh = malloc((need ? need : 1) * sizeof(float));
    float *vh = malloc((need ? need : 1) * sizeof(float));
    float *tmp = NULL;
    int pshard = 0; /* ZeRO-3's checkpoint: the masters from every shard, into rp.dst */
    range_dst rm = {"adamw.m", mh, nlo, nhi, 0}, rv = {"adamw.v", vh, nlo, nhi, 0};
    range_dst rp = {PARAMS_SHARD, NULL, 0, np, 0};
    gt_ckpt_file *f = NULL;
    gt_ckpt_meta first;
    memset(&first, 0, sizeof first);
    gt_status s = GT_OK;
    if (!host || !sth || !want || !mh || !vh)
        s = GT_ERR(GT_ERR_OOM, "out of host memory loading a checkpoint");
    for (int r = 0; r < nfiles && s == GT_OK; r++) {
        if (sharded) gt_ckpt_shard_name(path, sizeof path, where, r);
        else snprintf(path, sizeof path, "%s", where);
        if ((s = gt_ckpt_open(path, &f)) != GT_OK) break;
        const gt_ckpt_meta *m = gt_ckpt_meta_of(f);
        if (r == 0) {
            first = *m;
            gt_ckpt_meta here;
            fill_meta(cfg, model, comm, "", id, 0, 0, 1, &here);
            if ((s = check_meta(path, m, &here, cfg, model, st)) != GT_OK) break;
        }
        if (m->step != first.step || m->nranks != (sharded ? nfiles : 1) ||
            m->rank != (sharded ? r : 0) || (sharded && m->step != mstep) ||
            (sharded && gt_ckpt_header_crc(f) != crcs[r])) {
            s = GT_ERR(GT_ERR_MISMATCH,
                       "checkpoint '%s' (step %lld, shard %d of %d) does not belong to '%s' "
                       "(step %lld, %d shard(s)): a shard from another checkpoint",
                       path, (long long)m->step, m->rank, m->nranks, where,
                       (long long)first.step, nfiles);
            break;
        }
        if (r == 0) {
            /* the parameters (ZeRO-3: from every shard, below), then the state
             * tensors (running statistics) */
            pshard = gt_ckpt_find(f, PARAMS_SHARD) >= 0;
            if (pshard && !(rp.dst = malloc(np * sizeof(float))))
                s = GT_ERR(GT_ERR_OOM, "out of host memory loading a checkpoint");
            int nwant = param_tensors(model, host, sth, want, !pshard);
            for (int i = 0; i < nwant && s == GT_OK; i++) {
                int k = gt_ckpt_find(f, want[i].name);
                const gt_ckpt_tensor *t = k >= 0 ? gt_ckpt_tensor_at(f, k) : NULL;
                if (!t) {
                    s = GT_ERR(GT_ERR_MISMATCH, "checkpoint '%s' has no tensor '%s'", path,
                               want[i].name);
                } else if (t->dtype != GT_DTYPE_FP32 || t->ndim != want[i].ndim ||
                           memcmp(t->shape, want[i].shape, sizeof t->shape) != 0) {
                    s = GT_ERR(GT_ERR_MISMATCH,
                               "checkpoint '%s', tensor '%s': dtype %d shape (%lld, %lld, %lld) "
                               "where the model has fp32 (%lld, %lld, %lld)",
                               path, t->name, t->dtype, (long long)t->shape[0],
                               (long long)t->shape[1], (long long)t->shape[2],
                               (long long)want[i].shape[0], (long long)want[i].shape[1],
                               (long long)want[i].shape[2]);
                } else {
                    s = gt_ckpt_read(f, k, (void *)want[i].data);
                }
            }
            if (s == GT_OK && ls) {
                int k = gt_ckpt_find(f, LOSS_SCALER);
                const gt_ckpt_tensor *t = k >= 0 ? gt_ckpt_tensor_at(f, k) : NULL;
                double st3[3];
                if (!t || t->dtype != GT_DTYPE_FP64 || t->ndim != 1 || t->shape[0] != 3)
                    s = GT_ERR(GT_ERR_MISMATCH,
                               "checkpoint '%s' of an fp16 run has no '%s' tensor (fp64, 3): "
                               "the loss scale cannot be restored",
                               path, LOSS_SCALER);
                else if ((s = gt_ckpt_read(f, k, st3)) == GT_OK &&
                         (s = gt_lossscale_restore(ls, st3[0], st3[1], st3[2])) != GT_OK)
                    s = gt_error_wrap(s, "checkpoint '%s'", path);
            }
        }
        if (s == GT_OK && pshard) s = read_range(f, path, np, &rp, &tmp);
        if (s == GT_OK) s = read_range(f, path, np, &rm, &tmp);
        if (s == GT_OK) s = read_range(f, path, np, &rv, &tmp);
        gt_ckpt_close(f);
        f = NULL;
    }
    gt_ckpt_close(f);
    if (s == GT_OK && rv.covered != need)
        s = GT_ERR(GT_ERR_MISMATCH,
                   "checkpoint '%s' holds %zu of the %zu optimizer-state elements this rank "
                   "needs (overlapping or missing shards, or one pipeline stage's part: "
                   "resume such a checkpoint from its --checkpoint-dir with the layout that "
                   "wrote it)",
                   where, rv.covered, need);
    if (s == GT_OK && pshard) s = params_from_shards(model, where, &rp, host);
    if (s == GT_OK) s = gt_model_set_params(model, host);
    if (s == GT_OK) s = gt_model_set_state(model, sth);
    /* a ZeRO shard of padding only (a small model on several ranks) holds no
     * state to restore: its range lies past num_params */
    if (s == GT_OK && nhi > nlo) s = gt_model_set_opt_state(model, nlo, nhi, mh, vh);
    if (s == GT_OK) {
        *start = first.step;
        snprintf(st->resumed_from, sizeof st->resumed_from, "%s", where);
    }
    free(tmp);
    free(want);
    free(sth);
    free(host);
    free(mh);
    free(vh);
    free(rp.dst);
    free(crcs);
    return s;
}
