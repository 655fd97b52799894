#!/usr/bin/env bash
# mlp and convnet through `gauntlet train` (suites/trainer/loop.c over models/model.h).
# usage: dense_cli.sh GAUNTLET REPORT_CHECK
# convnet-tiny: 10 steps unbroken vs 5 steps + checkpoint + resume to 10 give
# the same final digest (parameters AND BatchNorm running statistics) and the
# same losses of steps 6..10; the report validates and carries images_per_s,
# mfu, peak_memory and target_loss; mlp-tiny reports samples_per_s; the
# options that do not apply to a dense model are refused naming the problem;
# the held-out evaluation survives a resume bitwise; --eval-every and
# --target-gap report time to target (and nothing when it is not reached).
set -u
g=$1
check=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../../harness/tests/lib.sh" # fails, fail, ok, expect
common="--steps 10 --batch 8 --peak-gflops 100 --print-every 0 --threads 1 --weight-decay 0.1"
digest() { grep -o 'fnv1a64 [0-9a-f]*' "$1" | head -1 | cut -d' ' -f2; }
losses() { # the last 5 values of the report's loss series, as written
    tr -d ' \n' < "$1" | grep -o '"loss":\[[^]]*\]' | head -1 | tr -d '"loss:[]' |
        tr ',' '\n' | tail -5 | tr '\n' ' '
}

"$g" train --model convnet-tiny $common --eval-samples 256 --report "$tmp/full.json" \
    > "$tmp/full.out" 2>&1 ||
    fail "unbroken run: $(tail -3 "$tmp/full.out")"
"$g" train --model convnet-tiny $common --checkpoint-every 5 --checkpoint-dir "$tmp/ck" \
    --stop-after 5 > "$tmp/part.out" 2>&1 || fail "first half: $(tail -3 "$tmp/part.out")"
"$g" train --model convnet-tiny $common --resume "$tmp/ck" --eval-samples 256 \
    --report "$tmp/res.json" > "$tmp/res.out" 2>&1 || fail "resume: $(tail -3 "$tmp/res.out")"
a=$(digest "$tmp/full.out")
b=$(digest "$tmp/res.out")
if [ -n "$a" ] && [ "$a" = "$b" ]; then ok "convnet resume: final digest $a equal"
else fail "convnet resume: digest $a unbroken, $b resumed"; fi
la=$(losses "$tmp/full.json")
lb=$(losses "$tmp/res.json")
if [ -n "$la" ] && [ "$la" = "$lb" ]; then ok "convnet resume: losses of steps 6..10 equal"
else fail "convnet resume: losses '$la' vs '$lb'"; fi
"$check" "$tmp/full.json" --no-errors > "$tmp/check.out" 2>&1 && ok "report validates" ||
    fail "report_check: $(cat "$tmp/check.out")"
for k in images_per_s mfu peak_memory target_loss eval_loss eval_bayes_loss; do
    grep -q "\"$k\"" "$tmp/full.json" && ok "report has $k" || fail "no $k in the report"
done
# the held-out evaluation (evaluation mode: the running statistics) of the
# resumed run is the unbroken run's, to the last printed digit
ea=$(grep -o 'held-out loss *[0-9.]*' "$tmp/full.out")
eb=$(grep -o 'held-out loss *[0-9.]*' "$tmp/res.out")
if [ -n "$ea" ] && [ "$ea" = "$eb" ]; then ok "convnet resume: $ea equal"
else fail "convnet resume: '$ea' unbroken vs '$eb' resumed"; fi
# a checkpoint without its running statistics is refused, naming the tensor
f=$(ls "$tmp"/ck/*.gtck | head -1)
"$g" train --model mlp-tiny $common --resume "$f" > "$tmp/wrong.out" 2>&1
rc=$?
[ $rc -eq 2 ] && ok "a convnet checkpoint refused by mlp-tiny (exit 2)" ||
    fail "mlp-tiny resumed a convnet checkpoint (exit $rc): $(tail -2 "$tmp/wrong.out")"

"$g" train --model mlp-tiny $common --report "$tmp/mlp.json" > "$tmp/mlp.out" 2>&1 ||
    fail "mlp-tiny: $(tail -3 "$tmp/mlp.out")"
grep -q '"samples_per_s"' "$tmp/mlp.json" && ok "mlp reports samples_per_s" ||
    fail "no samples_per_s for mlp"
grep -q "samples/s" "$tmp/mlp.out" && ok "mlp summary in samples/s" || fail "summary unit"

# time to target: 10 steps, evaluations after 5 and 10; a gap of 10 nats is
# reached at the first one, a gap of 1e-6 never (no metric then)
"$g" train --model mlp-tiny $common --eval-samples 128 --eval-every 5 --target-gap 10 \
    --report "$tmp/tt.json" > "$tmp/tt.out" 2>&1 || fail "time to target: $(tail -3 "$tmp/tt.out")"
tr -d ' \n' < "$tmp/tt.json" | grep -q '"steps_to_target":{"value":5' &&
    ok "steps_to_target 5 in the report" || fail "no steps_to_target 5 in the report"
grep -q "time to target   step 5" "$tmp/tt.out" && ok "summary prints the time to target" ||
    fail "summary lacks the time to target"
"$g" train --model mlp-tiny $common --eval-samples 128 --eval-every 5 --target-gap 1e-6 \
    --report "$tmp/tn.json" > "$tmp/tn.out" 2>&1 || fail "unreached target: $(tail -3 "$tmp/tn.out")"
if ! grep -q steps_to_target "$tmp/tn.json" && grep -q "not reached" "$tmp/tn.out"; then
    ok "an unreached target: no metric, the summary says so"
else fail "an unreached target was reported as reached"; fi

refused() { # WHAT PATTERN ARGS...
    local what=$1 pat=$2
    shift 2
    local out rc
    out=$("$g" train $common "$@" 2>&1)
    rc=$?
    if [ $rc -eq 2 ] && grep -q -- "$pat" <<<"$out"; then ok "$what"
    else fail "$what: exit $rc, output: $(tail -2 <<<"$out")"; fi
}
refused "--data-order shuffled refused" "already independent" --model mlp-tiny --data-order shuffled
refused "--init-from refused" "are for gpt2" --model convnet-tiny --init-from llmc:/nonexistent
refused "--precision bf16 on cpu refused" "backend 'cpu' does not store bf16" --model mlp-tiny --precision bf16
refused "unknown model names the presets" "resnet-small" --model resnet-huge
refused "--eval-samples refused for gpt2" "is for the mlp and convnet" --eval-samples 64
refused "--target-gap needs --eval-every" "needs --eval-every" --model mlp-tiny --target-gap 0.1
refused "--eval-every needs --eval-samples" "needs --eval-samples" --model mlp-tiny --eval-every 5
[ $fails -eq 0 ] && echo "all passed" || echo "$fails failure(s)"
exit $((fails > 0))
