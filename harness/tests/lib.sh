# Shared by the command-line tests (sourced). Sets fails=0.
#
# fail MSG / ok MSG: one line each; fail counts into $fails.
#
# expect CODE PATTERN [--] command...: runs the command, checks its exit code
# and that its output (stdout and stderr) matches the extended regular
# expression PATTERN (empty: any output), and that it never printed a C
# NULL string ("(null)"). EXPECT_GREP_FLAGS adds grep flags (cli.sh and
# html.sh match without case: -i); EXPECT_TIMEOUT (seconds) runs the command
# under timeout, so a hang fails with 124 instead of stalling the test.
#
# browse PAGE ARGS...: headless /usr/bin/chromium on file://PAGE with ARGS
# (--screenshot=..., --dump-dom ...), an isolated profile under $tmp (set by
# the caller), no network; its stderr appended to $tmp/chromium.log.
#
# The MPI launcher, so that one script runs under Open MPI's mpirun and under
# MPICH's Hydra (mpiexec.mpich; Intel MPI's and MVAPICH's mpiexec.hydra are Hydra
# too). They reject each other's flags (docs/clusters.md, "MPICH"):
#
# mpi_launcher MPIEXEC: sets mpi_family (openmpi, hydra or other, from
#   `MPIEXEC --version`) and the array mpi_flags, what every launch on a small
#   machine as root needs: Open MPI's --oversubscribe --allow-run-as-root;
#   nothing for Hydra, which oversubscribes and runs as root unasked.
# mpi_env ARRAY NAME=VALUE: appends to the array named ARRAY the option that gives
#   the ranks of the current MPMD segment NAME=VALUE: Open MPI's -x NAME=VALUE,
#   Hydra's -env NAME VALUE. (Both launchers pass their own environment on to
#   ranks on this machine; -x / -env are for a value per segment or per node.)
# mpi_bind_core ARRAY: appends the option that binds each rank to a core (Open
#   MPI's --bind-to core, Hydra's -bind-to core; global for Hydra: before the
#   first segment).
# mpi_keep_going ARRAY: appends what leaves the other ranks running when one
#   dies, to be ended by their own watchdog: Open MPI's recovery mode (--mca
#   orte_enable_recovery 1, as OMPI_MCA_orte_enable_recovery=1 in mpirun's own
#   environment), Hydra's -disable-auto-cleanup.
# mpi_rank_var: prints the variable that holds a rank's world rank in its
#   environment (OMPI_COMM_WORLD_RANK, PMI_RANK).
mpi_launcher() {
    mpi_family=other
    mpi_flags=()
    local v
    v=$("$1" --version 2>&1)
    if grep -qiE 'open ?mpi|openrte' <<<"$v"; then
        mpi_family=openmpi
        mpi_flags=(--oversubscribe --allow-run-as-root)
    elif grep -qiE 'hydra' <<<"$v"; then
        mpi_family=hydra
    fi
}
mpi_env() {
    local -n _mpi_arr=$1
    if [ "$mpi_family" = hydra ]; then
        _mpi_arr+=(-env "${2%%=*}" "${2#*=}")
    else
        _mpi_arr+=(-x "$2")
    fi
}
mpi_bind_core() {
    local -n _mpi_arr=$1
    if [ "$mpi_family" = hydra ]; then _mpi_arr+=(-bind-to core); else _mpi_arr+=(--bind-to core); fi
}
mpi_keep_going() {
    local -n _mpi_arr=$1
    if [ "$mpi_family" = hydra ]; then
        _mpi_arr+=(-disable-auto-cleanup)
    else
        _mpi_arr+=(--mca orte_enable_recovery 1)
    fi
}
mpi_rank_var() {
    if [ "$mpi_family" = hydra ]; then echo PMI_RANK; else echo OMPI_COMM_WORLD_RANK; fi
}

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

expect() {
    local want=$1 pattern=$2
    shift 2
    [ "${1:-}" = "--" ] && shift
    local out rc
    if [ -n "${EXPECT_TIMEOUT:-}" ]; then
        out=$(timeout "$EXPECT_TIMEOUT" "$@" 2>&1)
    else
        out=$("$@" 2>&1)
    fi
    rc=$?
    if [ "$rc" -ne "$want" ]; then
        fail "'$*' exited $rc, expected $want"; echo "$out" | tail -8
    elif [ -n "$pattern" ] && ! grep -q ${EXPECT_GREP_FLAGS:-} -E -- "$pattern" <<<"$out"; then
        fail "'$*' output lacks /$pattern/"; echo "$out" | tail -8
    elif grep -qF '(null)' <<<"$out"; then
        fail "'$*' printed a NULL string"; echo "$out" | tail -8
    else
        ok "$* -> $rc"
    fi
}

browse() {
    local page=$1
    shift
    HOME="$tmp" timeout 90 /usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update --disable-sync \
        --hide-scrollbars --user-data-dir="$(mktemp -d -p "$tmp")" --virtual-time-budget=5000 \
        "$@" "file://$page" 2>>"$tmp/chromium.log"
}

# doctor_verdict DIAG NAME WANT RC TEST MESSAGE: one doctor run of the doctor
# tests ($tmp/NAME.json and .out, validated by $check): exit WANT, then the
# python TEST over d (the report), out (its outliers) and res (its results by
# case); on a failure the outliers and the python expression DIAG are printed.
doctor_verdict() {
    local diag=$1 name=$2 want=$3 rc=$4 test=$5 msg=$6
    if [ "$rc" -ne "$want" ]; then
        fail "$msg: exit $rc, expected $want"; grep -E "OUTLIER|verdict|rror|ms" "$tmp/$name.out" | head -12
        return
    fi
    if ! "$check" "$tmp/$name.json" >/dev/null; then fail "$msg: the report does not validate"; return; fi
    if python3 - "$tmp/$name.json" "$test" "$diag" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
out = d["doctor"]["outliers"]
res = {r["case"]: r for r in d["results"]}
ok = eval(sys.argv[2])
if not ok:
    print("  outliers:", [o["detail"] for o in out])
    print(" ", eval(sys.argv[3]))
sys.exit(0 if ok else 1)
PYEOF
    then ok "$msg"; else fail "$msg"; fi
}
