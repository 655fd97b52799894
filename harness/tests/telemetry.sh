#!/usr/bin/env bash
# usage: telemetry.sh GAUNTLET REPORT_CHECK FAKE_GPU_DIR
# Per-case GPU telemetry through `gauntlet run`, on any machine: FAKE_GPU_DIR
# holds stand-ins for libcuda.so.1 and libnvidia-ml.so.1 (fake_gpu.c: one
# device, an SM clock that rises by 1 MHz per reading). With them on
# LD_LIBRARY_PATH, a run on --backend cuda must give every result a start
# and an end reading (the end's clock above the start's; consecutive cases
# chained, one's end the next one's start, except the two placements of one
# collectives combination, which share theirs), and a run on --backend cpu
# none. Without them nothing is recorded and nothing fails.
set -u
g=$1
check=$2
fake=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"
args=(run collectives --colls allreduce,broadcast --dtypes fp32 -b 8 -e 64 --quiet)

LD_LIBRARY_PATH="$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$g" "${args[@]}" --backend cuda --report "$tmp/gpu.json" >"$tmp/gpu.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { fail "run on the fake GPU exited $rc"; tail -20 "$tmp/gpu.out"; }
"$check" "$tmp/gpu.json" --no-errors || fail "report check (fake GPU)"
results=$(grep -c '"suite": "collectives"' "$tmp/gpu.json")
tel=$(grep -c '"telemetry": {' "$tmp/gpu.json")
# allreduce fp32 x 4 ops x 2 placements, broadcast fp32 in place
[ "$results" -eq 9 ] || fail "expected 9 results, got $results"
[ "$tel" -eq "$results" ] || fail "$tel of $results results carry telemetry"
grep -q '"uuid": "GPU-01234567-89ab-cdef-0123-456789abcdef"' "$tmp/gpu.json" ||
    fail "telemetry without the device's UUID"
grep -q '"throttle_reason_names": "sw_power_cap"' "$tmp/gpu.json" || fail "no throttle names"
grep -q '"power_w": 250.5' "$tmp/gpu.json" || fail "no power reading"
# the SM clocks in file order: start, end of each result
clocks=$(grep -A3 -E '"(start|end)": \{' "$tmp/gpu.json" | grep -oE '"sm_clock_mhz": [0-9]+' |
         grep -oE '[0-9]+$' | tr '\n' ' ')
read -r -a c <<<"$clocks"
[ "${#c[@]}" -eq $((2 * results)) ] || fail "expected $((2 * results)) readings, got ${#c[@]}"
for ((i = 0; i + 1 < ${#c[@]}; i += 2)); do
    [ "${c[i + 1]}" -gt "${c[i]}" ] || fail "result $((i / 2)): end clock ${c[i + 1]} <= start ${c[i]}"
    [ $i -ge 2 ] || continue
    same=$([ "${c[i]}" -eq "${c[i - 2]}" ] && [ "${c[i + 1]}" -eq "${c[i - 1]}" ] && echo 1)
    if [ -z "$same" ] && [ "${c[i]}" -ne "${c[i - 1]}" ]; then
        fail "result $((i / 2)) starts at ${c[i]}, not where the previous ended (${c[i - 1]})"
    fi
done
[ "${c[0]:-0}" -lt "${c[${#c[@]} - 1]:-0}" ] || fail "the clock never moved: one reading reused"

LD_LIBRARY_PATH="$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$g" "${args[@]}" --backend cpu --report "$tmp/cpu.json" >"$tmp/cpu.out" 2>&1 ||
    fail "run on cpu exited $?"
grep -q '"telemetry"' "$tmp/cpu.json" && fail "telemetry on a cpu run"

# no NVML at all (this machine's own libraries): a cuda run records nothing, fails nothing
"$g" "${args[@]}" --backend cuda --report "$tmp/none.json" >"$tmp/none.out" 2>&1 ||
    fail "run on cuda without the fake exited $?"
if ! grep -q '"sm_clock_mhz": [0-9]' "$tmp/none.json"; then
    grep -q '"telemetry"' "$tmp/none.json" && fail "telemetry without NVML"
fi

if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "telemetry: $tel results with start and end readings; none on cpu"
