#!/bin/sh
# engine.comm_watchdog.nccl_np1: runs watchdog.c with the emulator's NCCL
# stand-in told to hang every operation (GT_EMU_NCCL_HANG) and to take a
# while inside each ncclCommGetAsyncError (GT_EMU_NCCL_ASYNC_DELAY_US), and
# checks that the job ended the way a hung blocking collective must end it:
# the watchdog's message naming the operation, the handler called, exit
# status 3 (the watchdog's), and no crash: no stand-in message about a
# communicator freed under a call, no sanitizer report, no signal.
#   poll:  300 ms polls: the watchdog waits for the owner's call to end, then
#          aborts the communicator
#   stuck: a 30 s call: the watchdog gives up on the communicator after 1 s
#          (never frees it under the call) and ends the job all the same,
#          well before the call would end
# Usage: watchdog.sh PROGRAM [MPIEXEC]   (MPIEXEC: run it as 1 MPI rank)
prog=$1
mpiexec=${2:-}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail=0
check() { # description, then a command that must succeed
    what=$1
    shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}

run() { # case name, delay in us
    echo "=== $1: GT_EMU_NCCL_HANG=1 GT_EMU_NCCL_ASYNC_DELAY_US=$2"
    t0=$(date +%s.%N)
    if [ -n "$mpiexec" ]; then
        # Open MPI's flag for root; MPICH's Hydra takes none and rejects it
        flags=
        "$mpiexec" --version 2>&1 | grep -qiE 'open ?mpi|openrte' && flags=--allow-run-as-root
        GT_EMU_NCCL_HANG=1 GT_EMU_NCCL_ASYNC_DELAY_US=$2 \
            "$mpiexec" $flags -np 1 "$prog" >"$out" 2>&1
    else
        GT_EMU_NCCL_HANG=1 GT_EMU_NCCL_ASYNC_DELAY_US=$2 "$prog" >"$out" 2>&1
    fi
    rc=$?
    t1=$(date +%s.%N)
    elapsed=$(echo "$t0 $t1" | awk '{printf "%.1f", $2 - $1}')
    cat "$out"
    echo "--- exit status $rc after $elapsed s"
    [ "$rc" -eq 77 ] && exit 77
    check "exit status 3 (the watchdog's abort), not a crash" test "$rc" -eq 3
    check "watchdog message names allreduce #1" \
        grep -q "gauntlet: watchdog: rank 0: allreduce #1 (4 B fp32)" "$out"
    check "handler called with the message" \
        grep -q "handler called (ctx ok): rank 0: allreduce #1" "$out"
    check "no communicator freed under a call (the stand-in's check)" \
        sh -c "! grep -q 'gauntlet nccl emulator' '$out'"
    check "no sanitizer report" sh -c "! grep -q 'Sanitizer' '$out'"
    check "the allreduce never returned" sh -c "! grep -q 'allreduce returned' '$out'"
    check "ended within 1 to 15 s" awk -v e="$elapsed" 'BEGIN { exit !(e >= 1.0 && e < 15.0) }'
}

run poll 300000
check "the communicator was aborted (no 'left to the end of the job')" \
    sh -c "! grep -q 'left to the end of the job' '$out'"
run stuck 30000000
check "the watchdog says it left the communicator to the end of the job" \
    grep -q "inside an NCCL call for over 1 s: the NCCL communicator is left to the end of the job" "$out"
exit $fail
