#!/usr/bin/env bash
# usage: doctor_layout.sh GAUNTLET REPORT_CHECK MPIEXEC
# gauntlet doctor --layout on 4 ranks of one machine, each on its own faked
# host (GT_TEST_HOSTNAME, as doctor.sh does), --layout-only --quick:
#   - the command line: a layout that does not fit the job, --layout-only
#     without --layout, a malformed GT_FAULT_STALL_RANK: exit 2;
#   - no fault, tp=2,pp=2 and dp=2,tp=2: exit 0, nothing named,
#     a result per kind with every group in it;
#   - GT_FAULT_SLOW_RANK=3:10 (tp=2,pp=2): exit 1, tensor group 1 (ranks 2,3)
#     and the pipeline boundary rank 1 -> rank 3 named for being slower than
#     the other group of their kind, nothing else, rank 3 (node4) in every
#     named group;
#   - GT_FAULT_STALL_RANK=3 with --layout-deadline 2 (tp=2,pp=2, then
#     dp=2,tp=2): exit 1 within seconds, each group of rank 3 named as not
#     complete within 2 s, waiting for rank 3 on node4; nothing else.
# 77 without MPIEXEC or python3.
set -u
g=$1
check=$2
mpi=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3 (ci/deps.sh installs it)"; exit 77; }
[ -n "$mpi" ] || { echo "skip: no MPIEXEC (built without MPI)"; exit 77; }
export OMPI_MCA_mpi_yield_when_idle=1
unset GT_FAULT_SLOW_HOST GT_FAULT_SLOW_RANK GT_FAULT_STALL_RANK
mpi_launcher "$mpi"

# run NAME LAYOUT [OPTIONS...]: 4 ranks on node1..node4, the environment as exported
run() {
    local name=$1 layout=$2
    shift 2
    local cmd=("$mpi" "${mpi_flags[@]}") i
    for i in 1 2 3 4; do
        [ "$i" -gt 1 ] && cmd+=(:)
        cmd+=(-np 1)
        mpi_env cmd "GT_TEST_HOSTNAME=node$i"
        cmd+=("$g" doctor --quick --layout "$layout" --layout-only --report "$tmp/$name.json" "$@")
    done
    timeout 60 "${cmd[@]}" >"$tmp/$name.out" 2>&1
    echo $?
}

# verdict NAME WANT RC 'python test over d (report), out (outliers), res (results by case)' MESSAGE
verdict() { doctor_verdict '("groups:", [(c, [(x["group"], x.get("value"), x.get("ratio")) for x in r["groups"]]) for c, r in res.items()])' "$@"; }

# the command line
cmd=("$mpi" "${mpi_flags[@]}" -np 4 "$g" doctor --quick --layout tp=3 --layout-only)
expect 2 "tp=3 x pp=1 does not divide the job's 4 ranks" "${cmd[@]}"
expect 2 "--layout-only needs --layout" "$g" doctor --layout-only
expect 2 "--layout: 'tp=0'" "$g" doctor --layout tp=0
expect 2 "GT_FAULT_STALL_RANK: 'x' is not a rank number" \
    env GT_FAULT_STALL_RANK=x "$g" doctor --quick --layout tp=1 --layout-only

# no fault: nothing named
for i in 1; do
    rc=$(run clean$i tp=2,pp=2)
    verdict clean$i 0 "$rc" 'd["doctor"]["verdict"] == "ok" and out == [] and d["doctor"]["layout"] == "dp=1,tp=2,pp=2" and set(res) == {"layout_tensor", "layout_pipeline"} and len(res["layout_tensor"]["groups"]) == 2 and len(res["layout_pipeline"]["groups"]) == 2 and all(x["value"] > 0 and not x["outlier"] for r in res.values() for x in r["groups"])' \
        "no fault, tp=2,pp=2 on 4 hosts (run $i): 2 tensor groups and 2 pipeline boundaries measured, nothing named"
done
rc=$(run cleandp dp=2,tp=2)
verdict cleandp 0 "$rc" 'out == [] and set(res) == {"layout_tensor", "layout_data"} and len(res["layout_data"]["groups"]) == 2' \
    "no fault, dp=2,tp=2: 2 tensor and 2 data-parallel groups measured, nothing named"

# a slow rank: its tensor group and its pipeline boundary, nothing else
rc=$(GT_FAULT_SLOW_RANK=3:10 run slow tp=2,pp=2)
verdict slow 1 "$rc" 'sorted((o["probe"], o["ranks"]) for o in out) == [("layout_pipeline", "1,3"), ("layout_tensor", "2,3")] and all(o["scope"] == "group" and not o["stalled"] and o["ratio"] > o["limit"] and o["bytes"] == 1048576 for o in out) and d["doctor"]["layout_suspects"] == [{"rank": 3, "host": "node4"}] and d["doctor"]["layout_looks"] == 2 and not d["summary"]["ok"]' \
    "GT_FAULT_SLOW_RANK=3:10, tp=2,pp=2: tensor group 1 (ranks 2,3) and the boundary rank 1 -> rank 3 named, rank 3 on node4 in both, nothing else"
grep -qE "OUTLIER tensor group 1 \(replica 0, stage 1: ranks 2,3 on node3,node4\): allreduce of 1 MiB [0-9.]+x slower than the better group" "$tmp/slow.out" &&
    ok "the console names the tensor group, its ranks and hosts, the operation, the bytes and the factor" ||
    fail "console: $(grep OUTLIER "$tmp/slow.out" | head -3)"

# a stalled rank: each of its groups named within the deadline
t0=$(date +%s)
rc=$(GT_FAULT_STALL_RANK=3 run stall tp=2,pp=2 --layout-deadline 2)
elapsed=$(($(date +%s) - t0))
verdict stall 1 "$rc" 'sorted((o["probe"], o["ranks"]) for o in out) == [("layout_pipeline", "1,3"), ("layout_tensor", "2,3")] and all(o["stalled"] and o["waiting_for_ranks"] == "3" and o["rank"] == 3 and o["host"] == "node4" and o["deadline_s"] == 2 for o in out)' \
    "GT_FAULT_STALL_RANK=3, tp=2,pp=2: tensor group 1 and the boundary rank 1 -> rank 3 named as stalled, waiting for rank 3 on node4 ($elapsed s)"
grep -q "OUTLIER pipeline send stage 0 -> 1 (replica 0, tensor rank 1: rank 1 -> rank 3 on node2,node4): send/recv of 1 MiB did not complete within 2 s (waiting for rank 3)" "$tmp/stall.out" &&
    ok "the console names the stalled boundary, its ranks, the send and the deadline" ||
    fail "console: $(grep OUTLIER "$tmp/stall.out" | head -3)"
[ "$elapsed" -lt 20 ] && ok "the stalled job ended in $elapsed s" || fail "the stalled job took $elapsed s"
rc=$(GT_FAULT_STALL_RANK=3 run stalldp dp=2,tp=2 --layout-deadline 2)
verdict stalldp 1 "$rc" 'sorted((o["probe"], o["ranks"]) for o in out) == [("layout_data", "1,3"), ("layout_tensor", "2,3")] and all(o["stalled"] and o["rank"] == 3 for o in out)' \
    "GT_FAULT_STALL_RANK=3, dp=2,tp=2: tensor group 1 (ranks 2,3) and data-parallel group 1 (ranks 1,3) named as stalled on rank 3"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
