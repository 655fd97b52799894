#!/usr/bin/env bash
# usage: collectives_nccl.sh GAUNTLET REPORT_CHECK [LAUNCHER...]
# `gauntlet run collectives --comm nccl --quick` (under LAUNCHER when given,
# e.g. "mpiexec -n 2 --oversubscribe"). Where NCCL cannot run (not built in,
# no MPI, no GPU) the run must exit 2 with a message naming the backend and
# the reason: that refusal is what is checked (exit 0). Where it runs: the
# report validates, every result is on backend nccl with device buffers and
# a raw NCCL baseline, every wrong_elements check is 0, no result is an
# error, all 174 results of the quick matrix are there, and when NVML gave
# readings every result carries GPU telemetry. Fewer GPUs on the node than
# ranks: skipped (77).
set -u
g=$1
check=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"
expected_results=174

np=1
prev=
for x in "$@"; do
    case "$prev" in -n | -np | --np) np=$x ;; esac
    prev=$x
done
out=$("$@" "$g" run collectives --comm nccl --quick --verbose --topologies "$np" \
      --report "$tmp/c.json" 2>&1)
rc=$?
echo "$out" | grep -E "^(gauntlet run|summary|total|checks|# (wrong|busbw))|'nccl'"

if grep -q "would share CUDA device" <<<"$out"; then
    echo "skipped: fewer GPUs on this node than the $np ranks"
    exit 77
fi
if grep -qE "communicator backend 'nccl'" <<<"$out" && [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
    # the refusal: exit 2, and a reason the user can act on
    [ "$rc" -eq 2 ] || fail "refused with exit $rc, expected 2"
    grep -qE "not built in|needs MPI|no CUDA device is visible" <<<"$out" ||
        fail "the refusal gives no reason"
    grep -qE "use 'mpi'|use 'self'|--comm (mpi|self)|rebuild|run one process" <<<"$out" ||
        fail "the refusal does not say what to do"
    [ "$fails" -eq 0 ] && echo "nccl cannot run here, and says why: refusal checked"
    exit $((fails != 0))
fi

if { [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; } || [ ! -s "$tmp/c.json" ]; then
    fail "gauntlet run collectives --comm nccl exited $rc"; echo "$out" | tail -20
fi
opts=(--zero-check wrong_elements --no-errors --no-failed-checks --except busbw_vs_raw)
# NVML gave readings (the fingerprint's or a result's): telemetry is expected everywhere
grep -qE '"sm_clock_mhz": [0-9]' "$tmp/c.json" && opts+=(--telemetry)
"$check" "$tmp/c.json" "${opts[@]}" || fail "report check"
grep -q "^# wrong elements: 0 (OK)" <<<"$out" || fail "the table reports wrong elements"
grep -q "^total: $expected_results results: .* 0 error" <<<"$out" ||
    fail "expected $expected_results results and no error"
grep -q '"backend": "mpi"\|"backend": "self"' "$tmp/c.json" && fail "a result not on nccl"
grep -q '"buffers": "host"' "$tmp/c.json" && fail "a result on host buffers"
grep -q '"raw": "nccl"' "$tmp/c.json" || fail "no raw NCCL baseline"
grep -qE '^ +1048576 +[0-9]+ +fp32 +sum .* 0 ' <<<"$out" || fail "no fp32 sum row at 1 MiB"

if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "all nccl collectives checks passed"
