/* One op at one shape, set up for both conformance (against the ref
 * backend) and timing: the code shared by the conformance test
 * (kernels/tests/conformance.c) and the kernels suite (suites/kernels.c).
 *
 * A case owns seeded inputs built on the host in fp32 from Philox streams,
 * rounded to the storage dtype, and copied to the backend under test (in
 * that dtype, through copy_to_device: any backend's memory) and to the ref
 * backend (fp32). gt_kcase_check runs the op once on both from that initial
 * state and compares every output with contract 1's tolerance
 * |got - want| <= atol + rtol |want| (gt_dtype_tolerance) widened by the
 * per-op allowances written in each op's descriptor
 * (kernels/conformance/<family>.c), with the reason. Gradients start from random values, not zero, so "accumulates"
 * is checked too; outputs an op overwrites start as garbage with NaN in it
 * (matmul_bwd's dinp, the fused GELU matmuls' outputs), so "overwrites"
 * is checked as well. Every array on both backends sits between guard
 * bands of sentinel values inside its allocation; an op that writes
 * outside its arrays (one past the end, before the start) fails a "guard"
 * check naming the array.
 *
 * Each op is one descriptor (its arrays, call, check, flops and bytes) in
 * kernels/conformance/<family>.c; kernels/conformance.c is the generic
 * driver. Units: flops and bytes are per call of the op on the backend
 * under test (definitions in conformance.c and docs/suites.md). */
#ifndef GT_KERNELS_CONFORMANCE_H
#define GT_KERNELS_CONFORMANCE_H

#include <stddef.h>

#include "engine/backend.h"
#include "engine/dtype.h"
#include "engine/status.h"
#include "kernels/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The dimensions an op reads; each op uses its own subset:
 *   encoder    B, T, C, V          layernorm  N, C
 *   matmul     N, C, OC, bias      attention  B, T, C, NH
 *   matmul_gelu_fwd, matmul_dgelu_bwd  N, C, OC, bias (the linear layer's)
 *   gelu, residual, relu, sumsq  n classifier N, V, Vp
 *   adamw      n, step
 *   conv2d     N, C, H, W, OC, KH, KW, stride, pad, bias
 *   batchnorm  N, C, H, W (HW = H W), train, drift
 *   avgpool    N, C, H, W (HW = H W) */
typedef struct gt_kshape {
    int B, T, C, OC, NH, V, Vp, N;
    size_t n;
    int bias; /* matmul, conv2d: with a bias vector */
    int step; /* adamw: step t >= 1 */
    int H, W, KH, KW, stride, pad; /* images and convolutions */
    int train; /* batchnorm: training mode (batch statistics) */
    /* batchnorm: the input's mean drifts along each channel, 8 at its first
     * value to 16 at its last (sample-major order); label "_drift" */
    int drift;
    /* Every op: each array on the backend under test starts this many of
     * its elements into its allocation (0: at the allocator's alignment).
     * 1 leaves 16-bit arrays 2-byte aligned, as a model's parameter and
     * gradient tensors are at odd offsets into their flat buffers; the
     * label ends in "_off<offset>". */
    int offset;
} gt_kshape;

/* The op's shape as a label without spaces ("N256_C768_OC3072",
 * "N64_C768_OC768_nobias", "n786432", "N8_C64_H32_W32_OC64_K3_s1_p1",
 * "N8_C64_H8_W8_train", "N3_C2_H33_W33_train_drift", "n1000_off1"),
 * written to buf; returns buf. */
const char *gt_kshape_label(gt_op op, const gt_kshape *sh, char *buf, size_t size);

/* ---- the shape grid ------------------------------------------------------------
 * One grid, shared by the conformance tests (kernels/tests/conformance.c)
 * and the kernels suite (suites/kernels.c): per op family a list of
 * shapes (kernels/conformance/grid.c), each saying who runs it. */
typedef enum gt_ktier {
    GT_KTIER_NONE,    /* not the suite: the conformance tests only */
    GT_KTIER_QUICK,   /* the kernels suite at every effort */
    GT_KTIER_DEFAULT, /* the suite from default effort on */
    GT_KTIER_FULL,    /* the suite at full effort only */
} gt_ktier;

typedef struct gt_kgrid_row {
    gt_ktier tier; /* the lowest effort of the kernels suite that times it */
    /* the conformance tests check it (every backend and dtype they run):
     * edges (1, primes, n 0), odd offsets, the model presets' layers, and
     * every QUICK row; not the GPT-2-sized ones, which would make every
     * test run take minutes on the ref oracle */
    int test;
    int huge; /* too slow to time in a quick run */
    gt_kshape sh;
} gt_kgrid_row;

/* Row i (from 0) of the shapes op runs at, in the grid's order: its
 * family's rows less those it does not apply to (a batchnorm row with
 * train 0 is batchnorm_fwd's eval mode, and only that; avgpool skips the
 * drifting-mean rows); NULL past the last, and for an op without a
 * descriptor. */
const gt_kgrid_row *gt_kgrid_row_at(gt_op op, size_t i);

#define GT_KDIMS_MAX 12
/* The dimensions op reads, in a fixed order, as gt_kshape's field names
 * (static: "B", "N", "OC", "bias", "n", "step", "train", ...) and values;
 * returns how many (0 for an op without a descriptor). The kernels suite
 * records them as a case's params. */
int gt_kshape_dims(gt_op op, const gt_kshape *sh, const char *names[GT_KDIMS_MAX],
                   long long values[GT_KDIMS_MAX]);

/* The comparison of one output array. */
typedef struct gt_kcheck {
    /* "out", "dweight", "inplace", ... (static); "guard past out" and the
     * like (the case's, valid until gt_kcase_free) */
    const char *what;
    gt_tolerance tol;       /* rtol, atol used (a per-element bound may add to it) */
    size_t n, bad;          /* elements compared, elements outside the bound */
    size_t first_bad;       /* index of the first bad element */
    double got_first, want_first;
    double max_abs, max_rel; /* max |g - w|, max |g - w| / |w| over w != 0 */
    double worst;            /* max |g - w| / allowed: <= 1 passes (inf on NaN mismatch) */
} gt_kcheck;

#define GT_KCHECK_MAX 6

typedef struct gt_kcase gt_kcase;

/* Builds the case: inputs on `be` in storage dtype `dt` and on `ref`
 * (a ref backend; may be NULL for timing only, then gt_kcase_check is
 * GT_ERR_INVALID). Backward ops whose input is a forward's saved state run
 * that forward here (attention_bwd: each backend's own attention_fwd, its
 * out and an att of that backend's attention_state_floats;
 * layernorm_bwd and batchnorm_bwd: the ref's mean/rstd on both sides, so
 * only the backward is measured). GT_ERR_UNSUPPORTED when the op's slot (or the forward it
 * needs) is empty on `be`, or `be` declines dt; GT_ERR_OOM; GT_ERR_INVALID
 * for a bad shape. */
gt_status gt_kcase_new(gt_backend *be, gt_backend *ref, gt_dtype dt, gt_op op,
                       const gt_kshape *sh, gt_kcase **out);
/* Accepts NULL. */
void gt_kcase_free(gt_kcase *c);

/* Runs the op once on both backends from the initial state (call it before
 * gt_kcase_run) and compares every output: checks[0 .. *n) (at most
 * GT_KCHECK_MAX). Then every array's guard bands, on both sides: when a
 * sentinel changed, one more check, failing, whose `what` lists the
 * damaged bands ("guard past out", "guard before dinp, ref before dinp":
 * "ref" is the oracle's side) and whose first_bad is the first changed
 * element (past: its index, n or more; before: how many elements before
 * the start). GT_ERR_UNSUPPORTED when the backend declined (skip),
 * another status when either run failed (the message says which side). */
gt_status gt_kcase_check(gt_kcase *c, gt_kcheck checks[GT_KCHECK_MAX], int *n);

/* One more call on the backend under test only, for timing; not
 * synchronised (call be->synchronize after a batch). Accumulating
 * backward ops keep accumulating into their gradients, AdamW keeps
 * stepping: the values stay finite for any practical number of calls and
 * the work per call is the same. classifier_bwd runs out of place. */
gt_status gt_kcase_run(gt_kcase *c);

/* matmul_fwd cases on a backend with gemm_library_best (engine/backend.h):
 * the library's own best time for the same GEMM on the case's arrays
 * (out is overwritten), and what was searched. GT_ERR_UNSUPPORTED for
 * other ops and backends without the hook. */
gt_status gt_kcase_library_best(gt_kcase *c, double *best_s, char *what, size_t what_len);

/* Floating-point operations and bytes moved (read + written, the minimum a
 * kernel must touch once) per call; compute-bound: 1 for matmul and conv2d
 * (judged against the SGEMM peak), 0 for memory-bound ops (judged against
 * memory bandwidth). */
double gt_kcase_flops(const gt_kcase *c);
double gt_kcase_bytes(const gt_kcase *c);
/* The distinct bytes one call touches (its working set: a tensor read and
 * written in place counts once, a row read several times once); at most
 * gt_kcase_bytes. The kernels suite picks the memory level a case is judged
 * against by it. */
double gt_kcase_footprint(const gt_kcase *c);
int gt_kcase_compute_bound(const gt_kcase *c);

#ifdef __cplusplus
}
#endif
#endif
