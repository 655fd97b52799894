/* Training checkpoints: a self-describing, versioned, checksummed file
 * (docs/formats.md, "Checkpoints" specifies every byte), written atomically,
 * and the sharded variant (one file per rank plus a manifest written last).
 *
 * This module knows the container, not the model: the caller lists the
 * tensors (name, shape, host data) and fills the metadata; reading verifies
 * every checksum and size and names the file, the tensor and the reason of
 * any refusal. Integers and floats are little-endian; tensor data is written
 * as the host holds it, so a big-endian host gets GT_ERR_UNSUPPORTED.
 */
#ifndef GT_CHECKPOINT_H
#define GT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "engine/dtype.h"
#include "engine/optim.h"
#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    GT_CKPT_FORMAT_VERSION = 2, /* written; version 1 files are still read */
    GT_CKPT_MANIFEST_VERSION = 1,
    GT_CKPT_NAME_LEN = 32,   /* tensor names, NUL-padded */
    GT_CKPT_MAX_DIMS = 4,
    GT_CKPT_MAX_TENSORS = 4096,
    GT_CKPT_MODEL_FIELDS = 6,
};

/* CRC32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven.
 * Start with crc = 0; feed the previous result to continue a running CRC.
 * gt_crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t gt_crc32c(uint32_t crc, const void *data, size_t n);

/* Names of the model config fields, in file order: max_seq_len, vocab_size,
 * padded_vocab_size, num_layers, num_heads, channels (GPT-2's config). */
const char *gt_ckpt_model_field(int i);

typedef struct gt_ckpt_meta {
    char engine_version[32];  /* GT_VERSION of the writer (filled by gt_ckpt_write) */
    char backend[128];        /* information only: the backend that trained */
    char library[128];        /* information only: communication library version */
    int32_t model[GT_CKPT_MODEL_FIELDS];
    int32_t dtype;            /* gt_dtype of the parameters (GT_DTYPE_FP32) */
    int64_t step;             /* optimizer steps done = AdamW t of the last update */
    uint64_t seed;            /* initialisation and data order (Philox is stateless) */
    int64_t loader_step;      /* the data loader's next step (gt_loader start_step) */
    int32_t data_order;       /* gt_data_order */
    int32_t global_batch;
    int32_t seq_len;
    int32_t rank, nranks;     /* this file's shard of nranks (1: not sharded) */
    int32_t precision;        /* gt_dtype the run stored activations, compute weights and
                               * gradients in (0 = fp32: also what files written before
                               * the field read, the bytes were reserved zeros) */
    uint64_t num_params;
    gt_adamw_config opt;      /* the schedule's position is (opt, step) */
    /* Format version 2 onward (a version 1 file reads them as 0 / empty: it
     * does not know what it was trained on beyond the fields above). */
    int32_t format_version;   /* reading: the file's version; writing: 0 writes the current
                               * one, 1 the version 1 layout (kept so that tests can make
                               * the files older gauntlets wrote) */
    char family[16];          /* model family: "gpt2", "mlp", "convnet" */
    int32_t data_kind;        /* GT_CKPT_DATA_SYNTH or GT_CKPT_DATA_FILE (mlp / convnet:
                               * SYNTH, their task is a function of the seed) */
    int32_t data_vocab;       /* the token stream's vocabulary (file's declared, or the
                               * synthetic source's) */
    int64_t data_tokens;      /* tokens in the stream the loader indexes */
    int64_t data_bytes;       /* size of the token file in bytes (0: synthetic) */
    uint32_t data_crc;        /* CRC32C of the tokens as little-endian uint32: the same for
                               * the same tokens whatever the file's format */
    int32_t synth_branch;     /* synthetic source: successors per state (0: a file) */
    int32_t world_size;       /* ranks that trained */
    int32_t zero;             /* ZeRO stage (0, 1) */
    int32_t deterministic;    /* 1: --deterministic (fixed reduction tree) */
    int32_t micro_batch;      /* sequences per forward/backward on a rank */
    char data_path[256];      /* the token file as given (information: the digest decides) */
} gt_ckpt_meta;

enum { GT_CKPT_DATA_SYNTH = 0, GT_CKPT_DATA_FILE = 1 };

typedef struct gt_ckpt_tensor {
    char name[GT_CKPT_NAME_LEN];
    int32_t dtype;            /* gt_dtype: fp32 (parameters, AdamW state); fp64 (the
                               * fp16 loss scaler) */
    int32_t ndim;             /* 1..GT_CKPT_MAX_DIMS */
    int64_t shape[GT_CKPT_MAX_DIMS];
    uint64_t range_lo;        /* flat state shards: first element held; else 0 */
    const void *data;         /* writing: host data, borrowed */
    uint64_t offset, nbytes;  /* reading: where the data lies in the file */
    uint32_t crc;             /* reading: CRC32C of the data */
} gt_ckpt_tensor;

/* Writes `path` atomically: `<path>.tmp.<pid>` in the same directory,
 * fsync, rename over `path`, fsync of the directory. meta->engine_version is
 * set to GT_VERSION. *header_crc and *file_bytes (may be NULL) receive what
 * a manifest records of the file. On failure the previous `path`, if any, is
 * untouched and the temporary file is removed (GT_ERR_IO naming the file and
 * the system's reason). Fault injection for tests: GT_FAULT_CKPT_FAIL=STEP
 * makes the write of a checkpoint of that step fail half-way. */
gt_status gt_ckpt_write(const char *path, const gt_ckpt_meta *meta, const gt_ckpt_tensor *t,
                        int n, uint32_t *header_crc, uint64_t *file_bytes);

/* An open checkpoint file whose header has been verified (magic, version,
 * header CRC, every tensor inside the file and no byte after the last). */
typedef struct gt_ckpt_file gt_ckpt_file;

/* GT_ERR_IO: cannot open or read, truncated (names the tensor that reaches
 * past the end); GT_ERR_MISMATCH: bad magic, other version, header CRC,
 * inconsistent tensor table. */
gt_status gt_ckpt_open(const char *path, gt_ckpt_file **out);
void gt_ckpt_close(gt_ckpt_file *f);
const char *gt_ckpt_path(const gt_ckpt_file *f);
const gt_ckpt_meta *gt_ckpt_meta_of(const gt_ckpt_file *f);
uint32_t gt_ckpt_header_crc(const gt_ckpt_file *f);
int gt_ckpt_count(const gt_ckpt_file *f);
const gt_ckpt_tensor *gt_ckpt_tensor_at(const gt_ckpt_file *f, int i);
/* Index of the tensor called `name`, or -1. */
int gt_ckpt_find(const gt_ckpt_file *f, const char *name);
/* Reads tensor i (nbytes into dst) and checks its CRC32C: GT_ERR_MISMATCH
 * names the file and the tensor when it differs. */
gt_status gt_ckpt_read(gt_ckpt_file *f, int i, void *dst);

/* ---- checkpoint directories ------------------------------------------------
 * A run writes into DIR: ckpt_<step, 8 digits>.gtck (one file) or
 * ckpt_<step>/ (sharded: rank_<r, 5 digits>.gtck per rank and MANIFEST,
 * written last). Names sort in step order. */

/* Creates DIR (and its parents) when missing and proves it writable by
 * creating and removing a probe file: GT_ERR_IO says which and why. */
gt_status gt_ckpt_dir_prepare(const char *dir);
/* "DIR/ckpt_00000100.gtck" (sharded 0) or "DIR/ckpt_00000100" (sharded 1). */
void gt_ckpt_name(char *out, size_t n, const char *dir, int64_t step, int sharded);
/* "FOLDER/rank_00003.gtck" */
void gt_ckpt_shard_name(char *out, size_t n, const char *folder, int rank);

/* Writes FOLDER/MANIFEST atomically: the step, the rank count, and for every
 * shard its file name, size and header CRC; the manifest's own CRC last. */
gt_status gt_ckpt_manifest_write(const char *folder, int64_t step, int nranks,
                                 const uint64_t *bytes, const uint32_t *header_crcs);
/* Reads and checks FOLDER/MANIFEST and that every shard it lists exists with
 * that size. *nranks receives the count; bytes / crcs (may be NULL) arrays
 * of at least max_ranks. GT_ERR_IO: no manifest (an incomplete checkpoint)
 * or a missing / truncated shard, naming the file; GT_ERR_MISMATCH: a
 * corrupted manifest. */
gt_status gt_ckpt_manifest_read(const char *folder, int64_t *step, int *nranks, int max_ranks,
                                uint64_t *bytes, uint32_t *header_crcs);

/* Resolves --resume PATH: a checkpoint file (*sharded 0), a sharded folder
 * with a MANIFEST (*sharded 1), or a checkpoint directory, meaning the
 * complete checkpoint with the highest step in it. `out` receives the file
 * or folder. GT_ERR_IO when there is none, saying what was looked for. */
gt_status gt_ckpt_resolve(const char *path, char *out, size_t n, int *sharded);

#ifdef __cplusplus
}
#endif
#endif
