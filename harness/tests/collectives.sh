#!/usr/bin/env bash
# usage: collectives.sh GAUNTLET REPORT_CHECK [LAUNCHER...]
# Runs `gauntlet run collectives --quick --verbose` (the tables; under LAUNCHER when given, e.g.
# "mpiexec -n 4 --oversubscribe"), then asserts: the report validates, every
# result's wrong_elements check is 0, no result is an error, the table says
# 0 wrong elements, and every result of the default matrix is there.
# busbw_vs_raw may fail without failing the test: on a shared CI machine a
# 5% performance gate is noise (it is printed; `gauntlet run` still exits 1
# for it on a real run). Without a launcher it also checks the command line.
set -u
g=$1
check=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"

# the quick default matrix: allreduce, reduce, reduce_scatter x 6 dtypes x 4
# ops x 2 placements; broadcast, alltoall, sendrecv x 6 dtypes x 1;
# allgather x 6 x 2; and what the layouts send (docs/distributed.md, "The layout
# grid"): layout_tp's all-reduce x 2 placements, layout_pp's exchange,
# layout_zero3's all-gather x 2
expected_results=179

if [ $# -eq 0 ]; then
    # command line: exit code and the words the user must see
    expect() {
        local want=$1 pattern=$2
        shift 2
        local out rc
        out=$("$@" 2>&1)
        rc=$?
        if [ "$rc" -ne "$want" ]; then
            fail "'$*' exited $rc, expected $want"; echo "$out" | tail -5
        elif ! grep -qiE -- "$pattern" <<<"$out"; then
            fail "'$*' output lacks /$pattern/"; echo "$out" | tail -5
        else
            echo "ok: $* -> $rc"
        fi
    }
    expect 2 "no suite 'nosuch' \(gauntlet list names them\)" "$g" run nosuch
    expect 0 "--maxbytes" "$g" run collectives --help
    expect 2 "-b expects a size" "$g" run collectives -b 12Q
    expect 2 "--dtypes: unknown 'fp8'" "$g" run collectives --dtypes fp32,fp8
    expect 2 "--ops: unknown 'prod'" "$g" run collectives --ops prod
    expect 2 "--colls: unknown 'gather'" "$g" run collectives --colls gather
    expect 2 "-e 8 is below -b 1024" "$g" run collectives -b 1K -e 8
    expect 2 "unknown option '--bogus'" "$g" run collectives --bogus
    expect 2 "cannot write report" "$g" run collectives --quick --report /nonexistent-dir/r.json
    # K/M suffixes, an explicit selection: every named combination at every size
    expect 0 "4194304 +1048576 +fp32 +sum" "$g" run collectives -b 1M -e 4M -f 4 \
        --colls allreduce --dtypes fp32 --ops sum --iters 2 --warmup 1 --reps 3 --verbose
fi

# the launcher's rank count is the one topology to run (the runner's default
# would add every power of two below it)
np=1
prev=
for x in "$@"; do
    case "$prev" in -n | -np | --np) np=$x ;; esac
    prev=$x
done
# Under a launcher, fixed short timing (2 blocks of 2 operations after 1
# warm-up): what this test checks is the first, checked run of every row,
# which is the same; 4 ranks on a shared 2-core machine time only noise, and
# the adaptive timing path runs without a launcher (and in `make run`).
# Rounds (5 passes over the sweep, the default) everywhere but on 4 or more
# ranks, where one pass checks every row (five took MPICH's 4 oversubscribed,
# spinning ranks past 300 s).
timing=()
rounds=5
[ $# -gt 0 ] && timing=(--iters 2 --warmup 1 --reps 2)
[ "$np" -ge 4 ] && { timing+=(--rounds 1); rounds=1; }
out=$("$@" "$g" run collectives --quick --verbose "${timing[@]}" --topologies "$np" --report "$tmp/c.json" 2>&1)
rc=$?
echo "$out" | grep -E '^(gauntlet run|summary|total|checks|# (wrong|busbw|note))'
if { [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; } || [ ! -s "$tmp/c.json" ]; then
    fail "gauntlet run collectives exited $rc"; echo "$out" | tail -20
fi
"$check" "$tmp/c.json" --zero-check wrong_elements --no-errors --no-failed-checks \
    --except busbw_vs_raw || fail "report check"
if [ "$rc" -eq 1 ] && ! grep -q "busbw_vs_raw" "$tmp/c.json"; then
    fail "exit 1 without a failed check in the report"
fi
grep -q "^# wrong elements: 0 (OK)" <<<"$out" || fail "the table reports wrong elements"
grep -q "^total: $expected_results results: .* 0 error" <<<"$out" ||
    fail "expected $expected_results results and no error"
# the layout cases, one size each: gpt2-3m's 16 x 64 x 256 fp32 activations, a
# micro-batch of 4 of them, one block's 12C^2 + 13C parameters
for c in layout_tp/allreduce/fp32/sum:1048576 layout_pp/sendrecv/fp32:262144 \
         layout_zero3/allgather/fp32:3159040; do
    grep -A12 "\"case\": \"${c%%:*}\"" "$tmp/c.json" | grep -q "\"max_bytes\": ${c##*:}," ||
        fail "no case ${c%%:*} of ${c##*:} bytes"
done
# each metric says whether its blocks were timed in rounds (compare reads it)
if [ "$rounds" -gt 1 ]; then
    grep -q '"rounds": 5' "$tmp/c.json" || fail "no metric timed in 5 rounds in the report"
else
    grep -q '"rounds"' "$tmp/c.json" && fail "--rounds 1, yet a metric says it was timed in rounds"
fi
# more ranks than cores: no raw baseline timed, and the result says why
if [ "$np" -gt "$(nproc)" ]; then
    grep -q '"raw": "none: oversubscribed' "$tmp/c.json" ||
        fail "$np ranks on $(nproc) cores: the results do not say the raw baseline was left out"
fi
# a row of the primary combination reached 1 MiB with 0 wrong
grep -qE '^ +1048576 +[0-9]+ +fp32 +sum .* 0 ' <<<"$out" || fail "no fp32 sum row at 1 MiB"

if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "all collectives checks passed"
