/* The CUDA emulator's scheduler and its CUDA runtime (gt_emu.h says what
 * it is for). One emulated device whose memory is host memory; every
 * stream is the null stream and every call completes before it returns.
 *
 * Scheduling: a block's threads run on fibers, one at a time, each until
 * it reaches a barrier, a warp operation or its end. A warp operation
 * completes when the last lane of its mask arrives, the block barrier when
 * the last thread does; a thread that waits hands the cpu straight to the
 * next released or not yet started thread. When none is left and some
 * still wait, the block is stuck: a fatal error listing where each thread
 * waits. The order in which the threads of a block start (and released
 * lanes go on) changes from launch to launch (forward or backward from a
 * rotating start; a warp whose operation completes goes on after the
 * threads already released, or before them, racing ahead to its next
 * barrier), so a kernel whose result depends on it (a race between
 * barriers) gives different bits run to run, which the
 * determinism tests compare. Blocks run one at a time, in an order that
 * changes from launch to launch too (a race between blocks).
 * GT_EMU_ORDER=forward pins both orders. GT_EMU_RACECHECK=1 also stops a
 * block that reads or writes an element another block of the launch wrote,
 * or writes one another block read (note_access, below). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "ci/cuda_emu/gt_emu.h"

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

/* AddressSanitizer must be told when execution moves to another stack
 * (the sanitize build runs the emulator too, ci/sanitize.sh). */
#if defined(__SANITIZE_ADDRESS__)
#define GT_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GT_EMU_ASAN 1
#endif
#endif
#ifdef GT_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define GT_EMU_START_SWITCH(save, bottom, size) __sanitizer_start_switch_fiber((save), (bottom), (size))
#define GT_EMU_FINISH_SWITCH(save, bottom, size) __sanitizer_finish_switch_fiber((save), (bottom), (size))
#else
#define GT_EMU_START_SWITCH(save, bottom, size) ((void)0)
#define GT_EMU_FINISH_SWITCH(save, bottom, size) ((void)0)
#endif

namespace gt_emu {

__thread thread_state *cur;
__thread const block_ctx *cur_block;

[[noreturn]] static void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gauntlet cuda emulator: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
    abort();
}

/* ---- fibers ------------------------------------------------------------------ */

enum { ST_RUNNABLE = 0, ST_WAITING, ST_DONE };

#ifdef GT_EMU_ASAN
static const size_t STACK_BYTES = 256 * 1024; /* ASan's redzones take room */
#else
static const size_t STACK_BYTES = 128 * 1024;
#endif

#if defined(__x86_64__)
/* Saves the callee-saved registers on the current stack, stores the stack
 * pointer in *save and continues on `to`. The floating-point control words
 * (MXCSR, x87) are not switched: every fiber runs under the launching
 * thread's, and kernels never change them. */
extern "C" void gt_emu_switch(void **save, void *to);
asm(R"(
    .text
    .globl gt_emu_switch
    .type gt_emu_switch,@function
gt_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size gt_emu_switch, .-gt_emu_switch
    .section .note.GNU-stack,"",@progbits
    .text
)");;
#endif

/* A saved execution context: a stack pointer on x86-64, a ucontext elsewhere. */
struct ctx {
#if defined(__x86_64__)
    void *sp = nullptr;
#else
    ucontext_t uc;
#endif
};

static inline void ctx_switch(ctx *save, ctx *to) {
#if defined(__x86_64__)
    gt_emu_switch(&save->sp, to->sp);
#else
    swapcontext(&save->uc, &to->uc);
#endif
}

struct fiber {
    char *stack = nullptr;
    void *asan_fake = nullptr; /* the fiber's fake stack while it is switched out */
    ctx c;
};

/* Stacks are kept from launch to launch (the pool grows to the largest
 * block seen).
 *
 * Threads run on worker fibers: a worker starts the block's threads one
 * after another, in this launch's order, on its own stack, until one of
 * them waits at a barrier or warp operation. That thread keeps the worker
 * (its stack holds the thread's frames) and a new worker starts the
 * threads after it; when a waiting thread is released and ends, its worker
 * goes on with threads not yet started, if any, and otherwise ends. A
 * kernel without barriers therefore runs a whole block on one stack with
 * two switches, not two per thread.
 *
 * Operations complete when their last participant arrives: the lane that
 * completes a warp operation (every lane of its mask waits at it) or the
 * thread that completes a block barrier computes every participant's
 * result, queues the others as released and goes on without a switch. A
 * thread that has to wait switches straight to the next work: the oldest
 * released thread, else a new worker, else the scheduler, which is only
 * reached when every thread has ended or none can go on. A warp's shuffle
 * thus costs one switch per lane, not two plus a scan of the block. */
static thread_local std::vector<fiber> *pool;

struct sched {
    std::vector<thread_state> threads;
    std::vector<fiber> &fibers;
    std::vector<unsigned> free_fibers; /* indices into fibers, taken from the back */
    std::vector<int> fiber_of;         /* per thread: its worker, -1 when not running */
    std::vector<unsigned> order;       /* this block's start order */
    size_t next = 0;                   /* order[next] is the next thread to start */
    bool backward = false;             /* this launch releases lanes high to low */
    bool warp_first = false;           /* released lanes go to the front of the queue */
    unsigned long long bits = 0;       /* the launch's schedule (schedule_bits) */
    explicit sched(std::vector<fiber> &f) : fibers(f) {}
    /* released threads, first in first out; a thread is queued at most once */
    std::vector<unsigned> ready;
    size_t ready_head = 0, ready_count = 0;
    std::vector<unsigned> warp_arrived; /* per warp: the lanes waiting at a warp operation */
    size_t at_barrier = 0;              /* threads waiting at the block barrier */
    int barrier_op = 0;
    int barrier_pred = 0;
    size_t done = 0; /* threads that ended */
    block_ctx block;
    body_fn body = nullptr;
    void *closure = nullptr;
    const char *kernel = "";
    unsigned cur_fiber = 0;  /* the worker being started */
    bool from_sched = false; /* the switch in progress left the scheduler's stack */
    ctx sched_ctx;
    ctx gone; /* where an ending worker's context goes, never to be resumed */
    const void *sched_bottom = nullptr; /* the scheduler's stack, for ASan */
    size_t sched_size = 0;
    void *sched_fake = nullptr;
};

static thread_local sched *S;

static void fiber_main();

static void fiber_prepare(sched *s, unsigned i) {
    fiber &f = s->fibers[i];
    if (!f.stack) {
        void *m = mmap(nullptr, STACK_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) fatal("cannot map a fiber stack: %s", strerror(errno));
        /* the lowest page stays unmapped: an overflow faults */
        mprotect(m, 4096, PROT_NONE);
        f.stack = (char *)m;
    }
#ifdef GT_EMU_ASAN
    /* a worker that ran out of threads never returned from its frames: their
     * redzones are still poisoned where the new worker's frames go */
    ASAN_UNPOISON_MEMORY_REGION(f.stack + 4096, STACK_BYTES - 4096);
#endif
#if defined(__x86_64__)
    /* Tops staggered by a cache line per fiber: stacks 2^k bytes apart would
     * put every fiber's hot frames in the same cache sets. */
    uintptr_t top = ((uintptr_t)(f.stack + STACK_BYTES) & ~(uintptr_t)15) - 64 - (i % 61) * 64;
    /* the return address sits 16-byte aligned, as after a call */
    uint64_t *ret = (uint64_t *)top;
    ret[0] = (uint64_t)(uintptr_t)&fiber_main;
    ret[1] = 0;
    uint64_t *sp = ret - 6; /* r15, r14, r13, r12, rbx, rbp */
    memset(sp, 0, 6 * sizeof(uint64_t));
    f.c.sp = sp;
#else
    getcontext(&f.c.uc);
    f.c.uc.uc_stack.ss_sp = f.stack + 4096;
    f.c.uc.uc_stack.ss_size = STACK_BYTES - 4096;
    f.c.uc.uc_link = nullptr;
    makecontext(&f.c.uc, (void (*)())fiber_main, 0);
#endif
}

static void push_ready(sched *s, unsigned i) {
    size_t n = s->ready.size(), at = s->ready_head + s->ready_count++;
    s->ready[at >= n ? at - n : at] = i;
}

static void push_ready_front(sched *s, unsigned i) {
    s->ready_head = s->ready_head ? s->ready_head - 1 : s->ready.size() - 1;
    s->ready[s->ready_head] = i;
    s->ready_count++;
}

/* Leaves the running fiber `self` (null: a worker that ran out of threads
 * and never comes back) for the next work: the oldest released thread,
 * else a new worker for the threads not started yet, else the scheduler.
 * Returns when `self` is switched to again. */
static void leave(sched *s, fiber *self) {
    ctx *to;
    const void *bottom;
    size_t size;
    if (s->ready_count) {
        unsigned i = s->ready[s->ready_head];
        s->ready_head = s->ready_head + 1 == s->ready.size() ? 0 : s->ready_head + 1;
        s->ready_count--;
        cur = &s->threads[i];
        fiber &f = s->fibers[(unsigned)s->fiber_of[i]];
        to = &f.c;
        bottom = f.stack + 4096;
        size = STACK_BYTES - 4096;
    } else if (s->next < s->order.size()) {
        if (s->free_fibers.empty()) fatal("no free fiber for a worker of %s", s->kernel);
        unsigned fi = s->free_fibers.back();
        s->free_fibers.pop_back();
        fiber_prepare(s, fi);
        s->cur_fiber = fi;
        fiber &f = s->fibers[fi];
        to = &f.c;
        bottom = f.stack + 4096;
        size = STACK_BYTES - 4096;
    } else {
        cur = nullptr;
        to = &s->sched_ctx;
        bottom = s->sched_bottom;
        size = s->sched_size;
    }
    s->from_sched = false;
    (void)bottom;
    (void)size;
    if (!self) {
        /* no save slot: ASan may drop the ending worker's fake stack */
        GT_EMU_START_SWITCH(nullptr, bottom, size);
        ctx_switch(&s->gone, to);
        fatal("a finished worker was resumed");
    }
    GT_EMU_START_SWITCH(&self->asan_fake, bottom, size);
    ctx_switch(&self->c, to);
    GT_EMU_FINISH_SWITCH(self->asan_fake, nullptr, nullptr);
}

static void fiber_main() {
    sched *s = S;
    {
        const void *bottom = nullptr;
        size_t size = 0;
        GT_EMU_FINISH_SWITCH(nullptr, &bottom, &size);
        if (s->from_sched) {
            s->sched_bottom = bottom;
            s->sched_size = size;
        }
    }
    unsigned me = s->cur_fiber;
    while (s->next < s->order.size()) {
        unsigned i = s->order[s->next++];
        cur = &s->threads[i];
        s->fiber_of[i] = (int)me;
        s->body(s->closure); /* may wait: then this worker is suspended inside */
        s->threads[i].state = ST_DONE;
        s->fiber_of[i] = -1;
        s->done++;
    }
    leave(s, nullptr);
}

static const char *op_name(int op) {
    switch (op) {
    case OP_SHFL:
        return "__shfl_sync";
    case OP_SHFL_XOR:
        return "__shfl_xor_sync";
    case OP_SYNCWARP:
        return "__syncwarp";
    case OP_SYNCTHREADS:
        return "__syncthreads";
    case OP_SYNCTHREADS_OR:
        return "__syncthreads_or";
    }
    return "?";
}

static bool is_warp_op(int op) { return op == OP_SHFL || op == OP_SHFL_XOR || op == OP_SYNCWARP; }

[[noreturn]] static void stuck(sched *s, const char *why, unsigned who) {
    const thread_state &w = s->threads[who];
    fprintf(stderr,
            "gauntlet cuda emulator: %s: block (%u,%u,%u) of %s, thread (%u,%u,%u) (warp %u lane "
            "%u)\n",
            why, s->block.block_idx.x, s->block.block_idx.y, s->block.block_idx.z, s->kernel,
            w.tid.x, w.tid.y, w.tid.z, w.warp, w.lane);
    unsigned shown = 0;
    for (size_t i = 0; i < s->threads.size() && shown < 64; i++) {
        const thread_state &t = s->threads[i];
        if (t.warp != w.warp && shown >= 32) continue;
        fprintf(stderr, "  thread %zu (warp %u lane %u): %s", i, t.warp, t.lane,
                t.state == ST_DONE ? "exited" : t.state == ST_RUNNABLE ? "runnable" : op_name(t.op));
        if (t.state == ST_WAITING && is_warp_op(t.op)) fprintf(stderr, " mask 0x%08x", t.mask);
        fprintf(stderr, "\n");
        shown++;
    }
    fflush(stderr);
    abort();
}

/* Thread `me` arrives at a warp operation (its mask, value, source and
 * width are in its state). Returns true when its arrival completed the
 * operation: every lane's result is in place, the others are queued. */
static bool warp_arrive(sched *s, unsigned me, int op) {
    thread_state &t = s->threads[me];
    t.state = ST_WAITING;
    t.op = op;
    unsigned base = me & ~31u, l = me & 31u;
    size_t n = s->threads.size();
    unsigned lanes = (unsigned)(n - base < 32 ? n - base : 32);
    unsigned m = t.mask;
    if (!(m & (1u << l))) stuck(s, "a warp operation whose mask leaves out its own lane", me);
    if (lanes < 32 && (m >> lanes)) stuck(s, "a warp mask names a lane the block does not have", me);
    unsigned &arrived = s->warp_arrived[me >> 5];
    arrived |= 1u << l;
    if ((arrived & m) != m) return false;
    /* every lane of m waits at a warp operation: the same one? */
    uint64_t out[32];
    for (unsigned rest = m; rest; rest &= rest - 1) {
        unsigned j = (unsigned)__builtin_ctz(rest);
        const thread_state &u = s->threads[base + j];
        if (u.op != op || u.mask != m)
            stuck(s, "lanes of one mask wait at different warp operations", me);
    }
    for (unsigned rest = m; rest; rest &= rest - 1) {
        unsigned j = (unsigned)__builtin_ctz(rest);
        const thread_state &u = s->threads[base + j];
        if (op == OP_SYNCWARP) {
            out[j] = 0;
            continue;
        }
        int w = u.width;
        if (w <= 0 || w > 32 || (w & (w - 1)))
            stuck(s, "a shuffle width that is not a power of 2 up to 32", base + j);
        unsigned seg = j & ~(unsigned)(w - 1);
        unsigned from;
        if (op == OP_SHFL) {
            from = seg + ((unsigned)u.src & (unsigned)(w - 1));
        } else {
            from = j ^ (unsigned)u.src;
            if ((from & ~(unsigned)(w - 1)) > seg) from = j; /* a later group: own value */
        }
        if (from >= 32 || !(m & (1u << from)))
            stuck(s, "a shuffle reads a lane outside its mask", base + j);
        out[j] = s->threads[base + from].value;
    }
    arrived &= ~m;
    /* the released lanes run after every thread already released, or
     * (warp_first) before them: then the warp races ahead of the others to
     * its next barrier, the schedule that shows a missing barrier between
     * warps (lanes pushed to the front in reverse keep their order) */
    for (unsigned k = 0; k < 32; k++) {
        unsigned j = s->backward != s->warp_first ? 31 - k : k;
        if (!(m & (1u << j))) continue;
        thread_state &u = s->threads[base + j];
        u.value = out[j];
        u.state = ST_RUNNABLE;
        if (base + j == me) continue;
        if (s->warp_first) push_ready_front(s, base + j);
        else push_ready(s, base + j);
    }
    return true;
}

/* Thread `me` arrives at __syncthreads(_or). Returns true when it was the
 * last: every thread is released (the others queued in start order). A
 * thread that exited keeps the count short: that is a stuck block. */
static bool block_arrive(sched *s, unsigned me, int op) {
    thread_state &t = s->threads[me];
    t.state = ST_WAITING;
    t.op = op;
    if (s->at_barrier && s->barrier_op != op) stuck(s, "threads wait at different block barriers", me);
    s->barrier_op = op;
    s->barrier_pred |= t.pred;
    size_t n = s->threads.size();
    if (++s->at_barrier < n) return false;
    for (size_t k = 0; k < n; k++) {
        unsigned i = s->order[k];
        thread_state &u = s->threads[i];
        u.state = ST_RUNNABLE;
        if (op == OP_SYNCTHREADS_OR) u.pred = s->barrier_pred;
        if (i != me) push_ready(s, i);
    }
    s->at_barrier = 0;
    s->barrier_op = 0;
    s->barrier_pred = 0;
    return true;
}

void wait_op(int op) {
    sched *s = S;
    thread_state *t = cur;
    if (!s || !t) fatal("a barrier or warp operation outside a kernel");
    unsigned me = (unsigned)(t - s->threads.data());
    if (is_warp_op(op) ? warp_arrive(s, me, op) : block_arrive(s, me, op)) return;
    leave(s, &s->fibers[(unsigned)s->fiber_of[me]]);
    /* released and switched to: cur is this thread again */
}

uint64_t shuffle(unsigned mask, uint64_t v, int src, int width, int op) {
    thread_state *t = cur;
    if (!t) fatal("a warp operation outside a kernel");
    t->mask = mask;
    t->value = v;
    t->src = src;
    t->width = width;
    wait_op(op);
    return cur->value;
}

/* No thread can go on and some wait: says why (operations complete as
 * their last participant arrives, so what is left waits for a thread that
 * exited, that waits elsewhere, or for nothing that will come). */
[[noreturn]] static void diagnose(sched *s) {
    size_t n = s->threads.size();
    for (size_t i = 0; i < n; i++) {
        const thread_state &t = s->threads[i];
        if (t.state != ST_WAITING || !is_warp_op(t.op)) continue;
        size_t base = i & ~(size_t)31;
        for (unsigned rest = t.mask; rest; rest &= rest - 1) {
            const thread_state &u = s->threads[base + (unsigned)__builtin_ctz(rest)];
            if (u.state == ST_DONE) stuck(s, "a warp mask names a lane that has exited", (unsigned)i);
            if (u.state == ST_WAITING && !is_warp_op(u.op))
                stuck(s, "a warp operation waits for lanes held at __syncthreads", (unsigned)i);
        }
    }
    if (s->at_barrier && s->done)
        for (size_t i = 0; i < n; i++)
            if (s->threads[i].state == ST_DONE)
                stuck(s, "a thread exited while others wait at __syncthreads", (unsigned)i);
    for (size_t i = 0; i < n; i++)
        if (s->threads[i].state == ST_WAITING)
            stuck(s, "no thread can go on (a deadlock)", (unsigned)i);
    fatal("the scheduler lost track of the threads of %s", s->kernel);
}

static thread_local cudaError_t last_error = cudaSuccess;
static unsigned long long launches;
static int order_mode = -1; /* -1 unread, 0 rotate, 1 forward */

/* This launch's schedule: bits of a hash of the launch count (splitmix64's
 * finaliser), each choice from its own bits, so that two runs of the same op
 * sequence (the determinism tests) get different schedules whatever its
 * length, and no choice follows another's. 0 under GT_EMU_ORDER=forward. */
static unsigned long long schedule_bits(void) {
    if (order_mode == 1) return 0;
    unsigned long long z = launches + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- races between blocks ------------------------------------------------------
 * With GT_EMU_RACECHECK=1 (read at every launch; kernels.determinism.cuda
 * sets it: it costs about a quarter more time), elements read and written
 * through gt_ld / gt_st go through a direct-mapped table of what this
 * launch did to each address: its last store (launch, block) and its
 * readers (launch, block, or several blocks). On a GPU the blocks of a launch
 * may run in any order or at once, so each of these is a race, fatal, naming
 * both blocks: a load or a store of an address another block stored to (a
 * read-modify-write loses an update), and a store to an address another
 * block loaded (that block may read the old value or the new). A store
 * takes an entry held by another address; a load takes one only when it
 * holds no store of this launch. An entry lost that way can hide a race,
 * never invent one. */
namespace {
const uint32_t MANY_BLOCKS = 0xffffffffu; /* rblock: two or more blocks read it */
struct shadow_entry {
    uintptr_t addr;
    uint32_t launch;  /* (launches + 1) mod 2^32 of the last store: 0 never matches */
    uint32_t block;   /* its linear block index (mod 2^32) */
    uint32_t rlaunch; /* the same for the loads */
    uint32_t rblock;  /* the one block that loaded it, or MANY_BLOCKS */
};
const unsigned SHADOW_BITS = 20;
shadow_entry *shadow; /* 1 << SHADOW_BITS entries, zeroed */
} // namespace

bool racecheck; /* this launch checks (GT_EMU_RACECHECK=1) */

static void block_coords(unsigned long long b, char *buf, size_t len) {
    const dim3 &g = cur_block->grid_dim;
    snprintf(buf, len, "(%llu,%llu,%llu)", b % g.x, b / g.x % g.y,
             b / ((unsigned long long)g.x * g.y));
}

void note_access(const void *p, bool store) {
    if (!racecheck || !S || !cur_block) return;
    if (!shadow) {
        shadow = (shadow_entry *)calloc((size_t)1 << SHADOW_BITS, sizeof *shadow);
        if (!shadow) fatal("no memory for the race check's table");
    }
    const uint3 &bi = cur_block->block_idx;
    const dim3 &g = cur_block->grid_dim;
    uint32_t blk =
        (uint32_t)(bi.x + (unsigned long long)g.x * (bi.y + (unsigned long long)g.y * bi.z));
    uintptr_t a = (uintptr_t)p;
    /* by address, not by a hash of it: neighbouring elements take
     * neighbouring entries, so a kernel's sweep through an array stays in
     * cache (a hashed index made the gpu tests half again slower) */
    shadow_entry &e = shadow[(size_t)(a >> 1) & (((size_t)1 << SHADOW_BITS) - 1)];
    uint32_t now = (uint32_t)(launches + 1);
    if (now == 0) now = 1;
    if (e.addr != a) {
        if (!store && e.launch == now) return; /* keep this launch's store */
        e.addr = a;
        e.launch = e.rlaunch = 0;
    }
    char mine[64], theirs[64];
    if (e.launch == now && e.block != blk) {
        block_coords(blk, mine, sizeof mine);
        block_coords(e.block, theirs, sizeof theirs);
        fatal("%s: block %s %s address %p, which block %s wrote in the same launch: a race "
              "between blocks (CUDA orders no block before another; on a GPU they may run at "
              "once and a read-modify-write loses an update)",
              S->kernel, mine, store ? "writes" : "reads", p, theirs);
    }
    if (!store) {
        if (e.rlaunch != now) {
            e.rlaunch = now;
            e.rblock = blk;
        } else if (e.rblock != blk) {
            e.rblock = MANY_BLOCKS;
        }
        return;
    }
    if (e.rlaunch == now && e.rblock != blk) {
        block_coords(blk, mine, sizeof mine);
        if (e.rblock == MANY_BLOCKS)
            snprintf(theirs, sizeof theirs, "two or more blocks");
        else
            block_coords(e.rblock, theirs, sizeof theirs);
        fatal("%s: block %s writes address %p, which %s%s read in the same launch: a race "
              "between blocks (CUDA orders no block before another; on a GPU the reader may "
              "see the old value or the new)",
              S->kernel, mine, p, e.rblock == MANY_BLOCKS ? "" : "block ", theirs);
    }
    e.launch = now;
    e.block = blk;
}

static void run_block(sched *s) {
    size_t n = s->threads.size();
    s->free_fibers.clear();
    for (size_t i = n; i-- > 0;) s->free_fibers.push_back((unsigned)i); /* 0 taken first */
    s->fiber_of.assign(n, -1);
    for (size_t i = 0; i < n; i++) {
        thread_state &t = s->threads[i];
        t.state = ST_RUNNABLE;
        t.op = 0;
        t.pred = 0;
    }
    s->ready.assign(n, 0);
    s->ready_head = s->ready_count = 0;
    s->warp_arrived.assign((n + 31) / 32, 0);
    s->at_barrier = 0;
    s->barrier_op = s->barrier_pred = 0;
    s->done = 0;
    /* this launch's start order: forward or backward from a rotating start;
     * in half the launches a warp whose operation completes runs ahead */
    unsigned long long h = s->bits;
    size_t start = (size_t)((h & 0xffffffffu) % n);
    s->backward = (h >> 63) & 1;
    s->warp_first = (h >> 62) & 1;
    s->order.resize(n);
    for (size_t k = 0; k < n; k++)
        s->order[k] = (unsigned)(s->backward ? (start + n - k) % n : (start + k) % n);
    s->next = 0;
    /* the first worker; the scheduler is switched back to only when every
     * thread has ended or none can go on */
    unsigned fi = s->free_fibers.back();
    s->free_fibers.pop_back();
    fiber_prepare(s, fi);
    s->cur_fiber = fi;
    fiber &f = s->fibers[fi];
    s->from_sched = true;
    GT_EMU_START_SWITCH(&s->sched_fake, f.stack + 4096, STACK_BYTES - 4096);
    ctx_switch(&s->sched_ctx, &f.c);
    GT_EMU_FINISH_SWITCH(s->sched_fake, nullptr, nullptr);
    cur = nullptr;
    if (s->done == n) return;
    diagnose(s);
}

void run_grid(const char *name, dim3 grid, dim3 block, size_t shmem, cudaStream_t stream,
              body_fn body, void *closure) {
    (void)stream;
    if (order_mode < 0) {
        const char *o = getenv("GT_EMU_ORDER");
        order_mode = (o && strcmp(o, "forward") == 0) ? 1 : 0;
    }
    unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (block.x == 0 || block.y == 0 || block.z == 0 || block.x > 1024 || block.y > 1024 ||
        block.z > 64 || threads > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
        grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535) {
        last_error = cudaErrorInvalidConfiguration;
        return;
    }
    if (shmem > 48 * 1024) {
        last_error = cudaErrorInvalidValue;
        return;
    }
    if (S) fatal("%s was launched from inside a kernel", name);
    if (!pool) pool = new std::vector<fiber>();
    if (pool->size() < threads) pool->resize(threads);
    sched s(*pool);
    s.threads.resize(threads);
    s.body = body;
    s.closure = closure;
    s.kernel = name;
    s.block.block_dim = block;
    s.block.grid_dim = grid;
    for (unsigned z = 0, i = 0; z < block.z; z++)
        for (unsigned y = 0; y < block.y; y++)
            for (unsigned x = 0; x < block.x; x++, i++) {
                thread_state &t = s.threads[i];
                memset(&t, 0, sizeof t);
                t.tid = make_uint3(x, y, z);
                t.lane = i % 32;
                t.warp = i / 32;
            }
    S = &s;
    cur_block = &s.block;
    /* The blocks run one after another, in an order that changes from
     * launch to launch as the threads' does: forward or backward from a
     * rotating start (other bits of the launch count's hash). CUDA promises
     * no order between blocks, so a kernel whose blocks write what other
     * blocks of the launch read or write gives different bits run to run. */
    unsigned long long nb = (unsigned long long)grid.x * grid.y * grid.z;
    const char *rc = getenv("GT_EMU_RACECHECK");
    racecheck = rc && strcmp(rc, "1") == 0;
    s.bits = schedule_bits();
    bool back = (s.bits >> 61) & 1;
    unsigned long long first = ((s.bits >> 32) & 0x1fffffffu) % nb;
    for (unsigned long long k = 0; k < nb; k++) {
        unsigned long long b = back ? (first + nb - k) % nb : (first + k) % nb;
        unsigned long long bxy = (unsigned long long)grid.x * grid.y;
        s.block.block_idx = make_uint3((unsigned)(b % grid.x), (unsigned)(b / grid.x % grid.y),
                                       (unsigned)(b / bxy));
        run_block(&s);
    }
    launches++;
    S = nullptr;
    cur_block = nullptr;
}

} // namespace gt_emu

/* ---- the CUDA runtime ------------------------------------------------------- */

using gt_emu::last_error;

namespace {
std::mutex mem_mu;
std::map<uintptr_t, size_t> allocations; /* device allocations: start -> bytes */
int current_device = 0;

cudaError_t fail(cudaError_t e) {
    last_error = e;
    return e;
}

/* Whether [p, p + n) lies inside one cudaMalloc'd allocation (n = 0: p does). */
bool in_device(const void *p, size_t n) {
    std::lock_guard<std::mutex> g(mem_mu);
    uintptr_t a = (uintptr_t)p;
    auto it = allocations.upper_bound(a);
    if (it == allocations.begin()) return false;
    --it;
    size_t len = it->second ? it->second : 1;
    return a >= it->first && a - it->first < len && (n == 0 || n <= len - (a - it->first));
}
bool is_device(const void *p) { return in_device(p, 0); }

/* What a GPU does with a copy whose pointers do not match its kind: refuse
 * it (cudaErrorInvalidValue). Printed too: on the emulator both kinds of
 * memory are host memory, so the copy would otherwise just work. */
cudaError_t check_copy(void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
    if (n == 0 || kind == cudaMemcpyDefault) return cudaSuccess;
    bool dev_dst = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    bool dev_src = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    const char *bad = nullptr;
    if (dev_dst && !in_device(dst, n)) bad = "the destination is not device memory";
    else if (!dev_dst && is_device(dst)) bad = "the destination is device memory";
    else if (dev_src && !in_device(src, n)) bad = "the source is not device memory";
    else if (!dev_src && is_device(src)) bad = "the source is device memory";
    if (!bad) return cudaSuccess;
    fprintf(stderr, "gauntlet cuda emulator: cudaMemcpy of %zu bytes, kind %d: %s\n", n,
            (int)kind, bad);
    return fail(cudaErrorInvalidValue);
}

double now_ms() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct emu_event {
    double ms;
    bool recorded;
    cudaStream_t held; /* recorded on a held stream: not complete while it is held */
};
struct emu_stream {
    int dummy;
};

/* Streams a library stand-in holds (gt_emu_stream_hold): their work never
 * completes until released, as on a GPU whose kernel waits for a peer.
 * Never destroyed: a watchdog's exit() may run static destructors while
 * another thread still polls a stream. */
std::mutex held_mu;
std::set<cudaStream_t> &held_streams = *new std::set<cudaStream_t>;
bool stream_held(cudaStream_t s) {
    std::lock_guard<std::mutex> g(held_mu);
    return held_streams.count(s) != 0;
}
} // namespace

/* For the stand-ins (nccl_emu.cc, GT_EMU_NCCL_HANG): hold or release a stream. */
void gt_emu_stream_hold(cudaStream_t s, bool held) {
    std::lock_guard<std::mutex> g(held_mu);
    if (held)
        held_streams.insert(s);
    else
        held_streams.erase(s);
}

extern "C" {

cudaError_t cudaGetLastError(void) {
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError(void) { return last_error; }

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess:
        return "no error";
    case cudaErrorInvalidValue:
        return "invalid argument";
    case cudaErrorMemoryAllocation:
        return "out of memory";
    case cudaErrorInvalidConfiguration:
        return "invalid configuration argument";
    case cudaErrorInvalidDevice:
        return "invalid device ordinal";
    default:
        return "an error of the CUDA emulator";
    }
}
const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess:
        return "cudaSuccess";
    case cudaErrorInvalidValue:
        return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
        return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
        return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice:
        return "cudaErrorInvalidDevice";
    default:
        return "cudaErrorUnknown";
    }
}

cudaError_t cudaGetDeviceCount(int *n) {
    *n = 1;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) {
    if (d != 0) return fail(cudaErrorInvalidDevice);
    current_device = d;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int *d) {
    *d = current_device;
    return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int *v) {
    *v = CUDART_VERSION;
    return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int *v) {
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d) {
    if (d != 0) return fail(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "gauntlet CUDA emulator (CPU, not a GPU)");
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = 4;
    p->totalGlobalMem = (size_t)8 << 30;
#undef warpSize
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->sharedMemPerBlock = 48 * 1024;
    p->l2CacheSize = 1 << 20;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int d) {
    if (d != 0) return fail(cudaErrorInvalidDevice);
    switch (a) {
    case cudaDevAttrL2CacheSize:
        *v = 1 << 20;
        return cudaSuccess;
    case cudaDevAttrMultiProcessorCount:
        *v = 4;
        return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor:
        *v = 9;
        return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
        *v = 0;
        return cudaSuccess;
    default:
        return fail(cudaErrorInvalidValue);
    }
}

cudaError_t cudaMalloc(void **p, size_t bytes) {
    size_t n = bytes ? (bytes + 255) / 256 * 256 : 256;
    void *m = aligned_alloc(256, n);
    if (!m) {
        *p = nullptr;
        return fail(cudaErrorMemoryAllocation);
    }
    /* fresh device memory holds garbage, not zeros: NaN bit patterns here
     * make a kernel that reads what it never wrote visible */
    memset(m, 0xff, n);
    std::lock_guard<std::mutex> g(mem_mu);
    allocations[(uintptr_t)m] = bytes;
    *p = m;
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    {
        std::lock_guard<std::mutex> g(mem_mu);
        auto it = allocations.find((uintptr_t)p);
        if (it == allocations.end()) return fail(cudaErrorInvalidValue);
        allocations.erase(it);
    }
    free(p);
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p) {
    memset(a, 0, sizeof *a);
    if (is_device(p)) {
        a->type = cudaMemoryTypeDevice;
        a->device = 0;
        a->devicePointer = (void *)p;
    } else {
        a->type = cudaMemoryTypeUnregistered;
        a->device = -2;
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
    cudaError_t e = check_copy(dst, src, n, kind);
    if (e != cudaSuccess) return e;
    if (n) memmove(dst, src, n);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind,
                            cudaStream_t s) {
    (void)s;
    return cudaMemcpy(dst, src, n, kind);
}
cudaError_t cudaMemset(void *p, int v, size_t n) {
    if (n && !in_device(p, n)) {
        fprintf(stderr, "gauntlet cuda emulator: cudaMemset of %zu bytes outside device memory\n",
                n);
        return fail(cudaErrorInvalidValue);
    }
    if (n) memset(p, v, n);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) {
    (void)s;
    return cudaMemset(p, v, n);
}

cudaError_t cudaStreamCreate(cudaStream_t *s) {
    *s = (cudaStream_t) new emu_stream();
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
    (void)flags;
    return cudaStreamCreate(s);
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    gt_emu_stream_hold(s, false);
    delete (emu_stream *)s;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    while (stream_held(s)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, nullptr);
    }
    return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
    return stream_held(s) ? cudaErrorNotReady : cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
    (void)s;
    (void)e;
    (void)flags;
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

cudaError_t cudaEventCreate(cudaEvent_t *e) {
    *e = (cudaEvent_t) new emu_event{0, false, nullptr};
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
    (void)flags;
    return cudaEventCreate(e);
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    delete (emu_event *)e;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    emu_event *ev = (emu_event *)e;
    ev->ms = now_ms();
    ev->recorded = true;
    ev->held = stream_held(s) ? s : nullptr;
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    (void)e;
    return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
    emu_event *ev = (emu_event *)e;
    return ev->held && stream_held(ev->held) ? cudaErrorNotReady : cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    emu_event *x = (emu_event *)a, *y = (emu_event *)b;
    if (!x->recorded || !y->recorded) return fail(cudaErrorInvalidResourceHandle);
    *ms = (float)(y->ms - x->ms);
    return cudaSuccess;
}

} // extern "C"

/* vec.cuh's 16-byte accesses (gt_emu.h: count_vec_access), for kernels.vec_align.cuda. */
static unsigned long long gt_emu_vec_count;
void gt_emu::count_vec_access(void) {
    __atomic_fetch_add(&gt_emu_vec_count, 1, __ATOMIC_RELAXED);
}
extern "C" unsigned long long gt_emu_vec_accesses(void) {
    return __atomic_load_n(&gt_emu_vec_count, __ATOMIC_RELAXED);
}
