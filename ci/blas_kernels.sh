#!/usr/bin/env bash
# The cpu backend's determinism tests under several BLAS kernels, and in a build
# without BLAS (gauntlet's own SGEMM, with OpenMP), so that a kernel that breaks
# "bitwise the same on any thread count" fails CI whichever machine CI lands on.
#
#   ci/blas_kernels.sh [BUILD_DIR]      (default build/, as `make build` leaves it)
#
# OpenBLAS built with DYNAMIC_ARCH (Debian's is) picks its kernel at start-up;
# OPENBLAS_CORETYPE forces one. The first run keeps the environment as CI has it
# (some machines set OPENBLAS_CORETYPE because an old OpenBLAS fails with its own
# choice there, e.g. Haswell on AMD Zen 4); then forced: Prescott (SSE3, any x86-64:
# what OpenBLAS falls back to on a CPU it does not know), Sandybridge (AVX), Haswell
# (AVX2 + FMA), and SkylakeX on an Intel CPU with AVX-512 or Zen on an AMD one. A
# kernel the CPU cannot run is left out and said so. gauntlet env must report the
# kernel asked for: a BLAS that ignores the variable would test the default again
# and pass for nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
gauntlet="$build/harness/gauntlet"
[ -x "$gauntlet" ] || { echo "blas_kernels: $gauntlet not found: build first (make build)" >&2; exit 2; }

# The tests whose results depend on the GEMMs' arithmetic across thread counts
# (the ref backend has no BLAS; mpi and gpu tests run elsewhere).
tests=(-L determinism -LE 'mpi|gpu' -E '[.](ref|cuda)$')

flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
has() { for f in "$@"; do [[ " $flags " == *" $f "* ]] || return 1; done; }
cores=(as-set Prescott)
if has avx; then cores+=(Sandybridge); else echo "blas_kernels: no AVX: Sandybridge left out"; fi
if has avx2 fma; then cores+=(Haswell); else echo "blas_kernels: no AVX2+FMA: Haswell left out"; fi
if grep -qm1 AuthenticAMD /proc/cpuinfo; then
    if has avx2 fma; then cores+=(Zen); else echo "blas_kernels: no AVX2: Zen left out"; fi
elif has avx512f avx512bw avx512dq avx512vl; then
    cores+=(SkylakeX)
else
    echo "blas_kernels: no AVX-512: SkylakeX left out"
fi

if "$gauntlet" env | grep -q '^blas kernel none'; then
    echo "blas_kernels: $build has no BLAS: its own SGEMM is what the first run checks"
    cores=(as-set)
fi

given=${OPENBLAS_CORETYPE-}
fail=0
for core in "${cores[@]}"; do
    if [ "$core" = as-set ]; then
        if [ -n "$given" ]; then export OPENBLAS_CORETYPE=$given; else unset OPENBLAS_CORETYPE; fi
    elif [ "$core" = "$given" ] || [ "$core" = "${first:-}" ]; then
        continue # the first run had it (given, or OpenBLAS's own choice for this CPU)
    else
        export OPENBLAS_CORETYPE=$core
    fi
    line=$("$gauntlet" env | grep '^blas kernel' || true)
    echo "== BLAS kernel: ${OPENBLAS_CORETYPE:-unset, OpenBLAS chooses} ($line)"
    if [ "$core" != as-set ] && [[ "$line" != "blas kernel $core,"* ]]; then
        echo "blas_kernels: OPENBLAS_CORETYPE=$core asked for, but the BLAS runs: $line" >&2
        echo "  (an OpenBLAS without DYNAMIC_ARCH ignores the variable; Debian's has it)" >&2
        fail=1
        continue
    fi
    (cd "$build" && ctest --output-on-failure -j "$(nproc)" "${tests[@]}") || fail=1
    if [ "$core" = as-set ]; then first=${line#blas kernel }; first=${first%%,*}; fi
done
if [ -n "$given" ]; then export OPENBLAS_CORETYPE=$given; else unset OPENBLAS_CORETYPE; fi

# gauntlet's own SGEMM, threaded with OpenMP (CI's minimal build has no OpenMP,
# so its determinism tests skip).
nb=${build}-noblas
cmake -S . -B "$nb" -DCMAKE_BUILD_TYPE=Release -DGT_WITH_BLAS=OFF -DGT_WITH_CUDA=OFF \
      -DGT_WITH_MPI=OFF >/dev/null
ci/build_for_tests.sh "$nb" "${tests[@]}" >/dev/null
echo "== no BLAS: $("$nb/harness/gauntlet" env | grep '^backend' || true)"
(cd "$nb" && ctest --output-on-failure -j "$(nproc)" "${tests[@]}") || fail=1

if [ "$fail" != 0 ]; then
    echo "blas_kernels: FAILED (a BLAS kernel or the own SGEMM is not bitwise the same on 1, 2, 3 threads)" >&2
    exit 1
fi
echo "blas_kernels: every kernel tried gives the same bits on every thread count"
