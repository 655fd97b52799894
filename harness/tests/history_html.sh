#!/usr/bin/env bash
# usage: history_html.sh GAUNTLET
# The run history on the HTML page (gauntlet report --history DB, reports/
# html_history.c): the command line (a bad database exits 2 and leaves the
# previous page), then the page in headless Chromium: no script error, a trend
# plot per case and metric with a spread bar per run and the change point
# marked where the level moved, and a screenshot whose pixels show the plot's
# line, spread bars and change-point line (and no change-point red where there
# is none). Exits 77 after the command-line checks without /usr/bin/chromium.
set -u
g=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/history_lib.sh"
EXPECT_GREP_FLAGS=-i

if "$g" history "$tmp/x.db" 2>&1 | grep -q "built without SQLite"; then
    expect 2 "built without SQLite" "$g" report --history "$tmp/x.db" --html "$tmp/x.html"
    [ "$fails" -eq 0 ]
    exit
fi

# Besides drift (slower from run 7, the driver changed) and flat: "tiny", a
# kernel under compare's 5 us timing floor whose GB/s (derived from its time,
# so never gated) drops at run 10, where the OpenMP binding went from close to
# spread (the threads per rank, 2, stay: another count would be another machine
# class, whose runs make a series of their own, history.sh). Every run, as
# under mpirun, differs in 40 OMPI_* launch variables.
tiny() { # LEVEL_US GBPS: the tiny result, 10 samples each
    local t="" b="" k
    for k in 0 1 2 3 4 5 6 7 8 9; do
        t="$t${t:+, }$(awk -v l="$1" -v k="$k" 'BEGIN { printf "%.4f", l * (1 + (k % 3 - 1) * 0.004) }')"
        b="$b${b:+, }$(awk -v l="$2" -v k="$k" 'BEGIN { printf "%.4f", l * (1 - (k % 3 - 1) * 0.004) }')"
    done
    printf '{"suite": "kernels", "case": "tiny", "topology": "1", "backend": "cpu", "status": "pass",
      "params": {}, "checks": [],
      "metrics": {"time_us": {"value": %s, "unit": "us", "better": "lower", "n": 10, "samples": [%s]},
                  "gbps": {"value": %s, "unit": "GB/s", "better": "higher", "n": 10, "samples": [%s],
                           "derived_from": "time_us"}}}' "$1" "$t" "$2" "$b"
}
launch_vars() { # RUN: 40 OMPI_* variables whose values name the run
    local v="" k
    for k in $(seq -w 1 40); do v="$v${v:+, }\"OMPI_MCA_orte_launch_$k\": \"job-$1-$k\""; done
    echo "$v"
}
db=$tmp/h.db
for i in $(seq 1 12); do
    if [ "$i" -le 6 ]; then drv=550.54; lvl=100; else drv=555.42; lvl=130; fi
    if [ "$i" -le 9 ]; then bind=close; t_us=2.0; gbps=100; else bind=spread; t_us=2.6; gbps=77; fi
    MK_ENV="\"variables\": {$(launch_vars "$i")}, \"threads\": {\"per_rank\": 2, \"obtained\": 2, \"OMP_PROC_BIND\": \"$bind\"}" \
        MK_RESULTS="$(tiny "$t_us" "$gbps")" \
        mk "$tmp/r$i.json" "run-$i" "$(printf "2026-10-%02dT01:00:00Z" "$i")" "$drv" pass "$lvl"
    "$g" history add "$db" "$tmp/r$i.json" >/dev/null || fail "add r$i"
done
"$g" train --steps 5 --quiet --report "$tmp/t.json" >/dev/null || fail "train"

out=$tmp/page.html
echo "previous page" >"$out"
echo "not a database" >"$tmp/text.db"
expect 2 "is not an SQLite database" "$g" report --history "$tmp/text.db" --html "$out"
expect 2 "no history database at" "$g" report "$tmp/t.json" --history "$tmp/missing.db" --html "$out"
expect 2 "need --history DB" "$g" report "$tmp/t.json" --history-case drift --html "$out"
expect 2 "no case 'nope'" "$g" report --history "$db" --history-case nope --html "$out"
[ "$(cat "$out")" = "previous page" ] && ok "failed runs left the previous page" || fail "page changed"
expect 0 "page.html \(0 reports, history " "$g" report --history "$db" --html "$out"
expect 0 "both.html \(1 report, history " "$g" report "$tmp/t.json" --history "$db" --html "$tmp/both.html"
expect 0 "flat.html" "$g" report --history "$db" --history-case flat --html "$tmp/flat.html"
grep -q '<script type="application/json" id="history">' "$out" && ok "history embedded" ||
    fail "no history data in the page"
grep -qiE '(src|href)=|@import|url\(' "$out" && fail "the page refers to an external resource"

if [ ! -x /usr/bin/chromium ]; then
    echo "skip: /usr/bin/chromium is absent (apt-get install chromium) after $fails failure(s)"
    [ "$fails" -eq 0 ] && exit 77 || exit 1
fi
count() { grep -o -- "$1" "$2" | wc -l; }
for p in page both flat; do
    browse "$tmp/$p.html" --dump-dom --window-size=1000,800 >"$tmp/$p-dom.html"
    grep -q 'data-render-errors="0"' "$tmp/$p-dom.html" && grep -q 'data-history-rendered=' "$tmp/$p-dom.html" &&
        ! grep -q 'id="render-errors"' "$tmp/$p-dom.html" && ok "$p: rendered without errors" ||
        { fail "$p: the renderer threw or did not finish"; grep -o 'id="render-errors"[^<]*' "$tmp/$p-dom.html" | head -3; tail -3 "$tmp/chromium.log"; }
done
dom=$tmp/page-dom.html
[ "$(count 'data-history-series="kernels/drift:time_us"' "$dom")" -eq 1 ] &&
    [ "$(count 'data-history-series="kernels/flat:time_us"' "$dom")" -eq 1 ] &&
    ok "a plot per case and metric" || fail "plots: not one per case and metric"
[ "$(count 'data-change-point="7"' "$dom")" -eq 1 ] && [ "$(count 'data-change-point="10"' "$dom")" -eq 1 ] &&
    [ "$(count 'data-change-point=' "$dom")" -eq 2 ] &&
    ok "two change points: drift at run 7, tiny's GB/s at run 10" ||
    fail "change points: $(grep -o 'data-change-point="[0-9]*"' "$dom" | tr '\n' ' ')"
[ "$(count 'data-spread=' "$dom")" -eq 48 ] && ok "a spread bar per run (4 x 12)" ||
    fail "spread bars: $(count 'data-spread=' "$dom"), expected 48"
grep -q 'run 7: slower, 100 → 130 us (+30.0%' "$dom" && grep -q 'cuda_driver: 550.54 -&gt; 555.42' "$dom" &&
    ok "the change and the driver that changed, as text" || fail "the change point's text"
# the plots in the order that matters: the metrics compare gates first (tiny's
# time is under the timing floor, its GB/s derived from it), changes first;
# before, the latest change point came first: tiny's ungated GB/s
order=$(grep -o 'data-history-series="[^"]*" data-gated="[01]"' "$dom" | sed 's/data-history-series=//; s/ data-gated=/@/' | tr -d '"' | tr '\n' ' ')
[ "$order" = "kernels/drift:time_us@1 kernels/flat:time_us@1 kernels/tiny:gbps@0 kernels/tiny:time_us@0 " ] &&
    ok "plot order: gated first, changed first: $order" || fail "plot order: '$order'"
grep -q 'not gated: derived from time_us' "$dom" && grep -q 'not gated: below the 5 us timing floor' "$dom" &&
    ok "the ungated plots say why" || fail "an ungated plot does not say why"
# what changed: the stack's fields, never the 40 launch variables (counted)
[ "$(count 'OMPI_MCA_orte_launch' "$dom")" -eq 0 ] && ok "no launch variable in the changed notes" ||
    fail "$(count 'OMPI_MCA_orte_launch' "$dom") launch variables named in the page"
grep -q 'run 7: [^<]*changed: env.software.cuda_driver: 550.54 -&gt; 555.42; git_revision: abcrun-6 -&gt; abcrun-7 (and 40 launch or host fields not shown)' "$dom" &&
    ok "run 7: the driver, and the 40 launch variables counted" || fail "run 7's changed note"
grep -q 'run 10: [^<]*changed: env.threads.OMP_PROC_BIND: close -&gt; spread; git_revision: abcrun-9 -&gt; abcrun-10 (and 40 launch' "$dom" &&
    ok "run 10: the OpenMP binding" || fail "run 10's changed note"
# the value axes on round ticks (1, 2, 2.5 or 5 x 10^k), never 0.3292
python3 "$(dirname "$0")/html_ticks.py" "$dom" && ok "round ticks" || fail "ticks not round"
grep -q 'id="history"' "$tmp/both-dom.html" && grep -q 'data-series="loss-gpt2:' "$tmp/both-dom.html" &&
    ok "with a report: its loss chart and the history" || fail "report + history page"
[ "$(count 'data-change-point=' "$tmp/flat-dom.html")" -eq 0 ] && ok "flat: no change point" ||
    fail "flat: a change point drawn"

# the screenshots: the plot's blue line, the spread's light blue, the red change point
browse "$out" --screenshot="$tmp/shot.png" --window-size=1280,800 >/dev/null
browse "$tmp/flat.html" --screenshot="$tmp/flat.png" --window-size=1280,800 >/dev/null
if command -v python3 >/dev/null; then
    read -r blue spread red < <(python3 "$(dirname "$0")/png_colors.py" "$tmp/shot.png" 1f77b4 9ecae1 d62728 | tr '\n' ' ')
    [ "${blue:-0}" -gt 400 ] && [ "${spread:-0}" -gt 300 ] && [ "${red:-0}" -gt 80 ] &&
        ok "screenshot: line $blue px, spread $spread px, change point $red px" ||
        fail "screenshot: line ${blue:-?} px, spread ${spread:-?} px, change point ${red:-?} px"
    read -r blue spread red < <(python3 "$(dirname "$0")/png_colors.py" "$tmp/flat.png" 1f77b4 9ecae1 d62728 | tr '\n' ' ')
    [ "${blue:-0}" -gt 200 ] && [ "${red:-1}" -lt 20 ] && ok "flat screenshot: line $blue px, no red ($red px)" ||
        fail "flat screenshot: line ${blue:-?} px, red ${red:-?} px"
else
    fail "python3 is absent: cannot read the screenshot (ci/deps.sh installs it)"
fi
[ -n "${GT_HTML_KEEP:-}" ] && cp "$out" "$tmp/shot.png" "$GT_HTML_KEEP"/ 2>/dev/null

[ "$fails" -eq 0 ] && echo "history_html: all checks passed" || echo "history_html: $fails check(s) failed"
[ "$fails" -eq 0 ]
