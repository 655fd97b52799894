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
