#!/usr/bin/env bash
# usage: transport.sh self|mpi GAUNTLET REPORT_CHECK [MPIEXEC]
# env.transport (docs/report-schema.md): what carries the messages between
# ranks, so that compare names it when a transport change slows a collective.
#   self: one process. Without transport variables env.transport has the MPI
#     library's line (none without MPI) and no OMPI_MCA_btl / UCX_TLS; with
#     OMPI_MCA_btl=self,tcp UCX_TLS=tcp it has both with those values, and
#     neither the launch variables Open MPI's mpirun sets (ess_base_jobid,
#     orte_hnp_uri, orte_tmpdir_base) nor the value of a secret or of an
#     address with a port; `gauntlet env` prints the same members; compare
#     lists the two variables as fingerprint differences, one line each.
#   mpi: two identical runs under mpirun -np 2 with OMPI_MCA_btl=self,tcp
#     give identical env.transport (no per-run noise), with the variable and
#     none of the ~20 variables mpirun sets in every rank; compare between
#     them lists no transport difference.
# 77 without python3, or for mpi without MPIEXEC or a build without MPI.
set -u
mode=$1
g=$2
check=$3
mpi=${4:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3 (ci/deps.sh installs it)"; exit 77; }
# nothing of a caller's launcher or transport settings; the session directory
# base (OMPI_MCA_orte_tmpdir_base, CMakeLists.txt) and yield_when_idle stay
for v in $(compgen -e | grep -E '^(SLURM_|PMIX_|PMI_|PRTE_|UCX_|NCCL_|FI_|I_MPI_|MPIR_CVAR_|HCOLL_|SHARP_|PSM2_|OMPI_)' |
    grep -vE '^OMPI_MCA_(orte_tmpdir_base|mpi_yield_when_idle)$'); do unset "$v"; done
args=(run collectives/allreduce --quick --quiet -e 4K --dtypes fp32 --ops sum)

# py FILE 'python expression over t (env.transport) and d (the report)' MESSAGE
py() {
    if python3 - "$1" "$2" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["env"].get("transport")
ok = isinstance(t, dict) and all(isinstance(v, str) for v in t.values()) and eval(sys.argv[2])
if not ok:
    print("  transport:", json.dumps(t, indent=1))
sys.exit(0 if ok else 1)
PYEOF
    then ok "$3"; else fail "$3"; fi
}
# what mpirun (Open MPI 4.1) sets in every rank: none of it is a transport setting
launch='("OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir", "OMPI_MCA_rmaps_", "OMPI_MCA_mpi_oversubscribe", "OMPI_MCA_shmem_", "PMIX_MCA_psec", "PMIX_MCA_gds", "PMIX_MCA_ptl", "PMIX_MCA_mca_base")'

if [ "$mode" = self ]; then
    expect 0 "" "$g" "${args[@]}" --topologies 1 --report "$tmp/plain.json"
    "$check" "$tmp/plain.json" >/dev/null || fail "plain.json does not validate"
    py "$tmp/plain.json" '(t["mpi_library"] == "none") == (d["env"]["software"]["mpi"] == "absent") and t["mpi_library"] != "" and "OMPI_MCA_btl" not in t and "UCX_TLS" not in t' \
        "no transport variables: the MPI library's line, no OMPI_MCA_btl, no UCX_TLS"
    py "$tmp/plain.json" 'all(v != "" for k, v in t.items() if k.startswith("mpi_t."))' \
        "MPI_T members only with a value"

    tcp=(env OMPI_MCA_btl=self,tcp UCX_TLS=tcp OMPI_MCA_ess_base_jobid=4242
         "OMPI_MCA_orte_hnp_uri=4242.0;tcp://127.0.0.1:5000" OMPI_MCA_orte_tmpdir_base="$tmp/ompi"
         NCCL_COMM_ID=127.0.0.1:29500 NCCL_IB_SECRET=hunter2 FI_PROVIDER=tcp)
    expect 0 "" "${tcp[@]}" "$g" "${args[@]}" --topologies 1 --report "$tmp/tcp.json"
    "$check" "$tmp/tcp.json" >/dev/null || fail "tcp.json does not validate"
    py "$tmp/tcp.json" 't["OMPI_MCA_btl"] == "self,tcp" and t["UCX_TLS"] == "tcp" and t["FI_PROVIDER"] == "tcp"' \
        "OMPI_MCA_btl, UCX_TLS and FI_PROVIDER recorded with their values"
    py "$tmp/tcp.json" "not any(k.startswith($launch) for k in t)" \
        "launch variables (ess_base_jobid, orte_hnp_uri, orte_tmpdir_base) left out"
    py "$tmp/tcp.json" 't["NCCL_COMM_ID"] == "(withheld)" and t["NCCL_IB_SECRET"] == "(withheld)" and "hunter2" not in json.dumps(d) and "29500" not in json.dumps(t)' \
        "an address with its port and a secret: named, their values withheld (in env.variables too)"
    if [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["env"]["software"]["mpi"])' "$tmp/tcp.json")" != absent ]; then
        py "$tmp/tcp.json" 't.get("mpi_t.btl") == "self,tcp"' "MPI_T: the btl list the library holds is self,tcp"
    fi
    # a one-process train uses no MPI: MPI_T is not read, the variables are
    expect 0 "" "${tcp[@]}" "$g" train --model mlp-tiny --steps 1 --quiet --peak-gflops 100 \
        --report "$tmp/train.json"
    py "$tmp/train.json" '(t.get("mpi_t") == "not read: this job uses no MPI") == (d["env"]["software"]["mpi"] != "absent") and not any(k.startswith("mpi_t.") for k in t) and t["OMPI_MCA_btl"] == "self,tcp"' \
        "one-process train: MPI_T not read (said so where there is MPI), OMPI_MCA_btl recorded"
    expect 0 "transport +OMPI_MCA_btl=self,tcp" "${tcp[@]}" "$g" env --no-probes
    expect 0 "transport +UCX_TLS=tcp" "${tcp[@]}" "$g" env --no-probes
    expect 0 "transport +mpi_library=" "$g" env --no-probes
    # one readable line per member (compare's own exit code is its verdict on the timings)
    out=$("$g" compare "$tmp/plain.json" "$tmp/tcp.json" 2>&1)
    for k in OMPI_MCA_btl UCX_TLS; do
        if grep -qE "env\.transport\.$k" <<<"$out"; then
            ok "compare lists env.transport.$k"
        else
            fail "compare does not list env.transport.$k"; grep -A12 fingerprint <<<"$out"
        fi
    done
else
    [ -n "$mpi" ] || { echo "skip: no MPIEXEC (a build without MPI)"; exit 77; }
    mpi_launcher "$mpi"
    for i in 1 2; do
        expect 0 "" env OMPI_MCA_btl=self,tcp "$mpi" "${mpi_flags[@]}" -np 2 \
            "$g" "${args[@]}" --topologies 2 --report "$tmp/mpi$i.json"
        "$check" "$tmp/mpi$i.json" >/dev/null || fail "mpi$i.json does not validate"
    done
    py "$tmp/mpi1.json" 't["OMPI_MCA_btl"] == "self,tcp" and t["mpi_library"] not in ("", "none")' \
        "mpirun -np 2: OMPI_MCA_btl=self,tcp recorded"
    py "$tmp/mpi1.json" "not any(k.startswith($launch) for k in t) and '(withheld)' not in t.values() and 'PSM2_DEVICES' not in t" \
        "mpirun -np 2: none of the variables mpirun and MPI_Init set in every rank"
    if [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["env"]["software"]["mpi"])' "$tmp/mpi1.json")" != absent ]; then
        # Open MPI's MPI_T control variable; MPICH has no btl (its own: docs/clusters.md)
        [ "$mpi_family" = openmpi ] &&
            py "$tmp/mpi1.json" 't.get("mpi_t.btl") == "self,tcp"' "mpirun -np 2: MPI_T's btl list is self,tcp"
    fi
    py "$tmp/mpi2.json" 't == json.load(open(sys.argv[1].replace("mpi2", "mpi1")))["env"]["transport"]' \
        "two identical runs under mpirun: identical env.transport"
    out=$("$g" compare "$tmp/mpi1.json" "$tmp/mpi2.json" 2>&1)
    if grep -q "env\.transport" <<<"$out"; then
        fail "compare lists a transport difference between identical runs"; grep -A12 fingerprint <<<"$out"
    else
        ok "compare: no transport difference between identical runs"
    fi
fi
[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all transport checks passed"
