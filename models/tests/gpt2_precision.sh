#!/usr/bin/env bash
# --precision end to end through `gauntlet train`.
# usage: gpt2_precision.sh GAUNTLET REPORT_CHECK
# - bad values (--precision fp8) exit 2 naming the choices;
# - --precision bf16 on the cpu backend (fp32 only) exits 2 with a message;
# - fp16 on ref with an overflow injected at step 3 (GT_FAULT_OVERFLOW=3):
#   8 steps unbroken vs 4 steps + checkpoint + resume to 8 give the same
#   final-weights digest and the same losses (bits) for steps 5..8, so the
#   loss scale (32768 after the skip) and the skipped count (AdamW's t)
#   were restored; both reports say skipped_steps 1 and loss_scale 32768;
# - an fp32 checkpoint resumed with --precision fp16 is refused naming both.
set -u
g=$1
check=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../../harness/tests/lib.sh" # fails, fail, ok, expect
digest() { grep -o 'fnv1a64 [0-9a-f]*' "$1" | head -1 | cut -d' ' -f2; }
losses() { # the last 4 values of the report's loss series, as written (17 digits)
    tr -d ' \n' < "$1" | grep -o '"loss":\[[^]]*\]' | head -1 | tr -d '"loss:[]' |
        tr ',' '\n' | tail -4 | tr '\n' ' '
}
metric() { # FILE NAME: the value of metric NAME
    tr -d ' \n' < "$1" | grep -o "\"$2\":{\"value\":[^,]*" | head -1 | sed 's/.*://'
}
expect_refusal() { # WHAT PATTERN ARGS...: exit 2 with PATTERN in the message
    local what=$1 pat=$2
    shift 2
    local out rc
    out=$("$g" train "$@" 2>&1)
    rc=$?
    if [ $rc -eq 2 ] && grep -q -- "$pat" <<<"$out"; then ok "$what"
    else fail "$what: rc $rc, expected 2 and '$pat'"; echo "$out" | grep -i gauntlet | tail -3; fi
}

expect_refusal "--precision fp8 is a usage error" "use fp32, bf16 or fp16" \
    --precision fp8 --steps 2
expect_refusal "bf16 on the cpu backend is refused" "backend 'cpu' does not store bf16" \
    --precision bf16 --backend cpu --steps 2 --peak-gflops 100

common="--backend ref --precision fp16 --steps 8 --batch 2 --peak-gflops 100 --print-every 0"
export GT_FAULT_OVERFLOW=3
"$g" train $common --report "$tmp/full.json" > "$tmp/full.out" 2>&1 || fail "unbroken run (rc $?)"
"$g" train $common --stop-after 4 --checkpoint-every 4 --checkpoint-dir "$tmp/ck" \
    > "$tmp/half.out" 2>&1 || fail "first half (rc $?)"
"$g" train $common --resume "$tmp/ck" --report "$tmp/res.json" > "$tmp/res.out" 2>&1 ||
    { fail "resume (rc $?)"; tail -3 "$tmp/res.out"; }
unset GT_FAULT_OVERFLOW
grep -q "step 3: fp16 gradients overflowed at loss scale 65536: step skipped, scale now 32768" \
    "$tmp/full.out" || fail "the unbroken run does not report the skipped step 3"
a=$(digest "$tmp/full.out") b=$(digest "$tmp/res.out")
la=$(losses "$tmp/full.json") lb=$(losses "$tmp/res.json")
if [ -n "$a" ] && [ "$a" = "$b" ] && [ -n "$la" ] && [ "$la" = "$lb" ]; then
    ok "fp16 resumed at 4 = unbroken (weights $a, losses 5..8 $lb)"
else
    fail "fp16 resume: weights $b vs $a, losses $lb vs $la"
fi
for r in full res; do
    s=$(metric "$tmp/$r.json" skipped_steps) l=$(metric "$tmp/$r.json" loss_scale)
    if [ "$s" = "1.0" ] && [ "$l" = "32768.0" ]; then
        ok "$r report: skipped_steps $s, loss_scale $l"
    else
        fail "$r report: skipped_steps '$s' (want 1.0), loss_scale '$l' (want 32768.0)"
    fi
    tr -d ' \n' < "$tmp/$r.json" | grep -q '"precision":"fp16"' || fail "$r report: precision"
    "$check" "$tmp/$r.json" > /dev/null || fail "$r report invalid"
done
grep -q "precision        fp16 (loss scale 32768 at the end, 1 step(s) skipped" "$tmp/res.out" ||
    fail "the summary does not show the loss scale and the skipped step"

# an fp32 checkpoint (cpu, fast) is not resumed in fp16
"$g" train --steps 4 --batch 2 --peak-gflops 100 --print-every 0 --stop-after 2 \
    --checkpoint-every 2 --checkpoint-dir "$tmp/ck32" > /dev/null 2>&1 || fail "fp32 checkpoint"
expect_refusal "an fp32 checkpoint is not resumed in fp16" \
    "trained with --precision fp32, this run asks for fp16" \
    --steps 4 --batch 2 --peak-gflops 100 --backend ref --precision fp16 --resume "$tmp/ck32"

if [ $fails -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "all precision checks passed"
