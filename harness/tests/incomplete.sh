#!/usr/bin/env bash
# Honest reports when a job dies (issue 23; docs/reliability.md, "Incomplete
# reports"). A report says it is incomplete (summary.complete false,
# summary.ok false, summary.incomplete.reason) from its first write until the
# run ends; gauntlet train rewrites its result with the series so far
# (--report-every S / --report-every-steps N), so a killed job keeps them.
# usage: incomplete.sh cpu GAUNTLET REPORT_CHECK
#        incomplete.sh mpi GAUNTLET REPORT_CHECK [MPIEXEC]
# cpu: one process: a finished run is complete and ok; SIGTERM mid-train and
#   mid-`run` mark the report with the signal; kill -9 leaves the last rewrite
#   (rewritten by steps and by seconds); compare refuses an incomplete BASE
#   (exit 2, the file and the reason named) and fails an incomplete NEW (exit
#   3, and in the JUnit file); the HTML view takes it; bad flags exit 2.
# mpi: 2 ranks under mpirun: kill -9 of rank 1, kill -9 of rank 0, SIGTERM of
#   rank 0, of rank 1 and of mpirun, and SIGSTOP of rank 1 (the watchdog):
#   each leaves a valid, incomplete report holding at least the steps of the
#   last rewrite before the kill; a finished run is complete. 77 without
#   MPIEXEC.
set -u
mode=$1
g=$2
check=$3
mpiexec=${4:-}
tmp=$(mktemp -d)
export OMP_WAIT_POLICY=passive
. "$(dirname "$0")/lib.sh"
EXPECT_TIMEOUT=120

# 300 steps of gpt2-3m: 20-150 ms a step here, so a kill after the steps
# below always lands mid-way
long="--model gpt2-3m --steps 300 --peak-gflops 100 --print-every 1"
# the rewrite the kills below wait for: every 4 steps
every="--report-every-steps 4"

# valid FILE WHAT ARGS...: report_check FILE ARGS passes
valid() {
    local f=$1 what=$2
    shift 2
    if "$check" "$f" "$@" >"$tmp/check.out" 2>&1; then ok "$what: valid ($*)"
    else fail "$what: report_check $*"; cat "$tmp/check.out"; fi
}

# wait_rewrite FILE N JOBPID: until FILE holds a rewrite with >= N steps of
# series.loss (or the job ended); 0 when it does
wait_rewrite() {
    local f=$1 n=$2 job=$3 i
    for i in $(seq 1 1200); do
        [ -f "$f" ] && "$check" "$f" --min-steps "$n" --incomplete >/dev/null 2>&1 && return 0
        kill -0 "$job" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# pid_of TAG RANK: the gauntlet process of this job (GT_INC_TAG) and rank
pid_of() {
    local tag=$1 rank=$2 exe e
    exe=$(readlink -f "$g")
    for e in /proc/[0-9]*/environ; do
        local pid=${e#/proc/}
        pid=${pid%/environ}
        [ "$(readlink -f /proc/$pid/exe 2>/dev/null)" = "$exe" ] || continue
        local env
        env=$(tr '\0' '\n' 2>/dev/null <"$e") || continue
        grep -qx "GT_INC_TAG=$tag" <<<"$env" || continue
        [ -z "$rank" ] || grep -qx "$(mpi_rank_var)=$rank" <<<"$env" || continue
        echo "$pid"
        return 0
    done
    return 1
}

# no_survivor TAG NAME: nothing of the job outlived it
no_survivor() {
    local e
    for e in /proc/[0-9]*/environ; do
        tr '\0' '\n' 2>/dev/null <"$e" | grep -qx "GT_INC_TAG=$1" || continue
        local pid=${e#/proc/}
        pid=${pid%/environ}
        fail "$2: process $pid of the job outlived it"
        kill -KILL "$pid" 2>/dev/null
    done
}

cpu_cases() {
    # ---- a finished run: complete and ok, as before ------------------------------
    expect 0 "final loss" "$g" train --steps 3 --peak-gflops 100 --quiet --report "$tmp/done.json"
    valid "$tmp/done.json" "a finished train" --complete --steps 3 --status pass
    grep -q '"ok": true' "$tmp/done.json" && ok "finished: summary.ok true" ||
        fail "finished: summary.ok is not true"
    expect 0 "" "$g" run health/fma_peak --quick --quiet --report "$tmp/run_done.json"
    valid "$tmp/run_done.json" "a finished run" --complete

    # ---- SIGTERM mid-train: the signal is the reason, the rewrite's steps stay ---
    local tag=inc-$$-term
    (GT_INC_TAG=$tag exec "$g" train $long $every --report "$tmp/term.json" >"$tmp/term.out" 2>&1) &
    local job=$!
    if wait_rewrite "$tmp/term.json" 8 $job; then
        kill -TERM "$(pid_of $tag "")"
        wait $job
        local rc=$?
        [ $rc -eq 143 ] && ok "SIGTERM: the process ends by the signal (exit $rc)" ||
            fail "SIGTERM: exit $rc, expected 143 (killed by SIGTERM)"
        valid "$tmp/term.json" "SIGTERM mid-train" --incomplete --reason "terminated by signal 15 (SIGTERM)" \
            --min-steps 8 --status error
        grep -q '"partial": true' "$tmp/term.json" && ok "SIGTERM: the result is marked partial" ||
            fail "SIGTERM: no partial result"
        grep -q "terminated by signal 15 (SIGTERM): the report is marked incomplete" "$tmp/term.out" &&
            ok "SIGTERM: said on stderr" || fail "SIGTERM: nothing said"
    else
        fail "SIGTERM: no rewrite with 8 steps appeared"; tail -3 "$tmp/term.out"; kill -KILL $job
        wait $job
    fi
    ls "$tmp"/term.json.tmp.* >/dev/null 2>&1 && fail "SIGTERM: a temporary file was left"

    # ---- kill -9 mid-train: the last rewrite, by seconds this time ----------------
    tag=inc-$$-kill
    (GT_INC_TAG=$tag exec "$g" train $long --report-every 0.5 --report "$tmp/kill.json" \
        >"$tmp/kill.out" 2>&1) &
    job=$!
    if wait_rewrite "$tmp/kill.json" 3 $job; then
        kill -KILL "$(pid_of $tag "")"
        wait $job
        # a rewrite only adds steps: the file holds at least the 3 seen before the kill
        valid "$tmp/kill.json" "kill -9 mid-train (rewritten every 0.5 s)" --incomplete \
            --reason "not finished" --min-steps 3 --status error
    else
        fail "kill -9: no rewrite within the run (--report-every 0.5)"; tail -3 "$tmp/kill.out"
        kill -KILL $job; wait $job
    fi

    # ---- gauntlet run, several suites, SIGTERM after the first results ----------
    tag=inc-$$-run
    (GT_INC_TAG=$tag exec "$g" run health kernels --quick --report "$tmp/run.json" \
        >"$tmp/run.out" 2>&1) &
    job=$!
    local i
    for i in $(seq 1 1200); do
        grep -q '"pass": [1-9]' "$tmp/run.json" 2>/dev/null && break
        kill -0 $job 2>/dev/null || break
        sleep 0.1
    done
    if kill -TERM "$(pid_of $tag "")" 2>/dev/null; then
        wait $job
        valid "$tmp/run.json" "SIGTERM mid-run" --incomplete --reason "terminated by signal 15"
        grep -q '"ok": false' "$tmp/run.json" && ok "mid-run: summary.ok false with only passes" ||
            fail "mid-run: summary.ok not false"
    else
        fail "run: finished before it could be killed"; wait $job
    fi

    # ---- compare: an incomplete BASE is refused, an incomplete NEW fails ---------
    expect 2 "the BASE report '.*term.json' is incomplete \(summary.complete false: terminated by signal 15 \(SIGTERM\)\): a run that did not finish cannot be a baseline" \
        "$g" compare "$tmp/term.json" "$tmp/done.json"
    mkdir -p "$tmp/basedir"
    cp "$tmp/done.json" "$tmp/basedir/a.json"
    cp "$tmp/kill.json" "$tmp/basedir/b.json"
    expect 2 "the BASE report '.*basedir/b.json' is incomplete" \
        "$g" compare "$tmp/basedir" "$tmp/done.json"
    expect 3 "INCOMPLETE NEW report '.*term.json': terminated by signal 15" \
        "$g" compare "$tmp/done.json" "$tmp/term.json" --junit "$tmp/inc.xml"
    expect 3 "NEW incomplete \(1 report\).*NEW MUST NOT SHIP" \
        "$g" compare "$tmp/done.json" "$tmp/run.json"
    grep -q '<failure message="NEW report incomplete">' "$tmp/inc.xml" &&
        ok "junit: the incomplete NEW is a failure" || fail "junit: no failure for the incomplete NEW"
    expect 2 "--baseline: the BASE report '.*term.json' is incomplete" \
        "$g" run health/fma_peak --quick --report "$tmp/x.json" --baseline "$tmp/term.json"
    expect 0 "NEW may ship" "$g" compare "$tmp/done.json" "$tmp/done.json"

    # ---- the HTML view and the checker take incomplete reports ------------------
    expect 0 "h.html" "$g" report "$tmp/term.json" "$tmp/done.json" --html "$tmp/h.html"
    # the page embeds the summary its verdict column reads ("INCOMPLETE: reason")
    grep -qF '"complete":false,"incomplete":{"reason":"terminated by signal 15 (SIGTERM)"}' "$tmp/h.html" &&
        ok "html: the incomplete summary and its reason are in the page" ||
        fail "html: the page lacks the incomplete summary"
    # the checker refuses an incomplete report that claims ok
    sed 's/"ok": false/"ok": true/' "$tmp/term.json" >"$tmp/liar.json"
    if "$check" "$tmp/liar.json" >/dev/null 2>&1; then fail "checker: took incomplete + ok true"
    else ok "checker: refuses an incomplete report with summary.ok true"; fi

    # ---- bad flags ---------------------------------------------------------------
    expect 2 "--report-every" "$g" train --steps 2 --report-every -1
    expect 2 "--report-every-steps" "$g" train --steps 2 --report-every-steps x
}

# mpi_case NAME VICTIM SIGNAL REASON MIN: 2 ranks training with rewrites every
# 4 steps; once the report holds MIN steps, SIGNAL goes to VICTIM (a rank, or
# "mpirun"); the report must be valid, incomplete, with >= MIN steps and a
# reason matching REASON (an extended regular expression)
mpi_case() {
    local name=$1 victim=$2 sig=$3 reason=$4 min=$5
    shift 5
    local tag=inc-$$-$name rep=$tmp/$name.json out=$tmp/$name.out
    (
        export GT_INC_TAG=$tag
        exec timeout 180 "$mpiexec" "${mpi_flags[@]}" -np 2 \
            "$g" train $long $every --report "$rep" "$@"
    ) >"$out" 2>&1 &
    local job=$!
    if ! wait_rewrite "$rep" "$min" $job; then
        fail "$name: no rewrite with $min steps appeared"; tail -5 "$out"
        kill -TERM $job; wait $job; no_survivor $tag "$name"
        return
    fi
    local pid
    if [ "$victim" = mpirun ]; then pid=$(pgrep -P $job | head -1); [ -n "$pid" ] || pid=$job
    else pid=$(pid_of $tag "$victim"); fi
    if [ -z "$pid" ]; then
        fail "$name: no process to signal"; kill -TERM $job; wait $job; no_survivor $tag "$name"
        return
    fi
    kill -"$sig" "$pid"
    wait $job
    local rc=$?
    if [ "$victim" = mpirun ] && [ "$mpi_family" = hydra ] && [ $rc -eq 0 ]; then
        # Hydra (MPICH 4.0) passes a SIGTERM on to the ranks and itself exits 0:
        # the ranks' reports say why (docs/clusters.md)
        ok "$name: the job ended (exit 0: Hydra's own code after a signal to it)"
    else
        [ $rc -ne 0 ] && [ $rc -ne 124 ] && ok "$name: the job ended (exit $rc)" ||
            fail "$name: exit $rc"
    fi
    valid "$rep" "$name" --incomplete --min-steps "$min"
    local why
    why=$(grep -o '"reason": "[^"]*"' "$rep" | head -1 | sed 's/^"reason": "//; s/"$//')
    grep -qE -- "$reason" <<<"$why" && ok "$name: reason '$why'" ||
        fail "$name: reason '$why' does not match /$reason/"
    no_survivor $tag "$name"
}

mpi_cases() {
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    mpi_launcher "$mpiexec"
    # a finished run on 2 ranks: complete
    expect 0 "final loss" "$mpiexec" "${mpi_flags[@]}" -np 2 \
        "$g" train --steps 3 --peak-gflops 100 --quiet --report "$tmp/np2.json"
    valid "$tmp/np2.json" "a finished 2-rank train" --complete --steps 3 --status pass
    # rank 1 killed: mpirun sends rank 0 SIGTERM, then SIGKILL at once (Open
    # MPI 4.1; Hydra kills it too); the signal's write races the SIGKILL, so the
    # reason is the signal's or that of the last rewrite: either way the steps stay
    local either="terminated by signal 15 \(SIGTERM\)|^not finished"
    mpi_case kill9_rank1 1 KILL "$either" 8
    # rank 0 killed: nothing more is written; the file is the last rewrite
    mpi_case kill9_rank0 0 KILL "^not finished" 8
    # SIGTERM to rank 0 (scancel's first signal): rank 0 writes the reason
    mpi_case term_rank0 0 TERM "^terminated by signal 15 \(SIGTERM\)$" 8
    # SIGTERM to rank 1: it dies of it, mpirun ends rank 0 as above
    mpi_case term_rank1 1 TERM "$either" 8
    # SIGTERM to mpirun: it ends both ranks (SIGCONT, SIGTERM, SIGKILL)
    mpi_case term_mpirun mpirun TERM "$either" 8
    # SIGSTOP of rank 1: rank 0's deadline (10 s, which a loaded machine must
    # not reach before) names the collective, the report keeps the steps and
    # says why it ends
    mpi_case stop_rank1 1 STOP "did not complete within 10 s" 8 --comm-timeout 10
    # the rank is named before the operation (the watchdog thread of a blocking
    # collective: "watchdog: rank 0: allgather #12 ...") or after it (the polling
    # wait's error, reported by the trainer on rank 0)
    grep -E "(allreduce|reduce_scatter|allgather|broadcast|barrier|reduce) #[0-9]+ .*did not complete within 10 s" \
        "$tmp/stop_rank1.out" | grep -q "rank 0" && ok "stop_rank1: the collective and the rank are named" ||
        { fail "stop_rank1: no message naming the collective and the rank"; grep -i gauntlet "$tmp/stop_rank1.out" | tail -3; }
    valid "$tmp/stop_rank1.json" "stop_rank1" --status error --reason "did not complete within 10 s"
}

case $mode in
cpu) cpu_cases ;;
mpi)
    if [ -z "$mpiexec" ]; then
        echo "skip: no MPIEXEC (built without MPI)"
        rm -rf "$tmp"
        exit 77
    fi
    mpi_cases
    ;;
*)
    echo "usage: incomplete.sh cpu|mpi GAUNTLET REPORT_CHECK [MPIEXEC]"
    exit 2
    ;;
esac
[ -n "${GT_INC_KEEP:-}" ] || rm -rf "$tmp"
[ $fails -eq 0 ] && echo "incomplete: all cases passed" || { echo "incomplete: $fails case(s) failed"; exit 1; }
