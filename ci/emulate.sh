#!/usr/bin/env bash
# The cuda backend on the CPU emulator (docs/cuda-emulator.md): builds
# gauntlet with GT_CUDA_EMULATOR=ON in build-emu (no GPU, no nvcc: the CUDA
# headers only) and runs every gpu-labelled test there, the ones that take
# minutes under ASan (ci/sanitize.sh runs the others) included:
# kernels.determinism.cuda (the emulator changes the thread order from launch
# to launch, so a race between barriers shows as a difference between its two
# runs), models.gpt2_precision.cuda and models.dense_precision.cuda (16-bit
# training with loss scaling and resume). A pass says the backend's own code
# computes what ref computes; it says nothing about a GPU's speed or its
# libraries (gpu-verification.md).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-emu}
JOBS=${JOBS:-$(nproc)}

if [ ! -f "${CUDA_HOME:-/usr/local/cuda}/include/cuda_runtime.h" ]; then
    echo "emulate: no CUDA headers under ${CUDA_HOME:-/usr/local/cuda}/include: install the CUDA" \
         "toolkit or set CUDA_HOME; nothing run" >&2
    exit 0
fi
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGT_CUDA_EMULATOR=ON \
      -DCMAKE_C_FLAGS=-Werror >"$BUILD/configure.log" || { cat "$BUILD/configure.log"; exit 1; }
cmake --build "$BUILD" -j "$JOBS"
cd "$BUILD"
ctest --output-on-failure -j "$JOBS" -L gpu
