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
