#!/usr/bin/env bash
# usage: predict.sh GAUNTLET [measure]
# `gauntlet predict` (docs/predict.md). First the command line on hand-made
# reports: garbage --ranks, missing reports, reports without the results the
# model needs (the message names them and the suite to run), a network that
# was not measured (given alpha and beta, said so in the output), JSON output
# (an unwritable path leaves the previous file), issue 35's table: every row
# with the cores the assumptions say, measured steps beside the predicted
# ones, and --check with collectives on 2 ranks only predicting the 2-rank
# step and saying it is not leave-one-out. Then, with `measure`, the
# check against this machine: collectives and the gpt2-3m scaling cases
# measured on 1, 2 and 4 ranks (--quick), each multi-rank topology predicted
# from a fit that leaves it out, the error held within a stated bound:
#   - 2 ranks (one per core): 40%. The model puts the 2-rank step of gpt2-3m
#     within a few percent when the two cores are free (docs/predict.md has the
#     table); the bound leaves room for the load of other processes on a shared
#     2-core machine, which moves a topology's time between runs by more than
#     the model's own error;
#   - 4 ranks (oversubscribed: 4 ranks time-slice 2 cores): 75%. The model
#     takes an even time-slice of the cores; measured, 4 ranks on 2 cores
#     lose another 40-70% to switching and to ranks waiting for a descheduled
#     peer in every collective, which no fit that leaves out the oversubscribed
#     topology can know. The bound catches a broken model (a factor of 2 or
#     more), not this machine's scheduler.
# A measurement disturbed by another process is remeasured once before the
# test fails; on a machine already busy when the test starts (other processes
# runnable on at least half the cores) the check is skipped (77), not judged
# (GT_PREDICT_JUDGE_BUSY=1 judges it anyway).
# The pages (hand-made and measured) are drawn in headless Chromium when
# /usr/bin/chromium is there: the "Scaling prediction" section with its table,
# chart, check and inputs, no script error; a page whose reports lack the
# collectives says so in the section.
set -u
g=$1
measure=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"

# ---- hand-made reports: a scaling case on 1 and 2 ranks, allreduce on 2
train() { # CASE RANKS BATCH MS EXPOSED
    printf '{"suite": "scaling", "case": "%s", "topology": "%s", "backend": "cpu", "status": "pass",
      "params": {"model": "gpt2-3m", "precision": "fp32", "batch": %s, "seq": 64, "ranks": %s,
                 "threads": 1, "num_params": 3290624, "zero": 0, "deterministic": 0},
      "checks": [], "metrics": {"tokens_per_s": {"value": 1000, "better": "higher"},
        "ms_per_step": {"value": %s, "better": "lower", "samples": [%s, %s, %s]},
        "exposed_comm_ms": {"value": %s, "better": "lower", "samples": [%s, %s, %s]}}}' \
        "$1" "$2" "$3" "$2" "$4" "$4" "$4" "$4" "$5" "$5" "$5" "$5"
}
coll() { # RANKS
    printf '{"suite": "collectives", "case": "allreduce/fp32/sum", "topology": "%s", "backend": "mpi",
      "status": "pass", "params": {"dtype": "fp32", "in_place": 1}, "checks": [], "metrics": {
        "time_8": {"value": 1, "better": "lower", "samples": [1, 1.2]},
        "time_1024": {"value": 2, "better": "lower", "samples": [2, 2.5]},
        "time_1048576": {"value": 200, "better": "lower", "samples": [190, 230]}}}' "$1"
}
report() { # FILE RESULTS...
    local f=$1
    shift
    local IFS=,
    printf '{"schema_version": 1, "run": {"id": "x"}, "env": {"cpu": {"logical": 2}},
             "results": [%s]}\n' "$*" >"$f"
}
report "$tmp/full.json" "$(train gpt2-3m 1 16 220 0)" "$(train gpt2-3m 2 16 118 2.4)" \
    "$(train gpt2-3m/weak 1 8 112 0)" "$(coll 2)" "$(coll 4)"
report "$tmp/nocoll.json" "$(train gpt2-3m 1 16 220 0)" "$(train gpt2-3m 2 16 118 2.4)"
report "$tmp/collonly.json" "$(coll 2)"
report "$tmp/two.json" "$(train gpt2-3m 2 16 118 2.4)" "$(coll 2)" "$(coll 4)"

expect 0 "predicted|ranks" -- "$g" predict --help
expect 2 "no report given" -- "$g" predict
expect 2 "no report given" -- "$g" predict --ranks 8
expect 2 "--from needs at least one report" -- "$g" predict --from --ranks 8
for bad in "8,x" "0" "-4" "8,,64" "" "1e3" "8;64" "99999999999"; do
    expect 2 "--ranks.*(comma-separated list|needs a list)" -- "$g" predict --from "$tmp/full.json" --ranks "$bad"
done
expect 2 "at most 64" -- "$g" predict --from "$tmp/full.json" --ranks "$(seq -s, 1 65)"
expect 2 "cannot|no such" -- "$g" predict --from "$tmp/nope.json"
printf 'not json' >"$tmp/junk.json"
expect 2 "junk.json" -- "$g" predict --from "$tmp/junk.json"
expect 2 "unknown option '--rank'.*did you mean --ranks" -- "$g" predict --from "$tmp/full.json" --rank 8
# what is missing, and which suite to run
expect 2 "no passed train or scaling result.*gauntlet run scaling" -- "$g" predict --from "$tmp/collonly.json"
expect 2 "no collectives result.*allreduce.*gauntlet run collectives" -- "$g" predict --from "$tmp/nocoll.json"
expect 2 "--case takes one of: 'gpt2-3m', 'gpt2-3m/weak'" -- "$g" predict --from "$tmp/full.json" --case gpt3
expect 2 "--alpha-us and --beta-gbps go together" -- "$g" predict --from "$tmp/nocoll.json" --alpha-us 3
expect 2 "--inter-alpha-us goes with --inter-beta-gbps" -- "$g" predict --from "$tmp/full.json" --inter-alpha-us 3
expect 2 "add --check" -- "$g" predict --from "$tmp/full.json" --max-error 10
expect 2 "--zero" -- "$g" predict --from "$tmp/full.json" --zero 4
# a ZeRO-2 result: its own schedule, said so
sed 's/"zero": 0/"zero": 2/g' "$tmp/full.json" >"$tmp/zero2.json"
expect 0 "ZeRO-2: 25 MiB buckets, also cut at the shards' edges" -- "$g" predict --from "$tmp/zero2.json"
# a ZeRO-3 result of 4 layers: 6 units gathered per pass, said so; a stage it does not know refused
sed 's/"zero": 0/"zero": 3, "layers": 4/g' "$tmp/full.json" >"$tmp/zero3.json"
expect 0 "ZeRO-3: ZeRO-2's 25 MiB buckets.*in 6 equal units" -- "$g" predict --from "$tmp/zero3.json"
expect 0 "prediction for gpt2-3m (.*ZeRO-3)" -- "$g" predict --from "$tmp/full.json" --zero 3
sed 's/"zero": 0/"zero": 5/g' "$tmp/full.json" >"$tmp/zero5.json"
expect 2 "trained with zero 5: predict models ZeRO 0 to 3 only" -- "$g" predict --from "$tmp/zero5.json"
# a bound with nothing to hold it to fails (2 ranks measured alone: no other
# rank count to fit the compute from)
expect 1 "no measured multi-rank topology could be checked" -- \
    "$g" predict --from "$tmp/two.json" --check --max-error 50
# 1 and 2 ranks measured, collectives on 2 ranks only: the 2-rank step from the
# 1-rank compute and the 2-rank collectives, said not to be leave-one-out
expect 0 "gpt2-3m +2 +c:1 l:2 .*not leave-one-out" -- \
    "$g" predict --from "$tmp/nocoll.json" "$tmp/collonly.json" --check --max-error 50
expect 0 "This is not a leave-one-out check" -- \
    "$g" predict --from "$tmp/nocoll.json" "$tmp/collonly.json" --check
# every row has the cores the assumptions say, measured figures beside the
# predicted ones (2 cores, 2 ranks per node: 1 core per rank, the 1-rank row too)
out=$("$g" predict --from "$tmp/full.json" --ranks 1,2,8 2>&1)
grep -q "predicted ranks get 1 core(s) each" <<<"$out" &&
    grep -qE "^ +1 +1 +1  220 \[220, 220\] +220 " <<<"$out" &&
    grep -qE "^ +2 +1 +1  [0-9.]+ \[.*\] +118 " <<<"$out" &&
    ok "1 core per rank on every row, measured beside predicted" ||
    fail "the 1-rank row or the measured figures: $out"
grep -q "predicted against measured" <<<"$out" && ok "predicted against measured listed" ||
    fail "no predicted-against-measured rows: $out"
expect 0 "gpt2-3m +2 +c:1 l:4 +1[0-9.]+ \\[.*-3.6%" -- "$g" predict --from "$tmp/full.json" --check --max-error 50
expect 0 "weak step ms" -- "$g" predict --from="$tmp/full.json" --ranks=8
# the reports split over two files read together
expect 0 "weak step ms" -- "$g" predict --from "$tmp/nocoll.json" "$tmp/collonly.json" --ranks 2,8
# a network that was not measured: given, and said so
expect 0 "given on the command line, not measured" -- \
    "$g" predict --from "$tmp/nocoll.json" --alpha-us 2 --beta-gbps 25 --ranks 8,64
out=$("$g" predict --from "$tmp/full.json" --ranks 64 --ranks-per-node 2 --json "$tmp/p.json" 2>&1)
grep -q "inter-node not measured and not given" <<<"$out" && ok "unmeasured inter-node said" ||
    fail "no word that the inter-node links were assumed: $out"
grep -q '"predictions"' "$tmp/p.json" && grep -q '"step_ms"' "$tmp/p.json" && ok "JSON written" ||
    fail "JSON lacks predictions"
# a slower inter-node network makes the 64-rank step slower, never faster
step() { grep -A3 '"step_ms"' "$1" | grep '"mid"' | tail -1 | tr -dc '0-9.e+-'; }
"$g" predict --from "$tmp/full.json" --ranks 64 --ranks-per-node 2 --inter-alpha-us 50 \
    --inter-beta-gbps 0.5 --json "$tmp/slow.json" >/dev/null 2>&1
awk -v a="$(step "$tmp/p.json")" -v b="$(step "$tmp/slow.json")" 'BEGIN { exit !(b > a) }' &&
    ok "slower network, slower step ($(step "$tmp/p.json") -> $(step "$tmp/slow.json") ms)" ||
    fail "a slower inter-node network did not slow the step: $(step "$tmp/p.json") -> $(step "$tmp/slow.json")"
# an unwritable --json leaves the previous file
cp "$tmp/p.json" "$tmp/keep.json"
expect 2 "cannot|prediction" -- "$g" predict --from "$tmp/full.json" --json "$tmp/nodir/p.json"
cmp -s "$tmp/p.json" "$tmp/keep.json" && ok "earlier JSON intact" || fail "earlier JSON changed"
# the HTML view: the section's data is in the page, drawn in headless Chromium
render() { # PAGE DOM: the page's DOM after its scripts ran
    browse "$1" --dump-dom --window-size=1280,2000 >"$2"
}
drawn() { # DOM WHAT: the Scaling prediction section with its parts
    grep -q 'data-render-errors="0"' "$1" && ok "$2: rendered without errors" ||
        fail "$2: render errors: $(grep -o 'render-errors[^>]*>[^<]*' "$1" | head -3)"
    grep -q '<section id="predict">' "$1" && grep -q 'id="predict-table"' "$1" &&
        grep -q 'id="predict-check"' "$1" && grep -q 'id="predict-inputs"' "$1" &&
        ok "$2: Scaling prediction section with its table, check and inputs" ||
        fail "$2: the page lacks the Scaling prediction section or a part of it"
    grep -q 'id="predict-measured"' "$1" && ok "$2: predicted against measured" ||
        fail "$2: the page lacks the predicted-against-measured table"
    grep -q 'data-series="predict-efficiency:weak (predicted)"' "$1" &&
        grep -q 'data-series="predict-efficiency:strong (predicted)"' "$1" &&
        ok "$2: efficiency chart drawn" || fail "$2: efficiency chart lacks a series"
}
expect 0 "report:" -- "$g" report "$tmp/full.json" --html "$tmp/p.html"
grep -q 'id="predict-data"' "$tmp/p.html" && ok "predict data in the page" || fail "no predict data in the page"
expect 0 "report:" -- "$g" report "$tmp/collonly.json" --html "$tmp/c.html"
grep -q 'id="predict-data"' "$tmp/c.html" && fail "a page without a step time has a prediction" ||
    ok "no prediction without a step time"
expect 0 "report:" -- "$g" report "$tmp/nocoll.json" --html "$tmp/n.html"
if [ -x /usr/bin/chromium ]; then
    render "$tmp/p.html" "$tmp/p-dom.html"
    drawn "$tmp/p-dom.html" "hand-made page"
    render "$tmp/n.html" "$tmp/n-dom.html"
    grep -q 'data-render-errors="0"' "$tmp/n-dom.html" &&
        grep -q 'id="predict-error"[^>]*>No prediction from these reports: .*gauntlet run collectives' \
            "$tmp/n-dom.html" && ok "a page without collectives says what the prediction lacks" ||
        fail "a page without collectives does not say what the prediction lacks"
else
    echo "note: /usr/bin/chromium is absent (ci/deps.sh installs it): the pages were not drawn"
fi

if [ "$measure" != measure ]; then
    if [ "$fails" -ne 0 ]; then echo "$fails case(s) failed"; exit 1; fi
    echo "all command-line cases passed (no measurement asked for)"
    exit 0
fi
if ! command -v mpirun >/dev/null 2>&1; then
    echo "skip: no mpirun for the 2- and 4-rank measurements after $fails failure(s)"
    [ "$fails" -ne 0 ] && exit 1
    exit 77
fi

# ---- this machine: measure, predict each measured topology from the others
# Other processes on the cores move one topology's time and not another's by
# more than the bounds (on the shared 2-core machine with 10-15 runnable
# processes: the 2-rank step measured 1x to 2x the 1-rank step from one run to
# the next; the kernel shares the cores between sessions, so a busy neighbour
# leaves 2 ranks the CPU of 1): no verdict when, before we start, other
# processes keep at least half the cores busy: the share of CPU time not idle
# over 2 s from /proc/stat (the runnable count of /proc/loadavg counts its own
# reader and its shell, 1 to 2 on an idle machine; the 1-minute load average
# would still count the test that ran before this one).
cores=$(nproc)
cpu_times() { awk '/^cpu / {idle = $5 + $6; total = 0; for (i = 2; i <= NF; i++) total += $i; print idle, total}' /proc/stat; }
read -r idle0 total0 < <(cpu_times)
sleep 2
read -r idle1 total1 < <(cpu_times)
# busy share of all cores in per cent; "others" in cores, rounded (for the message)
busy=$(( (total1 - total0) > 0 ? 100 - 100 * (idle1 - idle0) / (total1 - total0) : 0 ))
others=$(( (busy * cores + 50) / 100 ))
if [ "$busy" -ge 50 ] && [ -z "${GT_PREDICT_JUDGE_BUSY:-}" ]; then
    echo "skip: the machine is busy ($busy% of $cores cores busy before the test, about $others cores): their"
    echo "      timing, not the model's, would decide the check; rerun when it is idle"
    [ "$fails" -ne 0 ] && exit 1
    exit 77
fi
measured() { # REPORT
    "$g" run collectives/allreduce collectives/allgather collectives/reduce_scatter \
        scaling/gpt2-3m scaling/gpt2-3m/weak --quick --topologies 1,2,4 \
        --dtypes fp32 --ops sum --quiet --report "$1" >"$tmp/run.log" 2>&1
}
checked=0
for attempt in 1 2; do
    if ! measured "$tmp/m$attempt.json"; then
        fail "gauntlet run on 1, 2, 4 ranks"; tail -15 "$tmp/run.log"; break
    fi
    "$g" predict --from "$tmp/m$attempt.json" --check --max-error 40 \
        --max-error-oversubscribed 75 --json "$tmp/check.json" >"$tmp/check.txt" 2>&1
    rc=$?
    cat "$tmp/check.txt"
    if [ $rc -eq 0 ]; then
        checked=1
        break
    fi
    echo "attempt $attempt: a prediction outside its bound (exit $rc); load: $(cat /proc/loadavg)"
done
if [ $checked -eq 1 ]; then
    n2=$(grep -cE '^  gpt2-3m +2 ' "$tmp/check.txt")
    n4=$(grep -cE '^  gpt2-3m +4 .*oversubscribed' "$tmp/check.txt")
    [ "$n2" -eq 1 ] && [ "$n4" -eq 1 ] && ok "2 and 4 ranks predicted within their bounds" ||
        fail "the check lacks a 2- or 4-rank row"
    # 2 ranks: compute from 1 (4 is oversubscribed), links from 4; 4 ranks: from 1,2 and 2
    grep -q '"compute_fitted_from_ranks": "1"' "$tmp/check.json" &&
        grep -q '"links_fitted_from_ranks": "4"' "$tmp/check.json" &&
        grep -q '"compute_fitted_from_ranks": "1,2"' "$tmp/check.json" &&
        grep -q '"links_fitted_from_ranks": "2"' "$tmp/check.json" &&
        ok "each fit left out its own rank count" || fail "a fit used the rank count it predicts"
else
    fail "the measured topologies are not predicted within 40% (2 ranks) / 75% (4 ranks, oversubscribed)"
fi
# the page, drawn
m=$tmp/m1.json
[ -s "$tmp/m2.json" ] && m=$tmp/m2.json
"$g" report "$m" --html "$tmp/m.html" >/dev/null 2>&1 || fail "report --html of the measured run"
if [ -x /usr/bin/chromium ]; then
    render "$tmp/m.html" "$tmp/m-dom.html"
    drawn "$tmp/m-dom.html" "measured page"
fi
if [ "$fails" -ne 0 ]; then echo "$fails case(s) failed"; exit 1; fi
echo "all cases passed"
