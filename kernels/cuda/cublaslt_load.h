/* cuBLASLt, loaded when the first cuda backend starts, not when gauntlet does.
 *
 * libcublasLt is over 500 MB: mapping and relocating it and running its
 * constructors costs every process that links it about a third of a second
 * and 25,000 page faults before main (docs/performance.md, "Start-up"),
 * though only a run with a GPU calls it. The CUDA build therefore does not
 * link it: cublaslt_load.c defines the cublasLt* functions the backend calls,
 * each forwarding to the library's own, which gt_cublaslt_load opens once.
 * (The emulator build defines them itself, ci/cuda_emu/cublaslt_emu.cc.) */
#ifndef GT_CUDA_CUBLASLT_LOAD_H
#define GT_CUDA_CUBLASLT_LOAD_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens libcublasLt.so.<the major version built against> and finds every
 * function the backend calls; once per process, later calls return the first
 * answer. 0 on success; -1 with `why` saying what was missing and what to do
 * (a library not found, or one that lacks a function). Thread-safe. */
int gt_cublaslt_load(char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
