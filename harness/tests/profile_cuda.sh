# The per-op profile on the cuda backend (docs/profile.md): events on the
# stream read back after the step's sync, NVTX ranges, the trace's device
# track. Runs where a GPU or the CUDA emulator (ci/emulate.sh) is; exit 77
# where the cuda backend cannot start.
# usage: profile_cuda.sh GAUNTLET PROFILE_CHECK
set -u
g=$1
check=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"

"$g" train --backend cuda --model gpt2-tiny --steps 5 --batch 2 --seq 16 --peak-gflops 100 \
    --quiet --print-every 0 --trace "$tmp/t.json" --report "$tmp/r.json" >"$tmp/log" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -qiE "no usable GPU|not compiled|unsupported" "$tmp/log"; then
    echo "skip: $(head -1 "$tmp/log")"
    exit 77
fi
[ "$rc" -eq 0 ] && ok "cuda train with --trace" || { fail "cuda train exited $rc"; tail -5 "$tmp/log"; }
"$check" "$tmp/r.json" --trace "$tmp/t.json" --expect-op matmul_fwd >"$tmp/check.log" 2>&1 &&
    ok "cuda: profile and trace as documented" || { fail "cuda profile or trace"; cat "$tmp/check.log"; }
grep -q '"clock": "device events"' "$tmp/r.json" && ok "cuda: timed by device events" ||
    fail "cuda: not timed by device events"
grep -q '"name":"ops (device stream, events)"' "$tmp/t.json" && ok "cuda: the trace's device track" ||
    fail "cuda: no device track in the trace"

[ "$fails" -eq 0 ] && echo "profile_cuda: all checks passed" || echo "profile_cuda: $fails check(s) failed"
[ "$fails" -eq 0 ]
