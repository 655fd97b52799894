#!/usr/bin/env bash
# usage: ci/build_for_tests.sh BUILD_DIR CTEST_SELECTION...
# Builds, in a configured BUILD_DIR, what the tests that `ctest CTEST_SELECTION`
# picks (e.g. -L mpich, -R REGEX) need and nothing more: every target that is
# not a test program (the libraries, gauntlet, the tools, the fake driver
# libraries) and the test programs those tests run (a target of that name
# anywhere on a test's command line: after a launcher such as mpiexec, or as
# a script's argument). The CI steps that run a subset of the tests in a
# build of their own (the MPICH build, the no-BLAS build, the CUDA emulator)
# use it: the rest of the ~100 test programs would only be compiled and
# linked there, never run. Exit 1 when the selection matches no test.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR CTEST_SELECTION..." >&2; exit 2; }
build=$1
shift
jobs=${JOBS:-$(nproc)}

mapfile -t all < <(cmake --build "$build" --target help |
    sed -n 's/^[.][.][.] \([^ ]*\).*/\1/p' |
    grep -vE '^(all|clean|depend|edit_cache|rebuild_cache|test|install.*|list_install_components|package.*)$|[.][ios]$' |
    sort -u)
mapfile -t names < <(cd "$build" && ctest -N "$@" | sed -n 's/^ *Test *#[0-9]*: //p')
[ ${#names[@]} -gt 0 ] || { echo "build_for_tests: no test matches $*" >&2; exit 1; }
# every word of the selected tests' add_test lines, by its last path component
mapfile -t words < <(for n in "${names[@]}"; do
        grep -rhF --include=CTestTestfile.cmake "add_test([=[$n]=] " "$build" |
            sed 's/^add_test([^"]*//' | grep -o '"[^"]*"' | tr -d '"' | sed 's|.*/||'
    done | sort -u)
mapfile -t targets < <({
    printf '%s\n' "${all[@]}" | grep -v '^test_' || true
    comm -12 <(printf '%s\n' "${all[@]}") <(printf '%s\n' "${words[@]}") | grep '^test_' || true
} | sort -u)
echo "build_for_tests: ${#names[@]} test(s), ${#targets[@]} of ${#all[@]} targets"
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
