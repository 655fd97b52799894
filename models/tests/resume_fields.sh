#!/usr/bin/env bash
# Resume never trains on something else (docs/formats.md, "Loading").
# usage: resume_fields.sh GAUNTLET [MPIEXEC]
# A checkpoint of step 3 is resumed with each field it records changed in
# turn: every change is refused (exit 2) naming the field and both values,
# and every change that --resume-allow may let through then resumes (exit 0)
# with "FIELD: A -> B" in the report's resume_overrides. The model's shape
# and family cannot be allowed. A resume that changes nothing records file,
# step and data position; a format version 1 checkpoint (written through the
# GT_TEST_CKPT_VERSION hook) resumes with a warning naming what it lacks.
# With MPIEXEC: world size and ZeRO stage too, and that --deterministic
# (bitwise the same on any rank count) lets the world size change.
set -u
g=$1
mpiexec=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
. "$(dirname "$0")/../../harness/tests/lib.sh" # fails, fail, ok

small="--layers 1 --heads 2 --channels 16 --vocab 64 --max-seq 16 --peak-gflops 100"
base="$small --steps 6 --batch 4 --seq 8 --print-every 0"
"$g" data synth --out "$tmp/a.tok" --tokens 4000 --vocab 64 --seed 3 > /dev/null ||
    fail "data synth a"
"$g" data synth --out "$tmp/b.tok" --tokens 4000 --vocab 64 --seed 4 > /dev/null ||
    fail "data synth b"
cp "$tmp/a.tok" "$tmp/a_copy.tok"

# checkpoints of step 3: on a token file, and on the synthetic source
"$g" train $base --data "$tmp/a.tok" --stop-after 3 --checkpoint-every 3 \
    --checkpoint-dir "$tmp/file" > "$tmp/file.out" 2>&1 || fail "file checkpoint: $(tail -2 "$tmp/file.out")"
"$g" train $base --stop-after 3 --checkpoint-every 3 --checkpoint-dir "$tmp/syn" \
    > "$tmp/syn.out" 2>&1 || fail "synthetic checkpoint: $(tail -2 "$tmp/syn.out")"
F="$tmp/file/ckpt_00000003.gtck"
S="$tmp/syn/ckpt_00000003.gtck"

n=0
# refused CKPT FIELD PATTERN ARGS...: exit 2, the message matches PATTERN;
# then, unless FIELD is -, --resume-allow FIELD resumes and records the change
refused() {
    local ck=$1 field=$2 pat=$3
    shift 3
    n=$((n + 1))
    local out rc
    out=$("$g" train --resume "$ck" "$@" 2>&1)
    rc=$?
    if [ $rc -ne 2 ] || ! grep -qF -- "$pat" <<<"$out"; then
        fail "$field: rc $rc, expected 2 and '$pat'"; grep gauntlet <<<"$out" | tail -2
        return
    fi
    if [ "$field" = - ]; then ok "refused, not allowable: $pat"; return; fi
    grep -qF -- "--resume-allow $field" <<<"$out" ||
        fail "$field: the refusal does not say --resume-allow $field"
    out=$("$g" train --resume "$ck" "$@" --resume-allow "$field" --report "$tmp/r$n.json" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && grep -q "\"resume_overrides\": \"$field: " "$tmp/r$n.json" &&
       grep -qF "resumed with changes allowed by --resume-allow: $field: " <<<"$out"; then
        ok "$field: refused ($pat), allowed and recorded"
    else
        fail "$field: with --resume-allow rc $rc"; grep -E "gauntlet|resume" <<<"$out" | tail -3
    fi
}

refused "$F" data "data is the token file '$tmp/a.tok' (4000 tokens, vocab 64" $base
refused "$F" data "here; resume with --data $tmp/a.tok" $base --data "$tmp/b.tok"
refused "$S" data "here; resume without --data" $base --data "$tmp/a.tok"
refused "$S" data "branch 4, 193 tokens) in the checkpoint, the synthetic source (vocab 64, branch 3" \
    $base --synth-branch 3
refused "$S" data "resume with --synth-tokens 193" $base --synth-tokens 500
refused "$F" data_order "data_order is sequential in the checkpoint, shuffled here" $base \
    --data "$tmp/a.tok" --data-order shuffled
refused "$F" seed "seed is 1337 in the checkpoint, 5 here" $base --data "$tmp/a.tok" --seed 5
refused "$F" batch "batch is 4 in the checkpoint, 8 here" $base --data "$tmp/a.tok" --batch 8
refused "$F" seq "seq is 8 in the checkpoint, 4 here" $base --data "$tmp/a.tok" --seq 4
refused "$F" lr "lr is 0.001 in the checkpoint, 0.002 here" $base --data "$tmp/a.tok" --lr 2e-3
refused "$F" beta1 "beta1 is 0.9 in the checkpoint, 0.8 here" $base --data "$tmp/a.tok" --beta1 0.8
refused "$F" beta2 "beta2 is 0.95 in the checkpoint, 0.99 here" $base --data "$tmp/a.tok" --beta2 0.99
refused "$F" eps "eps is 1e-08 in the checkpoint, 1e-06 here" $base --data "$tmp/a.tok" --eps 1e-6
refused "$F" weight_decay "weight_decay is 0 in the checkpoint, 0.1 here" $base \
    --data "$tmp/a.tok" --weight-decay 0.1
refused "$F" grad_clip "grad_clip is 1 in the checkpoint, 0.5 here" $base --data "$tmp/a.tok" \
    --grad-clip 0.5
refused "$F" lr_min_frac "lr_min_frac is 0.1 in the checkpoint, 0.2 here" $base \
    --data "$tmp/a.tok" --lr-min-frac 0.2
refused "$F" warmup "warmup is 5 in the checkpoint, 2 here" $base --data "$tmp/a.tok" --warmup 2
refused "$F" steps "steps is 6 in the checkpoint, 8 here; resume with --steps 6" $small \
    --batch 4 --seq 8 --print-every 0 --data "$tmp/a.tok" --steps 8 --warmup 5
refused "$F" micro_batch "micro_batch is 4 in the checkpoint, 2 here" $base --data "$tmp/a.tok" \
    --micro-batch 2
refused "$F" deterministic "deterministic is off in the checkpoint, on here" $base \
    --data "$tmp/a.tok" --deterministic --micro-batch 4
refused "$F" precision "trained with --precision fp32, this run asks for bf16" $base \
    --data "$tmp/a.tok" --backend ref --precision bf16
# the model's shape and family: refused, and --resume-allow cannot change that
refused "$F" - "num_layers is 1 in the checkpoint, 2 here" $base --data "$tmp/a.tok" --layers 2
refused "$F" - "channels is 16 in the checkpoint, 32 here" $base --data "$tmp/a.tok" --channels 32
refused "$S" - "model family is gpt2 in the checkpoint, mlp here" --model mlp-tiny --steps 6 \
    --batch 4 --print-every 0 --peak-gflops 100
out=$("$g" train --resume "$F" $base --data "$tmp/a.tok" --layers 2 --resume-allow data 2>&1)
[ $? -eq 2 ] && grep -qF "num_layers is 1 in the checkpoint, 2 here" <<<"$out" &&
    ok "--resume-allow of another field does not let the shape through" ||
    fail "a shape change with --resume-allow data was not refused"
expect 2 "'warmpu' is not a field a checkpoint records \(did you mean warmup\?\)" \
    "$g" train --resume "$F" $base --resume-allow warmpu

# unchanged (the same tokens under another name): resumes, says from what
out=$("$g" train --resume "$tmp/file" $base --data "$tmp/a_copy.tok" --print-every 1 \
    --report "$tmp/same.json" 2>&1)
rc=$?
if [ $rc -eq 0 ] &&
   grep -qF "resumed from $F at step 3, data position 96 tokens (sequential order)" <<<"$out" &&
   [ "$(grep -n 'resumed from' <<<"$out" | head -1 | cut -d: -f1)" -lt \
     "$(grep -n '^step ' <<<"$out" | head -1 | cut -d: -f1)" ] &&
   grep -q "\"resumed_from\": \"$F\"" "$tmp/same.json" &&
   grep -q '"resumed_from_step": 3' "$tmp/same.json" &&
   grep -q '"resumed_data_position": 96' "$tmp/same.json" &&
   ! grep -q '"resume_overrides"' "$tmp/same.json"; then
    ok "an unchanged resume (the same tokens in another file) prints and records file, step 3, data position 96"
else
    fail "unchanged resume: rc $rc"; grep -E "gauntlet|resumed" <<<"$out" | tail -3
fi

# a format version 1 checkpoint: resumes, saying what it could not check
GT_TEST_CKPT_VERSION=1 "$g" train $base --data "$tmp/a.tok" --stop-after 3 --checkpoint-every 3 \
    --checkpoint-dir "$tmp/v1" > "$tmp/v1.out" 2>&1 || fail "version 1 checkpoint"
v=$(od -An -tu4 -j8 -N4 "$tmp/v1/ckpt_00000003.gtck" | tr -d ' ')
out=$("$g" train --resume "$tmp/v1" $base --data "$tmp/a.tok" --report "$tmp/v1.json" 2>&1)
rc=$?
if [ "$v" = 1 ] && [ $rc -eq 0 ] &&
   grep -qF "a format version 1 checkpoint: it does not record the data source" <<<"$out" &&
   grep -q '"resume_unchecked": "a format version 1 checkpoint' "$tmp/v1.json"; then
    ok "a version 1 checkpoint resumes with a warning naming what it does not record"
else
    fail "version 1 checkpoint (file version '$v'): rc $rc"; tail -3 <<<"$out"
fi
out=$("$g" train --resume "$tmp/v1" $base --data "$tmp/a.tok" --lr 2e-3 2>&1)
[ $? -eq 2 ] && grep -qF "lr is 0.001 in the checkpoint, 0.002 here" <<<"$out" &&
    ok "a version 1 checkpoint still refuses the fields it records" ||
    fail "version 1 checkpoint with another lr was not refused"

if [ -n "$mpiexec" ]; then
    mpi_launcher "$mpiexec"
    two() { "$mpiexec" "${mpi_flags[@]}" -np 2 "$g" train "$@"; }
    refused_mpi() { # FIELD PATTERN ARGS... (2 ranks)
        local field=$1 pat=$2
        shift 2
        local out rc
        out=$(two "$@" 2>&1)
        rc=$?
        if [ $rc -eq 2 ] && grep -qF -- "$pat" <<<"$out"; then
            out=$(two "$@" --resume-allow "$field" --report "$tmp/$field.json" 2>&1)
            rc=$?
            if [ $rc -eq 0 ] && grep -q "\"resume_overrides\": \"$field: " "$tmp/$field.json"; then
                ok "$field: refused ($pat), allowed and recorded"
            else
                fail "$field: with --resume-allow rc $rc"; grep gauntlet <<<"$out" | tail -2
            fi
        else
            fail "$field: rc $rc, expected 2 and '$pat'"; grep gauntlet <<<"$out" | tail -2
        fi
    }
    refused_mpi world_size "world_size is 1 in the checkpoint, 2 here" --resume "$F" $base \
        --data "$tmp/a.tok"
    two $base --data "$tmp/a.tok" --stop-after 3 --checkpoint-every 3 --checkpoint-dir "$tmp/two" \
        > "$tmp/two.out" 2>&1 || fail "2-rank checkpoint: $(tail -2 "$tmp/two.out")"
    refused_mpi zero "zero is 0 in the checkpoint, 1 here" --resume "$tmp/two" $base \
        --data "$tmp/a.tok" --zero 1
    # --deterministic on both sides: the world size does not decide the continuation
    "$g" train $base --data "$tmp/a.tok" --deterministic --stop-after 3 --checkpoint-every 3 \
        --checkpoint-dir "$tmp/det" > /dev/null 2>&1 || fail "deterministic checkpoint"
    out=$(two $base --data "$tmp/a.tok" --deterministic --resume "$tmp/det" 2>&1) &&
        ok "--deterministic: a 1-rank checkpoint resumes on 2 ranks without --resume-allow" ||
        fail "--deterministic resume on 2 ranks: $(grep gauntlet <<<"$out" | tail -2)"
fi

echo "$n field changes tried"
[ $fails -eq 0 ] && echo "all cases passed" || { echo "$fails case(s) failed"; exit 1; }
