#!/usr/bin/env bash
# usage: layouts.sh GAUNTLET MPIEXEC
# The scaling suite's layout grid (docs/suites.md, "scaling"; docs/distributed.md,
# "The layout grid"): `gauntlet run scaling/gpt2-3m/layouts --quick --topologies 1,2`
# on 2 ranks. Topology 1: the one layout; topology 2: exactly dp=2, tp=2 and pp=2,
# each a passing result with the param layout, step time, tokens/s, efficiency
# against topology 1, memory by kind with its formula, exposed communication; the
# data-parallel, tensor-parallel and pipeline traffic equal to their formulas
# (check traffic_formula), the pipeline's bubble beside its formula; one fastest per
# topology (fraction_of_fastest 1), the one the console marks with '*'.
# About 15 s on 2 cores. 77 without MPIEXEC or python3.
set -u
g=$1
mpi=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"
[ -n "$mpi" ] || { echo "skip: no MPI launcher"; exit 77; }
command -v python3 >/dev/null || { echo "skip: no python3 (ci/deps.sh installs it)"; exit 77; }
export OMPI_MCA_mpi_yield_when_idle=1
for v in $(compgen -e | grep -E '^(SLURM_|PMIX_|PMI_|OMPI_COMM_WORLD|OMPI_MCA_orte|PRTE_)'); do unset "$v"; done
mpi_launcher "$mpi"
"$mpi" "${mpi_flags[@]}" -np 2 "$g" run scaling/gpt2-3m/layouts --quick --topologies 1,2 \
    --threads 1 --report "$tmp/r.json" >"$tmp/out.txt" 2>&1 \
    || { cat "$tmp/out.txt"; echo "FAIL: the run exited non-zero"; exit 1; }
python3 - "$tmp/r.json" "$tmp/out.txt" <<'PY'
import json, re, sys
rep = json.load(open(sys.argv[1]))
out = open(sys.argv[2]).read()
fails = []
def need(ok, msg):
    if not ok:
        fails.append(msg)
want = {"1": ["dp=1,tp=1,pp=1"], "2": ["dp=2,tp=1,pp=1", "dp=1,tp=2,pp=1", "dp=1,tp=1,pp=2"]}
for topo, layouts in want.items():
    rs = [r for r in rep["results"] if r["case"] == "gpt2-3m/layouts" and r["topology"] == topo]
    got = [r["params"].get("layout") for r in rs]
    need(got == layouts, f"topology {topo}: layouts {got}, want {layouts}")
    fastest = []
    for r in rs:
        lay, m = r["params"].get("layout"), r.get("metrics", {})
        need(r["status"] == "pass", f"{topo} {lay}: status {r['status']}")
        for k in ["ms_per_step", "tokens_per_s", "exposed_comm_ms", "fraction_of_fastest"]:
            need(k in m, f"{topo} {lay}: no metric {k}")
        if topo != "1":
            need("strong_scaling_efficiency" in m and r["params"].get("reference_ranks") == 1,
                 f"{topo} {lay}: no efficiency against 1 rank")
        kinds = r.get("memory", {}).get("by_kind", {})
        held = sum(kinds.get(k, 0) for k in ["parameters_bytes", "gradients_bytes",
                   "optimizer_bytes", "activations_bytes", "communication_bytes"])
        need(held > 0 and kinds.get("formula_bytes") == held,
             f"{topo} {lay}: memory by kind {kinds}")
        tp, pp = int(re.search(r"tp=(\d+)", lay).group(1)), int(re.search(r"pp=(\d+)", lay).group(1))
        checks = {c["name"]: c for c in r.get("checks", [])}
        tc = checks.get("traffic_formula")
        need(tc is not None and tc["passed"] and tc["value"] == 0,
             f"{topo} {lay}: traffic_formula {tc}")
        if pp == 1:
            tr = r.get("traffic", {})
            need(tr.get("bytes_per_step") == tr.get("formula_bytes_per_step"),
                 f"{topo} {lay}: traffic {tr}")
        if tp > 1:
            need(m.get("tp_allreduce_bytes", {}).get("value", -1) > 0 and
                 m["tp_allreduce_bytes"]["value"] == m.get("tp_allreduce_bytes_formula", {}).get("value"),
                 f"{topo} {lay}: tensor-group bytes against the formula")
        if pp > 1:
            need("pipeline_bubble" in m and "pipeline_bubble_theory" in m,
                 f"{topo} {lay}: no bubble beside its formula")
            need(m.get("pp_send_bytes", {}).get("value", -1) > 0 and
                 m["pp_send_bytes"]["value"] == m.get("pp_send_bytes_formula", {}).get("value"),
                 f"{topo} {lay}: pipeline sends against the formula")
        if m.get("fraction_of_fastest", {}).get("value") == 1:
            fastest.append(lay)
    need(len(fastest) == 1, f"topology {topo}: fastest {fastest}")
    table = out.split(f"layouts: scaling/gpt2-3m/layouts on {topo} rank(s)")
    need(len(table) == 2, f"topology {topo}: no layout table in the console")
    if len(table) == 2 and fastest:
        rows = [l for l in table[1].split("\n")[2:2 + len(layouts)]]
        starred = [l.split()[1] for l in rows if l.startswith("  *")]
        need(starred == fastest, f"topology {topo}: console marks {starred}, fastest {fastest}")
for f in fails:
    print("FAIL:", f)
if fails:
    print(out)
    sys.exit(1)
print("ok: layout grid on 1 and 2 ranks")
PY
