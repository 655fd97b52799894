/* Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11).
 *
 * Every value is a pure function of (seed, stream, index): no state, so a
 * tensor initialised on 1 thread or 16, on rank 0 or rank 7, gets the same
 * bits. Streams separate independent uses (one per parameter tensor, one for
 * the data order, ...).
 *
 * Layout: key = seed (two 32-bit words, low first); counter =
 * (block_lo, block_hi, stream_lo, stream_hi) where block = index / 4 and the
 * value is word index % 4 of the output.
 */
#ifndef GT_RNG_H
#define GT_RNG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One Philox4x32-10 evaluation: out = philox(key, ctr). */
void gt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* The index-th 32-bit word of stream `stream` under `seed`. */
uint32_t gt_rng_u32(uint64_t seed, uint64_t stream, uint64_t index);
/* The index-th 64-bit value (two words of the same block). */
uint64_t gt_rng_u64(uint64_t seed, uint64_t stream, uint64_t index);
/* Uniform in the open interval (0, 1), 24 bits of resolution. */
float gt_rng_uniform(uint64_t seed, uint64_t stream, uint64_t index);
/* Uniform in [0, 1) with 53 bits, for sampling where fp32 is too coarse. */
double gt_rng_uniform_f64(uint64_t seed, uint64_t stream, uint64_t index);
/* Standard normal by Box-Muller from one Philox block (fp64 internally). */
float gt_rng_normal(uint64_t seed, uint64_t stream, uint64_t index);

/* dst[i] = gt_rng_normal(seed, stream, offset + i) * std + mean, i < n. */
void gt_rng_fill_normal(float *dst, size_t n, float mean, float std, uint64_t seed,
                        uint64_t stream, uint64_t offset);
/* dst[i] = lo + (hi - lo) * gt_rng_uniform(seed, stream, offset + i). */
void gt_rng_fill_uniform(float *dst, size_t n, float lo, float hi, uint64_t seed,
                         uint64_t stream, uint64_t offset);

#ifdef __cplusplus
}
#endif
#endif
