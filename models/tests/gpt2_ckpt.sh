#!/usr/bin/env bash
# Checkpoints and non-finite detection, end to end through `gauntlet train`.
# usage: gpt2_ckpt.sh MPIEXEC|none GAUNTLET REPORT_CHECK NP
#   none: one process (no MPI); otherwise NP ranks under MPIEXEC.
# Resume: 12 steps unbroken vs 6 steps + checkpoint + resume to 12 must give
# the same final-weights digest and the same losses (bits) for steps 7..12,
# with and without --zero 1 and --zero 3 (and --zero 2 on several ranks; a ZeRO-3
# checkpoint of several ranks on one, and its refusal there without
# --deterministic). Then every refusal: a corrupted byte, a
# truncated file, a config mismatch, a missing shard, an unwritable
# directory, a failed write that leaves the previous checkpoint intact, and
# an injected NaN named by step, rank and tensor.
set -u
mpiexec=$1
g=$2
check=$3
np=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
. "$(dirname "$0")/../../harness/tests/lib.sh" # fails, fail, ok, expect, mpi_launcher
[ "$mpiexec" = none ] || mpi_launcher "$mpiexec"
common="--steps 12 --batch 4 --peak-gflops 100 --print-every 0 --threads 1 --weight-decay 0.1"
# 2 ranks: the sum over ranks in a fixed tree, so that reruns agree bit for bit
[ "$np" -gt 1 ] && common="$common --deterministic --micro-batch 1"

launch() {
    if [ "$mpiexec" = none ]; then "$g" train $common "$@"
    else "$mpiexec" "${mpi_flags[@]}" -np "$np" "$g" train $common "$@"; fi
}
digest() { grep -o 'fnv1a64 [0-9a-f]*' "$1" | head -1 | cut -d' ' -f2; }
losses() { # the last 6 values of the report's loss series, as written (17 digits)
    tr -d ' \n' < "$1" | grep -o '"loss":\[[^]]*\]' | head -1 | tr -d '"loss:[]' |
        tr ',' '\n' | tail -6 | tr '\n' ' '
}
expect_refusal() { # WHAT PATTERN ARGS...: exit 2 with PATTERN in the message
    local what=$1 pat=$2
    shift 2
    local out rc
    out=$(launch "$@" 2>&1)
    rc=$?
    if [ $rc -eq 2 ] && grep -q -- "$pat" <<<"$out"; then ok "$what"
    else fail "$what: rc $rc, expected 2 and '$pat'"; echo "$out" | grep -i gauntlet | tail -3; fi
}

# ZeRO-2 keeps ZeRO-1's sharded state: its resume on more than one rank; ZeRO-3
# (weights gathered unit by unit) writes the same folder after gathering the masters
zeros="0 1 3"
[ "$np" -gt 1 ] && zeros="0 1 2 3"
for zero in $zeros; do
    tag=z$zero
    launch --zero $zero --report "$tmp/$tag.full.json" > "$tmp/$tag.full.out" 2>&1 ||
        fail "$tag: unbroken run (rc $?)"
    launch --zero $zero --stop-after 6 --checkpoint-every 3 --checkpoint-dir "$tmp/$tag.ck" \
        > "$tmp/$tag.half.out" 2>&1 || fail "$tag: first half (rc $?)"
    launch --zero $zero --resume "$tmp/$tag.ck" --report "$tmp/$tag.res.json" \
        > "$tmp/$tag.res.out" 2>&1 || { fail "$tag: resume (rc $?)"; tail -3 "$tmp/$tag.res.out"; }
    a=$(digest "$tmp/$tag.full.out") b=$(digest "$tmp/$tag.res.out")
    la=$(losses "$tmp/$tag.full.json") lb=$(losses "$tmp/$tag.res.json")
    if [ -n "$a" ] && [ "$a" = "$b" ] && [ -n "$la" ] && [ "$la" = "$lb" ]; then
        ok "--zero $zero, $np rank(s): resumed at 6 = unbroken (weights $a, losses 7..12 $lb)"
    else
        fail "--zero $zero: resumed weights $b vs $a, losses $lb vs $la"
    fi
    "$check" "$tmp/$tag.res.json" > /dev/null || fail "$tag: resumed report invalid"
done

if [ "$np" -gt 1 ]; then
    # a ZeRO-3 checkpoint of NP ranks on one: with --deterministic the ranks'
    # ranges are read from whichever shards hold them and the bits are the same;
    # without it the world size decides the sums' order: refused, both sizes named
    one="--steps 12 --batch 4 --peak-gflops 100 --print-every 0 --threads 1 --weight-decay 0.1"
    "$g" train $common --zero 3 --resume "$tmp/z3.ck" > "$tmp/z3.one.out" 2>&1 ||
        fail "ZeRO-3 checkpoint of $np ranks resumed on one: rc $?"
    # sharded: every rank's file holds its range of the masters, none the whole
    ck=$(ls -d "$tmp/z3.ck"/ckpt_* | head -1)
    if grep -q "params.shard" "$ck/rank_00001.gtck" && ! grep -q "qkvw" "$ck/rank_00000.gtck"; then
        ok "--zero 3: each rank's file holds its shard of the masters, rank 0's not the whole"
    else fail "--zero 3: the checkpoint's parameters are not sharded ($ck)"; fi
    a=$(digest "$tmp/z3.full.out") b=$(digest "$tmp/z3.one.out")
    if [ -n "$a" ] && [ "$a" = "$b" ]; then ok "--zero 3 --deterministic: $np ranks' checkpoint resumed on 1 rank = unbroken ($b)"
    else fail "ZeRO-3 resumed on 1 rank: $b vs $a"; fi
    "$mpiexec" "${mpi_flags[@]}" -np "$np" "$g" train $one --zero 3 --stop-after 3 \
        --checkpoint-every 3 --checkpoint-dir "$tmp/z3nd.ck" > "$tmp/z3nd.out" 2>&1 ||
        fail "ZeRO-3 without --deterministic: checkpoint (rc $?)"
    out=$("$g" train $one --zero 3 --resume "$tmp/z3nd.ck" 2>&1)
    rc=$?
    if [ $rc -eq 2 ] && grep -q "world_size is $np in the checkpoint, 1 here" <<<"$out"; then
        ok "a ZeRO-3 checkpoint of $np ranks is refused on 1 without --deterministic"
    else fail "ZeRO-3 on another world size: rc $rc"; echo "$out" | grep -i gauntlet | tail -3; fi
fi

# refusals, on the single-file (zero 0) and sharded (zero 1) checkpoints of step 6
f="$tmp/z0.ck/ckpt_00000006.gtck"
cp "$f" "$tmp/bad.gtck"
size=$(stat -c %s "$tmp/bad.gtck")
printf '\x55' | dd of="$tmp/bad.gtck" bs=1 seek=$((size - 5)) conv=notrunc status=none
expect_refusal "a corrupted byte is refused naming the tensor" \
    "tensor 'adamw.v': checksum mismatch" --resume "$tmp/bad.gtck"
cp "$f" "$tmp/hdr.gtck"
printf '\x01' | dd of="$tmp/hdr.gtck" bs=1 seek=320 conv=notrunc status=none
expect_refusal "a corrupted header is refused" "header checksum mismatch" --resume "$tmp/hdr.gtck"
head -c $((size / 2)) "$f" > "$tmp/short.gtck"
expect_refusal "a truncated file is refused" "is truncated: tensor" --resume "$tmp/short.gtck"
expect_refusal "a config mismatch names the field" "num_layers is 2 in the checkpoint, 3 here" \
    --layers 3 --resume "$f"
expect_refusal "another seed is refused" "seed is 1337 in the checkpoint, 7 here" \
    --seed 7 --resume "$f"
mkdir "$tmp/m" && cp -r "$tmp/z1.ck/ckpt_00000006" "$tmp/m/ckpt_00000006" && ln -s "$tmp/m/ckpt_00000006" "$tmp/miss"
last=$(ls "$tmp/miss" | grep rank_ | tail -1)
rm "$tmp/miss/$last"
expect_refusal "a missing shard is refused naming the file" "shard file '.*$last' of rank" \
    --zero 1 --resume "$tmp/miss"
rm "$tmp/miss/MANIFEST"
expect_refusal "a folder without its MANIFEST is refused" "has no MANIFEST" --zero 1 \
    --resume "$tmp/m/ckpt_00000006"
touch "$tmp/plainfile"
expect_refusal "an unwritable --checkpoint-dir fails before training" \
    "checkpoint directory '$tmp/plainfile/sub'" --checkpoint-every 3 --checkpoint-dir "$tmp/plainfile/sub"

# a failed write (injected half-way through step 6's checkpoint) leaves step 3's
# checkpoint intact and no temporary file; resuming from the directory uses it
for zero in 0 1; do
    d="$tmp/fw$zero"
    out=$(GT_FAULT_CKPT_FAIL=6 launch --zero $zero --checkpoint-every 3 --checkpoint-dir "$d" 2>&1)
    rc=$?
    if [ $rc -eq 2 ] && grep -q "injected failure" <<<"$out" && ! ls "$d" | grep -q tmp &&
       ! [ -e "$d/ckpt_00000006.gtck" ] && ! [ -e "$d/ckpt_00000006/MANIFEST" ] &&
       launch --zero $zero --resume "$d" > "$tmp/fw$zero.out" 2>&1 &&
       [ "$(digest "$tmp/fw$zero.out")" = "$(digest "$tmp/z$zero.full.out")" ]; then
        ok "--zero $zero: a failed write keeps the previous checkpoint, which resumes"
    else
        fail "--zero $zero failed write: rc $rc"; echo "$out" | grep -i gauntlet | tail -3; ls -R "$d"
    fi
done

# NaN injected into one gradient on the last rank at step 3: named with step, rank, tensor
r=$((np - 1))
out=$(GT_FAULT_NAN=$r:3 launch --zero 1 --report "$tmp/nan.json" 2>&1)
rc=$?
tensor=$(grep -o 'gradient of .* at step 3' <<<"$out" | sed 's/gradient of \(.*\) at step 3/\1/' | head -1)
if [ $rc -eq 2 ] && [ -n "$tensor" ] &&
   grep -q "non-finite gradient norm (nan) at step 3 on rank $r: the first non-finite value is the gradient of $tensor" <<<"$out" &&
   "$check" "$tmp/nan.json" --status error > /dev/null; then
    ok "an injected NaN is named (step 3, rank $r, $tensor)"
else
    fail "NaN injection: rc $rc, tensor '$tensor'"; echo "$out" | grep -i gauntlet | tail -3
fi

[ $fails -eq 0 ] && echo "all cases passed" || { echo "$fails case(s) failed"; exit 1; }
