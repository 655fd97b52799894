#!/usr/bin/env bash
# Mixed precision under data parallelism, ref backend, `mpirun -np 2`.
# usage: gpt2_precision_mpi.sh MPIEXEC GAUNTLET
# - bf16 and fp16 with --deterministic (micro-batch 1): the final weights on
#   2 ranks, without and with --zero 1, are bitwise those of 1 rank (ZeRO-1
#   gathers the fp32 masters; every rank must rebuild its bf16 / fp16
#   compute copy of the other ranks' shards, or the next forward differs);
# - fp16 with an overflow injected on rank 0 at step 2 (GT_FAULT_OVERFLOW=2):
#   both ranks skip the step together and end where 1 rank ends; a sharded
#   fp16 checkpoint of step 2 resumes on 2 ranks and on 1 rank to the same
#   weights (the loss scaler's state travels in rank 0's file);
# - convnet-tiny and mlp-tiny in bf16 and fp16, --deterministic with
#   micro-batches of 2: the final weights (final_weights_fnv1a64 for the
#   convnet: the running statistics are rank 0's) on 2 ranks, without and
#   with --zero 1, are bitwise those of 1 rank.
set -u
mpiexec=$1
g=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
. "$(dirname "$0")/../../harness/tests/lib.sh" # fails, fail, ok, expect, mpi_launcher
mpi_launcher "$mpiexec"
digest() { grep -o 'fnv1a64 [0-9a-f]*' "$1" | head -1 | cut -d' ' -f2; }
one() { "$g" train $common "$@"; }
two() { "$mpiexec" "${mpi_flags[@]}" -np 2 "$g" train $common "$@"; }
same() { # WHAT REF_OUT OUT...: every OUT has REF_OUT's digest
    local what=$1 ref
    ref=$(digest "$2")
    shift 2
    for f in "$@"; do
        local d
        d=$(digest "$f")
        if [ -z "$ref" ] || [ "$d" != "$ref" ]; then
            fail "$what: $(basename "$f") has weights '$d', 1 rank '$ref'"; tail -3 "$f"; return
        fi
    done
    ok "$what (weights $ref)"
}

base="--backend ref --steps 4 --batch 4 --deterministic --micro-batch 1 --peak-gflops 100"
base="$base --print-every 0 --check-consistency 1"
for p in bf16 fp16; do
    common="$base --precision $p"
    one > "$tmp/$p.1.out" 2>&1 || fail "$p: 1 rank (rc $?)"
    two --zero 0 > "$tmp/$p.2.out" 2>&1 || fail "$p: 2 ranks (rc $?)"
    two --zero 1 > "$tmp/$p.2z.out" 2>&1 || fail "$p: 2 ranks --zero 1 (rc $?)"
    two --zero 3 > "$tmp/$p.2z3.out" 2>&1 || fail "$p: 2 ranks --zero 3 (rc $?)"
    same "$p: 2 ranks, without ZeRO, with --zero 1 and --zero 3, = 1 rank" "$tmp/$p.1.out" \
        "$tmp/$p.2.out" "$tmp/$p.2z.out" "$tmp/$p.2z3.out"
done

common="$base --precision fp16"
export GT_FAULT_OVERFLOW=2
one > "$tmp/o.1.out" 2>&1 || fail "overflow: 1 rank (rc $?)"
two --zero 1 > "$tmp/o.2z.out" 2>&1 || fail "overflow: 2 ranks (rc $?)"
two --zero 1 --stop-after 2 --checkpoint-every 2 --checkpoint-dir "$tmp/ck" > "$tmp/o.half.out" \
    2>&1 || fail "overflow: first half on 2 ranks (rc $?)"
two --zero 1 --resume "$tmp/ck" > "$tmp/o.res2.out" 2>&1 || fail "overflow: resume on 2 (rc $?)"
one --resume "$tmp/ck" > "$tmp/o.res1.out" 2>&1 || fail "overflow: resume on 1 (rc $?)"
# ZeRO-3: the skipped step updates no shard; its checkpoint (the masters sharded)
# keeps the loss scaler in rank 0's file
two --zero 3 > "$tmp/o.2z3.out" 2>&1 || fail "overflow: 2 ranks --zero 3 (rc $?)"
two --zero 3 --stop-after 2 --checkpoint-every 2 --checkpoint-dir "$tmp/ck3" > "$tmp/o.half3.out" \
    2>&1 || fail "overflow: first half on 2 ranks --zero 3 (rc $?)"
two --zero 3 --resume "$tmp/ck3" > "$tmp/o.res3.out" 2>&1 || fail "overflow: --zero 3 resume (rc $?)"
unset GT_FAULT_OVERFLOW
for f in o.1 o.2z o.res2 o.res1 o.2z3 o.res3; do
    grep -q "loss scale 32768 at the end, 1 step(s) skipped" "$tmp/$f.out" ||
        fail "$f: the summary does not show 1 skipped step and scale 32768"
done
same "fp16 overflow at step 2: 2 ranks --zero 1 and --zero 3, their sharded checkpoints resumed" \
    "$tmp/o.1.out" "$tmp/o.2z.out" "$tmp/o.res2.out" "$tmp/o.res1.out" "$tmp/o.2z3.out" \
    "$tmp/o.res3.out"

# mlp and convnet: the weights' digest from the report (the printed digest of
# a convnet includes rank 0's running statistics)
wdigest() {
    local k=final_weights_fnv1a64
    grep -q "\"$k\"" "$1" || k=final_params_fnv1a64
    grep -o "\"$k\": *\"[0-9a-f]*\"" "$1" | head -1 | grep -o '[0-9a-f]\{16\}'
}
dbase="--backend ref --steps 4 --batch 8 --deterministic --micro-batch 2 --peak-gflops 100"
dbase="$dbase --print-every 0 --check-consistency 1"
for m in convnet-tiny mlp-tiny; do
    for p in bf16 fp16; do
        common="$dbase --model $m --precision $p"
        one --report "$tmp/$m.$p.1.json" > "$tmp/$m.$p.1.out" 2>&1 || fail "$m $p: 1 rank"
        two --report "$tmp/$m.$p.2.json" > "$tmp/$m.$p.2.out" 2>&1 || fail "$m $p: 2 ranks"
        two --zero 1 --report "$tmp/$m.$p.2z.json" > "$tmp/$m.$p.2z.out" 2>&1 ||
            fail "$m $p: 2 ranks --zero 1"
        two --zero 3 --report "$tmp/$m.$p.2z3.json" > "$tmp/$m.$p.2z3.out" 2>&1 ||
            fail "$m $p: 2 ranks --zero 3"
        a=$(wdigest "$tmp/$m.$p.1.json"); b=$(wdigest "$tmp/$m.$p.2.json")
        c=$(wdigest "$tmp/$m.$p.2z.json"); d=$(wdigest "$tmp/$m.$p.2z3.json")
        if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ] && [ "$a" = "$d" ]; then
            ok "$m $p: 2 ranks, without ZeRO, with --zero 1 and --zero 3, = 1 rank (weights $a)"
        else
            fail "$m $p: weights 1 rank '$a', 2 ranks '$b', --zero 1 '$c', --zero 3 '$d'"
        fi
    done
done

if [ $fails -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "all mpi precision checks passed"
