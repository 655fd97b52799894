#!/usr/bin/env bash
# ASan + UBSan: builds gauntlet with GT_SANITIZE=ON in build-asan (host only:
# nvcc cannot link the sanitizer runtimes) and runs the unit and conformance
# tests there, the slow ones left out. Any sanitizer report fails the test
# that triggered it (UBSan does not recover; ASan and LeakSanitizer exit
# non-zero). docs/reliability.md explains the options below.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-asan}
JOBS=${JOBS:-$(nproc)}

mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGT_SANITIZE=ON -DGT_WITH_CUDA=OFF \
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
# The collectives suite on 1, 2, 4 ranks is left out: under ASan it takes
# minutes, and engine.comm.mpi_np{1,2,4} already run the MPI communicator.
ctest --output-on-failure -j "$JOBS" -L "unit|conformance" -LE slow -E "^suites[.]collectives[.]mpi"
