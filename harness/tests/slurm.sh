#!/usr/bin/env bash
# usage: slurm.sh MODE GAUNTLET REPORT_CHECK
# The slurm-labelled tests on the two-node cluster of ci/slurm/cluster.sh (instance
# GT_SLURM_INSTANCE, which CMake names after the build directory); docs/clusters.md.
#   setup     the fixture's start (leftovers of this instance stopped first)
#   cleanup   the fixture's stop, and a check that nothing of the instance is left
#   nightly   `sbatch ci/jobs/nightly-scaling.sbatch` twice: two nights, the second gated
#             against the first with gauntlet compare (its default rules): both exit 0,
#             the second names the first and becomes the reference
#   srun      `srun -N2 -n2 gauntlet run collectives scaling --quick`: exit 0, a valid
#             report with no failed check, every result on 2 ranks where the suite runs them
#   train     `gauntlet train --deterministic` on 1 rank and across the two nodes (srun -N2
#             -n2; `salloc -N2 -n2 mpirun` with --zero 1): bitwise the same final parameters
#             (final_params_fnv1a64)
# Exit 77 (skipped) with the reason when the cluster cannot run here (not root, no
# namespaces, no Slurm, no MPI in this build); MODE nompi says the build has no MPI.
set -u
mode=$1
g=${2:-}
check=${3:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
cluster="$root/ci/slurm/cluster.sh"
. "$(dirname "$0")/lib.sh"

if [ "$mode" = nompi ]; then
    echo "skipped: this build has no MPI (the slurm tests run MPI jobs on the cluster)"
    exit 77
fi
why=$(bash "$cluster" check) || { echo "skipped: $why"; exit 77; }

case "$mode" in
    setup)
        bash "$cluster" stop >/dev/null 2>&1 # a cluster left by an interrupted run
        bash "$cluster" start || exit 1
        exit 0
        ;;
    cleanup)
        inst=${GT_SLURM_INSTANCE:-dev}
        pids=$(cat "${GT_SLURM_DIR:-/tmp/gauntlet-slurm-$inst}"/run/*.pid \
            "${GT_SLURM_DIR:-/tmp/gauntlet-slurm-$inst}"/munge/munged.pid 2>/dev/null | tr -dc '0-9\n')
        bash "$cluster" stop || fail "cluster.sh stop exited $?"
        for p in $pids; do
            kill -0 "$p" 2>/dev/null && fail "pid $p ($(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null)) still runs"
        done
        left=$(ip netns list | grep -E "^gts-$inst-" || true)
        [ -z "$left" ] || fail "namespaces left: $left"
        bash "$cluster" status >/dev/null
        [ $? -eq 3 ] || fail "status does not say that nothing runs"
        [ "$fails" -eq 0 ] || exit 1
        echo "cleanup: nothing of instance $inst is left"
        exit 0
        ;;
esac

bash "$cluster" status >/dev/null 2>&1 || {
    echo "FAIL: the cluster (instance ${GT_SLURM_INSTANCE:-dev}) is not up: slurm.cluster.setup failed or did not run"
    exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 2
on=(bash "$cluster" exec) # "${on[@]}" CMD...: CMD in the cluster's network, SLURM_CONF set
json() { # json FILE PYTHON-EXPRESSION-OF-r: prints the value
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}
digest() { grep -o '"final_params_fnv1a64": *"[0-9a-f]*"' "$1" 2>/dev/null | grep -o '[0-9a-f]\{16\}' | head -1; }

# sbatch_wait JOB-ID SECONDS: waits for the job to leave the queue (sbatch --wait polls
# every 2, 4 ... 32 s), prints "STATE EXITCODE" from scontrol
sbatch_wait() {
    local id=$1 i
    for ((i = 0; i < $2 * 4; i++)); do
        [ -z "$("${on[@]}" squeue -h -j "$id" -o %A 2>/dev/null)" ] && break
        sleep 0.25
    done
    "${on[@]}" scontrol -o show job "$id" | grep -o 'JobState=[A-Z_]*\|ExitCode=[0-9:]*' | cut -d= -f2 | tr '\n' ' '
}

case "$mode" in
nightly)
    nightly="$root/ci/jobs/nightly-scaling.sbatch"
    hist="$tmp/nightly"
    cpt=$(($(nproc) >= 2 ? 2 : 1))
    # one task per node with two CPUs (the script passes --cpus-per-task on to
    # srun); no GPUs here. A small set of suites: two nights in ~30 s on 2 cores.
    # --threshold 1000%, as in harness.jobs.cpu: on a shared 2-core machine one run's step
    # time can triple beside a neighbour (seen: mlp-small 14 -> 43 ms/step between two
    # honest nights); a worse night's exit 3 is harness.jobs.cpu's to test
    night() { # night N: submits, waits, checks the job's end; sets jid
        local st
        jid=$("${on[@]}" env GAUNTLET="$g" HISTORY="$hist" SUITES="collectives/allreduce scaling/mlp-small" \
            RUN_ARGS="--quick" COMPARE_ARGS="--threshold 1000%" sbatch --parsable --nodes=2 --ntasks-per-node=1 --cpus-per-task=$cpt \
            --gpus-per-node=0 --time=5 --output="$tmp/night$1-%j.out" "$nightly") ||
            { fail "sbatch of night $1 exited $?"; return 1; }
        jid=${jid%%;*}
        st=$(sbatch_wait "$jid" 240)
        echo "--- night $1: job $jid: $st"
        cat "$tmp/night$1-$jid.out"
        [ "$st" = "COMPLETED 0:0 " ] || { fail "night $1 (job $jid) ended '$st', not COMPLETED 0:0"; return 1; }
    }
    night 1 && id1=$jid && {
        out="$tmp/night1-$id1.out"
        grep -q "reference: none" "$out" || fail "night 1 found a reference"
        grep -q "on topologies 1,2," "$out" || fail "night 1 did not plan topologies 1,2 for 2 tasks"
        grep -q "the first night: .*-$id1.json is the reference" "$out" || fail "night 1 is not the reference"
        [ "$(cat "$hist/LAST_GOOD" 2>/dev/null)" = "$(cd "$hist" && ls -- *-"$id1".json)" ] ||
            fail "LAST_GOOD does not name night 1's report"
        r1=$(ls "$hist"/*-"$id1".json)
        "$check" "$r1" --no-errors --no-failed-checks >/dev/null || fail "night 1's report is not valid with every check passed"
        [ "$(json "$r1" "sorted(set(x['topology'] for x in r['results']))")" = "['1', '2']" ] ||
            fail "night 1's results are not on topologies 1 and 2"
        case "$(json "$r1" "r['env']['host']")" in node1 | node2) ok "night 1 ran on the cluster's $(json "$r1" "r['env']['host']")" ;;
            *) fail "night 1's report names host '$(json "$r1" "r['env']['host']")', not a cluster node" ;;
        esac
    }
    night 2 && id2=$jid && {
        out="$tmp/night2-$id2.out"
        grep -q "reference: .*-$id1.json" "$out" || fail "night 2 does not name night 1 as its reference"
        grep -q "NEW may ship" "$out" || fail "night 2's compare did not say NEW may ship"
        grep -q "no worse than .*-$id1.json: the reference now" "$out" || fail "night 2 did not become the reference"
        [ "$(cat "$hist/LAST_GOOD" 2>/dev/null)" = "$(cd "$hist" && ls -- *-"$id2".json)" ] ||
            fail "LAST_GOOD does not name night 2's report after a good night"
        for f in junit.xml compare.html; do
            [ -s "$(ls "$hist"/*-"$id2".$f 2>/dev/null)" ] || fail "night 2 left no .$f"
        done
        "$check" "$(ls "$hist"/*-"$id2".json)" --no-errors --no-failed-checks >/dev/null ||
            fail "night 2's report is not valid with every check passed"
    }
    ;;
srun)
    hosts=$("${on[@]}" srun -N2 -n2 -t 2 hostname | sort | tr '\n' ' ')
    [ "$hosts" = "node1 node2 " ] || fail "srun -N2 -n2 hostname gave '$hosts', not node1 node2"
    EXPECT_TIMEOUT=280 expect 0 "checks: all passed" "${on[@]}" srun -N2 -n2 -t 5 "$g" run collectives scaling \
        --quick --report "$tmp/r.json"
    "$check" "$tmp/r.json" --no-errors --no-failed-checks >/dev/null ||
        fail "the report is not valid with every check passed"
    # both suites ran on the job's 2 ranks (topology 2), as many collectives there as on 1
    for su in collectives scaling; do
        n=$(json "$tmp/r.json" "sum(1 for x in r['results'] if x['suite']=='$su' and x['topology']=='2' and x['status']=='pass')")
        [ "${n:-0}" -gt 0 ] || fail "no passed $su result on 2 ranks"
    done
    n=$(json "$tmp/r.json" "' '.join(str(sum(1 for x in r['results'] if x['suite']=='collectives' and x['topology']==t)) for t in '12')")
    [ "${n% *}" = "${n#* }" ] || fail "collectives results on topologies 1 and 2: $n (not as many)"
    ;;
train)
    common=(train --model gpt2-tiny --steps 6 --batch 8 --deterministic --print-every 0 --check-consistency 2)
    EXPECT_TIMEOUT=120 expect 0 "checks +all passed" "${on[@]}" srun -N1 -n1 -t 3 "$g" "${common[@]}" --report "$tmp/1.json"
    EXPECT_TIMEOUT=120 expect 0 "2 rank\(s\)" "${on[@]}" srun -N2 -n2 -t 3 "$g" "${common[@]}" --report "$tmp/2.json"
    # mpirun inside an allocation (it reads the nodes from Slurm and starts its daemons there)
    EXPECT_TIMEOUT=120 expect 0 "checks +all passed" "${on[@]}" salloc -N2 -n2 -t 3 mpirun --allow-run-as-root \
        "$g" "${common[@]}" --zero 1 --report "$tmp/2z.json"
    d1=$(digest "$tmp/1.json"); d2=$(digest "$tmp/2.json"); d2z=$(digest "$tmp/2z.json")
    if [ -n "$d1" ] && [ "$d1" = "$d2" ] && [ "$d1" = "$d2z" ]; then
        ok "2 ranks on two nodes (srun; salloc + mpirun with --zero 1) = 1 rank (final params $d1)"
    else
        fail "final params: 1 rank '$d1', 2 nodes '$d2', 2 nodes under mpirun --zero 1 '$d2z'"
    fi
    for f in 1 2 2z; do
        "$check" "$tmp/$f.json" --steps 6 --no-errors --no-failed-checks >/dev/null || fail "$f.json is not a valid report of 6 steps"
    done
    [ "$(json "$tmp/2.json" "[x['topology'] for x in r['results']]")" = "['2']" ] ||
        fail "the -N2 -n2 run's report does not hold one result on 2 ranks"
    ;;
*)
    echo "slurm.sh: unknown mode '$mode'" >&2
    exit 2
    ;;
esac

if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "slurm $mode: all passed"
