#!/usr/bin/env bash
# Data-parallel training over MPI, oversubscribed on whatever cores there are.
# usage: gpt2_dp.sh MPIEXEC GAUNTLET REPORT_DIFF REPORT_CHECK
set -u
mpiexec=$1
g=$2
diff=$3
check=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
. "$(dirname "$0")/../../harness/tests/lib.sh" # fails, fail, ok, expect, mpi_launcher
mpi_launcher "$mpiexec"
common="--steps 6 --batch 8 --peak-gflops 100 --print-every 0 --threads 1 --weight-decay 0.1"

. "$(dirname "$0")/train_lib.sh" # train_mpi, train_kept, same, traffic_equal, refused
run() { train_mpi "$@"; }

# --deterministic: the same bits on 1, 2 and 4 ranks (micro-batch 2: 4 leaves)
for np in 1 2 4; do run det$np $np --deterministic --micro-batch 2; done
same det1 det2 "deterministic, 1 vs 2 ranks"
same det1 det4 "deterministic, 1 vs 4 ranks"
# ZeRO-1 equals no sharding, bitwise, with --deterministic
for np in 1 2; do run zero$np $np --deterministic --micro-batch 2 --zero 1; done
same det1 zero1 "ZeRO-1 vs none, 1 rank"
same det2 zero2 "ZeRO-1 vs none, 2 ranks"
# ZeRO-2 (each bucket reduced to its shard's rank) equals them too, bitwise
run zerotwo2 2 --deterministic --micro-batch 2 --zero 2
same det1 zerotwo2 "ZeRO-2 vs none, 2 ranks vs 1"
# ZeRO-3 (each unit's weights gathered into a buffer of its own before its forward
# and its backward, freed after; a weight read outside them ends the run): the
# same bits on 1, 2 and 4 ranks
for np in 1 2 4; do run zthree$np $np --deterministic --micro-batch 2 --zero 3; done
same det1 zthree1 "ZeRO-3 vs none, 1 rank"
same det1 zthree2 "ZeRO-3 vs none, 2 ranks vs 1"
same det1 zthree4 "ZeRO-3 vs none, 4 ranks vs 1"
same zerotwo2 zthree2 "ZeRO-3 vs ZeRO-2, 2 ranks"
# on 4 ranks one micro-batch each: no micro-batch tree, so the gradients are
# sharded by unit there too (each bucket summed by the rank tree as its unit's
# backward ends): a quarter of the gradient buffer and the units in flight
if python3 - "$tmp/det4.json" "$tmp/zthree4.json" <<'PYEOF2'
import json, sys
d, z = [json.load(open(f))["results"][0]["memory"]["by_kind"] for f in sys.argv[1:]]
print(d["gradients_bytes"], z["gradients_bytes"], z["formula_bytes"])
sys.exit(0 if z["gradients_bytes"] < d["gradients_bytes"] and z["communication_bytes"] == 0 else 1)
PYEOF2
then ok "ZeRO-3 --deterministic on 4 ranks: the gradients sharded in memory"
else fail "ZeRO-3 --deterministic on 4 ranks holds the whole gradient buffer"; fi
"$check" "$tmp/zthree4.json" > /dev/null || fail "zthree4: report_check (memory formula)"
# with block recomputation each block is gathered for the recomputed forward too
run zthreerc2 2 --deterministic --micro-batch 2 --zero 3 --recompute block
same det1 zthreerc2 "ZeRO-3 with --recompute block, 2 ranks vs 1"
# bf16 (ref: the cpu backend stores fp32 only): the compute copy gathered in 16
# bits, the fp32 master shard local
run bfzero2 2 --deterministic --micro-batch 2 --zero 2 --precision bf16 --backend ref
run bfzthree2 2 --deterministic --micro-batch 2 --zero 3 --precision bf16 --backend ref
same bfzero2 bfzthree2 "ZeRO-3 vs ZeRO-2 in bf16, 2 ranks"
# mlp: a layer per unit; every rank evaluates (each forward gathers from all),
# with block recomputation each layer is gathered for its recomputed forward too
dense="--model mlp-tiny --batch 16 --eval-every 3 --eval-samples 64 --deterministic --micro-batch 2"
run mlp1 1 $dense
for np in 2 4; do run mlpz3_$np $np $dense --zero 3; done
run mlpz3rc 2 $dense --zero 3 --recompute block
same mlp1 mlpz3_2 "mlp-tiny: ZeRO-3 vs none, 2 ranks vs 1"
same mlp1 mlpz3_4 "mlp-tiny: ZeRO-3 vs none, 4 ranks vs 1"
same mlp1 mlpz3rc "mlp-tiny: ZeRO-3 with --recompute block, 2 ranks vs 1"
# convnet: the stem, each residual block and the head are units. Its BatchNorm
# running statistics follow each rank's own micro-batches (docs/models.md), so
# the digest (weights and statistics) is compared at the same rank count
conv="--model convnet-tiny --batch 8 --steps 4 --eval-every 2 --eval-samples 16 --deterministic --micro-batch 2"
for np in 2 4; do run conv$np $np $conv; run convz3_$np $np $conv --zero 3; done
run convz3rc 2 $conv --zero 3 --recompute block
same conv2 convz3_2 "convnet-tiny: ZeRO-3 vs none, 2 ranks"
same conv4 convz3_4 "convnet-tiny: ZeRO-3 vs none, 4 ranks"
same conv2 convz3rc "convnet-tiny: ZeRO-3 with --recompute block vs none, 2 ranks"

# without --deterministic: within tolerance of the deterministic run
for np in 1 2 4; do run fast$np $np; done
for np in 1 2 4; do
    if "$diff" "$tmp/det1.json" "$tmp/fast$np.json" --rtol 1e-4; then ok "default mode, $np ranks, within 1e-4"
    else fail "default mode on $np ranks strays from the deterministic losses"; fi
done
run fastzero2 2 --zero 1
"$diff" "$tmp/fast2.json" "$tmp/fastzero2.json" --rtol 1e-4 > /dev/null ||
    fail "ZeRO-1 without --deterministic strays"
# memory by kind: ZeRO-1 holds half of AdamW's state on 2 ranks, and the summed
# shard (half the gradients) as communication; parameters and gradients whole
if python3 - "$tmp/fast2.json" "$tmp/fastzero2.json" <<'PYEOF'
import json, sys
k = [json.load(open(f))["results"][0]["memory"]["by_kind"] for f in sys.argv[1:]]
rep, z1 = k
ok = (z1["optimizer_bytes"] * 2 == rep["optimizer_bytes"] and
      z1["parameters_bytes"] == rep["parameters_bytes"] and
      z1["gradients_bytes"] == rep["gradients_bytes"] and
      z1["communication_bytes"] * 2 == rep["gradients_bytes"] and rep["communication_bytes"] == 0)
sys.exit(0 if ok else 1)
PYEOF
then ok "memory by kind: ZeRO-1 on 2 ranks holds half the optimizer state and a gradient shard"
else fail "memory by kind of ZeRO-1 vs replicated"; fi
# ZeRO-2 without --deterministic: the reduce to each shard's rank overlapped with the
# backward (small buckets: several per shard, cut at the shards' edges)
run fastzerotwo4 4 --zero 2 --bucket-mb 0.1
if "$diff" "$tmp/fast4.json" "$tmp/fastzerotwo4.json" --rtol 1e-4 > /dev/null; then
    ok "ZeRO-2 without --deterministic, 4 ranks, within 1e-4 of plain data parallelism"
else fail "ZeRO-2 without --deterministic strays"; fi
# ZeRO-3 without --deterministic: prefetched gathers, small buckets cut at the
# units' and shards' starts; the cross-rank hash every 2 steps makes the masters
# whole and shards them again
run fastzthree4 4 --zero 3 --bucket-mb 0.1 --check-consistency 2
if "$diff" "$tmp/fast4.json" "$tmp/fastzthree4.json" --rtol 1e-4 > /dev/null; then
    ok "ZeRO-3 without --deterministic, 4 ranks, within 1e-4 of plain data parallelism"
else fail "ZeRO-3 without --deterministic strays"; fi
# memory by kind (8 layers, so that the units are small against the model): a
# ZeRO-3 rank holds its shard of the fp32 masters and at most two gathered units
# (a block and the next one's prefetch: 49984 parameters each at C=64) where
# ZeRO-2 holds the whole masters; the gradients sharded in memory by unit for
# both (the summed shard, the embeddings' 20480 and two blocks in flight: the
# whole buffer on one rank); the optimizer state as ZeRO-2's; every kind, and
# the total, falls with the ranks
run memz2 2 --zero 2 --layers 8 --steps 2
for np in 1 2 4; do run memz3_$np $np --zero 3 --layers 8 --steps 2; done
if python3 - "$tmp/memz2.json" "$tmp/memz3_1.json" "$tmp/memz3_2.json" "$tmp/memz3_4.json" <<'PYEOF'
import json, sys
k = [json.load(open(f))["results"][0]["memory"]["by_kind"] for f in sys.argv[1:]]
z2, z31, z3, z34 = k
units, inflight = 2 * 4 * 49984, 4 * (20480 + 2 * 49984)
total = lambda x: sum(x[n] for n in ("parameters_bytes", "gradients_bytes", "optimizer_bytes",
                                     "activations_bytes", "communication_bytes"))
ok = (z3["parameters_bytes"] == z2["parameters_bytes"] // 2 + units and
      z34["parameters_bytes"] < z3["parameters_bytes"] < z2["parameters_bytes"] and
      z3["gradients_bytes"] == z2["gradients_bytes"] and
      z3["gradients_bytes"] == z2["optimizer_bytes"] // 2 + inflight and
      z34["gradients_bytes"] < z3["gradients_bytes"] < z31["gradients_bytes"] and
      z34["optimizer_bytes"] < z3["optimizer_bytes"] == z2["optimizer_bytes"] and
      z3["communication_bytes"] == 0 and
      total(z34) < total(z3) < total(z31))
print([(x["parameters_bytes"], x["gradients_bytes"], total(x), x["formula_bytes"]) for x in k])
sys.exit(0 if ok else 1)
PYEOF
then ok "memory by kind: ZeRO-3 holds the masters' shard, two units, the gradient shard and the units in flight; less on 4 ranks than on 2 than on 1"
else fail "memory by kind of ZeRO-3 vs ZeRO-2 and the ranks"; fi
# traffic per step per collective kind (this rank's send buffers, engine/comm.h's
# count) equal to the mode's formula, exactly: zero 0/1/2/3 on 2 ranks, with and
# without --deterministic (docs/distributed.md, "Traffic per step")
if traffic_equal fast2 fastzero2 memz2 memz3_2 det2 zero2 zerotwo2 zthree2
then ok "traffic per step per collective equal to the formula, zero 0-3, 2 ranks"
else fail "traffic per step vs the formula"; fi
# the profile: ZeRO-3's units needed as param_gather, 7 per step (one micro-batch of
# gpt2-tiny: the forward's embeddings, 2 blocks, final LayerNorm, embeddings again;
# the backward's 2 blocks), with their bytes; no such part in another mode
if python3 - "$tmp/fastzerotwo4.json" "$tmp/fastzthree4.json" <<'PYEOF'
import json, sys
parts = [{p["name"]: p for p in json.load(open(f))["results"][0]["profile"]["parts"]}
         for f in sys.argv[1:]]
z2, z3 = parts
g = z3.get("param_gather", {})
print("param_gather:", g.get("calls_per_step"), g.get("bytes_per_step"))
sys.exit(0 if "param_gather" not in z2 and g.get("calls_per_step") == 7 and
         g.get("bytes_per_step", 0) > 0 else 1)
PYEOF
then ok "profile: ZeRO-3's gathers as param_gather, with their bytes"
else fail "profile of ZeRO-3's gathers"; fi
for r in memz2 memz3_1 memz3_2 memz3_4; do
    "$check" "$tmp/$r.json" > /dev/null || { fail "$r: report_check (memory formula)"; "$check" "$tmp/$r.json" | tail -3; }
done

# errors before any work: a batch the ranks do not split, a parameter mismatch
out=$("$mpiexec" "${mpi_flags[@]}" -np 4 "$g" train $common --batch 6 2>&1)
rc=$?
if [ $rc -eq 2 ] && grep -q "does not split across 4 ranks" <<<"$out"; then ok "batch 6 on 4 ranks refused"
else fail "batch 6 on 4 ranks: rc $rc"; echo "$out" | tail -3; fi
out=$(GT_FAULT_PERTURB_RANK=1 "$mpiexec" "${mpi_flags[@]}" -np 2 "$g" train $common 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -q "parameters differ across ranks at initialisation: tensor 'lnfb' on rank 1" <<<"$out"; then
    ok "a perturbed rank is named"
else fail "perturbed parameters not reported (rc $rc)"; echo "$out" | tail -3; fi

# the watchdog: rank 1 stops at step 3; rank 0 names the collective, writes the
# report of what finished and ends the job within the deadline instead of hanging
start=$(date +%s)
out=$(GT_FAULT_STALL=1:3 timeout 120 "$mpiexec" "${mpi_flags[@]}" -np 2 "$g" train \
      $common --comm-timeout 2 --report "$tmp/wd.json" 2>&1)
rc=$?
elapsed=$(( $(date +%s) - start ))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $elapsed -lt 60 ] &&
   grep -q "did not complete within 2 s" <<<"$out" &&
   "$check" "$tmp/wd.json" --status error > /dev/null; then
    ok "a stalled rank ends the job in ${elapsed} s with the collective named"
else
    fail "watchdog: rc $rc after ${elapsed} s"; echo "$out" | grep -i gauntlet | tail -3
    "$check" "$tmp/wd.json" --status error
fi

[ $fails -eq 0 ] && echo "all cases passed" || { echo "$fails case(s) failed"; exit 1; }
