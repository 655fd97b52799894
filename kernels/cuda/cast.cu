/* Cast: dst(n) in dst_dt = src(n) in src_dt, the precision cast of mixed
 * precision (the compute copy of the fp32 master weights, gradients back
 * to fp32).
 *
 * Dtypes: fp32, fp64, bf16, fp16, any direction (16 kernels, one grid-stride
 * loop each); k->dt is ignored. Rounding to nearest even, once: a 16-bit or
 * fp32 source goes through fp32 (exact), an fp64 source is rounded straight
 * from the double (__double2bfloat16 / __double2half / __double2float_rn),
 * so fp64 -> bf16/fp16 rounds once where gt_convert on the host rounds
 * twice (through fp32): the two can differ by one unit in the last place on
 * values within 2^-24 relative of a tie. NaN stays NaN, overflow goes to
 * +-Inf, fp16 subnormals are produced exactly (CUDA's conversions are IEEE).
 * Equal dtypes: a device copy (cudaMemcpyAsync); dst == src is a no-op and
 * partially overlapping ranges are copied through scratch.
 * Bound: memory bandwidth (n * (size(src) + size(dst)) bytes).
 * Determinism: elementwise.
 * Access: 16-byte vectors where dst and src share an aligned start (vec.cuh).
 */
#include <type_traits>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/vec.cuh"

#define CAST_BLOCK 256

/* fp32-routed conversions: vec.cuh's gt_to_f32 / gt_from_f32 (gt_ld / gt_st's) */
template <typename D> __device__ __forceinline__ D cast_from_f64(double x);
template <> __device__ __forceinline__ float cast_from_f64<float>(double x) {
    return __double2float_rn(x);
}
template <> __device__ __forceinline__ double cast_from_f64<double>(double x) {
    return x;
}
template <> __device__ __forceinline__ __nv_bfloat16 cast_from_f64<__nv_bfloat16>(double x) {
    return __double2bfloat16(x);
}
template <> __device__ __forceinline__ __half cast_from_f64<__half>(double x) {
    return __double2half(x);
}

template <typename D, typename S> __device__ __forceinline__ D cast_one(S x) {
    if constexpr (std::is_same<S, double>::value)
        return cast_from_f64<D>(x);
    else
        return gt_from_f32<D>(gt_to_f32<S>(x));
}

/* VN elements per thread where dst and src share an aligned start (vec.cuh:
 * gt_vec_split; VN from the narrower type, the wider one takes several
 * 16-byte accesses), one at a time elsewhere. */
template <typename D, typename S, int VN>
__global__ void cast_kernel(D *__restrict__ dst, const S *__restrict__ src, gt_vec_split sp) {
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t v = tid; v < sp.nvec; v += stride) {
        size_t i = sp.head + v * VN;
        S x[VN];
        D y[VN];
        gt_ldv_raw<VN>(src + i, x);
#pragma unroll
        for (int k = 0; k < VN; k++)
            y[k] = cast_one<D, S>(x[k]);
        gt_stv_raw<VN>(dst + i, y);
    }
    for (size_t r = tid; r < sp.rest; r += stride) {
        size_t i = gt_vec_rest_index(sp, r);
        dst[i] = cast_one<D, S>(src[i]);
    }
}

template <typename D, typename S>
static gt_status cast_launch(gt_cuda_impl *im, void *dst, const void *src, size_t n) {
    const int VN = GT_VEC_BYTES / (int)(sizeof(D) < sizeof(S) ? sizeof(D) : sizeof(S));
    const void *p[2] = {dst, src};
    const size_t s[2] = {sizeof(D), sizeof(S)};
    gt_vec_split sp = gt_vec_split_make(n, VN, 2, p, s);
    cast_kernel<D, S, VN><<<gt_cuda_grid_1d(gt_vec_split_work(sp), CAST_BLOCK), CAST_BLOCK, 0,
                            im->stream>>>((D *)dst, (const S *)src, sp);
    GT_CUDA_LAUNCHED("cast_kernel");
    return GT_OK;
}

static bool cast_float_dtype(gt_dtype dt) {
    return dt == GT_DTYPE_FP32 || dt == GT_DTYPE_FP64 || dt == GT_DTYPE_BF16 || dt == GT_DTYPE_FP16;
}

template <typename D>
static gt_status cast_from(gt_cuda_impl *im, void *dst, const void *src, gt_dtype src_dt,
                           size_t n) {
    switch (src_dt) {
    case GT_DTYPE_FP32:
        return cast_launch<D, float>(im, dst, src, n);
    case GT_DTYPE_FP64:
        return cast_launch<D, double>(im, dst, src, n);
    case GT_DTYPE_BF16:
        return cast_launch<D, __nv_bfloat16>(im, dst, src, n);
    default:
        return cast_launch<D, __half>(im, dst, src, n);
    }
}

extern "C" gt_status gt_cuda_cast(const gt_kctx *k, void *dst, gt_dtype dst_dt, const void *src,
                                  gt_dtype src_dt, size_t n) {
    gt_cuda_impl *im;
    GT_TRY(gt_cuda_begin_any(k, "cast", &im));
    if (!cast_float_dtype(dst_dt) || !cast_float_dtype(src_dt))
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "cuda cast: %s -> %s is not supported (fp32, fp64, bf16, fp16 only)",
                      gt_dtype_name(src_dt), gt_dtype_name(dst_dt));
    if (n == 0) return GT_OK;
    if (!dst || !src) return GT_ERR(GT_ERR_INVALID, "cuda cast: NULL pointer for n=%zu", n);
    size_t dbytes = n * gt_dtype_size(dst_dt), sbytes = n * gt_dtype_size(src_dt);
    uintptr_t d0 = (uintptr_t)dst, s0 = (uintptr_t)src;
    bool overlap = d0 < s0 + sbytes && s0 < d0 + dbytes;
    if (dst_dt == src_dt) {
        if (dst == src) return GT_OK;
        if (!overlap) {
            GT_CUDA_TRY(cudaMemcpyAsync(dst, src, dbytes, cudaMemcpyDeviceToDevice, im->stream));
            return GT_OK;
        }
        /* overlapping copy: through scratch, both copies on the stream */
        void *tmp = NULL;
        GT_TRY(gt_cuda_scratch(k, dbytes, &tmp));
        cudaError_t e = cudaMemcpyAsync(tmp, src, dbytes, cudaMemcpyDeviceToDevice, im->stream);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(dst, tmp, dbytes, cudaMemcpyDeviceToDevice, im->stream);
        gt_cuda_scratch_free(k, tmp);
        if (e != cudaSuccess)
            return GT_ERR(GT_ERR_DEVICE, "cuda cast: overlapping copy of %zu bytes failed: %s",
                          dbytes, cudaGetErrorString(e));
        return GT_OK;
    }
    if (overlap)
        return GT_ERR(GT_ERR_INVALID,
                      "cuda cast %s -> %s: dst and src overlap; use separate buffers (only a "
                      "same-dtype copy may overlap)",
                      gt_dtype_name(src_dt), gt_dtype_name(dst_dt));
    switch (dst_dt) {
    case GT_DTYPE_FP32:
        return cast_from<float>(im, dst, src, src_dt, n);
    case GT_DTYPE_FP64:
        return cast_from<double>(im, dst, src, src_dt, n);
    case GT_DTYPE_BF16:
        return cast_from<__nv_bfloat16>(im, dst, src, src_dt, n);
    default:
        return cast_from<__half>(im, dst, src, src_dt, n);
    }
}
