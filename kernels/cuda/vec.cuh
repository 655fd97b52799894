/* 16-byte vector loads and stores for the memory-bound kernels (gelu,
 * residual, cast, encoder, adamw, layernorm, classifier, comm_avg).
 *
 * One thread moves VN consecutive elements with 16-byte accesses (8 x bf16 /
 * fp16, 4 x fp32, 2 x fp64 per access; an array of a wider type than the
 * one that sets VN takes several accesses) instead of one element per load.
 * Only where every array of the access is 16-byte aligned: a model's
 * parameters and gradients sit at element offsets of one flat buffer (2-byte
 * aligned in bf16), so each launcher checks the addresses and takes
 * elements one at a time where they are not (gt_vec_split below, or VN = 1).
 * Per element the arithmetic is the scalar code's, so the bits are the same
 * whichever path runs (kernels.vec_align.cuda compares them); reductions
 * whose order would change are left scalar (layernorm's row statistics, the
 * classifier's online softmax, sumsq).
 *
 * On the emulator the 16-byte loads are real uint4 accesses (UBSan's
 * alignment check sees a misaligned one under ci/sanitize.sh) and every
 * element is still noted for the race check (GT_EMU_NOTE).
 */
#ifndef GT_CUDA_VEC_CUH
#define GT_CUDA_VEC_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cuda/common.cuh" /* gt_to_f32 / gt_from_f32, GT_EMU_NOTE */
#ifdef GT_CUDA_EMU
#define GT_VEC_COUNT() ::gt_emu::count_vec_access()
#else
#define GT_VEC_COUNT() ((void)0)
#endif

#define GT_VEC_BYTES 16

/* Elements of T per 16-byte access. */
template <typename T> struct gt_vec_width {
    static constexpr int value = GT_VEC_BYTES / (int)sizeof(T);
};

/* Raw: v[0..VN) = p[0..VN), p 16-byte aligned, VN * sizeof(T) a multiple
 * of 16 (the copy through a uint4 register is free on a GPU). */
template <int VN, typename T> __device__ __forceinline__ void gt_ldv_raw(const T *p, T (&v)[VN]) {
    static_assert((VN * sizeof(T)) % GT_VEC_BYTES == 0, "whole 16-byte accesses only");
#pragma unroll
    for (int w = 0; w < (int)(VN * sizeof(T) / GT_VEC_BYTES); w++) {
        uint4 u = reinterpret_cast<const uint4 *>(p)[w];
        GT_VEC_COUNT();
        memcpy((char *)v + w * GT_VEC_BYTES, &u, GT_VEC_BYTES);
    }
}
template <int VN, typename T> __device__ __forceinline__ void gt_stv_raw(T *p, const T (&v)[VN]) {
    static_assert((VN * sizeof(T)) % GT_VEC_BYTES == 0, "whole 16-byte accesses only");
#pragma unroll
    for (int w = 0; w < (int)(VN * sizeof(T) / GT_VEC_BYTES); w++) {
        uint4 u;
        memcpy(&u, (const char *)v + w * GT_VEC_BYTES, GT_VEC_BYTES);
        reinterpret_cast<uint4 *>(p)[w] = u;
        GT_VEC_COUNT();
    }
}

/* f[k] = p[i + k] as fp32, k < VN; p + i 16-byte aligned, or VN == 1 (one
 * scalar access: the fallback path of a kernel templated on VN). */
template <int VN, typename T>
__device__ __forceinline__ void gt_ldv(const T *p, size_t i, float (&f)[VN]) {
    if constexpr ((VN * sizeof(T)) % GT_VEC_BYTES == 0) {
        T v[VN];
        gt_ldv_raw<VN>(p + i, v);
#pragma unroll
        for (int k = 0; k < VN; k++) {
            GT_EMU_NOTE(p + i + k, false);
            f[k] = gt_to_f32<T>(v[k]);
        }
    } else {
        static_assert(VN == 1, "a vector access must be whole 16-byte accesses");
        GT_EMU_NOTE(p + i, false);
        f[0] = gt_to_f32<T>(p[i]);
    }
}
/* p[i + k] = f[k] rounded to T (to nearest even), k < VN. */
template <int VN, typename T>
__device__ __forceinline__ void gt_stv(T *p, size_t i, const float (&f)[VN]) {
    if constexpr ((VN * sizeof(T)) % GT_VEC_BYTES == 0) {
        T v[VN];
#pragma unroll
        for (int k = 0; k < VN; k++) {
            GT_EMU_NOTE(p + i + k, true);
            v[k] = gt_from_f32<T>(f[k]);
        }
        gt_stv_raw<VN>(p + i, v);
    } else {
        static_assert(VN == 1, "a vector access must be whole 16-byte accesses");
        GT_EMU_NOTE(p + i, true);
        p[i] = gt_from_f32<T>(f[0]);
    }
}

/* True when every pointer is 16-byte aligned (NULLs pass). */
static inline bool gt_vec_aligned(const void *a, const void *b = NULL, const void *c = NULL,
                                  const void *d = NULL) {
    return (((uintptr_t)a | (uintptr_t)b | (uintptr_t)c | (uintptr_t)d) % GT_VEC_BYTES) == 0;
}

/* An elementwise loop over n elements cut for VN-wide accesses: the vectors
 * cover [head, head + nvec * VN), where every array is 16-byte aligned; the
 * `rest` other elements (at most VN - 1 before, VN - 1 after; all n when
 * the arrays have no common aligned start) go one at a time. */
struct gt_vec_split {
    size_t head, nvec, rest, n;
    int vn;
};

/* Elements of arrays p[j] (element size s[j]) at a common index h are all
 * 16-byte aligned for the smallest h < VN that makes them so; no such h
 * (different misalignments): nvec = 0, every element scalar. */
static inline gt_vec_split gt_vec_split_make(size_t n, int vn, int count, const void *const *p,
                                             const size_t *s) {
    gt_vec_split sp = {n, 0, n, n, vn};
    for (int h = 0; h < vn && (size_t)h <= n; h++) {
        bool ok = true;
        for (int j = 0; j < count && ok; j++)
            ok = ((uintptr_t)p[j] + (uintptr_t)h * s[j]) % GT_VEC_BYTES == 0;
        if (ok) {
            sp.head = (size_t)h;
            sp.nvec = (n - (size_t)h) / (size_t)vn;
            sp.rest = n - sp.nvec * (size_t)vn;
            break;
        }
    }
    return sp;
}

/* The element index of the r-th scalar element, r < sp.rest. */
__device__ __forceinline__ size_t gt_vec_rest_index(const gt_vec_split &sp, size_t r) {
    return r < sp.head ? r : sp.head + sp.nvec * (size_t)sp.vn + (r - sp.head);
}

/* The grid of such a loop: enough threads for the larger of the two parts. */
static inline size_t gt_vec_split_work(const gt_vec_split &sp) {
    return sp.nvec > sp.rest ? sp.nvec : sp.rest;
}

#endif
