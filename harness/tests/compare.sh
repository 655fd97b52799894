#!/usr/bin/env bash
# usage: compare.sh GAUNTLET REPORT_EDIT
# The gate end to end on a real report. Timing noise between two runs must
# not make this flaky: the exit-0 case compares a report with itself, and the
# failing cases edit a copy of it (report_edit) so their verdicts are certain.
set -u
g=$1
edit=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

. "$(dirname "$0")/lib.sh"

# 30 steps: 29 samples per timing metric, 5 blocks of them per run
"$g" train --steps 30 --peak-gflops 100 --quiet --report "$tmp/a.json" >/dev/null ||
    { echo "FAIL: gauntlet train"; exit 1; }
# the result's record of the node as on a quiet one: another process busy on
# the machine while the steps ran (a CI neighbour, a test running beside this
# one) holds a slower step UNDECIDED, which is right there and not what this
# test asks (reports.compare.host tests that rule)
"$edit" "$tmp/a.json" "$tmp/a.json" --scale-metric cpu_others_cores 0 ||
    { echo "FAIL: report_edit"; exit 1; }

expect 0 "NEW may ship" -- "$g" compare "$tmp/a.json" "$tmp/a.json" --junit "$tmp/same.xml"
expect 0 "0 slower, 0 failed checks" -- "$g" compare "$tmp/a.json" "$tmp/a.json" --quiet
expect 0 "alpha 0.05 for each family and metric .no correction." -- "$g" compare "$tmp/a.json" "$tmp/a.json" --per-metric-alpha
grep -q '<testsuites name="gauntlet compare".* failures="0"' "$tmp/same.xml" ||
    fail "same.xml has failures or no testsuites"

# 1000x slower steps (and 1000x lower throughput, derived from them): far outside
# any timing noise, even on a loaded CI machine where a whole block of steps may
# stall for 50x the median (seen). One measurement, one verdict: the step time is
# the regression, tokens_per_s is shown through it.
"$edit" "$tmp/a.json" "$tmp/slow.json" --scale-metric tokens_per_s 0.001 --scale-metric ms_per_step 1000
expect 3 "SLOWER +train/gpt2-tiny .*ms_per_step" -- "$g" compare "$tmp/a.json" "$tmp/slow.json" \
    --junit "$tmp/slow.xml"
expect 3 "tokens_per_s .*slower \(via ms_per_step\)" -- "$g" compare "$tmp/a.json" "$tmp/slow.json" \
    --verbose
# the default output fits a screen: a line per suite, what decides, the verdict
expect 3 "train +1 result: 1 slower" -- "$g" compare "$tmp/a.json" "$tmp/slow.json"
n=$("$g" compare "$tmp/a.json" "$tmp/slow.json" | wc -l)
[ "$n" -le 40 ] || fail "default output of one regression is $n lines (want <= 40)"
expect 3 "NEW MUST NOT SHIP" -- "$g" compare "$tmp/a.json" "$tmp/slow.json" --quiet
expect 0 "1 faster" -- "$g" compare "$tmp/slow.json" "$tmp/a.json"
# --threshold as a percentage: 1.3x the step time is slower above 20%, and only
# ambiguous (which ships) with a threshold of 50%
"$edit" "$tmp/a.json" "$tmp/slow30.json" --scale-metric ms_per_step 1.3
expect 3 "SLOWER +train/gpt2-tiny .*ms_per_step" -- "$g" compare "$tmp/a.json" "$tmp/slow.json" \
    --threshold 50%
expect 0 "0 slower.*NEW may ship" -- "$g" compare "$tmp/a.json" "$tmp/slow30.json" --threshold 50%
# JUnit: well formed enough for a CI parser (xmllint when present)
x="$tmp/slow.xml"
for want in '^<\?xml version="1.0"' '<testsuites ' '<testsuite name="train"' \
    '<testcase classname="train" name="train/gpt2-tiny \[topology 1, backend cpu\]">' \
    '<failure type="slower" message="slower: ms_per_step' '</testsuite>' '</testsuites>'; do
    grep -qE -- "$want" "$x" || fail "slow.xml lacks /$want/"
done
# one testcase per result (the metrics inside), not one per metric: the results, the
# families and the machine class
nres=$(grep -c '"suite":' "$tmp/a.json")
ncase=$(grep -c '<testcase ' "$x")
[ "$ncase" -le $((nres + 5)) ] && ok "JUnit: $ncase testcases for $nres results" ||
    fail "JUnit: $ncase testcases for $nres results (one per metric again?)"
[ "$(grep -c '<testcase ' "$x")" -eq "$(grep -c '</testcase>' "$x")" ] ||
    fail "unbalanced testcase elements"
if command -v xmllint >/dev/null; then
    xmllint --noout "$x" || fail "xmllint"
fi
ls "$tmp" | grep -q '\.tmp\.' && fail "temporary JUnit file left"

# the loss curve: 0.1% off is within --loss-rtol 0.02, 5% off is a failed check
"$edit" "$tmp/a.json" "$tmp/near.json" --scale-series loss 1.001
expect 0 "loss curve: largest relative difference" -- "$g" compare "$tmp/a.json" "$tmp/near.json" \
    --verbose
expect 0 "loss curve not bitwise equal to BASE's in 1 result" -- "$g" compare "$tmp/a.json" \
    "$tmp/near.json"
"$edit" "$tmp/a.json" "$tmp/far.json" --scale-series loss 1.05
expect 3 "loss_curve" -- "$g" compare "$tmp/a.json" "$tmp/far.json"
expect 0 "NEW may ship" -- "$g" compare "$tmp/a.json" "$tmp/far.json" --loss-rtol 0.1

# a failed check in NEW; a result gone from NEW
"$edit" "$tmp/a.json" "$tmp/fail.json" --fail-check finite_loss
expect 3 "check finite_loss FAILED in NEW" -- "$g" compare "$tmp/a.json" "$tmp/fail.json"
"$edit" "$tmp/a.json" "$tmp/gone.json" --drop-case gpt2-tiny
expect 3 "MISSING +train/gpt2-tiny" -- "$g" compare "$tmp/a.json" "$tmp/gone.json"

# a resumed training matches the unbroken one: same identity, the same final
# weights (no note of final_params_fnv1a64), the resume shown as notes
"$g" train --steps 30 --peak-gflops 100 --quiet --checkpoint-dir "$tmp/ck" --checkpoint-every 15 \
    --stop-after 15 >/dev/null || fail "train --stop-after"
"$g" train --steps 30 --peak-gflops 100 --quiet --resume "$tmp/ck" --report "$tmp/resumed.json" \
    >/dev/null || fail "train --resume"
# (--checks-only: the point is the match; fifteen resumed steps against 29 are noise)
expect 0 "results: 1 matched, 0 only in BASE" -- "$g" compare "$tmp/a.json" "$tmp/resumed.json" \
    --checks-only
expect 0 "note: resumed_from_step: \(absent\) -> 15" -- "$g" compare "$tmp/a.json" \
    "$tmp/resumed.json" --verbose --checks-only
if "$g" compare "$tmp/a.json" "$tmp/resumed.json" --verbose | grep -q "final_params_fnv1a64"; then
    fail "a resumed run's final weights differ from the unbroken run's"
fi

# unusable input: exit 2 with a message that says what to do
"$edit" "$tmp/a.json" "$tmp/newer.json" --schema-version 99
expect 2 "schema_version 99, newer than this gauntlet" -- "$g" compare "$tmp/a.json" "$tmp/newer.json"
echo '{"schema_version": 1, "results": [' > "$tmp/bad.json"
expect 2 "is not JSON" -- "$g" compare "$tmp/bad.json" "$tmp/a.json"
expect 2 "cannot read the NEW report" -- "$g" compare "$tmp/a.json" "$tmp/none.json"
expect 2 "needs two reports" -- "$g" compare "$tmp/a.json"
expect 2 "write a percentage as 5%" -- "$g" compare "$tmp/a.json" "$tmp/a.json" --threshold 5
expect 2 "write a percentage as 1%" -- "$g" compare "$tmp/a.json" "$tmp/a.json" --threshold 1
expect 2 "unknown option" -- "$g" compare "$tmp/a.json" "$tmp/a.json" --bogus
expect 2 "write a percentage as 2%" -- "$g" compare "$tmp/a.json" "$tmp/a.json" --run-noise 2
expect 2 "no result of either report has the suite 'trian'" -- "$g" compare "$tmp/a.json" \
    "$tmp/slow.json" --suite trian
expect 2 "no result of either report has a metric 'ms_per_stp'" -- "$g" compare "$tmp/a.json" \
    "$tmp/slow.json" --metric ms_per_stp
# selection: only the chosen metric gets a verdict (tokens_per_s is then judged itself)
expect 0 "NEW may ship" -- "$g" compare "$tmp/a.json" "$tmp/slow.json" --metric final_loss
expect 3 "SLOWER .*ms_per_step" -- "$g" compare "$tmp/a.json" "$tmp/slow.json" --suite train
mkdir "$tmp/empty"
expect 2 "holds no .json report" -- "$g" compare "$tmp/empty" "$tmp/a.json"

# a side of several runs (a directory): the runs are the replicates
# (five runs 1% apart: a t test on 4 degrees of freedom finds 30% at once;
# with one run a side 30% is inside the 15% assumed between runs)
mkdir "$tmp/base5"
cp "$tmp/a.json" "$tmp/base5/r1.json"
i=2
for f in 1.01 0.99 1.005 0.995; do
    "$edit" "$tmp/a.json" "$tmp/base5/r$i.json" --scale-metric ms_per_step $f
    i=$((i + 1))
done
expect 0 "BASE .*base5 .*5 runs" -- "$g" compare "$tmp/base5" "$tmp/a.json"
expect 0 "ms_per_step .* runs " -- "$g" compare "$tmp/base5" "$tmp/a.json" --verbose
expect 3 "SLOWER +train/gpt2-tiny .*ms_per_step.*detects" -- "$g" compare "$tmp/base5" \
    "$tmp/slow30.json"
# one run a side assumes how runs differ: 30% slower, not shown against that,
# is undecided (exit 4), never "may ship"; 3 runs a side would measure it
expect 4 "one run a side assumes how runs differ.*2 more runs on each side would" -- \
    "$g" compare "$tmp/a.json" "$tmp/slow30.json"
expect 2 "cannot write JUnit" -- "$g" compare "$tmp/a.json" "$tmp/a.json" --junit /nonexistent-dir/j.xml
expect 0 "--threshold" -- "$g" compare --help

if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "all compare cases passed"
