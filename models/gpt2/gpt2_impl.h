/* gpt2's internals shared by its files (gpt2.c: the model, gpt2_tp.c:
 * tensor parallelism). Not for callers: gpt2.h is the interface. */
#ifndef GT_GPT2_IMPL_H
#define GT_GPT2_IMPL_H

#include "engine/comm.h"
#include "models/gpt2/gpt2.h"

enum {
    P_WTE, P_WPE, P_LN1W, P_LN1B, P_QKVW, P_QKVB, P_ATTPROJW, P_ATTPROJB,
    P_LN2W, P_LN2B, P_FCW, P_FCB, P_FCPROJW, P_FCPROJB, P_LNFW, P_LNFB
};


/* Activations kept from the forward for the backward. Those marked (Lk,...)
 * hold Lk = L layers, or one with block recomputation (gpt2.h): the forward
 * of each block writes them there, and the backward re-runs the block's
 * forward from its input (A_ENCODED or A_RES3 of the layer below, kept for
 * every layer) to have them again. */
enum {
    A_ENCODED,  /* (B,T,C) */
    A_LN1,      /* (Lk,B,T,C) */
    A_LN1_MEAN, /* (Lk,B,T) fp32 */
    A_LN1_RSTD, /* (Lk,B,T) fp32 */
    A_QKV,      /* (Lk,B,T,3C) */
    A_ATTY,     /* (Lk,B,T,C) */
    A_ATT,      /* (Lk, att_layer_floats) fp32, backend-owned attention state */
    A_RES2,     /* (Lk,B,T,C) residual after attention */
    A_LN2,      /* (Lk,B,T,C) */
    A_LN2_MEAN, /* (Lk,B,T) */
    A_LN2_RSTD, /* (Lk,B,T) */
    A_FCH,      /* (Lk,B,T,4C) */
    A_FCH_GELU, /* (Lk,B,T,4C) */
    A_RES3,     /* (L,B,T,C) residual after the MLP: the block output */
    A_LNF,      /* (B,T,C) */
    A_LNF_MEAN, /* (B,T) */
    A_LNF_RSTD, /* (B,T) */
    A_LOGITS,   /* (B,T,Vp); dlogits in place during backward */
    A_LOSSES,   /* (B,T) fp32 */
    A_TOKENS,   /* (B,T) int32 inputs */
    A_TARGETS,  /* (B,T) int32 targets */
    /* backward scratch, one layer at a time */
    A_DRES,     /* (B,T,C) gradient flowing along the residual stream */
    A_DLN,      /* (B,T,C) */
    A_DATTY,    /* (B,T,C) */
    A_DQKV,     /* (B,T,3C) */
    A_DFCH,     /* (B,T,4C) */
    A_DFCH_GELU,/* (B,T,4C), only for a backend without the fused GELU matmuls: 0 bytes */
    A_TOKLOC,   /* (B,T) int32: tensor parallel, the tokens as rows of the wte slice */
    A_TPSCR,    /* (T,C): tensor parallel, the embedding backward's discarded half */
    A_COUNT
};

/* The sizes a tensor-parallel rank holds of the split dimensions: qkv's
 * 3C/tp columns, the attention's C/tp channels in NH/tp heads, the MLP's
 * 4C/tp hidden units, the head's Vp/tp vocabulary rows. Without tensor
 * parallelism the whole model's. */
typedef struct gpt2_dims {
    int qkv, att, heads, fc, vocab;
} gpt2_dims;

struct gt_gpt2 {
    gt_gpt2_config cfg;
    gt_backend *be;
    gt_params ps; /* the store: llm.c's tensors, each layer's slices kept together */
    gt_dtype dt;  /* storage of activations, the compute copy and gradients (ps.k.dt) */
    size_t es;    /* its bytes per element */
    int B, T;     /* capacity */
    gt_model_recompute recompute;
    int Lk;       /* layers of the recomputed activations: L, or 1 with block recomputation */
    size_t act_sizes[A_COUNT];     /* bytes */
    int fused_mlp;                 /* the backend has matmul_gelu_fwd and matmul_dgelu_bwd */
    char *act_mem;
    void *act[A_COUNT];
    int last_B, last_T; /* shape of the last forward */
    float *att;         /* attention state of the last forward: act[A_ATT] or att_spill */
    size_t att_stride;  /* its floats per layer */
    float *att_spill;   /* backend memory, when a forward's shape needs more state than */
    size_t att_spill_bytes; /* A_ATT (sized for the capacity shape) holds */
    float *host_losses; /* (B,T) host copy */
    /* pipeline stages: activation arenas of the micro-batches in flight
     * (slot 0 is act_mem; gt_gpt2_set_stage) */
    char *slot_mem[GT_GPT2_MAX_SLOTS];
    int nslots, cur_slot;
    /* a pipeline stage's blocks [stage_lo, stage_hi) (0, 0: every block):
     * the per-layer activations of those only, A_RES3 from block res_base's
     * output on (the stage's input first when stage_lo > 0) */
    int stage_lo, stage_hi, res_base;
    /* tensor parallelism (gpt2.h, "Tensor parallelism"): this rank's share
     * of the split dimensions (the whole model's without), its group */
    gpt2_dims d;
    int tp, tp_rank;      /* ranks in the group (1: none) and this one */
    gt_comm *tp_comm;     /* borrowed; NULL without */
    int32_t *tok_local;   /* (B,T) host: tokens as rows of this rank's wte slice (0 elsewhere) */
    unsigned char *own;   /* (B,T) host: 1 where this rank's slice holds the token */
    double *ce;           /* (3,B,T) host: the vocabulary-parallel loss's per-row sums */
    uint64_t tp_calls, tp_bytes; /* all-reduces inside the group so far, their bytes */
};


/* Activation i in the storage dtype, `off` elements in; F32(i): the fp32 ones
 * (LayerNorm statistics, attention state, losses). */
#define ACT(i, off) ((void *)((char *)m->act[(i)] + (size_t)(off) * m->es))
#define F32(i) ((float *)m->act[(i)])

/* Tensor i (layer l) of the compute weights and of the gradients, in dt. */
static inline void *PW(gt_gpt2 *m, int i, int l) { return gt_params_weight(&m->ps, i, l); }
static inline void *PG(gt_gpt2 *m, int i, int l) { return gt_params_grad(&m->ps, i, l); }

/* ---- gpt2_tp.c ---- */
/* The dims of a model split over tp ranks (tp = 1: the whole model's);
 * GT_ERR_INVALID names the dimension tp does not divide. */
gt_status gt_gpt2_tp_dims(const gt_gpt2_config *c, int tp, gpt2_dims *d);
/* buf (count elements of the model's dtype) summed over the group in
 * place: every rank ends with the same bits. Nothing without tp. */
gt_status gt_gpt2_tp_sum(gt_gpt2 *m, void *buf, size_t count);
/* The vocabulary-parallel embedding: encoded (B,T,C) = wte[tok] + wpe[t],
 * the row from the rank whose slice holds tok, summed over the group. */
gt_status gt_gpt2_tp_encoder_fwd(gt_gpt2 *m, const int32_t *inputs, int B, int T);
/* Its backward from dres (B,T,C, the same on every rank): dwte of the
 * slice's rows, dwpe whole (the same bits on every rank); dln is scratch. */
gt_status gt_gpt2_tp_encoder_bwd(gt_gpt2 *m, int B, int T);
/* The vocabulary-parallel cross-entropy on this rank's logits (B,T,Vp/tp):
 * losses (B,T), and with `backward` dlogits (scaled by dloss) in place. */
gt_status gt_gpt2_tp_classifier(gt_gpt2 *m, int N, float dloss, int backward);
/* The random initialisation of this rank's slices (the same values as one
 * rank's at the same places). */
gt_status gt_gpt2_tp_init_random(gt_gpt2 *m, uint64_t seed);
/* Host buffers of the group's state (tok_local, own, ce) for N tokens. */
gt_status gt_gpt2_tp_alloc(gt_gpt2 *m, int N);

#endif
