#!/usr/bin/env bash
# usage: mpi_switch.sh GAUNTLET OTHER_GAUNTLET REPORT_CHECK
# An MPI switch gated by compare (docs/clusters.md, "MPICH"): the same
# `gauntlet run collectives --quick --topologies 2` from two builds of this
# source on this machine, one against Open MPI and one against MPICH, each
# started as one process and relaunched by its own build's launcher. Asserts:
#   - both reports validate, every result passes with 0 wrong elements;
#   - the same result names (suite, case, topology, backend) on both sides;
#   - each report says its MPI (env.software.mpi) and launcher (env.job);
#   - compare BASE=Open MPI NEW=MPICH matches every result (none only in BASE
#     or NEW, nothing missing), names the MPI library among the fingerprint
#     differences, and decides (exit 0, 3 or 4, never 5 "not comparable").
# 77 when OTHER_GAUNTLET is absent (no build against the other MPI) or python3 is.
set -u
g=$1
other=$2
check=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3 (ci/deps.sh installs it)"; exit 77; }
if [ ! -x "$other" ]; then
    echo "skip: no gauntlet built against the other MPI at $other (configure GT_OTHER_MPI_GAUNTLET)"
    exit 77
fi
# a test run inside a Slurm job or an mpirun must not see its launcher
for v in $(compgen -e | grep -E '^(SLURM_|PMIX_|PMI_|OMPI_COMM_WORLD|OMPI_MCA_orte_(hnp|launch|ess)|PRTE_)'); do
    unset "$v"
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

mpi_of() { "$1" env --no-probes 2>/dev/null | grep -m1 -iE '^ *mpi[ :]' | sed 's/^ *[Mm][Pp][Ii] *:* *//'; }
a=$(mpi_of "$g")
b=$(mpi_of "$other")
case "$a" in *MPICH*) mpich=$g ompi=$other ;; *) mpich=$other ompi=$g ;; esac
echo "this build: $a"
echo "the other:  $b"

for side in ompi mpich; do
    bin=${!side}
    # one pass (--rounds 1): the names and the fingerprint are the point, not the timing
    EXPECT_TIMEOUT=400 expect 0 "" "$bin" run collectives --quick --quiet --topologies 2 \
        --rounds 1 --report "$tmp/$side.json"
    "$check" "$tmp/$side.json" >/dev/null && ok "$side: the report validates" ||
        fail "$side: the report does not validate"
done

py() { # REPORT_A REPORT_B EXPR MESSAGE: EXPR over a, b (the documents)
    if python3 - "$1" "$2" "$3" <<'PYEOF'; then ok "$4"; else fail "$4"; fi
import json, sys
a = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
def names(d):
    return sorted((r["suite"], r["case"], r["topology"], r["backend"]) for r in d["results"])
def exact(d):
    return all(r["status"] == "pass" and any(c["name"] == "wrong_elements" and c["value"] == 0
                                             for c in r["checks"]) for r in d["results"])
ok = eval(sys.argv[3])
if not ok:
    print("  ompi:", a["env"]["software"].get("mpi"), len(a["results"]), "results")
    print("  mpich:", b["env"]["software"].get("mpi"), len(b["results"]), "results")
sys.exit(0 if ok else 1)
PYEOF
}
py "$tmp/ompi.json" "$tmp/mpich.json" 'names(a) == names(b) and len(names(a)) > 100' \
    "the same result names from both builds"
py "$tmp/ompi.json" "$tmp/mpich.json" 'exact(a) and exact(b)' \
    "every result passes with 0 wrong elements on both"
py "$tmp/ompi.json" "$tmp/mpich.json" '"Open MPI" in a["env"]["software"]["mpi"] and "MPICH" in b["env"]["software"]["mpi"] and a["env"]["job"]["launcher"] == "mpirun-openmpi" and b["env"]["job"]["launcher"] == "mpirun-mpich"' \
    "each report names its MPI library and the launcher that started its ranks"

"$g" compare "$tmp/ompi.json" "$tmp/mpich.json" >"$tmp/cmp.out" 2>&1
rc=$?
case $rc in
0 | 3 | 4) ok "compare Open MPI -> MPICH decides (exit $rc)" ;;
*) fail "compare exited $rc"; tail -20 "$tmp/cmp.out" ;;
esac
grep -qE "results: [0-9]+ matched, 0 only in BASE \(0 of them passed there\), 0 only in NEW" "$tmp/cmp.out" &&
    ok "compare matches every result: $(grep -oE 'results: [0-9]+ matched' "$tmp/cmp.out")" ||
    { fail "compare does not match every result"; grep -E "^results:|only in" "$tmp/cmp.out" | head -5; }
grep -q "missing in NEW" "$tmp/cmp.out" && fail "compare says results are missing in NEW"
grep -qE "software\.mpi.*Open MPI.*MPICH|software\.mpi" "$tmp/cmp.out" &&
    sed -n '/^fingerprint differences/,/^$/p' "$tmp/cmp.out" | grep -q "MPICH" &&
    ok "compare names the MPI change: $(grep -m1 'software\.mpi' "$tmp/cmp.out" | sed 's/^ *//' | cut -c1-120)" ||
    { fail "compare's fingerprint differences do not name the MPI change"; sed -n '/^fingerprint differences/,/^$/p' "$tmp/cmp.out" | head -12; }

[ "$fails" -eq 0 ] && echo "mpi_switch: all passed" || { echo "mpi_switch: $fails failed"; exit 1; }
