/* kernels.comm_divide.cuda: the second half of GT_REDOP_AVG on the nccl
 * communicator, gt_cuda_comm_divide (kernels/cuda/comm_avg.cu), gives the
 * bits engine/comm.h defines for every dtype it takes: fp32 and fp64 one
 * correctly rounded division in their own type (not a multiply by 1/ranks,
 * which rounds differently when ranks is not a power of two), bf16 and fp16
 * divided in fp32 and rounded to nearest even once, int32 and int64 C
 * division (truncation toward zero). Random bit patterns (NaN compared as
 * NaN, Inf and subnormals included) of an odd length over several blocks,
 * ranks 3 and 7; ranks 1 leaves the buffer as it is; an unknown dtype is an
 * error. Only the cuda backend's build has the function (comm_nccl.c's
 * caller needs NCCL, which the emulator build leaves out, so nothing else
 * runs this kernel there). Exit 77: no GPU / not built with CUDA. */
#include "gt_config.h"
#include "kernels/tests/testutil.h"

#if GT_HAVE_CUDA
int gt_cuda_comm_divide(void *buf, size_t n, int dtype, int ranks, void *stream);

static const gt_dtype k_dt[] = {GT_DTYPE_FP32, GT_DTYPE_FP64, GT_DTYPE_BF16,
                                GT_DTYPE_FP16, GT_DTYPE_INT32, GT_DTYPE_INT64};

/* want[i] = x[i] / ranks as engine/comm.h defines it, on the host. */
static void host_divide(void *want, const void *x, gt_dtype dt, size_t n, int ranks) {
    for (size_t i = 0; i < n; i++) {
        switch (dt) {
        case GT_DTYPE_FP32:
            ((float *)want)[i] = ((const float *)x)[i] / (float)ranks;
            break;
        case GT_DTYPE_FP64:
            ((double *)want)[i] = ((const double *)x)[i] / (double)ranks;
            break;
        case GT_DTYPE_BF16:
            ((uint16_t *)want)[i] =
                gt_fp32_to_bf16(gt_bf16_to_fp32(((const uint16_t *)x)[i]) / (float)ranks);
            break;
        case GT_DTYPE_FP16:
            ((uint16_t *)want)[i] =
                gt_fp32_to_fp16(gt_fp16_to_fp32(((const uint16_t *)x)[i]) / (float)ranks);
            break;
        case GT_DTYPE_INT32:
            ((int32_t *)want)[i] = ((const int32_t *)x)[i] / ranks;
            break;
        default:
            ((int64_t *)want)[i] = ((const int64_t *)x)[i] / ranks;
            break;
        }
    }
}

#endif

int main(void) {
#if !GT_HAVE_CUDA
    printf("skipped: built without the cuda backend\n");
    return 77;
#else
    gt_backend *be = tu_backend_or_skip("cuda", 0);
    gt_status s;
    /* odd, several blocks of 256 (a partial last one); the legacy default
     * stream (NULL) orders with the backend's blocking stream both ways */
    const size_t n = 3 * 256 + 77;
    const int ranks_list[] = {3, 7, 1};
    int fails = 0;
    for (size_t a = 0; a < sizeof k_dt / sizeof k_dt[0]; a++) {
        gt_dtype dt = k_dt[a];
        size_t es = gt_dtype_size(dt), bytes = n * es;
        uint32_t *x = tu_xmalloc(bytes + 4);
        for (size_t i = 0; i < (bytes + 3) / 4; i++)
            x[i] = gt_rng_u32(TU_SEED, 2000 + a, i);
        void *want = tu_xmalloc(bytes), *got = tu_xmalloc(bytes);
        for (size_t r = 0; r < sizeof ranks_list / sizeof ranks_list[0]; r++) {
            int ranks = ranks_list[r];
            host_divide(want, x, dt, n, ranks);
            void *d = tu_upload_raw(be, x, bytes);
            int e = gt_cuda_comm_divide(d, n, (int)dt, ranks, NULL);
            s = e == 0 ? be->copy_to_host(be, got, d, bytes) : GT_ERR_DEVICE;
            size_t bad = 0, first = 0;
            for (size_t i = 0; s == GT_OK && i < n; i++) {
                int wn = tu_is_nan(want, dt, i), gn = tu_is_nan(got, dt, i);
                int same = wn || gn ? wn == gn
                                    : memcmp((char *)want + i * es, (char *)got + i * es, es) == 0;
                if (!same && !bad++) first = i;
            }
            printf("  divide %-5s by %d, %zu values: ", gt_dtype_name(dt), ranks, n);
            if (s != GT_OK) {
                printf("FAIL: launch error %d / %s\n", e, gt_status_name(s));
                fails++;
            } else if (bad) {
                printf("%zu differ from x / ranks, first at [%zu]  FAIL\n", bad, first);
                fails++;
            } else {
                printf("bitwise as engine/comm.h defines it  ok\n");
            }
            gt_backend_dealloc(be, d);
        }
        free(x);
        free(want);
        free(got);
    }
    /* a dtype the kernel does not take is an error, not a silent no-op */
    void *d = NULL;
    if ((s = gt_backend_alloc(be, 64, &d)) != GT_OK) tu_die("alloc", s);
    int e = gt_cuda_comm_divide(d, 4, (int)GT_DTYPE_COUNT + 5, 3, NULL);
    printf("  unknown dtype: %s\n", e != 0 ? "refused  ok" : "accepted  FAIL");
    fails += e == 0;
    gt_backend_dealloc(be, d);
    gt_backend_free(be);
    printf("comm_divide: %s\n", fails ? "FAIL" : "ok");
    return fails ? 1 : 0;
#endif
}
