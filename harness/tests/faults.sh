#!/usr/bin/env bash
# Faults and bad input (issue "Reliability"; the table in docs/reliability.md).
# usage: faults.sh input GAUNTLET REPORT_CHECK
#        faults.sh kill  GAUNTLET REPORT_CHECK [MPIEXEC]
# input: destinations that cannot be written (missing, read-only, not a
#   directory, a directory, full: RLIMIT_FSIZE) exit 2, say so, and leave the
#   previous file byte-identical with no temporary file behind; bad input to
#   every command exits 2 with a message naming the problem, never a crash.
# kill: a rank SIGKILLed in the middle of training ends the job within the
#   watchdog deadline and leaves a report that is valid JSON; with Open MPI's
#   recovery mode or Hydra's -disable-auto-cleanup (the survivor is not killed
#   by the launcher) rank 0's watchdog names the collective and records it as
#   an error result. Open MPI or MPICH's Hydra (lib.sh's mpi_launcher). 77
#   without MPIEXEC.
# Cases already covered elsewhere are listed in docs/reliability.md, not repeated.
set -u
mode=$1
g=$2
check=$3
mpiexec=${4:-}
tmp=$(mktemp -d)
export OMP_WAIT_POLICY=passive
# expect CODE PATTERN command...: exit code and the words the user must see;
# a crash (signal: code > 128) fails whatever CODE is; a hang fails after 120 s
. "$(dirname "$0")/lib.sh"
EXPECT_TIMEOUT=120

# unchanged SAVED FILE WHAT: FILE is byte-identical to SAVED, no temporary left
unchanged() {
    if cmp -s "$1" "$2"; then ok "$3: the previous file is intact"
    else fail "$3: the previous file changed"; fi
    if ls "$2".tmp.* >/dev/null 2>&1; then fail "$3: temporary file left: $(ls "$2".tmp.*)"; fi
}

# full LIMIT_KIB CODE PATTERN command...: runs it with RLIMIT_FSIZE (a full
# disk: writes beyond it fail with EFBIG; SIGXFSZ ignored so the write returns
# the error instead of killing the process). Output goes to a pipe, which the
# limit does not affect.
full() {
    local lim=$1 want=$2 pattern=$3
    shift 3
    expect "$want" "$pattern" bash -c 'trap "" XFSZ; ulimit -f "$0"; exec "$@"' "$lim" "$@"
}

fast="--peak-gflops 100 --quiet"

# le32 N...: little-endian int32s as printf escapes
le32() {
    local v
    for v in "$@"; do
        printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((v & 255)) $(((v >> 8) & 255)) \
            $(((v >> 16) & 255)) $(((v >> 24) & 255))
    done
}

input_cases() {
    # ---- destinations ---------------------------------------------------------
    expect 0 "final loss" "$g" train --steps 2 $fast --report "$tmp/r.json"
    cp "$tmp/r.json" "$tmp/r.saved"
    expect 0 "NEW may ship" "$g" compare "$tmp/r.json" "$tmp/r.json" --junit "$tmp/j.xml"
    cp "$tmp/j.xml" "$tmp/j.saved"
    expect 0 "h.html" "$g" report "$tmp/r.json" --html "$tmp/h.html"
    cp "$tmp/h.html" "$tmp/h.saved"
    expect 0 "entropy rate" "$g" data synth --out "$tmp/s.tok" --tokens 5000
    cp "$tmp/s.tok" "$tmp/s.saved"

    # full disk: every writer reports the failed write, exit 2, old file intact
    full 1 2 "cannot write report '.*r.json': File too large; the previous file is intact" \
        "$g" train --steps 2 $fast --report "$tmp/r.json"
    unchanged "$tmp/r.saved" "$tmp/r.json" "train --report on a full disk"
    full 1 2 "cannot write report '.*r.json': File too large" \
        "$g" run health/fma_peak --quiet --report "$tmp/r.json"
    unchanged "$tmp/r.saved" "$tmp/r.json" "run --report on a full disk"
    # (0 blocks: a JUnit file of one testcase per result fits in one)
    full 0 2 "cannot write JUnit file '.*j.xml': File too large; the previous file is intact" \
        "$g" compare "$tmp/r.saved" "$tmp/r.saved" --junit "$tmp/j.xml"
    unchanged "$tmp/j.saved" "$tmp/j.xml" "compare --junit on a full disk"
    full 1 2 "cannot write '.*h.html': File too large; the previous file is intact" \
        "$g" report "$tmp/r.saved" --html "$tmp/h.html"
    unchanged "$tmp/h.saved" "$tmp/h.html" "report --html on a full disk"
    full 1 2 "s.tok.*File too large" "$g" data synth --out "$tmp/s.tok" --tokens 5000 --seed 9
    unchanged "$tmp/s.saved" "$tmp/s.tok" "data synth --out on a full disk"

    # a read-only directory (root ignores permissions: then /sys, where
    # nobody may create files), a parent that is a file, a destination that
    # is a directory
    local ro=$tmp/ro
    mkdir "$ro"
    chmod 555 "$ro"
    if touch "$ro/probe" 2>/dev/null; then
        rm -f "$ro/probe"
        ro=/sys
        touch /sys/gauntlet-probe 2>/dev/null && { rm -f /sys/gauntlet-probe; ro=; }
    fi
    if [ -n "$ro" ]; then
        expect 2 "cannot write report '$ro/r.json': (Permission denied|Read-only)" \
            "$g" train --steps 2 $fast --report "$ro/r.json"
        expect 2 "cannot write report '$ro/r.json'" "$g" run health/fma_peak --quiet --report "$ro/r.json"
        expect 2 "cannot write JUnit file '$ro/j.xml'" \
            "$g" compare "$tmp/r.saved" "$tmp/r.saved" --junit "$ro/j.xml"
        expect 2 "cannot write '$ro/h.html'" "$g" report "$tmp/r.saved" --html "$ro/h.html"
        expect 2 "cannot write token file '$ro/s.tok" "$g" data synth --out "$ro/s.tok"
    else
        echo "note: no read-only directory to test with"
    fi
    chmod 755 "$tmp/ro"
    expect 2 "cannot write report '.*r.saved/x.json': Not a directory" \
        "$g" train --steps 2 $fast --report "$tmp/r.saved/x.json"
    expect 2 "cannot write JUnit file .*Not a directory" \
        "$g" compare "$tmp/r.saved" "$tmp/r.saved" --junit "$tmp/r.saved/j.xml"
    expect 2 "No such file or directory" "$g" data synth --out "$tmp/missing/s.tok"
    mkdir "$tmp/adir"
    expect 2 "adir'?: Is a directory" "$g" train --steps 2 $fast --report "$tmp/adir"
    expect 2 "adir'?: Is a directory" "$g" run health/fma_peak --quiet --report "$tmp/adir"
    [ -d "$tmp/adir" ] && [ -z "$(ls -A "$tmp/adir")" ] && ok "the directory is untouched" ||
        fail "the directory given as --report changed"
    ls "$tmp"/adir.tmp.* >/dev/null 2>&1 && fail "temporary report left beside the directory"

    # ---- bad input: options, per command ---------------------------------------
    expect 2 "--zero 4 is out of range \[0, 3\]" "$g" train --zero 4
    expect 2 "--batch 0 is out of range" "$g" train --batch 0
    expect 2 "--data-order needs a value" "$g" train --data-order
    expect 2 "--comm-timeout -1 is out of range" "$g" train --comm-timeout -1
    expect 2 "unknown backend 'bogus'" "$g" train --steps 2 $fast --backend bogus
    expect 2 "unknown communicator backend 'bogus'" "$g" train --steps 2 $fast --comm bogus
    expect 2 "unknown option '--bogus'" "$g" run --bogus
    expect 2 "--threads 0 is out of range" "$g" run --threads 0
    expect 2 "--reps 33 is out of range \[1, 32\]" "$g" run --reps 33
    expect 2 "-b 0 is out of range" "$g" run -b 0
    expect 2 "-e expects a size such as 8, 64K" "$g" run -e abc
    expect 2 "-e 1024 is below -b 1048576" "$g" run -b 1M -e 1K
    expect 2 "--colls: unknown 'bogus'" "$g" run --colls bogus
    expect 2 "--topologies 0 is out of range" "$g" run --topologies 0
    expect 2 "--topologies is empty" "$g" run --topologies ,
    expect 2 "--backend 'bogus': use cpu, ref, cuda or all" "$g" run --backend bogus
    expect 2 "--inject-delay 'x': expected OP:MICROSECONDS" "$g" run --inject-delay x
    expect 2 "--inject-slowdown 'nope:1.2': expected NAME:FACTOR" "$g" run --inject-slowdown nope:1.2
    expect 2 "--inject-slowdown 'matmul_fwd:1': expected NAME:FACTOR" "$g" run --inject-slowdown matmul_fwd:1
    expect 2 "--root 5: there are only 1 ranks" "$g" run health --root 5
    expect 2 "--report needs a value" "$g" run --report
    expect 2 "no suite 'nosuch'" "$g" run nosuch/case
    expect 2 "suite kernels has no case 'nosuch'" "$g" run kernels/nosuch --quiet
    expect 2 "suite health has no case 'nosuch'" "$g" run health/nosuch --quiet
    # a misspelt case is refused before anything runs: the nearest name, no report
    expect 2 "no case 'matmul_fwd/fp32/N64': did you mean matmul_fwd/fp32/N64_C768_OC768?" \
        "$g" run kernels/matmul_fwd/fp32/N64 --quick --report "$tmp/wrong.json"
    [ ! -e "$tmp/wrong.json" ] && ok "a wrong selection writes no report" ||
        fail "a wrong selection wrote $tmp/wrong.json"
    expect 2 "runs at a higher effort only: add --full" \
        "$g" run kernels/matmul_fwd/fp32/N256_C768_OC768 --quick
    expect 2 "no case 'run_to_rn': did you mean run_to_run?" "$g" run train/run_to_rn
    expect 2 "--alpha 0.9 is out of range" "$g" compare "$tmp/r.saved" "$tmp/r.saved" --alpha 0.9
    expect 2 "--loss-rtol -1 is out of range" "$g" compare "$tmp/r.saved" "$tmp/r.saved" --loss-rtol -1
    expect 2 "--threshold -5 is out of range" "$g" compare "$tmp/r.saved" "$tmp/r.saved" --threshold -5%
    expect 2 "more than two reports" "$g" compare "$tmp/r.saved" "$tmp/r.saved" "$tmp/r.saved"
    expect 2 "--title needs a value" "$g" report "$tmp/r.saved" --html "$tmp/x.html" --title
    expect 2 "unknown option '--bogus'" "$g" env --bogus
    expect 2 "--threads 0 is out of range" "$g" env --threads 0
    expect 2 "unknown backend 'bogus'" "$g" env --backend bogus
    expect 2 "usage: gauntlet data" "$g" data
    expect 2 "unknown subcommand 'bogus'" "$g" data bogus
    expect 2 "unknown argument '--bogus'" "$g" data synth --bogus --out "$tmp/x.tok"
    expect 2 "--tokens 1 is out of range" "$g" data synth --tokens 1 --out "$tmp/x.tok"
    expect 2 "--vocab 1 is out of range" "$g" data synth --vocab 1 --out "$tmp/x.tok"
    expect 2 "--branch 0 is out of range" "$g" data synth --branch 0 --out "$tmp/x.tok"
    expect 2 "--seed expects a non-negative integer" "$g" data synth --seed -1 --out "$tmp/x.tok"
    expect 2 "--out FILE is required" "$g" data synth
    expect 2 "which file\?" "$g" data encode --out "$tmp/x.tok"
    expect 2 "encoding '.*nothere': cannot open: No such file" "$g" data encode "$tmp/nothere" --out "$tmp/x.tok"
    expect 2 "encoding '.*adir'.*Is a directory" "$g" data encode "$tmp/adir" --out "$tmp/x.tok"
    expect 2 "unexpected argument '--bogus'" "$g" list --bogus
    [ -e "$tmp/x.tok" ] && fail "a refused data command wrote its --out file"

    # ---- bad input: baselines and reports ----------------------------------------
    printf '{"schema_version": 1, "results": [' >"$tmp/bad.json"
    : >"$tmp/empty.json"
    sed 's/"schema_version": 1/"schema_version": 99/' "$tmp/r.saved" >"$tmp/newer.json"
    grep -q '"schema_version": 99' "$tmp/newer.json" || fail "could not make a newer report"
    cp "$tmp/r.saved" "$tmp/run.json"
    expect 2 "--baseline .* needs --report FILE" "$g" run health/fma_peak --baseline "$tmp/r.saved"
    expect 2 "--baseline: the BASE report '.*bad.json' is not JSON" \
        "$g" run health/fma_peak --quiet --baseline "$tmp/bad.json" --report "$tmp/run.json"
    expect 2 "--baseline: .*empty.json' is not JSON" \
        "$g" run health/fma_peak --quiet --baseline "$tmp/empty.json" --report "$tmp/run.json"
    expect 2 "--baseline: .*adir' holds no .json report" \
        "$g" run health/fma_peak --quiet --baseline "$tmp/adir" --report "$tmp/run.json"
    expect 2 "--baseline: .*newer.json' has schema_version 99, newer" \
        "$g" run health/fma_peak --quiet --baseline "$tmp/newer.json" --report "$tmp/run.json"
    expect 2 "--baseline: .*cannot read" \
        "$g" run health/fma_peak --quiet --baseline "$tmp/nothere.json" --report "$tmp/run.json"
    unchanged "$tmp/r.saved" "$tmp/run.json" "run with an unusable --baseline"
    expect 2 "BASE report '.*bad.json' is not JSON" "$g" compare "$tmp/bad.json" "$tmp/r.saved"
    expect 2 "empty.json' is not JSON" "$g" compare "$tmp/r.saved" "$tmp/empty.json"
    expect 2 "adir' holds no .json report" "$g" compare "$tmp/adir" "$tmp/r.saved"
    expect 2 "newer.json' has schema_version 99, newer" "$g" compare "$tmp/newer.json" "$tmp/r.saved"

    # ---- bad input: token files and llm.c model files ------------------------------
    expect 0 "wrote" "$g" data synth --out "$tmp/v300.tok" --tokens 5000 --vocab 300
    expect 2 "token [0-9]+ at position [0-9]+ is outside the model's vocabulary of 256" \
        "$g" train --steps 2 $fast --data "$tmp/v300.tok"
    # token 100 (offset 40 + 2*100) set to 400 in a vocabulary of 256
    cp "$tmp/s.saved" "$tmp/over.tok"
    printf '\x90\x01' | dd of="$tmp/over.tok" bs=1 seek=240 conv=notrunc status=none
    expect 2 "token 100 is 400, not below the declared vocabulary size 256" \
        "$g" train --steps 2 $fast --data "$tmp/over.tok"
    head -c 3000 "$tmp/s.saved" >"$tmp/cut.tok"
    expect 2 "truncated: the header declares 5000 tokens .* but the file has 3000 bytes" \
        "$g" train --steps 2 $fast --data "$tmp/cut.tok"
    expect 2 "empty.json'.*truncated: only 0 bytes" "$g" train --steps 2 $fast --data "$tmp/empty.json"
    expect 2 "adir'.*Is a directory" "$g" train --steps 2 $fast --data "$tmp/adir"
    # llm.c model files: a header for L2 H4 C64 V256 maxT64, no parameters
    local hdr
    hdr=$(le32 20240326 3 64 256 2 4 64 256)
    { printf "$hdr"; head -c $((1024 - 32 + 1000)) /dev/zero; } >"$tmp/cut.bin"
    { printf "$(le32 12345 3 64 256 2 4 64 256)"; head -c $((1024 - 32)) /dev/zero; } >"$tmp/magic.bin"
    head -c 10 /dev/zero >"$tmp/short.bin"
    expect 2 "cut.bin': truncated: 250 of [0-9]+ parameters" \
        "$g" train --steps 2 $fast --init-from "llmc:$tmp/cut.bin"
    expect 2 "magic.bin': bad magic 12345, an llm.c model file has 20240326" \
        "$g" train --steps 2 $fast --init-from "llmc:$tmp/magic.bin"
    expect 2 "short.bin': truncated llm.c header" \
        "$g" train --steps 2 $fast --init-from "llmc:$tmp/short.bin"
    expect 2 "empty.json': truncated llm.c header \(0 of 256" \
        "$g" train --steps 2 $fast --init-from "llmc:$tmp/empty.json"
    expect 2 "num_heads is 4 in the file but 2 in the model" \
        "$g" train --steps 2 $fast --model gpt2-tiny --init-from "llmc:$tmp/cut.bin"
}

# ---- a rank killed in the middle of training ----------------------------------------
# kill_case NAME RECOVERY [TRAIN_ARGS...]: starts 2 ranks of gpt2-3m,
# SIGKILLs world rank 1 after step 3 and times how long the job takes to end
# after that.
deadline=3
kill_case() {
    local name=$1 recovery=$2
    shift 2
    local out=$tmp/$name.out rep=$tmp/$name.json rcs=$tmp/$name.rcs
    local tag="gauntlet-faults-$$-$name"
    : >"$rcs"
    # each rank's own exit code: in recovery mode mpiexec's is not the ranks';
    # under Hydra the wrapper passes the rank's code on: Hydra judges the job by
    # it (a wrapper's 0 after its rank's SIGKILL ended the job with 0, silently),
    # where mpirun sees the rank's own end. Without recovery a rank killed by a
    # signal takes its wrapper with it by the same signal, so that Hydra prints
    # what it would without one (its BAD TERMINATION banner; for an exit code
    # of 137 it sometimes prints nothing). With recovery the wrapper exits
    # 137, which keeps Hydra, and with it the survivors' output, up until they
    # end (a rank killed outright makes mpiexec return at once and leaves the
    # survivors to finish unseen: docs/clusters.md). Hydra's notice that a process failed
    # (SIGUSR1, -disable-auto-cleanup) goes to the wrapper, its child: passed on
    # to the rank, as gauntlet would get it when launched directly
    local cmd=("$mpiexec" "${mpi_flags[@]}") rankvar
    rankvar=$(mpi_rank_var)
    [ "$recovery" = 1 ] && mpi_keep_going cmd
    # MPICH over UCX: a survivor that was reading the dead rank's memory through
    # UCX's cross-memory-attach transport (a large message on one node) is
    # aborted by UCX itself before anything can report (docs/clusters.md);
    # without CMA the survivor waits, and the notice or the watchdog ends it
    local ucx=()
    [ "$recovery" = 1 ] && [ "$mpi_family" = hydra ] && ucx=(UCX_TLS=^cma)
    (
        export GT_FAULTS_TAG=$tag GT_FAULTS_RCS=$rcs GT_FAULTS_RANKVAR=$rankvar
        export GT_FAULTS_PASS=$([ "$mpi_family" = hydra ] && echo 1)
        export GT_FAULTS_RERAISE=$([ "$mpi_family" = hydra ] && [ "$recovery" = 0 ] && echo 1)
        exec env "${ucx[@]}" timeout 180 "${cmd[@]}" -np 2 \
            bash -c 'trap "kill -USR1 \$c 2>/dev/null" USR1; "$@" & c=$!
                     while :; do wait $c; rc=$?; kill -0 $c 2>/dev/null || break; done
                     echo "${!GT_FAULTS_RANKVAR} $rc" >>"$GT_FAULTS_RCS"; [ -z "$GT_FAULTS_PASS" ] && exit 0
                     trap - USR1; [ -n "$GT_FAULTS_RERAISE" ] && [ $rc -gt 128 ] && kill -s $((rc - 128)) $$
                     exit $rc' rank \
            "$g" train --model gpt2-3m --steps 200 --print-every 1 --peak-gflops 100 \
            --comm-timeout $deadline --report "$rep" "$@"
    ) >"$out" 2>&1 &
    local job=$!
    local i victim="" exe
    for i in $(seq 1 600); do
        grep -qE 'step +3/' "$out" && break
        kill -0 $job 2>/dev/null || break
        sleep 0.1
    done
    exe=$(readlink -f "$g")
    for e in /proc/[0-9]*/environ; do
        local pid=${e#/proc/}
        pid=${pid%/environ}
        [ "$(readlink -f /proc/$pid/exe 2>/dev/null)" = "$exe" ] || continue
        local env
        env=$(tr '\0' '\n' 2>/dev/null <"$e") || continue
        grep -qx "GT_FAULTS_TAG=$tag" <<<"$env" && grep -qx "$rankvar=1" <<<"$env" &&
            victim=$pid
    done
    if [ -z "$victim" ]; then
        fail "$name: no rank 1 found to kill (did training start?)"; tail -5 "$out"
        kill $job 2>/dev/null; wait $job
        return
    fi
    local t0 t1 rc
    t0=$(date +%s%N)
    kill -KILL "$victim"
    wait $job
    rc=$?
    t1=$(date +%s%N)
    local ms=$(((t1 - t0) / 1000000))
    # the deadline runs from the start of the collective rank 0 waits in; it
    # may be one step (< 1 s here) and a loaded machine away
    local bound=$(((deadline + 12) * 1000))
    [ $rc -ne 124 ] && [ $ms -lt $bound ] && ok "$name: the job ended $ms ms after the kill" ||
        fail "$name: the job took $ms ms after the kill (bound $bound ms, rc $rc)"
    grep -qE 'step +(19[0-9]|200)/' "$out" && fail "$name: training ran to the end: the kill missed"
    if [ "$recovery" = 1 ]; then
        # rank 0 survived the death and must have ended itself, non-zero, with
        # the collective named, and recorded it
        local r0
        r0=$(awk '$1 == 0 {print $2}' "$rcs")
        # Hydra: rank 0's watchdog calls MPI_Abort, and Hydra kills every process it
        # started, the wrapper shell too, before it writes: the job's code is rank 0's
        [ -z "$r0" ] && [ "$mpi_family" = hydra ] && [ $rc -ne 124 ] && r0=$rc
        [ -n "$r0" ] && [ "$r0" -ne 0 ] && ok "$name: rank 0 exited $r0" ||
            fail "$name: rank 0 exit code '${r0}' (expected non-zero)"
        # by its deadline, or (Hydra) at once on the launcher's failure notice;
        # Hydra does not always pass on the last words of a rank that ends
        # right after its peer died: there the report's record must name it
        local said="(allreduce|reduce_scatter|allgather|broadcast|barrier|reduce) #[0-9]+ .*(did not complete within $deadline s|when the launcher said that another process of the job had failed)"
        { grep -qE "$said" "$out" || { [ "$mpi_family" = hydra ] && grep -qE "$said" "$rep"; }; } &&
            ok "$name: rank 0 names the collective" ||
            { fail "$name: no message naming the collective"; grep -i gauntlet "$out" | tail -3; }
        "$check" "$rep" --status error >"$tmp/$name.check" 2>&1 &&
            grep -qE '"message": "(watchdog: rank [0-9]+: )?(allreduce|reduce_scatter|allgather|broadcast|barrier|reduce) #' "$rep" &&
            ok "$name: the report is valid and records the stuck collective as an error" ||
            { fail "$name: report"; cat "$tmp/$name.check"; }
    else
        # mpiexec ends the job when a rank dies, before any deadline: a
        # non-zero exit, the dead rank named (Open MPI: "process rank 1 with
        # PID"; Hydra names no rank, only the process: "BAD TERMINATION OF
        # ONE OF YOUR APPLICATION PROCESSES / PID n RUNNING AT host / EXIT
        # CODE: c"), and the report on disk (written when training started)
        # still valid JSON
        [ $rc -ne 0 ] && ok "$name: exit $rc" || fail "$name: the job exited 0"
        grep -qE "process rank 1 with PID|did not complete within $deadline s|BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES" "$out" &&
            ok "$name: the dead rank or the stuck collective is named" ||
            { fail "$name: nothing names the failure"; tail -5 "$out"; }
        "$check" "$rep" >"$tmp/$name.check" 2>&1
        if [ $? -eq 0 ] || [ "$(grep -v '^report_check: no results$' "$tmp/$name.check")" = "" ]; then
            ok "$name: the report is valid JSON ($(head -1 "$tmp/$name.check"))"
        else
            fail "$name: report"; cat "$tmp/$name.check"
        fi
    fi
    # nothing of the job may survive it
    for e in /proc/[0-9]*/environ; do
        tr '\0' '\n' 2>/dev/null <"$e" | grep -qx "GT_FAULTS_TAG=$tag" || continue
        local pid=${e#/proc/}
        pid=${pid%/environ}
        fail "$name: process $pid of the job outlived it"
        kill -KILL "$pid" 2>/dev/null
    done
}

case $mode in
input) input_cases ;;
kill)
    if [ -z "$mpiexec" ]; then
        echo "skip: no MPIEXEC (built without MPI)"
        rm -rf "$tmp"
        exit 77
    fi
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    mpi_launcher "$mpiexec"
    kill_case default 0
    if [ "$mpi_family" != other ]; then
        # Open MPI's recovery mode, Hydra's -disable-auto-cleanup
        kill_case recovery 1
        # ZeRO-1: other collectives (reduce-scatter, all-gather) are the ones left waiting
        kill_case recovery_zero1 1 --zero 1
    else
        echo "note: neither Open MPI nor Hydra: the keep-going case (rank 0's watchdog) is not run"
    fi
    ;;
*)
    echo "usage: faults.sh input|kill GAUNTLET REPORT_CHECK [MPIEXEC]"
    exit 2
    ;;
esac
[ -n "${GT_FAULTS_KEEP:-}" ] || rm -rf "$tmp"
[ $fails -eq 0 ] && echo "faults: all cases passed" || { echo "faults: $fails case(s) failed"; exit 1; }
