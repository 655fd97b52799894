/* The CUDA emulator's device side: what the cuda backend's kernels need
 * from nvcc when the same sources are compiled by the host C++ compiler
 * instead (cmake -DGT_CUDA_EMULATOR=ON, docs/cuda-emulator.md).
 *
 * It exists to run gauntlet's own CUDA kernels where there is no GPU:
 * their index arithmetic, grid-stride loops, shared-memory reductions,
 * warp shuffles and barriers execute for real, one block at a time, each
 * thread on its own fiber, and the results go through the same
 * conformance and determinism tests as a GPU's. It says nothing about
 * speed, about the real libraries (cuBLASLt and cuDNN calls go to
 * stand-ins written from their documentation, NCCL is not emulated) or
 * about what a GPU's memory model allows beyond barriers.
 *
 * Strict where CUDA says "undefined": a shuffle or __syncwarp whose mask
 * names a lane that exited, is missing or is not at a warp operation, a
 * __syncthreads that some threads of the block skip, and a launch outside
 * the device limits end the process with a message naming the kernel.
 *
 * Included by kernels/cuda/common.cuh after the CUDA headers when
 * GT_CUDA_EMU is defined; the sources' launches `k<<<cfg>>>(args)` are
 * rewritten at build time to `k % ::gt_emu::launch_cfg(cfg) % ::gt_emu::args(args)`
 * (ci/cuda_emu/rewrite.cmake). */
#ifndef GT_CUDA_EMU_H
#define GT_CUDA_EMU_H

#include <cuda_runtime.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <tuple>
#include <utility>

/* Static in a kernel = one copy per kernel instantiation, shared by the
 * threads of the block that runs (blocks run one after another). */
#undef __shared__
#define __shared__ static
#undef __launch_bounds__
#define __launch_bounds__(...)

namespace gt_emu {

/* Per emulated thread, as the scheduler (emu.cc) keeps it. */
struct thread_state {
    uint3 tid;
    unsigned lane, warp;
    int state;          /* emu.cc's run states */
    int op;             /* the warp or block operation it waits at */
    unsigned mask;      /* the warp operation's mask */
    int src, width;     /* shuffle: source lane (or xor mask) and width */
    uint64_t value;     /* shuffle: this lane's value, then the result */
    int pred;           /* __syncthreads_or: this thread's predicate, then the result */
};

struct block_ctx {
    uint3 block_idx;
    dim3 block_dim, grid_dim;
};

/* __thread, not thread_local: plain TLS without the C++ wrapper call (which UBSan
 * saw return null on a fiber stack). */
extern __thread thread_state *cur;
extern __thread const block_ctx *cur_block;

enum { OP_SHFL = 1, OP_SHFL_XOR, OP_SYNCWARP, OP_SYNCTHREADS, OP_SYNCTHREADS_OR };

/* Suspends the calling emulated thread until the operation `op` (set up in
 * cur) completes for its warp or block; returns with cur->value / cur->pred
 * holding the result. */
void wait_op(int op);

uint64_t shuffle(unsigned mask, uint64_t v, int src, int width, int op);

/* A global-memory element read (store false) or written (store true)
 * through gt_ld / gt_st (common.cuh): the check for races between the
 * blocks of one launch (emu.cc). Nothing outside a kernel. */
void note_access(const void *p, bool store);
extern bool racecheck; /* this launch checks (GT_EMU_RACECHECK=1): tested inline */

/* 16-byte accesses made by kernels/cuda/vec.cuh's vector loads and stores
 * since the process started (kernels.vec_align.cuda reads it through
 * gt_emu_vec_accesses, emu.cc, to see which path a launch took). */
void count_vec_access(void);

/* Runs `body(thread)` for every thread of every block of the grid. */
typedef void (*body_fn)(void *closure);
void run_grid(const char *name, dim3 grid, dim3 block, size_t shmem, cudaStream_t stream,
              body_fn body, void *closure);

/* The launch's configuration and where it was written (the kernel's name
 * in messages is the launching function's, with file and line). */
struct launch_cfg {
    dim3 grid, block;
    size_t shmem;
    cudaStream_t stream;
    const char *file, *func;
    int line;
    launch_cfg(dim3 g, dim3 b, size_t s = 0, cudaStream_t st = 0,
               const char *fi = __builtin_FILE(), const char *fu = __builtin_FUNCTION(),
               int li = __builtin_LINE())
        : grid(g), block(b), shmem(s), stream(st), file(fi), func(fu), line(li) {}
};

template <typename... A> struct pending {
    void (*fn)(A...);
    launch_cfg cfg;
};

template <typename... A> pending<A...> operator%(void (*fn)(A...), const launch_cfg &c) {
    return pending<A...>{fn, c};
}

template <typename... V> struct arg_pack {
    std::tuple<V...> v;
};
template <typename... V> arg_pack<typename std::decay<V>::type...> args(V &&...v) {
    return arg_pack<typename std::decay<V>::type...>{
        std::tuple<typename std::decay<V>::type...>(std::forward<V>(v)...)};
}

template <typename F, typename Tup> struct closure {
    F fn;
    Tup *tup;
};

template <typename F, typename Tup, size_t... I>
void call_with(F fn, Tup &t, std::index_sequence<I...>) {
    fn(std::get<I>(t)...);
}

template <typename F, typename Tup> void body_thunk(void *p) {
    closure<F, Tup> *c = (closure<F, Tup> *)p;
    /* each thread gets its own copy of the arguments, as on a GPU */
    Tup copy = *c->tup;
    call_with(c->fn, copy, std::make_index_sequence<std::tuple_size<Tup>::value>{});
}

template <typename... A, typename... V> void operator%(const pending<A...> &p, arg_pack<V...> a) {
    typedef std::tuple<V...> tup;
    closure<void (*)(A...), tup> c{p.fn, &a.v};
    char name[256];
    const char *base = strrchr(p.cfg.file, '/');
    snprintf(name, sizeof name, "the kernel launched by %s (%s:%d)", p.cfg.func,
             base ? base + 1 : p.cfg.file, p.cfg.line);
    run_grid(name, p.cfg.grid, p.cfg.block, p.cfg.shmem, p.cfg.stream,
             &body_thunk<void (*)(A...), tup>, &c);
}

template <typename T> static inline uint64_t to_bits(T v) {
    static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
    uint64_t b = 0;
    memcpy(&b, &v, sizeof v);
    return b;
}
template <typename T> static inline T from_bits(uint64_t b) {
    T v;
    memcpy(&v, &b, sizeof v);
    return v;
}

} // namespace gt_emu

#define threadIdx (::gt_emu::cur->tid)
#define blockIdx (::gt_emu::cur_block->block_idx)
#define blockDim (::gt_emu::cur_block->block_dim)
#define gridDim (::gt_emu::cur_block->grid_dim)
#ifndef warpSize
#define warpSize 32
#endif

static inline void __syncthreads(void) { ::gt_emu::wait_op(::gt_emu::OP_SYNCTHREADS); }
static inline int __syncthreads_or(int pred) {
    ::gt_emu::cur->pred = pred != 0;
    ::gt_emu::wait_op(::gt_emu::OP_SYNCTHREADS_OR);
    return ::gt_emu::cur->pred;
}
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
    ::gt_emu::shuffle(mask, 0, 0, 32, ::gt_emu::OP_SYNCWARP);
}
template <typename T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
    return ::gt_emu::from_bits<T>(
        ::gt_emu::shuffle(mask, ::gt_emu::to_bits(v), src, width, ::gt_emu::OP_SHFL));
}
template <typename T>
static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
    return ::gt_emu::from_bits<T>(
        ::gt_emu::shuffle(mask, ::gt_emu::to_bits(v), lane_mask, width, ::gt_emu::OP_SHFL_XOR));
}

/* Device math the host library lacks. */
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
/* glibc declares __expf and __logf itself (the same functions as expf, logf). */
#define GT_EMU_MINMAX(T)                                                                           \
    static inline T min(T a, T b) { return a < b ? a : b; }                                        \
    static inline T max(T a, T b) { return a > b ? a : b; }
GT_EMU_MINMAX(int)
GT_EMU_MINMAX(unsigned)
GT_EMU_MINMAX(long)
GT_EMU_MINMAX(unsigned long)
GT_EMU_MINMAX(long long)
GT_EMU_MINMAX(unsigned long long)
#undef GT_EMU_MINMAX
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
static inline float __fdividef(float a, float b) { return a / b; }
/* fp64 -> fp32 rounded to nearest even: the host's conversion under the
 * default rounding mode. */
static inline float __double2float_rn(double x) { return (float)x; }
template <typename T> static inline T __ldg(const T *p) { return *p; }

#endif
