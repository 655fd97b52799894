#!/usr/bin/env bash
# usage: slurm.sh MODE GAUNTLET REPORT_CHECK [MPIEXEC]
# The slurm-labelled tests on the two-node cluster of ci/slurm/cluster.sh (instance
# GT_SLURM_INSTANCE, which CMake names after the build directory); docs/clusters.md.
#   setup     the fixture's start (leftovers of this instance stopped first)
#   cleanup   the fixture's stop, and a check that nothing of the instance is left
#   nightly   `sbatch ci/jobs/nightly-scaling.sbatch` twice: two nights, the second gated
#             against the first with gauntlet compare (its default rules): both exit 0,
#             the second names the first and becomes the reference
#   srun      `srun -N2 -n2 gauntlet run collectives scaling/... --quick` (three scaling
#             cases: plain, ZeRO-3 and the mlp; the whole scaling set took three times as
#             long and its other modes are the model tests'): exit 0, a valid report with no
#             failed check, both suites' results on the job's 2 ranks, and the job named (id,
#             node list, ranks per node, each rank's host)
#   train     `gauntlet train --deterministic` on 1 rank and across the two nodes (srun -N2
#             -n2; `salloc -N2 -n2 mpirun` with --zero 1; srun -N2 -n2 with --zero 3):
#             bitwise the same final parameters (final_params_fnv1a64); tp=2 inside each
#             node with pp=2 and with dp=2 across (srun -N2 -n4): each tensor group on one
#             node, the final parameters bitwise those of tp=2 on one node (srun -N1 -n2)
#   jobinfo   the job in the report (env.job): job id, node list, nodes, ranks per node, each
#             rank's host, the results' layout, for train under srun -N2 -n2, srun -N2 -n4
#             and mpirun inside salloc, and run under srun -N2 -n2; the same final
#             parameters on every layout
#   doctor    `gauntlet doctor --quick` on the two nodes names nothing; with one node's
#             probes slowed 4x (GT_FAULT_SLOW_HOST) it names that node, its rank, and only it
#   incomplete  a long train job ended by scancel, by its node's slurmd killed (NODE_FAIL),
#             and by a rank stopped (SIGSTOP: the watchdog names the collective): each
#             leaves a valid, incomplete report with at least the steps written before
#   mpich     (an MPICH build; MPIEXEC, its mpiexec.mpich, as a 4th argument) training
#             --deterministic under `srun --mpi=pmi2 -N2 -n2` and `salloc -N2 -n2
#             mpiexec.mpich` bitwise equal to one rank, the job and launcher named, the
#             collectives exact across the nodes, and `srun --mpi=pmix` (this cluster's
#             default, which MPICH 4.0.2 does not speak) refused with exit 2
# Exit 77 (skipped) with the reason when the cluster cannot run here (not root, no
# namespaces, no Slurm, no python3, no MPI in this build); MODE nompi says the build has no MPI.
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
command -v python3 >/dev/null || { echo "skipped: no python3 to read the reports (ci/deps.sh installs it)"; exit 77; }

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
            # a zombie (exited, not yet reaped by init) has stopped running
            kill -0 "$p" 2>/dev/null && ! grep -qs '^State:[[:space:]]*Z' "/proc/$p/status" &&
                fail "pid $p ($(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null)) still runs"
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
# sh -c "$idwrap" PREFIX CMD...: runs CMD; rank 0 writes the job and step id to PREFIX.id
idwrap='[ "$SLURM_PROCID" = 0 ] && echo "$SLURM_JOB_ID.$SLURM_STEP_ID" >"$0.id"; exec "$@"'
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
            RUN_ARGS="--quick --rounds 1" COMPARE_ARGS="--threshold 1000%" sbatch --parsable --nodes=2 --ntasks-per-node=1 --cpus-per-task=$cpt \
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
    EXPECT_TIMEOUT=280 expect 0 "checks: all passed" "${on[@]}" srun -N2 -n2 -t 5 sh -c "$idwrap" "$tmp/r" \
        "$g" run collectives scaling/gpt2-3m scaling/gpt2-3m/zero3 scaling/mlp-small --quick --rounds 1 \
        --report "$tmp/r.json"
    jid=$(cat "$tmp/r.id" 2>/dev/null)
    "$check" "$tmp/r.json" --no-errors --no-failed-checks >/dev/null ||
        fail "the report is not valid with every check passed"
    # both suites ran on the job's 2 ranks (topology 2), as many collectives there as on 1
    for su in collectives scaling; do
        n=$(json "$tmp/r.json" "sum(1 for x in r['results'] if x['suite']=='$su' and x['topology']=='2' and x['status']=='pass')")
        [ "${n:-0}" -gt 0 ] || fail "no passed $su result on 2 ranks"
    done
    # the collectives on 1 rank and on the job's 2 (1 on each node: no intra-node cases)
    n=$(json "$tmp/r.json" "' '.join(str(sum(1 for x in r['results'] if x['suite']=='collectives' and x['topology']==t)) for t in '12')")
    [ "${n% *}" = "${n#* }" ] || fail "collectives results on topologies 1 and 2: $n (not as many)"
    # the report names the job: its id, node list, ranks per node, each rank's host
    c="(lambda j: j['scheduler'] == 'slurm' and j['launcher'] == 'srun' and j['job_id'] == '$jid'"
    c="$c and j['node_list'] == 'node[1-2]' and j['ranks_per_node'] == 1 and j['layout'] == '2x1'"
    c="$c and [x['host'] for x in j['per_rank']] == ['node1', 'node2'])(r['env'].get('job') or {})"
    [ "$(json "$tmp/r.json" "$c")" = True ] && ok "the report names job $jid on node[1-2], 1 rank per node" ||
        fail "the report's env.job is $(json "$tmp/r.json" "r['env'].get('job')" | head -c 600), not job $jid on node[1-2], 1 rank per node"
    ;;
train)
    common=(train --model gpt2-tiny --steps 6 --batch 8 --deterministic --print-every 0 --check-consistency 2)
    EXPECT_TIMEOUT=120 expect 0 "checks +all passed" "${on[@]}" srun -N1 -n1 -t 3 "$g" "${common[@]}" --report "$tmp/1.json"
    EXPECT_TIMEOUT=120 expect 0 "2 rank\(s\)" "${on[@]}" srun -N2 -n2 -t 3 "$g" "${common[@]}" --report "$tmp/2.json"
    # mpirun inside an allocation (it reads the nodes from Slurm and starts its daemons there)
    EXPECT_TIMEOUT=120 expect 0 "checks +all passed" "${on[@]}" salloc -N2 -n2 -t 3 mpirun --allow-run-as-root \
        "$g" "${common[@]}" --zero 1 --report "$tmp/2z.json"
    # ZeRO-3 across the nodes: every unit's weights gathered from the other node
    EXPECT_TIMEOUT=120 expect 0 "ZeRO-3" "${on[@]}" srun -N2 -n2 -t 3 "$g" "${common[@]}" --zero 3 \
        --report "$tmp/2z3.json"
    d1=$(digest "$tmp/1.json"); d2=$(digest "$tmp/2.json"); d2z=$(digest "$tmp/2z.json")
    d2z3=$(digest "$tmp/2z3.json")
    if [ -n "$d1" ] && [ "$d1" = "$d2" ] && [ "$d1" = "$d2z" ] && [ "$d1" = "$d2z3" ]; then
        ok "2 ranks on two nodes (srun; salloc + mpirun with --zero 1; srun with --zero 3) = 1 rank (final params $d1)"
    else
        fail "final params: 1 rank '$d1', 2 nodes '$d2', 2 nodes under mpirun --zero 1 '$d2z', 2 nodes --zero 3 '$d2z3'"
    fi
    for f in 1 2 2z 2z3; do
        "$check" "$tmp/$f.json" --steps 6 --no-errors --no-failed-checks >/dev/null || fail "$f.json is not a valid report of 6 steps"
    done
    [ "$(json "$tmp/2.json" "[x['topology'] for x in r['results']]")" = "['2']" ] ||
        fail "the -N2 -n2 run's report does not hold one result on 2 ranks"
    # tensor groups inside each node, pipeline stages or replicas across the two
    # (srun -N2 -n4: 2 ranks a node), against the tp=2 layout on one node: with
    # --deterministic the pipeline and the data-parallel tree keep one tensor group's
    # order (models/tests/gpt2_tp.sh), so all three end with the same bits
    lay=(train --model gpt2-tiny --steps 3 --batch 8 --deterministic --print-every 0 --threads 1)
    EXPECT_TIMEOUT=120 expect 0 "checks +all passed" "${on[@]}" srun -N1 -n2 -t 3 "$g" "${lay[@]}" \
        --layout tp=2 --micro-batches 4 --report "$tmp/tp2.json"
    EXPECT_TIMEOUT=120 expect 0 "checks +all passed" "${on[@]}" srun -N2 -n4 -t 3 "$g" "${lay[@]}" \
        --layout tp=2,pp=2 --micro-batches 4 --report "$tmp/tp2pp2.json"
    EXPECT_TIMEOUT=120 expect 0 "checks +all passed" "${on[@]}" srun -N2 -n4 -t 3 "$g" "${lay[@]}" \
        --layout dp=2,tp=2 --micro-batches 2 --report "$tmp/dp2tp2.json"
    dt=$(digest "$tmp/tp2.json")
    for f in tp2pp2 dp2tp2; do
        df=$(digest "$tmp/$f.json")
        if [ -n "$dt" ] && [ "$dt" = "$df" ]; then
            ok "$f on two nodes (srun -N2 -n4) = tp=2 on one node (final params $dt)"
        else
            fail "final params: tp=2 on one node '$dt', $f on two nodes '$df'"
        fi
        # every tensor group (same replica and stage) on one host, the groups on both
        pr="r['env']['job']['per_rank']"
        place="sorted({(x['dp'], x['pp']): x['host'] for x in $pr}.items())"
        if [ "$(json "$tmp/$f.json" "len(set((x['dp'], x['pp'], x['host']) for x in $pr)) == 2 and sorted(set(x['host'] for x in $pr)) == ['node1', 'node2']" 2>&1)" = True ]; then
            ok "$f: each tensor group inside a node ((dp, pp): host $(json "$tmp/$f.json" "$place"))"
        else
            fail "$f: a tensor group across the nodes: $(json "$tmp/$f.json" "$pr" 2>&1 | head -c 600)"
        fi
        "$check" "$tmp/$f.json" --steps 3 --no-errors --no-failed-checks >/dev/null || fail "$f.json is not a valid report of 3 steps"
    done
    ;;
jobinfo)
    # the job in the report (env.job): srun -N2 -n2, srun -N2 -n4, mpirun inside salloc
    common=(train --model gpt2-tiny --steps 4 --batch 8 --deterministic --print-every 0)
    jobcheck() { # REPORT WHAT PYTHON-CONDITION...: each condition on j (env.job) and r holds
        local f=$1 what=$2 c
        shift 2
        for c in "$@"; do
            if [ "$(json "$f" "(lambda j: $c)(r['env'].get('job') or {})" 2>&1)" = True ]; then
                ok "$what: $c"
            else
                fail "$what: not $c; env.job is $(json "$f" "r['env'].get('job')" 2>&1 | head -c 600)"
            fi
        done
    }
    EXPECT_TIMEOUT=120 expect 0 "checks +all passed" "${on[@]}" srun -N2 -n2 -t 3 \
        sh -c "$idwrap" "$tmp/2" "$g" "${common[@]}" --report "$tmp/2.json"
    id=$(cat "$tmp/2.id" 2>/dev/null)
    jobcheck "$tmp/2.json" "srun -N2 -n2" "j['scheduler'] == 'slurm' and j['launcher'] == 'srun'" \
        "j['job_id'] == '$id' and '$id' != ''" "j['node_list'] == 'node[1-2]'" \
        "j['n_nodes'] == 2 and j['ranks'] == 2 and j['ranks_per_node'] == 1 and j['layout'] == '2x1'" \
        "[x['host'] for x in j['per_rank']] == ['node1', 'node2']" \
        "[x.get('layout') for x in r['results']] == ['2x1']"
    EXPECT_TIMEOUT=120 expect 0 "checks +all passed" "${on[@]}" srun -N2 -n4 -t 3 \
        sh -c "$idwrap" "$tmp/4" "$g" "${common[@]}" --report "$tmp/4.json"
    id=$(cat "$tmp/4.id" 2>/dev/null)
    jobcheck "$tmp/4.json" "srun -N2 -n4" "j['job_id'] == '$id' and '$id' != ''" \
        "j['n_nodes'] == 2 and j['ranks'] == 4 and j['ranks_per_node'] == 2 and j['layout'] == '2x2'" \
        "j['tasks_per_node'] == '2(x2)'" \
        "[(x['host'], x['local_index']) for x in j['per_rank']] == [('node1', 0), ('node1', 1), ('node2', 0), ('node2', 1)]" \
        "[x.get('layout') for x in r['results']] == ['2x2']"
    # gauntlet run's report of an srun job: the job, and each topology's layout
    EXPECT_TIMEOUT=120 expect 0 "checks: all passed" "${on[@]}" srun -N2 -n2 -t 3 \
        sh -c "$idwrap" "$tmp/h" "$g" run health/mpi_latency --quick --report "$tmp/h.json"
    id=$(cat "$tmp/h.id" 2>/dev/null)
    jobcheck "$tmp/h.json" "srun -N2 -n2 gauntlet run" "j['job_id'] == '$id' and '$id' != ''" \
        "j['node_list'] == 'node[1-2]' and j['ranks_per_node'] == 1 and j['layout'] == '2x1'" \
        "sorted((x['topology'], x.get('layout')) for x in r['results']) == [('1', '1x1'), ('2', '2x1')]"
    # Open MPI's mpirun inside an allocation: Slurm's job, mpirun's ranks
    EXPECT_TIMEOUT=120 expect 0 "checks +all passed" "${on[@]}" salloc -N2 -n2 -t 3 \
        mpirun --allow-run-as-root "$g" "${common[@]}" --report "$tmp/m.json"
    jobcheck "$tmp/m.json" "salloc + mpirun" "j['scheduler'] == 'slurm' and j['launcher'].startswith('mpirun')" \
        "j['job_id'] not in (None, '')" "j['node_list'] == 'node[1-2]'" \
        "j['n_nodes'] == 2 and j['ranks_per_node'] == 1 and j['layout'] == '2x1'"
    # the same weights whatever the layout
    d2=$(digest "$tmp/2.json"); d4=$(digest "$tmp/4.json"); dm=$(digest "$tmp/m.json")
    if [ -n "$d2" ] && [ "$d2" = "$d4" ] && [ "$d2" = "$dm" ]; then ok "2x1, 2x2 and mpirun's 2x1: final params $d2"
    else fail "final params: 2x1 '$d2', 2x2 '$d4', mpirun '$dm'"; fi
    ;;
doctor)
    # gauntlet doctor across the nodes: nothing named on the healthy cluster; node2 (and
    # only it) named when its probes and links are slowed 4x (GT_FAULT_SLOW_HOST), and
    # node1 when it is (the verdict follows the fault, not a position)
    doc=(srun -N2 -n2 -t 3 "$g" doctor --quick)
    EXPECT_TIMEOUT=120 expect 0 "no outlier" "${on[@]}" "${doc[@]}" --report "$tmp/d0.json"
    [ "$(json "$tmp/d0.json" "len(r['doctor']['outliers'])")" = 0 ] || fail "the healthy cluster's report names outliers"
    "$check" "$tmp/d0.json" >/dev/null || fail "d0.json is not a valid report"
    for bad in node2 node1; do
        EXPECT_TIMEOUT=120 expect 1 "OUTLIER host $bad" "${on[@]}" env GT_FAULT_SLOW_HOST=$bad:4 \
            "${doc[@]}" --report "$tmp/d-$bad.json"
        hosts=$(json "$tmp/d-$bad.json" "sorted(set(o['host'] for o in r['doctor']['outliers']))")
        [ "$hosts" = "['$bad']" ] || fail "$bad slowed: the outliers' hosts are $hosts, not ['$bad']"
        ranks=$(json "$tmp/d-$bad.json" "sorted(set(o.get('rank') for o in r['doctor']['outliers']))")
        [ "$ranks" = "[$((${bad#node} - 1))]" ] || fail "$bad slowed: the outliers' ranks are $ranks"
        [ "$(json "$tmp/d-$bad.json" "r['doctor']['verdict']")" = outliers ] || fail "$bad slowed: the verdict is not outliers"
        "$check" "$tmp/d-$bad.json" >/dev/null || fail "d-$bad.json is not a valid report"
    done
    ;;
incomplete)
    # jobs that die: scancel of a running train job, a node's slurmd killed mid-job, a rank
    # stopped (SIGSTOP): each leaves a valid, incomplete report with the series so far
    long=(train --model gpt2-tiny --steps 100000 --print-every 0 --report-every-steps 5)
    start_job() { # NAME ARGS...: srun -N2 -n2 of a long train job in the background; sets jpid
        local name=$1
        shift
        "${on[@]}" srun -N2 -n2 -t 3 -J "$name" "$g" "${long[@]}" "$@" --report "$tmp/$name.json" \
            >"$tmp/$name.out" 2>&1 &
        jpid=$!
    }
    wait_steps() { # NAME N: until the report's rewrite holds >= N steps (0), or the job ended
        local i
        for ((i = 0; i < 600; i++)); do
            "$check" "$tmp/$1.json" --incomplete --min-steps "$2" >/dev/null 2>&1 && return 0
            kill -0 "$jpid" 2>/dev/null || break
            sleep 0.2
        done
        fail "$1: the report never held $2 steps while the job ran"; cat "$tmp/$1.out"
        return 1
    }
    end_job() { # NAME SECONDS: waits for srun to end; sets jrc
        local i
        for ((i = 0; i < $2 * 5; i++)); do kill -0 "$jpid" 2>/dev/null || break; sleep 0.2; done
        if kill -0 "$jpid" 2>/dev/null; then
            fail "$1: srun still runs $2 s later"; kill "$jpid"
        fi
        wait "$jpid"
        jrc=$?
        echo "--- $1: srun exited $jrc"
        cat "$tmp/$1.out"
    }
    steps_now() { json "$tmp/$1.json" "len(r['results'][0]['series']['loss'])" 2>/dev/null || echo 10; }
    report_left() { # NAME STEPS REASON-PATTERN
        local c=$tmp/$1.check
        if "$check" "$tmp/$1.json" --incomplete --min-steps "$2" >"$c" 2>&1; then
            ok "$1: a valid, incomplete report with the $2 steps of series written before the kill, or more"
        else
            fail "$1: report_check --incomplete --min-steps $2"; cat "$c"
        fi
        local why
        why=$(json "$tmp/$1.json" "r['summary']['incomplete']['reason']" 2>&1)
        grep -qE "$3" <<<"$why" && ok "$1: reason '$why'" || fail "$1: the reason '$why' lacks /$3/"
    }
    jobid() { "${on[@]}" squeue -h -n "$1" -o %A; }

    start_job scancel
    if wait_steps scancel 10; then
        id=$(jobid scancel)
        n=$(steps_now scancel)
        "${on[@]}" scancel "$id" || fail "scancel $id exited $?"
        end_job scancel 30
        [ "$jrc" -ne 0 ] || fail "scancel: srun exited 0"
        report_left scancel "$n" "SIGTERM"
    fi

    # slurmd of node2 killed: the controller finds the node dead after SlurmdTimeout (10 s),
    # ends the job (NODE_FAIL) and with it rank 0 on node1
    start_job nodefail --comm-timeout 10
    if wait_steps nodefail 10; then
        id=$(jobid nodefail)
        n=$(steps_now nodefail)
        bash "$cluster" node-kill node2 || fail "node-kill node2 exited $?"
        end_job nodefail 90
        [ "$jrc" -ne 0 ] || fail "nodefail: srun exited 0"
        report_left nodefail "$n" "SIGTERM|signal|broke"
        st=$("${on[@]}" scontrol -o show job "$id" | grep -o 'JobState=[A-Z_]*')
        [ "$st" = JobState=NODE_FAIL ] && ok "nodefail: job $id $st" || fail "nodefail: job $id $st, not NODE_FAIL"
        bash "$cluster" node-start node2 || fail "node2's slurmd did not come back"
    fi

    # rank 1 (on node2) stopped: rank 0's deadline names the collective
    start_job stopped --comm-timeout 3
    if wait_steps stopped 10; then
        n=$(steps_now stopped)
        exe=$(readlink -f "$g")
        stopped=
        for p in $(ip netns pids "gts-${GT_SLURM_INSTANCE:-dev}-node2"); do
            [ "$(readlink -f /proc/"$p"/exe 2>/dev/null)" = "$exe" ] && { kill -STOP "$p"; stopped=$p; }
        done
        [ -n "$stopped" ] || fail "stopped: no gauntlet process on node2 to stop"
        end_job stopped 60
        [ "$jrc" -ne 0 ] || fail "stopped: srun exited 0"
        grep -qE "(allreduce|reduce_scatter|allgather|broadcast|barrier) #[0-9]+ .*did not complete within 3 s" "$tmp/stopped.out" &&
            ok "stopped: the watchdog named the collective" || fail "stopped: no message naming the collective that timed out"
        report_left stopped "$n" "did not complete within 3 s"
        [ -n "$stopped" ] && kill -CONT "$stopped" 2>/dev/null
    fi
    ;;
mpich)
    # an MPICH build (GT_MPI=mpich): Debian's MPICH 4.0.2 speaks PMI-1/2, not PMIx
    mpiexec=${4:-mpiexec.mpich}
    grep -q MPICH <<<"$("$g" env --no-probes 2>&1 | grep -m1 '^mpi ')" ||
        { echo "skipped: $g is not built against MPICH (configure -DGT_MPI=mpich)"; exit 77; }
    common=(train --model gpt2-tiny --steps 6 --batch 8 --deterministic --print-every 0 --check-consistency 2)
    EXPECT_TIMEOUT=120 expect 0 "checks +all passed" "${on[@]}" srun --mpi=pmi2 -N1 -n1 -t 3 \
        "$g" "${common[@]}" --report "$tmp/1.json"
    # srun starting the ranks itself, through its PMI-2 plugin
    EXPECT_TIMEOUT=120 expect 0 "2 rank\(s\)" "${on[@]}" srun --mpi=pmi2 -N2 -n2 -t 3 \
        sh -c "$idwrap" "$tmp/2" "$g" "${common[@]}" --report "$tmp/2.json"
    id=$(cat "$tmp/2.id" 2>/dev/null)
    # Hydra inside an allocation: it starts one proxy per node with srun, the proxies the ranks
    EXPECT_TIMEOUT=120 expect 0 "checks +all passed" "${on[@]}" salloc -N2 -n2 -t 3 \
        "$mpiexec" -n 2 "$g" "${common[@]}" --zero 1 --report "$tmp/h.json"
    d1=$(digest "$tmp/1.json"); d2=$(digest "$tmp/2.json"); dh=$(digest "$tmp/h.json")
    if [ -n "$d1" ] && [ "$d1" = "$d2" ] && [ "$d1" = "$dh" ]; then
        ok "MPICH on two nodes (srun --mpi=pmi2; salloc + $(basename "$mpiexec") with --zero 1) = 1 rank (final params $d1)"
    else
        fail "final params: 1 rank '$d1', srun --mpi=pmi2 '$d2', salloc + mpiexec '$dh'"
    fi
    for f in 1 2 h; do
        "$check" "$tmp/$f.json" --steps 6 --no-errors --no-failed-checks >/dev/null || fail "$f.json is not a valid report of 6 steps"
    done
    c="(lambda j, m: 'MPICH' in m and j['scheduler'] == 'slurm' and j['launcher'] == 'srun' and j['job_id'] == '$id'"
    c="$c and j['n_nodes'] == 2 and j['layout'] == '2x1' and [x['host'] for x in j['per_rank']] == ['node1', 'node2'])"
    [ "$(json "$tmp/2.json" "$c(r['env']['job'], r['env']['software']['mpi'])")" = True ] &&
        ok "srun --mpi=pmi2: MPICH, job $id, launcher srun, 2x1 on node1, node2" ||
        fail "srun --mpi=pmi2: env.job is $(json "$tmp/2.json" "r['env']['job']" | head -c 600)"
    c="(lambda j: j['scheduler'] == 'slurm' and j['launcher'] == 'mpirun-mpich' and j['job_id'] not in (None, '')"
    c="$c and j['n_nodes'] == 2 and j['ranks_per_node'] == 1 and j['layout'] == '2x1')"
    [ "$(json "$tmp/h.json" "$c(r['env']['job'])")" = True ] &&
        ok "salloc + mpiexec.mpich: Slurm's job, Hydra's ranks (launcher mpirun-mpich), 2x1" ||
        fail "salloc + mpiexec: env.job is $(json "$tmp/h.json" "r['env']['job']" | head -c 600)"
    # the collectives across the nodes, exact
    EXPECT_TIMEOUT=200 expect 0 "checks: all passed" "${on[@]}" srun --mpi=pmi2 -N2 -n2 -t 4 \
        "$g" run collectives/allreduce collectives/allgather --quick --rounds 1 --topologies 2 --report "$tmp/c.json"
    "$check" "$tmp/c.json" --no-errors --no-failed-checks >/dev/null ||
        fail "collectives under srun --mpi=pmi2: the report is not valid with every check passed"
    # srun's default plugin here (MpiDefault=pmix) is not one this MPICH speaks: each task
    # would be a world of its own and run the whole job alone; gauntlet refuses
    EXPECT_TIMEOUT=120 expect 2 "MPICH needs srun --mpi=pmi2" "${on[@]}" srun --mpi=pmix -N2 -n2 -t 3 \
        "$g" "${common[@]}"
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
