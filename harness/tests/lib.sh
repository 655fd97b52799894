# Shared by the command-line tests (sourced). Needs `fails` set to 0 first.
#
# expect CODE PATTERN -- command...: runs the command, checks its exit code
# and that its output (stdout and stderr) matches the extended regular
# expression PATTERN (empty: any output). EXPECT_GREP_FLAGS adds grep flags
# (cli.sh matches without case: -i).
expect() {
    local want=$1 pattern=$2
    shift 3
    local out rc
    out=$("$@" 2>&1)
    rc=$?
    if [ "$rc" -ne "$want" ]; then
        echo "FAIL: '$*' exited $rc, expected $want"; echo "$out" | tail -8; fails=$((fails + 1))
    elif [ -n "$pattern" ] && ! grep -q ${EXPECT_GREP_FLAGS:-} -E -- "$pattern" <<<"$out"; then
        echo "FAIL: '$*' output lacks /$pattern/"; echo "$out" | tail -8; fails=$((fails + 1))
    else
        echo "ok: $* -> $rc"
    fi
}
