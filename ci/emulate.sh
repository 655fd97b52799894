#!/usr/bin/env bash
# The cuda backend on the CPU emulator (ci/cuda_emu/, docs/cuda-emulator.md):
# builds gauntlet with GT_CUDA_EMULATOR=ON in build-emu (no GPU, no nvcc: the
# CUDA headers only; only such a build compiles ci/cuda_emu/) and runs the
# gpu-labelled tests there, the emulator's own (kernels.emulator.cuda) too.
#
#   ci/emulate.sh            every gpu-labelled test (about 70 s of tests on 2 cores)
#   ci/emulate.sh REGEX      those whose name matches REGEX (ctest -R)
#
# Only the executables those tests run are built. CI (.ci/run) runs here the
# gpu-labelled tests ci/sanitize.sh leaves out: the emulator changes the
# thread order from launch to launch, so a race between barriers shows as a
# difference between the two runs of kernels.determinism.cuda, and that test,
# the conv determinism test and the 16-bit training tests take minutes under
# ASan, where ci/sanitize.sh runs the other cuda tests. A pass says the backend's own code computes what ref
# computes; it says nothing about a GPU's speed or its libraries
# (gpu-verification.md).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-emu}
JOBS=${JOBS:-$(nproc)}
SELECT=()
[ $# -gt 0 ] && SELECT=(-R "$1")

if [ ! -f "${CUDA_HOME:-/usr/local/cuda}/include/cuda_runtime.h" ]; then
    echo "emulate: no CUDA headers under ${CUDA_HOME:-/usr/local/cuda}/include: install the CUDA" \
         "toolkit or set CUDA_HOME; nothing run" >&2
    exit 0
fi
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGT_CUDA_EMULATOR=ON \
      -DCMAKE_C_FLAGS=-Werror >"$BUILD/configure.log" || { cat "$BUILD/configure.log"; exit 1; }
# what the selected tests run, not the other test programs (ci/build_for_tests.sh)
JOBS=$JOBS ci/build_for_tests.sh "$BUILD" -L gpu "${SELECT[@]}" ||
    { echo "emulate: no gpu-labelled test matches ${1:-}" >&2; exit 1; }
cd "$BUILD"
ctest --output-on-failure -j "$JOBS" -L gpu "${SELECT[@]}"
