#!/usr/bin/env bash
# Fuzzing: builds the libFuzzer targets of ci/fuzz/ with clang
# (GT_FUZZ=ON: ASan + UBSan + coverage) in build-fuzz and runs each for
# FUZZ_SECONDS (30) seconds from its seed corpus ci/fuzz/corpus/<target>/, the
# targets side by side on the machine's cores. The seeds are only read: what
# the fuzzer finds goes to build-fuzz/corpus/<target>/. A crash, a leak, a
# timeout or undefined behaviour fails the script and leaves the input in
# build-fuzz/artifacts/ (reproduce: build-fuzz/ci/fuzz/fuzz_<target> FILE).
# Without clang or libFuzzer it says so and skips (exit 0).
#
#   ci/fuzz.sh                  every target, 30 s each
#   FUZZ_SECONDS=600 ci/fuzz.sh tokens report
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-30}
CLANG=${CLANG:-clang}

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n' >"$probe/p.c"
if ! command -v "$CLANG" >/dev/null || \
   ! "$CLANG" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>/dev/null; then
    echo "fuzz: skipped: $CLANG with libFuzzer (-fsanitize=fuzzer) not available (ci/deps.sh installs clang and libclang-rt-14-dev)"
    exit 0
fi

mkdir -p "$BUILD"
CC="$CLANG" cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGT_FUZZ=ON \
      -DGT_WITH_CUDA=OFF -DGT_WITH_MPI=OFF -DCMAKE_C_FLAGS=-Werror >"$BUILD/configure.log" \
    || { cat "$BUILD/configure.log"; exit 1; }
mapfile -t all <"$BUILD/ci/fuzz/targets.txt"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
cmake --build "$BUILD" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

mkdir -p "$BUILD/artifacts"
pids=()
for t in "${targets[@]}"; do
    mkdir -p "$BUILD/corpus/$t"
    # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a leak or an
    # allocation sized by the input.
    "$BUILD/ci/fuzz/fuzz_$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$t-" \
        "$BUILD/corpus/$t" "ci/fuzz/corpus/$t" >"$BUILD/fuzz-$t.log" 2>&1 &
    pids+=($!)
done
fail=0
for i in "${!targets[@]}"; do
    t=${targets[$i]}
    if wait "${pids[$i]}"; then
        echo "fuzz $t: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$BUILD/fuzz-$t.log" | tail -n 1)"
    else
        fail=1
        echo "fuzz $t: FAILED; the input is in $BUILD/artifacts/, the log ($BUILD/fuzz-$t.log) ends:"
        tail -n 60 "$BUILD/fuzz-$t.log"
    fi
done
exit $fail
