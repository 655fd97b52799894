#!/usr/bin/env bash
# ASan + UBSan: builds gauntlet with GT_SANITIZE=ON in build-asan (nvcc cannot
# link the sanitizer runtimes, so the cuda backend is the CPU emulator's build
# of the same sources, docs/cuda-emulator.md) and runs the unit and
# conformance tests there, the cuda ones included, the slow ones left out. Any sanitizer report fails the test
# that triggered it (UBSan does not recover; ASan and LeakSanitizer exit
# non-zero). docs/reliability.md explains the options below.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-asan}
JOBS=${JOBS:-$(nproc)}

# The emulator needs the CUDA headers only; without them the cuda tests skip.
EMU=OFF
if [ -f "${CUDA_HOME:-/usr/local/cuda}/include/cuda_runtime.h" ]; then
    EMU=ON
else
    echo "sanitize: no CUDA headers (CUDA_HOME or /usr/local/cuda): the cuda tests skip" >&2
fi

mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGT_SANITIZE=ON -DGT_CUDA_EMULATOR=$EMU \
      -DCMAKE_C_FLAGS=-Werror >"$BUILD/configure.log" || { cat "$BUILD/configure.log"; exit 1; }
cmake --build "$BUILD" -j "$JOBS"

# detect_stack_use_after_return is off: with it, GCC 12's -O2 code for
# the sgemm micro-kernel (kernels/cpu/sgemm.c:89) faults on a wild address
# even on one thread; docs/reliability.md has the details.
# detect_leaks=0: libraries that are dlopened and dlclosed (the CUDA
# libraries the environment fingerprint probes, with libstdc++ linked in
# statically; Open MPI's mca_ plugins) leave allocations that LeakSanitizer
# can only attribute to "<unknown module>", so no suppression can target
# them. Leaks in our code are checked by valgrind (ci/valgrind.sh) and by
# LeakSanitizer inside every fuzz target (ci/fuzz.sh).
export ASAN_OPTIONS="strict_string_checks=1:check_initialization_order=1:detect_leaks=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd "$BUILD"
# Left out, each for minutes under ASan: the collectives suite on 1, 2, 4
# ranks (engine.comm.mpi_np{1,2,4} already run the MPI communicator) and the
# 16-bit training runs of models.gpt2_precision.{ref,cuda} (make test runs the
# ref one, ci/emulate.sh the cuda one; the ops they call are in the
# conformance tests here), and harness.html.cpu, most of its minute headless Chromium
# drawing pages (the HTML writer runs sanitized in harness.history_html.cpu
# and the reports tests); suites.interface.cpu (90 s here: the whole kernels
# suite's timed rounds; every suite's driver runs sanitized in the harness
# tests' `gauntlet run` cases: console, incomplete, faults, profile); the fp16
# grid of the cuda conformance (a minute here: the kernels are templates over
# the storage type, and the bf16 grid sanitizes the same 2-byte indexing; the
# fp16 grid runs unsanitized in ci/emulate.sh).
ctest --output-on-failure -j "$JOBS" -L "unit|conformance" -LE slow \
      -E "^suites[.]collectives[.]mpi|^models[.]gpt2_precision[.](ref|cuda)$|^models[.]gpt2_recompute[.]cuda$|^kernels[.]conformance(_fp16)?_lt_fallback[.]cuda$|^harness[.]html[.]cpu$|^suites[.]interface[.]cpu$|^kernels[.]conformance_fp16[.]cuda$"
# The nccl communicator's own test (labels gpu;mpi, so not above): on the
# emulator's NCCL stand-in, one rank, under a second (docs/cuda-emulator.md).
ctest --output-on-failure -R "^engine[.]comm[.]nccl_np1$"
# kernels.determinism.cuda, kernels.conv_determinism.cuda,
# models.dense_precision.cuda and models.gpt2_recompute.cuda (minutes under ASan) run without it in
# ci/emulate.sh, as do kernels.conformance_fp16.cuda and the fp32 and fp16
# kernels.conformance*_lt_fallback.cuda
# runs (20 s each under ASan; the bf16 one here sanitizes the fallbacks' fp32
# scratch, which fp16 shares and fp32 does not use).
