/* kernels.emulator.cuda: the CUDA emulator's own promises
 * (docs/cuda-emulator.md), checked on kernels written for them; built and
 * run only with -DGT_CUDA_EMULATOR=ON.
 *
 * - Results: block reductions through shuffles, shared memory and
 *   __syncthreads over 1- to 3-dimensional blocks of 1 to 1024 threads
 *   (partial last warps with their own masks) and grids of several blocks;
 *   __shfl_sync / __shfl_xor_sync with CUDA's width and segment rules;
 *   split masks in one warp; __syncthreads_or.
 * - Races: a read that races a write between two barriers gives both
 *   outcomes over 16 launches (the start order rotates), one outcome under
 *   GT_EMU_ORDER=forward; so does a word that every block of a grid
 *   writes (the block order rotates too); shared memory reused by a second block sum
 *   without a leading barrier gives wrong sums in some launches (a warp
 *   runs ahead of the others), right ones with the barrier.
 * - Strictness: each case CUDA leaves undefined ends a child process with
 *   SIGABRT and the message docs/cuda-emulator.md lists; launches outside
 *   the device limits fail with CUDA's error codes; copies whose pointers
 *   do not match their kind are refused; fresh device memory is 0xff. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "kernels/cuda/common.cuh"

static int fails;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

static void *dev_alloc(size_t bytes) {
    void *p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu) failed\n", bytes);
        exit(2);
    }
    return p;
}

/* ---- results ------------------------------------------------------------ */

/* out[block] = sum of x over the block's threads: a tree through warp
 * shuffles (the last warp's mask names only the lanes it has) into lane 0,
 * shared memory, a barrier, then thread 0 in warp order. */
__global__ void reduce_kernel(const int *x, int *out) {
    __shared__ int warp_sums[32];
    unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned lane = t % 32, warp = t / 32;
    unsigned lanes = nthreads - warp * 32 < 32 ? nthreads - warp * 32 : 32;
    unsigned mask = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
    int v = x[block * nthreads + t];
    for (unsigned m = 16; m > 0; m >>= 1) {
        /* a lane with no partner m above it reads its own value */
        unsigned src = lane + m < lanes ? lane + m : lane;
        int o = __shfl_sync(mask, v, (int)src);
        if (lane + m < lanes) v += o;
    }
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (t == 0) {
        int s = 0;
        for (unsigned w = 0; w < (nthreads + 31) / 32; w++) s += warp_sums[w];
        out[block] = s;
    }
}

static void check_reduce(dim3 grid, dim3 block) {
    size_t nb = (size_t)grid.x * grid.y * grid.z, nt = (size_t)block.x * block.y * block.z;
    int *hx = (int *)malloc(nb * nt * sizeof(int)), *hout = (int *)malloc(nb * sizeof(int));
    for (size_t i = 0; i < nb * nt; i++) hx[i] = (int)((i * 2654435761u) % 1000) - 500;
    int *x = (int *)dev_alloc(nb * nt * sizeof(int)), *out = (int *)dev_alloc(nb * sizeof(int));
    cudaMemcpy(x, hx, nb * nt * sizeof(int), cudaMemcpyHostToDevice);
    reduce_kernel<<<grid, block>>>(x, out);
    CHECK(cudaGetLastError() == cudaSuccess, "reduce launch grid (%u,%u,%u) block (%u,%u,%u)",
          grid.x, grid.y, grid.z, block.x, block.y, block.z);
    cudaMemcpy(hout, out, nb * sizeof(int), cudaMemcpyDeviceToHost);
    for (size_t b = 0; b < nb; b++) {
        int want = 0;
        for (size_t i = 0; i < nt; i++) want += hx[b * nt + i];
        CHECK(hout[b] == want, "reduce grid (%u,%u,%u) block (%u,%u,%u): block %zu got %d want %d",
              grid.x, grid.y, grid.z, block.x, block.y, block.z, b, hout[b], want);
    }
    cudaFree(x);
    cudaFree(out);
    free(hx);
    free(hout);
}

/* out[lane] = the shuffle of lane * 10 + 1 from src (xor: lane ^ src). */
__global__ void shfl_kernel(int *out, int src, int width, int use_xor) {
    int v = (int)threadIdx.x * 10 + 1;
    out[threadIdx.x] = use_xor ? __shfl_xor_sync(0xffffffffu, v, src, width)
                               : __shfl_sync(0xffffffffu, v, src, width);
}

/* CUDA's rules (Programming Guide, warp shuffle functions): __shfl_sync
 * reads lane src % width of the caller's segment of width lanes;
 * __shfl_xor_sync reads lane ^ mask, or keeps its own value when that lane
 * is in a later segment. */
static void check_shfl(int src, int width, int use_xor) {
    int *out = (int *)dev_alloc(32 * sizeof(int)), h[32];
    shfl_kernel<<<1, 32>>>(out, src, width, use_xor);
    cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
    for (int l = 0; l < 32; l++) {
        int seg = l & ~(width - 1), from;
        if (use_xor) {
            from = l ^ src;
            if ((from & ~(width - 1)) > seg) from = l;
        } else {
            from = seg + (src & (width - 1));
        }
        CHECK(h[l] == from * 10 + 1, "%s src %d width %d: lane %d got %d want %d",
              use_xor ? "__shfl_xor_sync" : "__shfl_sync", src, width, l, h[l], from * 10 + 1);
    }
    cudaFree(out);
}

/* Two halves of a warp on different paths, each shuffling within its own
 * mask, then __syncwarp over the whole warp. */
__global__ void split_kernel(int *out) {
    unsigned lane = threadIdx.x;
    int v = (int)lane + 100;
    int r;
    if (lane < 16) r = __shfl_sync(0x0000ffffu, v, 3);
    else r = __shfl_xor_sync(0xffff0000u, v, 1);
    __syncwarp();
    out[lane] = r;
}

__global__ void or_kernel(int *out, int who) {
    int r = __syncthreads_or((int)threadIdx.x == who);
    out[threadIdx.x] = r;
}

/* Thread 1 writes what thread 0 reads, with no barrier between. */
__global__ void race_kernel(int *out) {
    __shared__ int s;
    if (threadIdx.x == 0) s = 0;
    __syncthreads();
    if (threadIdx.x == 1) s = 1;
    if (threadIdx.x == 0) *out = s;
}

/* Thread 0 of every block adds 1 to out[0] (a float), read-modify-write
 * through gt_ld / gt_st: a lost update on a GPU. With `own`, each block
 * adds to its own element instead: no race. */
__global__ void rmw_kernel(float *out, int own) {
    if (threadIdx.x == 0) {
        size_t i = own ? blockIdx.x : 0;
        gt_st(out, i, gt_ld(out, i) + 1.0f);
    }
}
__global__ void bad_cross_block(int *out) {
    if (threadIdx.x == 0) gt_st((float *)out, 0, gt_ld((const float *)out, 0) + 1.0f);
}
/* Every block reads out[0] and writes its own out[1 + block]: many readers
 * of a word nobody writes, no race. */
__global__ void shared_read_kernel(float *out) {
    if (threadIdx.x == 0) gt_st(out, 1 + blockIdx.x, gt_ld((const float *)out, 0) + blockIdx.x);
}
/* Two blocks: each writes its element, then reads the other's. Whichever
 * runs second writes what the first one read: a write after another
 * block's read, in either order. */
__global__ void bad_write_after_read(int *out) {
    if (threadIdx.x == 0) {
        float *f = (float *)out;
        unsigned b = blockIdx.x;
        gt_st(f, b, 1.0f);
        gt_st(f, 2 + b, gt_ld((const float *)f, 1 - b));
    }
}

/* Every block writes the same word: the last block to run wins. */
__global__ void last_block_kernel(int *out) {
    if (threadIdx.x == 0) *out = (int)(blockIdx.x + gridDim.x * blockIdx.y);
}

/* Two block sums through the same shared array (256 threads, 8 warps),
 * the second of 2x: out = {sum x, sum 2x}. Without the leading barrier a
 * warp that finishes its second warp sum early overwrites its slot while
 * other warps still read the first sums (bn_block_sum2 in vision.cu has
 * that barrier for that reason). */
__device__ int two_sums_part(int v, int *sh, int lead) {
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
    if (lead) __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    int s = 0;
    for (int w = 0; w < 8; w++) s += sh[w];
    return s;
}
__global__ void two_sums_kernel(const int *x, int *out, int lead) {
    __shared__ int sh[8];
    int v = x[threadIdx.x];
    int a = two_sums_part(v, sh, lead);
    int b = two_sums_part(2 * v, sh, lead);
    if (threadIdx.x == 0) {
        out[0] = a;
        out[1] = b;
    }
    /* every thread's first sum must be a: a stale or early slot shows here */
    if (a != out[2]) out[3] = 1;
}

/* How many of 16 launches of two_sums_kernel give a wrong sum. */
static int two_sums_wrong(int lead) {
    int hx[256], want = 0;
    for (int i = 0; i < 256; i++) want += hx[i] = i % 7 + 1;
    int *x = (int *)dev_alloc(sizeof hx), *out = (int *)dev_alloc(4 * sizeof(int)), wrong = 0;
    cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice);
    for (int i = 0; i < 16; i++) {
        int h[4] = {0, 0, want, 0};
        cudaMemcpy(out, h, sizeof h, cudaMemcpyHostToDevice);
        two_sums_kernel<<<1, 256>>>(x, out, lead);
        cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
        wrong += h[0] != want || h[1] != 2 * want || h[3] != 0;
    }
    cudaFree(x);
    cudaFree(out);
    return wrong;
}

/* How many of 16 launches of race_kernel read 1; in how many of 16
 * launches of last_block_kernel over a 4 x 2 grid block (3, 1), the last
 * in CUDA's linear block order, won, and how many blocks won at least once. */
static int race_ones(int *last_wins, int *winners) {
    int *out = (int *)dev_alloc(sizeof(int)), ones = 0, won[8] = {0};
    for (int i = 0; i < 16; i++) {
        int h = -1;
        race_kernel<<<1, 64>>>(out);
        cudaMemcpy(&h, out, sizeof h, cudaMemcpyDeviceToHost);
        ones += h == 1;
        h = -1;
        last_block_kernel<<<dim3(4, 2), 32>>>(out);
        cudaMemcpy(&h, out, sizeof h, cudaMemcpyDeviceToHost);
        if (h >= 0 && h < 8) won[h]++;
    }
    cudaFree(out);
    *last_wins = won[7];
    *winners = 0;
    for (int b = 0; b < 8; b++)
        *winners += won[b] > 0;
    return ones;
}

/* ---- strictness: each kernel below ends the process -------------------- */

__global__ void bad_own_lane(int *out) {
    out[threadIdx.x] = __shfl_sync(0x0000ffffu, (int)threadIdx.x, 0);
}
__global__ void bad_exited_lane(int *out) {
    if (threadIdx.x == 31) return;
    out[threadIdx.x] = __shfl_sync(0xffffffffu, (int)threadIdx.x, 0);
}
__global__ void bad_missing_lane(int *out) {
    out[threadIdx.x] = __shfl_sync(0xffffffffu, (int)threadIdx.x, 0);
}
__global__ void bad_mixed_ops(int *out) {
    int v = (int)threadIdx.x;
    out[threadIdx.x] = threadIdx.x % 2 ? __shfl_sync(0xffffffffu, v, 0)
                                       : __shfl_xor_sync(0xffffffffu, v, 1);
}
__global__ void bad_outside_mask(int *out) {
    int v = (int)threadIdx.x;
    out[threadIdx.x] = threadIdx.x < 16 ? __shfl_sync(0x0000ffffu, v, 20, 32)
                                        : __shfl_sync(0xffff0000u, v, 20, 32);
}
__global__ void bad_skipped_barrier(int *out) {
    if (threadIdx.x == 5) return;
    __syncthreads();
    out[threadIdx.x] = 1;
}
__global__ void bad_warp_vs_barrier(int *out) {
    if (threadIdx.x == 0) {
        __syncthreads();
        return;
    }
    out[threadIdx.x] = __shfl_sync(0xffffffffu, (int)threadIdx.x, 0);
}
__global__ void bad_two_barriers(int *out) {
    if (threadIdx.x < 32) __syncthreads();
    else out[0] = __syncthreads_or(1);
}
__global__ void bad_width(int *out) {
    out[threadIdx.x] = __shfl_sync(0xffffffffu, (int)threadIdx.x, 0, 12);
}

/* Runs bad<<<blocks, threads>>> in a child (with GT_EMU_RACECHECK=1 when
 * `racecheck`); it must die of SIGABRT with `want` in what it printed. */
static void expect_abort(const char *what, void (*bad)(int *), unsigned threads, const char *want,
                         unsigned blocks = 1, bool racecheck = false) {
    int fd[2];
    if (pipe(fd) != 0) {
        perror("pipe");
        exit(2);
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        if (racecheck) setenv("GT_EMU_RACECHECK", "1", 1);
        int *out = (int *)dev_alloc(1024 * sizeof(int));
        bad<<<blocks, threads>>>(out);
        _exit(0);
    }
    close(fd[1]);
    char buf[8192];
    size_t got = 0;
    ssize_t r;
    while ((r = read(fd[0], buf + got, sizeof buf - 1 - got)) > 0) got += (size_t)r;
    buf[got] = 0;
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    bool aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
    CHECK(aborted, "%s: the child was not stopped by SIGABRT (status 0x%x)", what, status);
    CHECK(strstr(buf, want) != nullptr, "%s: its message lacks \"%s\"; it printed:\n%s", what, want,
          buf);
    if (aborted && strstr(buf, want)) printf("  %-44s stopped: %s\n", what, want);
}

__global__ void nop_kernel(int *out) {
    if (out) out[0] = 1;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--race-ones") == 0) {
        /* the child run under GT_EMU_ORDER=forward */
        int last_wins, winners;
        int ones = race_ones(&last_wins, &winners);
        printf("%d %d\n", ones, last_wins);
        return 0;
    }

    /* results */
    const dim3 blocks[] = {dim3(1), dim3(31), dim3(32), dim3(33), dim3(64), dim3(255),
                           dim3(1024), dim3(8, 4, 2), dim3(5, 7, 3), dim3(32, 32)};
    const dim3 grids[] = {dim3(1), dim3(3), dim3(2, 2, 2)};
    for (const dim3 &g : grids)
        for (const dim3 &b : blocks) check_reduce(g, b);
    printf("  block reductions over %zu block shapes x %zu grids\n",
           sizeof blocks / sizeof blocks[0], sizeof grids / sizeof grids[0]);
    const int shfl_cases[][3] = {{0, 32, 0}, {5, 32, 0}, {37, 32, 0}, {5, 8, 0}, {3, 4, 0},
                                 {1, 32, 1}, {16, 32, 1}, {8, 16, 1}, {8, 4, 1}, {3, 2, 1}};
    for (const auto &c : shfl_cases) check_shfl(c[0], c[1], c[2]);
    printf("  %zu shuffle cases (src / xor mask, width)\n",
           sizeof shfl_cases / sizeof shfl_cases[0]);
    {
        int *out = (int *)dev_alloc(32 * sizeof(int)), h[32];
        split_kernel<<<1, 32>>>(out);
        cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
        for (int l = 0; l < 32; l++) {
            int want = l < 16 ? 103 : (l ^ 1) + 100;
            CHECK(h[l] == want, "split masks: lane %d got %d want %d", l, h[l], want);
        }
        cudaFree(out);
        printf("  split masks in one warp\n");
    }
    {
        int *out = (int *)dev_alloc(96 * sizeof(int)), h[96];
        for (int who = -1; who < 96; who += 40) {
            or_kernel<<<1, 96>>>(out, who);
            cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
            for (int i = 0; i < 96; i++)
                CHECK(h[i] == (who >= 0), "__syncthreads_or with thread %d true: thread %d got %d",
                      who, i, h[i]);
        }
        cudaFree(out);
        printf("  __syncthreads_or\n");
    }

    /* races */
    int last_wins, winners;
    int ones = race_ones(&last_wins, &winners);
    CHECK(ones > 0 && ones < 16, "a race between barriers read 1 in %d of 16 launches: the start "
                                 "order does not change from launch to launch", ones);
    printf("  racy kernel: thread 0 saw thread 1's write in %d of 16 launches (rotating order)\n", ones);
    CHECK(winners >= 4, "a word all 8 blocks write: %d blocks won over 16 launches: the block "
                        "order does not change from launch to launch", winners);
    printf("  a word every block writes: %d of 8 blocks won in 16 launches\n", winners);
    {
        fflush(stdout);
        int fd[2];
        if (pipe(fd) != 0) return 2;
        pid_t pid = fork();
        if (pid == 0) {
            close(fd[0]);
            dup2(fd[1], 1);
            setenv("GT_EMU_ORDER", "forward", 1);
            execl("/proc/self/exe", argv[0], "--race-ones", (char *)nullptr);
            _exit(127);
        }
        close(fd[1]);
        char buf[64] = {0};
        ssize_t r = read(fd[0], buf, sizeof buf - 1);
        close(fd[0]);
        int status = 0;
        waitpid(pid, &status, 0);
        int fwd = -1, fwd_last = -1;
        if (r <= 0 || sscanf(buf, "%d %d", &fwd, &fwd_last) != 2) fwd = fwd_last = -1;
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && (fwd == 0 || fwd == 16),
              "GT_EMU_ORDER=forward: the racy kernel read 1 in %d of 16 launches (status 0x%x)",
              fwd, status);
        CHECK(fwd_last == 16,
              "GT_EMU_ORDER=forward: the last block in CUDA's order won in %d of 16 launches",
              fwd_last);
        printf("  under GT_EMU_ORDER=forward: racy kernel read 1 in %d, the last block won in %d "
               "of 16 launches\n", fwd, fwd_last);
    }

    {
        int with = two_sums_wrong(1), without = two_sums_wrong(0);
        CHECK(with == 0, "two block sums with the leading barrier: %d of 16 launches wrong", with);
        CHECK(without > 0 && without < 16,
              "two block sums without the leading barrier: %d of 16 launches wrong (want some, "
              "not all: no launch lets a warp run ahead, or every one does)",
              without);
        printf("  shared memory reused without a leading barrier: wrong in %d of 16 launches\n",
               without);
    }

    /* strictness */
    static const struct {
        const char *what;
        void (*bad)(int *);
        unsigned threads;
        const char *want;
    } stops[] = {
        {"mask without the caller's lane", bad_own_lane, 32,
         "a warp operation whose mask leaves out its own lane"},
        {"mask naming an exited lane", bad_exited_lane, 32, "a warp mask names a lane that has exited"},
        {"mask naming a lane the block lacks", bad_missing_lane, 16,
         "a warp mask names a lane the block does not have"},
        {"one mask at two warp operations", bad_mixed_ops, 32,
         "lanes of one mask wait at different warp operations"},
        {"shuffle source outside the mask", bad_outside_mask, 32,
         "a shuffle reads a lane outside its mask"},
        {"__syncthreads skipped by one thread", bad_skipped_barrier, 64,
         "a thread exited while others wait at __syncthreads"},
        {"warp operation against __syncthreads", bad_warp_vs_barrier, 32,
         "a warp operation waits for lanes held at __syncthreads"},
        {"__syncthreads against __syncthreads_or", bad_two_barriers, 64,
         "threads wait at different block barriers"},
        {"shuffle width 12", bad_width, 32, "a shuffle width that is not a power of 2"},
    };
    for (const auto &c : stops) expect_abort(c.what, c.bad, c.threads, c.want);
    /* races between blocks, with GT_EMU_RACECHECK=1 */
    expect_abort("two blocks update one element", bad_cross_block, 32,
                 "wrote in the same launch: a race between blocks", 2, true);
    expect_abort("a block writes what another read", bad_write_after_read, 32,
                 "read in the same launch: a race between blocks", 2, true);
    {
        setenv("GT_EMU_RACECHECK", "1", 1);
        float *out = (float *)dev_alloc(4 * sizeof(float)), h[4] = {0, 0, 0, 0};
        cudaMemcpy(out, h, sizeof h, cudaMemcpyHostToDevice);
        rmw_kernel<<<4, 32>>>(out, 1); /* each block its own element: no race */
        rmw_kernel<<<1, 32>>>(out, 0); /* one block: no race either */
        cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
        CHECK(h[0] == 2 && h[1] == 1 && h[2] == 1 && h[3] == 1,
              "race check: race-free updates gave %g %g %g %g", h[0], h[1], h[2], h[3]);
        shared_read_kernel<<<3, 32>>>(out); /* three blocks read out[0], nobody writes it */
        cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
        CHECK(h[0] == 2 && h[1] == 2 && h[2] == 3 && h[3] == 4,
              "race check: reads shared by blocks gave %g %g %g %g", h[0], h[1], h[2], h[3]);
        unsetenv("GT_EMU_RACECHECK");
        rmw_kernel<<<4, 32>>>(out, 0); /* the race, unchecked: runs */
        cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
        CHECK(h[0] == 6, "without GT_EMU_RACECHECK the racy update gave %g", h[0]);
        cudaFree(out);
        printf("  race check between blocks: race-free updates and shared reads pass, off without "
               "the variable\n");
    }

    /* launch limits, copies, fresh memory */
    int *out = (int *)dev_alloc(sizeof(int));
    cudaGetLastError();
    nop_kernel<<<1, 1025>>>(out);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration, "a block of 1025 threads launched");
    nop_kernel<<<dim3(1, 65536), 1>>>(out);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration, "grid.y = 65536 launched");
    nop_kernel<<<1, dim3(1, 1, 65)>>>(out);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration, "block.z = 65 launched");
    nop_kernel<<<1, 1, 48 * 1024 + 1>>>(out);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue, "49153 bytes of dynamic shared memory");
    nop_kernel<<<1, 1>>>(out);
    CHECK(cudaGetLastError() == cudaSuccess, "a valid launch after refused ones");
    unsigned char fresh[64];
    unsigned char *d = (unsigned char *)dev_alloc(sizeof fresh);
    cudaMemcpy(fresh, d, sizeof fresh, cudaMemcpyDeviceToHost);
    int all_ff = 1;
    for (size_t i = 0; i < sizeof fresh; i++) all_ff &= fresh[i] == 0xff;
    CHECK(all_ff, "fresh device memory is not 0xff bytes");
    CHECK(cudaMemcpy(fresh, d, sizeof fresh, cudaMemcpyHostToDevice) == cudaErrorInvalidValue,
          "a host-to-device copy into host memory was accepted");
    CHECK(cudaMemcpy(d, fresh, sizeof fresh, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue,
          "a device-to-host copy into device memory was accepted");
    CHECK(cudaMemcpy(d, fresh, sizeof fresh + 1, cudaMemcpyHostToDevice) == cudaErrorInvalidValue,
          "a copy past the end of an allocation was accepted");
    cudaGetLastError();
    cudaFree(d);
    cudaFree(out);
    printf("  launch limits, copy kinds, fresh memory\n");

    printf("kernels.emulator.cuda: %s\n", fails ? "FAILED" : "all checks passed");
    return fails ? 1 : 0;
}
