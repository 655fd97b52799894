#!/usr/bin/env bash
# usage: job.sh GAUNTLET REPORT_CHECK [MPIEXEC]
# The job in the report (env.job, each result's layout) and the collectives
# suite's intra-/inter-node communicators, on one machine: the ranks fake
# their hosts with GT_TEST_HOSTNAME, set per rank through the launcher's MPMD form
# (mpirun -np 1 -x GT_TEST_HOSTNAME=a prog : -np 1 -x GT_TEST_HOSTNAME=b prog;
# Hydra's -env GT_TEST_HOSTNAME a: lib.sh's mpi_env).
#   - one process: scheduler none, layout 1x1;
#   - 2 ranks on hosts a, b: 2 nodes x 1, hosts gathered per rank, topology 1
#     is 1x1 and 2 is 2x1, no intra/inter cases (one rank per node);
#   - 4 ranks on a, a, b, b: 2x2, the world's cases keep their names,
#     intra_node/... (param comm_layout 1x2) and inter_node/... (2x1) cases,
#     every result with the topology's layout 2x2, exact;
#   - 2 ranks on one real host: 1x2, nothing more than today;
#   - compare: two runs differ in their job id, not in the job's identity
#     fields; 2x1 against 1x2 is a fingerprint difference.
# 77 without MPIEXEC or python3.
set -u
g=$1
check=$2
mpi=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3 (ci/deps.sh installs it)"; exit 77; }
export OMPI_MCA_mpi_yield_when_idle=1
# a test run inside a Slurm job or an mpirun must not see its launcher
for v in $(compgen -e | grep -E '^(SLURM_|PMIX_|PMI_|OMPI_COMM_WORLD|OMPI_MCA_orte|PRTE_)'); do unset "$v"; done
flags=()
launcher=none
if [ -n "$mpi" ]; then
    mpi_launcher "$mpi"
    flags=("${mpi_flags[@]}")
    launcher=$([ "$mpi_family" = hydra ] && echo mpirun-mpich || echo mpirun-openmpi)
fi
# two MPMD segments of N1 and N2 ranks on hosts job-a and job-b: mpmd N1 N2 ARGS...
mpmd() {
    local n1=$1 n2=$2
    shift 2
    local cmd=("$mpi" "${flags[@]}" -np "$n1")
    mpi_env cmd GT_TEST_HOSTNAME=job-a
    cmd+=("$g" "$@" : -np "$n2")
    mpi_env cmd GT_TEST_HOSTNAME=job-b
    cmd+=("$g" "$@")
    EXPECT_TIMEOUT=240 expect 0 "" "${cmd[@]}"
}
args=(run collectives/allreduce --quick --quiet -e 4K --dtypes fp32 --ops sum)

# py FILE 'python expression over d (the report) that must be true' MESSAGE
py() {
    if python3 - "$1" "$2" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
job = d["env"].get("job", {})
res = d["results"]
ok = eval(sys.argv[2])
if not ok:
    print("  job:", json.dumps(job)[:600])
    print("  results:", [(r["case"], r["topology"], r.get("layout"), r["status"]) for r in res][:12])
sys.exit(0 if ok else 1)
PYEOF
    then ok "$3"; else fail "$3"; fi
}

# one process, no launcher
expect 0 "" "$g" "${args[@]}" --topologies 1 --report "$tmp/one.json"
"$check" "$tmp/one.json" >/dev/null || fail "one.json does not validate"
py "$tmp/one.json" 'job["scheduler"] == "none" and job["ranks"] == 1 and job["n_nodes"] == 1 and job["layout"] == "1x1" and job["per_rank"][0]["host"] == d["env"]["host"] and all(r["layout"] == "1x1" for r in res) and "job_id" not in job["identity"] and "nodes" not in job["identity"]' \
    "one process: scheduler none, 1x1, its host"

# what Slurm's srun leaves in a task's environment, read on one process
# (the communicator is self: none of the variables --comm auto looks at)
expect 0 "" env SLURM_JOB_ID=4242 SLURM_STEP_ID=3 SLURM_PROCID=0 SLURM_JOB_NODELIST='node[1-2]' \
    SLURM_TASKS_PER_NODE='1(x2)' "$g" "${args[@]}" --topologies 1 --report "$tmp/srun.json"
py "$tmp/srun.json" 'job["scheduler"] == "slurm" and job["launcher"] == "srun" and job["job_id"] == "4242.3" and job["node_list"] == "node[1-2]" and job["tasks_per_node"] == "1(x2)" and job["ranks"] == 1' \
    "srun's variables: scheduler slurm, launcher srun, job id 4242.3, node list and tasks per node as Slurm wrote them"
# mpirun inside an allocation: Open MPI's daemons' variables win over SLURM_PROCID
expect 0 "" env SLURM_JOB_ID=4242 SLURM_PROCID=0 OMPI_MCA_orte_launch=1 "$g" "${args[@]}" \
    --topologies 1 --comm self --report "$tmp/alloc.json"
py "$tmp/alloc.json" 'job["scheduler"] == "slurm" and job["launcher"] == "mpirun-openmpi" and job["job_id"] == "4242"' \
    "mpirun inside a Slurm allocation: scheduler slurm, launcher mpirun-openmpi, job id 4242"

if [ -z "$mpi" ]; then
    echo "skip: no MPIEXEC (built without MPI): the multi-rank checks did not run"
    [ "$fails" -eq 0 ] && exit 77 || exit 1
fi

# 2 ranks, hosts a and b
mpmd 1 1 "${args[@]}" --topologies 1,2 --report "$tmp/2x1.json"
"$check" "$tmp/2x1.json" >/dev/null || fail "2x1.json does not validate"
py "$tmp/2x1.json" 'job["scheduler"] == "'$launcher'" and job["launcher"] == "'$launcher'" and job["ranks"] == 2 and job["n_nodes"] == 2 and job["ranks_per_node"] == 1 and job["layout"] == "2x1" and job["nodes"] == ["job-a", "job-b"] and [p["host"] for p in job["per_rank"]] == ["job-a", "job-b"] and [p["node"] for p in job["per_rank"]] == [0, 1] and all(p["gpu"] is None or p["gpu"]["uuid"] for p in job["per_rank"]) and d["env"]["host"] == "job-a" and [b["host"] for b in d["env"]["binding"]] == ["job-a", "job-b"]' \
    "2 ranks on job-a, job-b: env.job says 2 nodes x 1, hosts gathered per rank"
py "$tmp/2x1.json" 'set((r["topology"], r["layout"]) for r in res) == {("1", "1x1"), ("2", "2x1")} and not any("_node/" in r["case"] for r in res) and all(r["status"] == "pass" for r in res)' \
    "2x1: results carry layout 1x1 (topology 1) and 2x1 (topology 2); one rank per node: no intra/inter cases"

# gauntlet train --topologies: each topology's result carries its layout
mpmd 1 1 train --model gpt2-tiny --steps 2 --topologies 1,2 --quiet --report "$tmp/train.json"
py "$tmp/train.json" 'job["layout"] == "2x1" and [(r["topology"], r["layout"]) for r in res] == [("1", "1x1"), ("2", "2x1")]' \
    "train --topologies 1,2 on job-a, job-b: results 1x1 and 2x1"

# 4 ranks, 2 per host
mpmd 2 2 "${args[@]}" --topologies 4 --report "$tmp/2x2.json"
"$check" "$tmp/2x2.json" >/dev/null || fail "2x2.json does not validate"
py "$tmp/2x2.json" 'job["layout"] == "2x2" and job["ranks_per_node"] == 2 and [p["host"] for p in job["per_rank"]] == ["job-a", "job-a", "job-b", "job-b"] and [p["local_index"] for p in job["per_rank"]] == [0, 1, 0, 1]' \
    "2x2: env.job says 2 nodes x 2 ranks, local indices 0 1 0 1"
py "$tmp/2x2.json" 'sorted((r["case"], r["topology"], r["layout"], r["params"].get("comm_scope"), r["params"].get("comm_layout")) for r in res) == sorted([("allreduce/fp32/sum", "4", "2x2", None, None)] * 2 + [("intra_node/allreduce/fp32/sum", "2", "2x2", "intra_node", "1x2")] * 2 + [("inter_node/allreduce/fp32/sum", "2", "2x2", "inter_node", "2x1")] * 2) and all(r["status"] == "pass" and any(c["name"] == "wrong_elements" and c["value"] == 0 for c in r["checks"]) for r in res)' \
    "2x2: world cases as before, intra_node/... (comm_layout 1x2) and inter_node/... (2x1), all with the topology's layout 2x2, every element exact"

# 2 ranks on this one host: nothing changes
EXPECT_TIMEOUT=240 expect 0 "" "$mpi" "${flags[@]}" -np 2 "$g" "${args[@]}" --topologies 2 --report "$tmp/1x2.json"
py "$tmp/1x2.json" 'job["layout"] == "1x2" and job["n_nodes"] == 1 and all(r["layout"] == "1x2" and "_node/" not in r["case"] for r in res) and len(res) == 2' \
    "2 ranks on one host: 1x2, only the world's cases"
EXPECT_TIMEOUT=240 expect 0 "" "$mpi" "${flags[@]}" -np 2 "$g" "${args[@]}" --topologies 2 --report "$tmp/1x2b.json"

# compare: a new job id is no fingerprint difference; a new shape is
out=$("$g" compare "$tmp/1x2.json" "$tmp/1x2b.json" 2>&1)
py "$tmp/1x2b.json" 'job["job_id"] is None or isinstance(job["job_id"], str)' "job_id recorded as a string or null"
if grep -q "env.job" <<<"$out"; then fail "compare of two 1x2 runs lists a job field: $(grep env.job <<<"$out")"
else ok "compare of two 1x2 runs (different job ids) lists no job field"; fi
out=$("$g" compare "$tmp/1x2.json" "$tmp/2x1.json" 2>&1)
if grep -q "env.job.n_nodes" <<<"$out" && grep -q "env.job.layout" <<<"$out" && ! grep -q "env.job.job_id\|env.job.nodes\|env.job.per_rank" <<<"$out"; then
    ok "compare 1x2 -> 2x1 lists env.job.n_nodes and layout, never the id or hosts"
else
    fail "compare 1x2 -> 2x1 fingerprint: $(grep env.job <<<"$out")"
fi

[ "$fails" -eq 0 ] && echo "job: all passed" || echo "job: $fails failed"
[ "$fails" -eq 0 ]
