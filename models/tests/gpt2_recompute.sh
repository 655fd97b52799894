#!/usr/bin/env bash
# Activation recomputation through `gauntlet train` (docs/distributed.md,
# "Activation recomputation").
# usage: gpt2_recompute.sh MPIEXEC|none GAUNTLET REPORT_DIFF
#   none: one process only; otherwise also 2 and 4 ranks under MPIEXEC.
# With --deterministic, --recompute block trains bitwise the weights (final
# parameter digest) and the losses of --recompute none, on one rank and, under
# MPI, on 2 and 4 ranks against one rank without recomputation (same global
# batch). A checkpoint of a block run resumes without recomputation to the
# same weights. The report records the mode and fewer activation bytes. mlp-small
# (GELU, 4 layers) the same on 1 rank and, under MPI, 2 ranks; convnet-tiny on
# 1 rank (its digest covers the BatchNorm running statistics). Refusals: an
# unknown mode names the valid ones.
set -u
mpiexec=$1
g=$2
diff=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
. "$(dirname "$0")/../../harness/tests/lib.sh" # fails, fail, ok, expect, mpi_launcher
[ "$mpiexec" = none ] || mpi_launcher "$mpiexec"
# three layers: the two below the top one are recomputed; 4 micro-batches of 2
common="--model gpt2-tiny --layers 3 --steps 5 --batch 8 --micro-batch 2 --deterministic
        --peak-gflops 100 --print-every 0 --threads 1 --weight-decay 0.1"

. "$(dirname "$0")/train_lib.sh" # train_mpi, train_kept, same
run() { # NAME NP ARGS...: one rank without a launcher (this test also runs without MPI)
    if [ "$2" -eq 1 ]; then
        local name=$1
        shift 2
        "$g" train $common "$@" --report "$tmp/$name.json" > "$tmp/$name.out" 2>&1
        train_kept "$name" $?
    else
        train_mpi "$@"
    fi
}
field() { # FILE NAME: the value of "NAME" in the report (the first one)
    tr -d ' \n' < "$1" | grep -o "\"$2\":[^,}]*" | head -1 | cut -d: -f2- | tr -d '"'
}
act_value() { # FILE: activation_bytes' value
    tr -d ' \n' < "$1" | grep -o '"activation_bytes":{[^}]*}' | grep -o '"value":[0-9.e+]*' |
        cut -d: -f2
}

run none1 1
run block1 1 --recompute block
same none1 block1 "recompute block vs none, 1 rank"
if [ "$(field "$tmp/block1.json" recompute)" = block ] &&
   [ "$(field "$tmp/none1.json" recompute)" = none ]; then ok "the report records the mode"
else fail "params.recompute: '$(field "$tmp/block1.json" recompute)'"; fi
a_none=$(act_value "$tmp/none1.json")
a_block=$(act_value "$tmp/block1.json")
if [ -n "$a_none" ] && [ -n "$a_block" ] &&
   awk -v a="$a_none" -v b="$a_block" 'BEGIN { exit !(b > 0 && b < a) }'; then
    ok "activation_bytes $a_none -> $a_block"
else fail "activation_bytes: '$a_none' without recomputation, '$a_block' with"; fi
if grep -q "memory by kind .* activations [0-9.]* (recompute block)" "$tmp/block1.out"; then
    ok "the summary says the mode"
else fail "summary: no activations line"; grep activations "$tmp/block1.out"; fi

# the mode is not part of a checkpoint: block's checkpoint at step 2, resumed
# without recomputation, ends on none's weights
run ckpt 1 --recompute block --checkpoint-dir "$tmp/ck" --checkpoint-every 2 --stop-after 2
run resumed 1 --resume "$tmp/ck"
if [ -s "$tmp/resumed.digest" ] && cmp -s "$tmp/none1.digest" "$tmp/resumed.digest"; then
    ok "a block run's checkpoint resumed with none: the same weights"
else fail "resume across modes: $(cat "$tmp/resumed.digest" 2>/dev/null) vs $(cat "$tmp/none1.digest")"; fi

if [ "$mpiexec" != none ]; then
    for np in 2 4; do
        run block$np "$np" --recompute block
        same none1 block$np "recompute block on $np ranks vs none on 1 rank"
    done
fi

# mlp: a block is a hidden layer; GELU's backward recomputes its pre-activation
common="--model mlp-small --steps 4 --batch 16 --micro-batch 4 --deterministic
        --peak-gflops 100 --print-every 0 --threads 1"
run mlp_none1 1
run mlp_block1 1 --recompute block
same mlp_none1 mlp_block1 "mlp-small: recompute block vs none, 1 rank"
if [ "$mpiexec" != none ]; then
    run mlp_block2 2 --recompute block
    same mlp_none1 mlp_block2 "mlp-small: recompute block on 2 ranks vs none on 1 rank"
fi

# refusals, before any training
expect 2 "--recompute 'foo': use none or block" -- "$g" train --recompute foo --steps 1
expect 2 "" -- "$g" train --recompute --steps 1

# convnet: a block is a residual block; the recompute leaves the running statistics alone
common="--model convnet-tiny --steps 4 --batch 16 --peak-gflops 100 --print-every 0 --threads 1"
run conv_none1 1
run conv_block1 1 --recompute block
same conv_none1 conv_block1 "convnet-tiny: recompute block vs none, 1 rank (weights and running statistics)"

[ $fails -eq 0 ] && echo "all cases passed" || { echo "$fails case(s) failed"; exit 1; }
