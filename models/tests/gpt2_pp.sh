#!/usr/bin/env bash
# Pipeline-parallel gpt2 over MPI (--layout dp=D,pp=P), oversubscribed on
# whatever cores there are: with --deterministic every layout of 2 and 4
# ranks with pipeline stages, both schedules, gives one rank's final weights
# and losses bitwise (the same micro-batches accumulated in the same
# order), in fp32 and in bf16 / fp16 on ref; run to run bitwise; block
# recomputation bitwise the run without; checkpoints per stage resumed
# bitwise (pp=2, dp=2,pp=2, dp=2,pp=2 with ZeRO-1); ZeRO-1 over each
# stage's replicas bitwise --zero 0, its traffic and memory their formulas;
# the report's grid and bubble; the refusals (a resume with another pp,
# ZeRO-2/3 with stages among them).
# usage: gpt2_pp.sh MPIEXEC GAUNTLET REPORT_DIFF REPORT_CHECK
set -u
mpiexec=$1
g=$2
diff=$3
check=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
. "$(dirname "$0")/../../harness/tests/lib.sh" # fails, fail, ok, mpi_launcher
mpi_launcher "$mpiexec"
# 4 blocks (pp=4 needs one per stage); global batch 8 in 4 micro-batches of
# 2 sequences; the norm clipped (it starts above 1), weight decay on
common="--layers 4 --steps 6 --batch 8 --peak-gflops 100 --print-every 0 --threads 1
        --weight-decay 0.1 --grad-clip 1.0"

. "$(dirname "$0")/train_lib.sh" # train_mpi, train_kept, same, traffic_equal, refused
run() { train_mpi "$@"; }

# one rank: gradient accumulation over the same 4 micro-batches
run one 1 --deterministic --micro-batches 4
for sch in 1f1b gpipe; do
    run pp2$sch 2 --deterministic --micro-batches 4 --layout pp=2 --schedule $sch
    same one pp2$sch "pp=2 $sch vs one rank, --deterministic"
    run pp4$sch 4 --deterministic --micro-batches 4 --layout pp=4 --schedule $sch
    same one pp4$sch "pp=4 $sch vs one rank, --deterministic"
done
# two replicas of 2 micro-batches each: the same 4 leaves in the same tree
run dp2pp2 4 --deterministic --micro-batches 2 --layout dp=2,pp=2
same one dp2pp2 "dp=2,pp=2 vs one rank, --deterministic"
run dp2pp2b 4 --deterministic --micro-batches 2 --layout dp=2,pp=2
same dp2pp2 dp2pp2b "dp=2,pp=2 run to run"
# ZeRO-1 over each stage's data-parallel group: AdamW's state of the stage's
# range sharded over its 2 replicas, the same bits
run z1dp2pp2 4 --deterministic --micro-batches 2 --layout dp=2,pp=2 --zero 1
same one z1dp2pp2 "dp=2,pp=2 --zero 1 vs one rank, --deterministic"
same dp2pp2 z1dp2pp2 "dp=2,pp=2 --zero 1 vs --zero 0, --deterministic"
run pp2again 2 --deterministic --micro-batches 4 --layout pp=2
same pp21f1b pp2again "pp=2 run to run"
# block recomputation: each stage runs its own blocks again in the backward
# (one block's activations per micro-batch in flight), bitwise the run
# without it, with fewer activation bytes
for sch in 1f1b gpipe; do
    run rcpp2$sch 2 --deterministic --micro-batches 4 --layout pp=2 --schedule $sch \
        --recompute block
    same pp2$sch rcpp2$sch "pp=2 $sch with --recompute block vs without, --deterministic"
done
if python3 - "$tmp/pp21f1b.json" "$tmp/rcpp21f1b.json" <<'PYEOF'
import json, sys
a, b = (json.load(open(f))["results"][0]["metrics"]["activation_bytes"]["value"] for f in sys.argv[1:])
sys.exit(0 if 0 < b < a else 1)
PYEOF
then ok "pp=2 with --recompute block holds fewer activation bytes"
else fail "pp=2 --recompute block's activation bytes are not below those without"; fi
# checkpoints: each stage's part (DIR/pp<s>of<P>: the stage's parameters as it
# holds them, m and v of its range), stopped at step 3 and resumed bitwise
check_resumed() { # UNBROKEN RESUMED WHAT
    if [ -s "$tmp/$2.digest" ] && cmp -s "$tmp/$1.digest" "$tmp/$2.digest" &&
       grep -q "resumed from .*pp0of2/ckpt_00000003" "$tmp/$2.out"; then
        ok "$3 stopped at step 3 and resumed: the unbroken run's weights ($(cat "$tmp/$2.digest"))"
    else fail "resumed $3: $(cat "$tmp/$2.digest" 2>/dev/null) vs $(cat "$tmp/$1.digest")"; fi
}
run ckpp1 2 --deterministic --micro-batches 4 --layout pp=2 --checkpoint-dir "$tmp/ck" \
    --checkpoint-every 3 --stop-after 3
run ckpp2 2 --deterministic --micro-batches 4 --layout pp=2 --resume "$tmp/ck"
check_resumed pp21f1b ckpp2 "pp=2"
if [ -s "$tmp/ck/pp0of2/ckpt_00000003.gtck" ] && [ -s "$tmp/ck/pp1of2/ckpt_00000003.gtck" ]
then ok "pp=2's checkpoint: one part per stage"
else fail "pp=2's checkpoint parts: $(cd "$tmp/ck" 2>/dev/null && find . | tr '\n' ' ')"; fi
run ckdp1 4 --deterministic --micro-batches 2 --layout dp=2,pp=2 --checkpoint-dir "$tmp/ckdp" \
    --checkpoint-every 3 --stop-after 3
run ckdp2 4 --deterministic --micro-batches 2 --layout dp=2,pp=2 --resume "$tmp/ckdp"
check_resumed dp2pp2 ckdp2 "dp=2,pp=2"
# with ZeRO-1 each part is a folder of its replicas' shards of m and v
run ckz1 4 --deterministic --micro-batches 2 --layout dp=2,pp=2 --zero 1 \
    --checkpoint-dir "$tmp/ckz1" --checkpoint-every 3 --stop-after 3
run ckz2 4 --deterministic --micro-batches 2 --layout dp=2,pp=2 --zero 1 --resume "$tmp/ckz1"
check_resumed dp2pp2 ckz2 "dp=2,pp=2 --zero 1"
if [ -s "$tmp/ckz1/pp0of2/ckpt_00000003/rank_00001.gtck" ] &&
   [ -s "$tmp/ckz1/pp1of2/ckpt_00000003/rank_00001.gtck" ] &&
   [ -s "$tmp/ckz1/pp1of2/ckpt_00000003/MANIFEST" ]
then ok "dp=2,pp=2 --zero 1's checkpoint: one part per stage, one shard per replica"
else fail "dp=2,pp=2 --zero 1's checkpoint: $(cd "$tmp/ckz1" 2>/dev/null && find . | tr '\n' ' ')"; fi
# without --deterministic the tied head's gradient comes to the first stage
# summed once a step (another order of additions): within 1e-4 of one rank,
# bitwise run to run
run fast1 1 --micro-batches 4
for sch in 1f1b gpipe; do
    run fastpp2$sch 2 --micro-batches 4 --layout pp=2 --schedule $sch
    if "$diff" "$tmp/fast1.json" "$tmp/fastpp2$sch.json" --rtol 1e-4 > /dev/null; then
        ok "pp=2 $sch without --deterministic within 1e-4 of one rank"
    else fail "pp=2 $sch without --deterministic strays from one rank"; fi
done
# two replicas: each stage's slice reduced in buckets over its replicas
run fastdp2pp2 4 --micro-batches 2 --layout dp=2,pp=2 --bucket-mb 0.05
if "$diff" "$tmp/fast1.json" "$tmp/fastdp2pp2.json" --rtol 1e-4 > /dev/null; then
    ok "dp=2,pp=2 without --deterministic within 1e-4 of one rank"
else fail "dp=2,pp=2 without --deterministic strays from one rank"; fi
run fastpp2again 2 --micro-batches 4 --layout pp=2
same fastpp21f1b fastpp2again "pp=2 without --deterministic run to run"
run z1fastdp2pp2 4 --micro-batches 2 --layout dp=2,pp=2 --zero 1
if "$diff" "$tmp/fast1.json" "$tmp/z1fastdp2pp2.json" --rtol 1e-4 > /dev/null; then
    ok "dp=2,pp=2 --zero 1 without --deterministic within 1e-4 of one rank"
else fail "dp=2,pp=2 --zero 1 without --deterministic strays from one rank"; fi
# traffic of a stage's data-parallel group (rank 0's: stage 0's range, all-reduced, or
# sent by the fixed tree with --deterministic; ZeRO-1: reduce-scattered over the range
# padded to the shards, the fp32 shard all-gathered) equal to its formula, to the byte
if traffic_equal dp2pp2 fastdp2pp2 z1dp2pp2 z1fastdp2pp2
then ok "dp=2,pp=2 (--zero 0, 1): the stage's data-parallel traffic per step equal to its formula"
else fail "dp=2,pp=2 (--zero 0, 1): the stage's data-parallel traffic vs its formula"; fi
# memory by kind: ZeRO-1 holds about half the stage's AdamW state on 2 replicas (and
# the summed gradient shard without --deterministic), each rank's buffers its formula
if python3 - "$tmp/dp2pp2.json" "$tmp/z1dp2pp2.json" "$tmp/fastdp2pp2.json" \
   "$tmp/z1fastdp2pp2.json" <<'PYEOF'
import json, sys
k = [json.load(open(f))["results"][0]["memory"]["by_kind"] for f in sys.argv[1:]]
for a, z in ((k[0], k[1]), (k[2], k[3])):
    # rank 0's shard: half the stage's range padded to the shards, the most of any
    assert a["optimizer_bytes"] / 2 <= z["optimizer_bytes"] < 0.6 * a["optimizer_bytes"], (a, z)
for x in k:
    parts = ("parameters", "gradients", "optimizer", "activations", "communication")
    assert sum(x[p + "_bytes"] for p in parts) == x["formula_bytes"], x
assert k[3]["communication_bytes"] > 0 and k[1]["communication_bytes"] == 0, k
PYEOF
then ok "dp=2,pp=2 --zero 1: about half the stage's optimizer state, the buffers equal their formula"
else fail "dp=2,pp=2 --zero 1: memory by kind"; fi

# 16-bit storage on ref (the tied weights' compute copy follows them to the
# last stage; fp16's loss scaling sees the global norm)
for prec in bf16 fp16; do
    run ref$prec 1 --deterministic --micro-batches 4 --backend ref --precision $prec
    run refpp2$prec 2 --deterministic --micro-batches 4 --backend ref --precision $prec --layout pp=2
    same ref$prec refpp2$prec "pp=2 vs one rank, $prec on ref, --deterministic"
done

# the report: the grid in env.job and the result, the split, the bubble
if python3 - "$tmp/pp4gpipe.json" "$tmp/dp2pp2.json" <<'PYEOF'
import json, sys
def check(path, grid, split, P, M, sched):
    r = json.load(open(path))
    job, res = r["env"]["job"], r["results"][0]
    p, m = res["params"], res["metrics"]
    assert job["grid"] == grid, job.get("grid")
    assert [(e["dp"], e["pp"]) for e in job["per_rank"]] == [(i // P, i % P) for i in range(len(job["per_rank"]))]
    assert p["grid"] == grid and p["pp_split"] == split, (p["grid"], p["pp_split"])
    assert p["micro_batches"] == M and p["schedule"] == sched
    assert [(e["dp"], e["pp"]) for e in res["rank_grid"]] == [(i // P, i % P) for i in range(len(res["rank_grid"]))]
    assert abs(m["pipeline_bubble_theory"]["value"] - (P - 1) / (M + P - 1)) < 1e-12
    b = m["pipeline_bubble"]["value"]
    stages = [e["bubble"] for e in res["pipeline_stages"]]
    assert len(stages) == P and all(0 < x < 1 for x in stages), stages
    assert abs(b - sum(stages) / P) < 1e-12, (b, stages)
check(sys.argv[1], "dp=1,tp=1,pp=4", "0-0,1-1,2-2,3-3", 4, 4, "gpipe")
check(sys.argv[2], "dp=2,tp=1,pp=2", "0-1,2-3", 2, 2, "1f1b")
PYEOF
then ok "the report's grid, stage split, micro-batches, schedule and bubble"
else fail "the report's pipeline fields"; fi
for r in pp4gpipe dp2pp2 z1dp2pp2 z1fastdp2pp2; do
    "$check" "$tmp/$r.json" > /dev/null && ok "$r's report is valid" ||
        fail "$r's report: $("$check" "$tmp/$r.json" 2>&1 | tail -1)"
done

# a stage that stops (GT_FAULT_STALL names a job rank: stage 1): stage 0's
# receive from it times out naming the peer and the tag, the job ends within
# the deadline with a report of what finished
start=$(date +%s)
out=$(GT_FAULT_STALL=1:3 timeout 120 "$mpiexec" "${mpi_flags[@]}" -np 2 "$g" train $common \
      --micro-batches 4 --layout pp=2 --comm-timeout 2 --report "$tmp/stall.json" 2>&1)
rc=$?
elapsed=$(( $(date +%s) - start ))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $elapsed -lt 60 ] &&
   grep -q "from rank 1) .*did not complete within 2 s" <<<"$out" &&
   "$check" "$tmp/stall.json" --status error > /dev/null; then
    ok "a stalled stage ends the job in ${elapsed} s, its neighbour's receive named"
else
    fail "stalled stage: rc $rc after ${elapsed} s"; echo "$out" | grep -i gauntlet | tail -3
fi

# the report's stall record: the group, the operation, the rank waited for and
# its place in the grid (stage 1)
if [ "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["results"][0]["stall"][0]; print(s["group"] == sys.argv[2] and s["operation"] == "recv" and s["rank"] == 0 and s["waiting_for_rank"] == 1 and s["waiting_for"] == {"dp": 0, "tp": 0, "pp": 1} and s["timeout_s"] == 2)' "$tmp/stall.json" "the pipeline of replica 0, tensor rank 0" 2>&1)" = True ]; then
    ok "the report's stall record names the pipeline of replica 0, tensor rank 0, the recv, rank 1 and its place in the grid"
else
    fail "the stall record: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0].get("stall"))' "$tmp/stall.json" 2>&1)"
fi

# refusals, said once, before any work (gpt2-tiny's 2 blocks unless told)
refused "pp=3 on 2 ranks" 2 "does not divide the job's 2 ranks" --layout pp=3
refused "dp=2,pp=2 on 2 ranks" 2 "is 4 ranks, but the job has 2" --layout dp=2,pp=2
refused "3 micro-batches of 8" 2 "does not divide the 8 sequences" --layout pp=2 --micro-batches 3
refused "mlp in stages" 2 "has no pipeline stages" --layout pp=2 --model mlp-tiny
refused "pp=4 of 2 blocks" 4 "needs at least 4 blocks, the model has 2" --layout pp=4
refused "pp=2 with ZeRO-2" 2 "zero 2 with pp=2 is not done yet: ZeRO-1 works" --layout pp=2 --zero 2
refused "pp=2 with ZeRO-3" 2 "zero 3 with pp=2 is not done yet: ZeRO-1 works" --layout pp=2 --zero 3
# a checkpoint of 2 stages resumed with another pp: refused naming the part
# missing and the parts there are, and the checkpoint is left as it was
ls -lR "$tmp/ck" > "$tmp/ck.before"
refused "a pp=2 checkpoint resumed with pp=4" 4 "there is no part .*pp0of4 .*pp0of2 pp1of2" \
    --layers 4 --layout pp=4 --resume "$tmp/ck" --checkpoint-dir "$tmp/ck" --checkpoint-every 1
refused "a pp=2 checkpoint resumed without stages" 2 "is a checkpoint in parts (pp0of2 pp1of2)" \
    --layers 4 --resume "$tmp/ck" --checkpoint-dir "$tmp/ck" --checkpoint-every 1
refused "one stage's part resumed on one rank" 1 "or one pipeline stage's part" \
    $common --micro-batches 4 --deterministic --resume "$tmp/ck/pp0of2"
ls -lR "$tmp/ck" > "$tmp/ck.after"
if cmp -s "$tmp/ck.before" "$tmp/ck.after"; then ok "the refused resumes left the checkpoint as it was"
else fail "a refused resume changed the checkpoint: $(diff "$tmp/ck.before" "$tmp/ck.after" | head -3)"; fi
# the parts' latest checkpoints of different steps (a job stopped between
# them): refused, nothing written
run ckmix 2 --deterministic --micro-batches 4 --layout pp=2 --checkpoint-dir "$tmp/ckmix" \
    --checkpoint-every 2 --stop-after 4
rm -f "$tmp/ckmix/pp1of2/ckpt_00000004.gtck"
refused "parts of different steps" 2 "latest checkpoints are of different steps (2 to 4" \
    $common --micro-batches 4 --deterministic --layout pp=2 --resume "$tmp/ckmix"
refused "a bad schedule" 1 "use gpipe or 1f1b" --layout pp=2 --schedule interleaved

[ $fails -eq 0 ] && echo "all cases passed" || { echo "$fails case(s) failed"; exit 1; }
