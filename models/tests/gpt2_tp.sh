#!/usr/bin/env bash
# Tensor-parallel gpt2 over MPI (--layout dp=D,tp=T,pp=P), oversubscribed on
# whatever cores there are: tp=2 on 2 ranks, dp=2,tp=2, tp=2,pp=2 and tp=4 on 4,
# against one rank within the tensor-parallel bound (the final weights,
# llmc_diff.py; the losses within 1e-5), bitwise run to run with
# --deterministic and bitwise across the layouts of the same tensor split
# (ZeRO-3 and block recomputation too);
# resumed bitwise from a checkpoint of the layout's parts (tp=2,pp=2 too); started from an
# llm.c file; ref as well as cpu; the report's grid, placement and the group's traffic
# beside its formula; predict's layout advice and check from these reports; the
# refusals of what is not done.
# usage: gpt2_tp.sh MPIEXEC GAUNTLET REPORT_DIFF REPORT_CHECK
set -u
mpiexec=$1
g=$2
diff=$3
check=$4
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
. "$here/../../harness/tests/lib.sh" # fails, fail, ok, mpi_launcher
mpi_launcher "$mpiexec"
# gpt2-tiny's 2 blocks and 2 heads; global batch 8 in 4 micro-batches of 2
# sequences; the norm clipped, weight decay on
common="--steps 6 --batch 8 --peak-gflops 100 --print-every 0 --threads 1
        --weight-decay 0.1 --grad-clip 1.0"
. "$here/train_lib.sh" # train_mpi, train_kept, same, traffic_equal, refused
run() { # NAME NP ARGS...: train_mpi keeping the final weights in NAME.bin
    local name=$1
    train_mpi "$@" --save-final "llmc:$tmp/$name.bin"
}
# within the tensor-parallel bound of one rank: the final weights element by
# element (llmc_diff.py derives the bound from the config and the run's
# learning rates) and the losses within 1e-5
near() { # ONE OTHER WHAT
    local lrsum
    lrsum=$(python3 -c 'import json,sys; print(sum(json.load(open(sys.argv[1]))["results"][0]["series"]["lr"]))' "$tmp/$1.json")
    if python3 "$here/llmc_diff.py" "$tmp/$1.bin" "$tmp/$2.bin" --lr-sum "$lrsum" > "$tmp/$2.near" &&
       "$diff" "$tmp/$1.json" "$tmp/$2.json" --rtol 1e-5 > /dev/null; then
        ok "$3 within the bound ($(grep -o 'delta .*' "$tmp/$2.near"))"
    else
        fail "$3 strays from one rank"; cat "$tmp/$2.near"; "$diff" "$tmp/$1.json" "$tmp/$2.json"
    fi
}

run one 1 --deterministic --micro-batches 4
run tp2 2 --deterministic --micro-batches 4 --layout tp=2
near one tp2 "tp=2 vs one rank, --deterministic"
run tp2b 2 --deterministic --micro-batches 4 --layout tp=2
same tp2 tp2b "tp=2 run to run"
# two replicas of 2 micro-batches: the same 4 leaves in the same tree
run dp2tp2 4 --deterministic --micro-batches 2 --layout dp=2,tp=2
same tp2 dp2tp2 "dp=2,tp=2 vs tp=2, --deterministic"
# two stages of a tensor group each: one rank's accumulation order per stage
run tp2pp2 4 --deterministic --micro-batches 4 --layout tp=2,pp=2
same tp2 tp2pp2 "tp=2,pp=2 vs tp=2, --deterministic"
run tp2pp2rc 4 --deterministic --micro-batches 4 --layout tp=2,pp=2 --recompute block
same tp2 tp2pp2rc "tp=2,pp=2 with --recompute block vs tp=2, --deterministic"
# ZeRO-3 over the replicas of each tensor rank, blocks recomputed: tp=2's bits
run z3 4 --deterministic --micro-batches 2 --layout dp=2,tp=2 --zero 3 --recompute block
same tp2 z3 "dp=2,tp=2 with --zero 3 --recompute block vs tp=2, --deterministic"
# checkpoints: each tensor rank's part (DIR/tp<r>of<T>), resumed bitwise
run ck1 4 --deterministic --micro-batches 2 --layout dp=2,tp=2 --checkpoint-dir "$tmp/ck" \
    --checkpoint-every 3 --stop-after 3
run ck2 4 --deterministic --micro-batches 2 --layout dp=2,tp=2 --resume "$tmp/ck"
if [ -s "$tmp/ck2.digest" ] && cmp -s "$tmp/tp2.digest" "$tmp/ck2.digest"; then
    ok "dp=2,tp=2 stopped at step 3 and resumed: unbroken tp=2's weights ($(cat "$tmp/ck2.digest"))"
else fail "resumed dp=2,tp=2: $(cat "$tmp/ck2.digest" 2>/dev/null) vs $(cat "$tmp/tp2.digest")"; fi
# with pipeline stages too: a part per stage and tensor rank (DIR/pp<s>of<P>/tp<r>of<T>)
run ckpp1 4 --deterministic --micro-batches 4 --layout tp=2,pp=2 --checkpoint-dir "$tmp/ckpp" \
    --checkpoint-every 3 --stop-after 3
run ckpp2 4 --deterministic --micro-batches 4 --layout tp=2,pp=2 --resume "$tmp/ckpp"
if [ -s "$tmp/ckpp2.digest" ] && cmp -s "$tmp/tp2pp2.digest" "$tmp/ckpp2.digest" &&
   [ -s "$tmp/ckpp/pp1of2/tp1of2/ckpt_00000003.gtck" ]; then
    ok "tp=2,pp=2 stopped at step 3 and resumed: unbroken tp=2,pp=2's weights ($(cat "$tmp/ckpp2.digest"))"
else fail "resumed tp=2,pp=2: $(cat "$tmp/ckpp2.digest" 2>/dev/null) vs $(cat "$tmp/tp2pp2.digest")"; fi
# the starting weights from an llm.c file, cut into the slices
run init1 1 --deterministic --micro-batches 4 --steps 2 --init-from "llmc:$tmp/one.bin"
run inittp2 2 --deterministic --micro-batches 4 --steps 2 --init-from "llmc:$tmp/one.bin" \
    --layout tp=2
near init1 inittp2 "tp=2 from an llm.c file vs one rank"
# without --deterministic (one micro-batch, the gradients summed in place)
run fast1 1 --micro-batches 1
run fasttp2 2 --micro-batches 1 --layout tp=2
near fast1 fasttp2 "tp=2 vs one rank without --deterministic"
# ref: the oracle's kernels split the same way
run ref1 1 --micro-batches 4 --backend ref --steps 2
run reftp2 2 --micro-batches 4 --backend ref --steps 2 --layout tp=2
near ref1 reftp2 "tp=2 on ref vs one rank"
# the 4-rank layout of one tensor group: tp=4 needs 4 heads (gpt2-tiny has 2)
run one4h 1 --deterministic --micro-batches 4 --heads 4 --steps 3
run tp4 4 --deterministic --micro-batches 4 --heads 4 --steps 3 --layout tp=4
near one4h tp4 "tp=4 (4 heads) vs one rank, --deterministic"

# the report: the grid and where each rank sits (tensor groups innermost),
# the slices a rank holds, the group's all-reduces beside their formula
if python3 - "$tmp/dp2tp2.json" "$tmp/tp2pp2.json" <<'PYEOF'
import json, sys
def check(path, grid, D, T, P, blocks, first, last, mb):
    r = json.load(open(path))
    job, res = r["env"]["job"], r["results"][0]
    p, m = res["params"], res["metrics"]
    assert job["grid"] == grid and p["grid"] == grid, (job.get("grid"), p.get("grid"))
    want = [(i // (T * P), i % T, i // T % P) for i in range(D * T * P)]
    assert [(e["dp"], e["tp"], e["pp"]) for e in job["per_rank"]] == want, job["per_rank"]
    assert [(e["dp"], e["tp"], e["pp"]) for e in res["rank_grid"]] == want, res["rank_grid"]
    assert 2 * p["params_per_rank"] < p["num_params"] + 2 * 64 * 64, p  # wpe, LNs replicated
    # rank 0's all-reduces per step: 4 a block, the embedding, the head (+ 3N doubles)
    N, C = 2 * 64, 64
    calls = mb * (4 * blocks + first + 3 * last)
    nbytes = mb * ((4 * blocks + first + last) * N * C * 4 + last * 24 * N)
    assert m["tp_collectives"]["value"] == calls, (m["tp_collectives"], calls)
    assert m["tp_allreduce_bytes"]["value"] == nbytes, (m["tp_allreduce_bytes"], nbytes)
    assert m["tp_allreduce_bytes_formula"]["value"] == nbytes
check(sys.argv[1], "dp=2,tp=2,pp=1", 2, 2, 1, 2, 1, 1, 2)
check(sys.argv[2], "dp=1,tp=2,pp=2", 1, 2, 2, 1, 1, 0, 4)
PYEOF
then ok "the report's grid, placement, slices and the group's traffic against its formula"
else fail "the report's tensor-parallel fields"; fi
for r in dp2tp2 tp2pp2; do
    "$check" "$tmp/$r.json" > /dev/null && ok "$r's report is valid" ||
        fail "$r's report: $("$check" "$tmp/$r.json" 2>&1 | tail -1)"
done

# predict's layouts from these runs (docs/predict.md, "Layouts"): one rank, tp=2,
# dp=2,tp=2 and tp=2,pp=2 (pp=2 too when gpt2_pp.sh's runs are absent: none here),
# a network given (no collectives measured here): the ranking and the advice at
# 64, 512 and 4096 ranks, each measured layout predicted from the others (the
# error is printed, not bounded: four steps on a shared machine), and a memory
# per rank no layout fits refused with the smallest need
out=$("$g" predict --from "$tmp/one.json" "$tmp/tp2.json" "$tmp/dp2tp2.json" "$tmp/tp2pp2.json" \
      --alpha-us 5 --beta-gbps 2 --memory-per-rank 6MiB --check --top 4 2>&1)
rc=$?
rows=$(grep -cE '^  dp=[0-9]+,tp=2,pp=[12] +[0-9]+ +[0-9.]+ +[0-9.]+ +[-+][0-9.]+%' <<<"$out")
if [ $rc -eq 0 ] && [ "$(grep -c '^  advice: dp=' <<<"$out")" = 3 ] &&
   grep -q '^4096 ranks' <<<"$out" && [ "$rows" = 3 ]; then
    ok "predict --layouts: advice at 64, 512, 4096 ranks; 3 layouts checked ($(grep -E '^  dp=.*%' <<<"$out" | awk '{print $1, $5}' | tr '\n' ' '))"
else
    fail "predict --layouts: rc $rc, $rows check rows"; echo "$out" | tail -20
fi
out=$("$g" predict --from "$tmp/tp2.json" --alpha-us 5 --beta-gbps 2 --memory-per-rank 64KiB 2>&1)
rc=$?
if [ $rc -eq 2 ] && grep -q "no layout of 64 ranks fits --memory-per-rank 0.1 MiB: the smallest need is" <<<"$out"; then
    ok "a memory per rank no layout fits: refused with the smallest need"
else fail "predict --memory-per-rank 64KiB: rc $rc: $out"; fi

# a tensor rank that stops (GT_FAULT_STALL names a job rank): its partner's
# all-reduce inside the group times out naming the peer, the job ends within
# the deadline with a report of what finished
start=$(date +%s)
out=$(GT_FAULT_STALL=1:2 timeout 120 "$mpiexec" "${mpi_flags[@]}" -np 2 "$g" train $common \
      --layout tp=2 --comm-timeout 2 --report "$tmp/stall.json" 2>&1)
rc=$?
elapsed=$(( $(date +%s) - start ))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $elapsed -lt 60 ] &&
   grep -q "allreduce_tree .*from rank 1) .*; the tensor-parallel group of replica 0, stage 0) did not complete within 2 s" <<<"$out" &&
   "$check" "$tmp/stall.json" --status error > /dev/null; then
    ok "a stalled tensor rank ends the job in ${elapsed} s, its partner's all-reduce and group named"
else
    fail "stalled tensor rank: rc $rc after ${elapsed} s"; echo "$out" | grep -i gauntlet | tail -3
fi

# the report's stall record: the group, the operation, the rank waited for and
# its place in the grid (tensor rank 1)
if [ "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["results"][0]["stall"][0]; print(s["group"] == sys.argv[2] and s["operation"] == "recv" and s["rank"] == 0 and s["waiting_for_rank"] == 1 and s["waiting_for"] == {"dp": 0, "tp": 1, "pp": 0} and s["timeout_s"] == 2)' "$tmp/stall.json" "the tensor-parallel group of replica 0, stage 0" 2>&1)" = True ]; then
    ok "the report's stall record names the tensor-parallel group of replica 0, stage 0, the recv, rank 1 and its place in the grid"
else
    fail "the stall record: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0].get("stall"))' "$tmp/stall.json" 2>&1)"
fi

# refusals, said once, before any work
refused "tp=4 of 2 heads" 4 "heads must be a multiple of 4" --layout tp=4
refused "mlp split" 2 "has no tensor-parallel layers" --layout tp=2 --model mlp-tiny
refused "a tp=2 checkpoint resumed with tp=4" 4 "there is no part .*tp0of4" --layout tp=4 \
    --heads 4 --resume "$tmp/ck"
refused "tp=2 in bf16" 2 "with --precision bf16 is not done yet" --layout tp=2 --precision bf16

[ $fails -eq 0 ] && echo "all cases passed" || { echo "$fails case(s) failed"; exit 1; }
