#!/bin/sh
# engine.comm_watchdog.mpi_np2: runs watchdog.c on 2 ranks and checks that
# the job died the way a hung blocking collective must end it: non-zero
# exit status, after about the 1 s deadline (well before rank 1's 60 s
# sleep), with the watchdog's message naming the operation and its sequence
# number, and the timeout handler called.
# Usage: watchdog.sh MPIEXEC PROGRAM [MPIEXEC_FLAGS...]
#   MPIEXEC_FLAGS: the launcher family's (CMake's GT_MPIEXEC_FLAGS: Open MPI's
#   --oversubscribe --allow-run-as-root, none for MPICH's Hydra)
mpiexec=$1
prog=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
t0=$(date +%s.%N)
"$mpiexec" "$@" -np 2 "$prog" >"$out" 2>&1
rc=$?
t1=$(date +%s.%N)
elapsed=$(echo "$t0 $t1" | awk '{printf "%.1f", $2 - $1}')
cat "$out"
echo "--- exit status $rc after $elapsed s"
fail=0
check() { # description, then a command that must succeed
    what=$1
    shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}
check "job exited with a non-zero status" test "$rc" -ne 0
check "watchdog message names allreduce #1" \
    grep -q "gauntlet: watchdog: rank 0: allreduce #1 (4 B fp32)" "$out"
check "message says who it waited for" grep -q "waiting for: all other ranks (collective)" "$out"
check "handler called with the message" \
    grep -q "handler called (ctx ok): rank 0: allreduce #1" "$out"
check "the allreduce never returned" sh -c "! grep -q 'allreduce returned' '$out'"
check "rank 1 was killed, not left to sleep" sh -c "! grep -q 'rank 1 woke up' '$out'"
check "ended within 1 to 15 s" awk -v e="$elapsed" 'BEGIN { exit !(e >= 1.0 && e < 15.0) }'
exit $fail
