#!/usr/bin/env bash
# valgrind memcheck on one short training run: build-valgrind is a Release
# build with debug information and without -march=native (valgrind does not
# know every instruction a -march=native build may use, AVX-512 among them),
# and without MPI and CUDA (their runtimes' own noise is not ours to judge;
# the ASan build covers our MPI code). Any invalid access, use of an
# uninitialised value in a branch, or leak (definite or possible) fails.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-valgrind}
JOBS=${JOBS:-$(nproc)}

mkdir -p "$BUILD"
if ! command -v valgrind >/dev/null; then
    echo "valgrind: not installed (ci/deps.sh installs it); skipped"
    exit 0
fi
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGT_NATIVE=OFF -DGT_WITH_CUDA=OFF \
      -DGT_WITH_MPI=OFF -DCMAKE_C_FLAGS=-Werror >"$BUILD/configure.log" || { cat "$BUILD/configure.log"; exit 1; }
cmake --build "$BUILD" -j "$JOBS" --target gauntlet

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# passive: spinning OpenMP threads are slow under valgrind's one-at-a-time
# thread scheduling. --peak-gflops: no SGEMM measurement (minutes under valgrind).
OMP_WAIT_POLICY=passive \
valgrind --tool=memcheck --error-exitcode=1 --leak-check=full \
         --errors-for-leak-kinds=definite,possible --show-leak-kinds=definite,possible \
         --track-origins=yes --suppressions=ci/valgrind.supp --num-callers=30 \
    "$BUILD/harness/gauntlet" train --steps 3 --batch 4 --seq 32 --threads 2 \
        --peak-gflops 100 --report "$tmp/report.json" --print-every 1
test -s "$tmp/report.json"
echo "valgrind: the training run is clean"
