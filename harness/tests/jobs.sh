#!/usr/bin/env bash
# usage: jobs.sh GAUNTLET REPORT_CHECK
# The example CI jobs of ci/jobs/ end to end on kernels/gelu_fwd/fp32/n65 --quick (a
# second a run): gate.sh's first baseline (--accept), a pass, a failing gate that must
# leave the baseline byte for byte, refusals; nightly-scaling.sbatch's reference
# (LAST_GOOD) over three nights, one of them slower, launched with SRUN=env
# instead of srun; ab.sh's interleaved pairs, the same stack and a much slower one. Verdicts
# on equal runs use --threshold 1000% so that a shared
# machine's noise cannot fail them; the slow runs add 10 ms to a ~1 us op (a loaded
# machine decides one run a side from 5 ms a call: GT_COMPARE_LOADED_DECIDE_US).
set -u
g=$1
check=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
gate="$root/ci/jobs/gate.sh"
nightly="$root/ci/jobs/nightly-scaling.sbatch"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"
cd "$tmp" || exit 2

run=(kernels/gelu_fwd/fp32/n65 --quick --quiet)
slow=(kernels/gelu_fwd/fp32/n65 --quick --quiet --inject-delay gelu_fwd:10000)
base="$tmp/baselines/vm/gate.json"

# --- gate.sh ----------------------------------------------------------------------
expect 2 "--baseline FILE is required" bash "$gate" --gauntlet "$g" -- "${run[@]}"
expect 2 "nothing to run" bash "$gate" --gauntlet "$g" --baseline "$base"
expect 2 "no gauntlet binary at /nonexistent" bash "$gate" --gauntlet /nonexistent \
    --baseline "$base" -- "${run[@]}"
expect 2 "unknown option '--bogus'" bash "$gate" --bogus
expect 2 "--out needs a value" bash "$gate" --baseline "$base" --out
expect 2 "'--report' among the run's arguments" bash "$gate" --gauntlet "$g" --baseline "$base" \
    --accept -- "${run[@]}" --report x.json
expect 2 "no baseline at .*--accept" bash "$gate" --gauntlet "$g" --baseline "$base" \
    --out o1 -- "${run[@]}"
[ ! -e "$base" ] || fail "a refused gate wrote a baseline"
expect 2 "gauntlet run exited 2" bash "$gate" --gauntlet "$g" --baseline "$base" --accept \
    --out o1 -- nosuchsuite
[ ! -e "$base" ] || fail "a run in error became the baseline"

expect 0 "this run is now the baseline" bash "$gate" --gauntlet "$g" --baseline "$base" \
    --accept --out o2 -- "${run[@]}"
"$check" "$base" --no-errors --no-failed-checks >/dev/null || fail "the first baseline is not a valid report"
cp "$base" base.orig

expect 0 "PASS: NEW may ship" bash "$gate" --gauntlet "$g" --baseline "$base" \
    --threshold 1000% --out o3 -- "${run[@]}"
for f in env.txt run.log new.json compare.txt junit.xml compare.html; do
    [ -s "o3/$f" ] || fail "the passing gate left no o3/$f"
done
cmp -s "$base" base.orig || fail "a gate without --accept replaced the baseline"

expect 3 "FAIL: NEW must not ship" bash "$gate" --gauntlet "$g" --baseline "$base" \
    --threshold 1000% --accept --out o4 -- "${slow[@]}"
cmp -s "$base" base.orig || fail "a failing gate with --accept replaced the baseline"
grep -q "<failure" o4/junit.xml || fail "the failing gate's junit.xml has no <failure>"

expect 0 "NEW is the baseline now" bash "$gate" --gauntlet "$g" --baseline "$base" \
    --threshold 1000% --accept --out o6 -- "${run[@]}"
cmp -s "$base" o6/new.json || fail "--accept on a pass did not make NEW the baseline"
for f in "$tmp"/baselines/vm/*; do
    [ "$f" = "$base" ] || fail "left beside the baseline: $f"
done

# --- nightly-scaling.sbatch -------------------------------------------------------
hist="$tmp/nightly"
night() { # night JOB-ID RUN-ARGS...
    local id=$1
    shift
    env GAUNTLET="$g" HISTORY="$hist" SUITES="kernels/gelu_fwd/fp32/n65" RUN_ARGS="$*" \
        COMPARE_ARGS="--threshold 1000%" SRUN=env SLURM_NTASKS=1 SLURM_JOB_ID="$id" \
        bash "$nightly"
}
expect 2 "SLURM_NTASKS is ''" env -u SLURM_NTASKS GAUNTLET="$g" HISTORY="$hist" bash "$nightly"
# the topologies for 6 tasks: 1,2,4 and 6 (the launcher only prints: no report)
expect 2 "on topologies 1,2,4,6, reference: none" env GAUNTLET="$g" HISTORY="$hist" SRUN=echo \
    SLURM_NTASKS=6 RUN_ARGS="--quick" bash "$nightly"
expect 0 "the first night" night n1 --quick --quiet
[ "$(cat "$hist/LAST_GOOD" 2>/dev/null)" = "$(cd "$hist" && ls -- *-n1.json)" ] ||
    fail "LAST_GOOD does not name the first night"
expect 0 "no worse than .*-n1.json" night n2 --quick --quiet
last=$(cat "$hist/LAST_GOOD" 2>/dev/null)
[[ "$last" == *-n2.json ]] || fail "LAST_GOOD is '$last' after a good second night"
expect 3 "WORSE than .*-n2.json, which stays the reference" night n3 --quick --quiet \
    --inject-delay gelu_fwd:10000
[ "$(cat "$hist/LAST_GOOD")" = "$last" ] || fail "a worse night became the reference"
[ -s "$(ls "$hist"/*-n3.junit.xml)" ] || fail "no junit.xml for the third night"
echo "gone.json" >"$hist/LAST_GOOD"
expect 2 "LAST_GOOD names 'gone.json'" night n4 --quick --quiet

# --- gate.sh with a baseline directory: several runs kept, the newest GATE_KEEP --------
dbase="$tmp/baselines/vm/runs/"
expect 0 "this run is now the baseline" bash "$gate" --gauntlet "$g" --baseline "$dbase" \
    --accept --out d1 -- "${run[@]}"
for i in 2 3 4; do
    GATE_KEEP=3 expect 0 "NEW is the baseline now" bash "$gate" --gauntlet "$g" \
        --baseline "$dbase" --accept --threshold 1000% --out "d$i" -- "${run[@]}"
done
[ "$(ls "$dbase"*.json | wc -l)" -eq 3 ] || fail "the baseline directory does not hold GATE_KEEP=3 runs"
expect 0 "BASE .*runs/ .*3 runs" bash "$gate" --gauntlet "$g" --baseline "$dbase" \
    --threshold 1000% --out d5 -- "${run[@]}"
[ -s d5/compare.html ] || fail "no HTML page beside a baseline directory"
ls "$dbase" >before.ls
expect 3 "FAIL: NEW must not ship" bash "$gate" --gauntlet "$g" --baseline "$dbase" --accept \
    --out d6 -- "${slow[@]}"
ls "$dbase" | cmp -s - before.ls || fail "a failing gate changed the baseline directory"
GATE_KEEP=x expect 2 "GATE_KEEP='x'" bash "$gate" --gauntlet "$g" --baseline "$dbase" -- "${run[@]}"

# --- gate.sh --runs N:M: more runs of the new stack while the gate is undecided ---------
expect 2 "--runs '0:2': N from 1" bash "$gate" --gauntlet "$g" --baseline "$dbase" --runs 0:2 \
    -- "${run[@]}"
expect 2 "--runs 3:2: M below N" bash "$gate" --gauntlet "$g" --baseline "$dbase" --runs 3:2 \
    -- "${run[@]}"
expect 2 "--runs 'x': N or N:M" bash "$gate" --gauntlet "$g" --baseline "$dbase" --runs x \
    -- "${run[@]}"
expect 2 "--runs 1:3 needs a baseline directory" bash "$gate" --gauntlet "$g" --baseline "$base" \
    --runs 1:3 -- "${run[@]}"
# Undecided verdicts cannot be had on demand from real runs: a wrapper answers compare
# with 4 while NEW holds fewer than FAKE_DECIDE_AT runs, and logs compare's arguments
cat >fake.sh <<EOF
#!/usr/bin/env bash
[ "\$1" = compare ] || exec "$g" "\$@"
echo "\$*" >>"$tmp/fake.log"
n=\$(ls "\$3"/*.json 2>/dev/null | wc -l)
if [ "\$n" -lt "\${FAKE_DECIDE_AT:-1}" ]; then
    echo "  UNDECIDED kernels/gelu_fwd [topology 1, backend cpu]: (the wrapper)"
    if [ -n "\${FAKE_QUIET:-}" ]; then
        echo "needed: a run on a quiet machine for the 1 undecided (the wrapper)"
    else
        echo "needed: about 1 more NEW runs would decide kernels/gelu_fwd time_us"
    fi
    exit 4
fi
exec "$g" "\$@"
EOF
chmod +x fake.sh
ls "$dbase" >before.ls
FAKE_DECIDE_AT=2 expect 0 "look at 1 run.*undecided.*one more run" bash "$gate" \
    --gauntlet "$tmp/fake.sh" --baseline "$dbase" --threshold 1000% --runs 1:3 --out r1 \
    -- "${run[@]}"
grep -q "sequential look at 2 NEW runs of 1..3" r1/compare.txt ||
    fail "--runs 1:3: the last look is not compare's look at 2 NEW runs of 1..3"
[ -s r1/new/run1.json ] && [ -s r1/new/run2.json ] && [ ! -e r1/new/run3.json ] ||
    fail "--runs 1:3 decided at 2 runs: not runs 1 and 2 alone in r1/new"
[ -s r1/compare-1.txt ] && [ -s r1/compare-2.txt ] || fail "--runs: no compare-K.txt per look"
grep -q -- "--sequential 1:3" fake.log || fail "--runs 1:3: compare was not given --sequential 1:3"
ls "$dbase" | cmp -s - before.ls || fail "a gate without --accept changed the baseline directory"
# the budget spent: undecided (4) after 2 runs, the baseline untouched even with --accept
FAKE_DECIDE_AT=9 expect 4 "UNDECIDED" bash "$gate" --gauntlet "$tmp/fake.sh" --baseline "$dbase" \
    --accept --runs 1:2 --out r2 -- "${run[@]}"
[ -s r2/new/run2.json ] && [ ! -e r2/new/run3.json ] || fail "--runs 1:2 did not stop at 2 runs"
# undecided where only a quiet machine decides: no more runs, and the job says so
FAKE_QUIET=1 FAKE_DECIDE_AT=9 expect 4 "run the job again when the machine is left to it" \
    bash "$gate" --gauntlet "$tmp/fake.sh" --baseline "$dbase" --runs 1:3 --out r2q -- "${run[@]}"
[ -s r2q/new/run1.json ] && [ ! -e r2q/new/run2.json ] ||
    fail "--runs 1:3 added runs where only a quiet machine decides"
# undecided against one baseline report: the job says what would decide (a directory)
FAKE_DECIDE_AT=9 expect 4 "a baseline of one report is one run a side: keep a baseline directory" \
    bash "$gate" --gauntlet "$tmp/fake.sh" --baseline "$base" --out r2f -- "${run[@]}"
ls "$dbase" | cmp -s - before.ls || fail "an undecided gate with --accept changed the baseline"
# a pass with --accept keeps every run it made (GATE_KEEP the newest)
GATE_KEEP=9 FAKE_DECIDE_AT=2 expect 0 "NEW is the baseline now" bash "$gate" \
    --gauntlet "$tmp/fake.sh" --baseline "$dbase" --threshold 1000% --accept --runs 1:3 \
    --out r3 -- "${run[@]}"
[ "$(ls "$dbase"*.json | wc -l)" -eq 5 ] || fail "--accept after 2 runs did not add both to the 3 kept"
# a real slowdown: decided at the first look, one run made
expect 3 "FAIL: NEW must not ship" bash "$gate" --gauntlet "$g" --baseline "$dbase" \
    --runs 1:3 --out r4 -- "${slow[@]}"
[ ! -e r4/new/run2.json ] || fail "a look that decided went on to a second run"
# the default with a baseline directory is 1:5; --runs 1 is one run and one look
: >fake.log
FAKE_DECIDE_AT=2 expect 0 "judged on 2 run\(s\) of the new stack \(--runs 1:5\)" bash "$gate" \
    --gauntlet "$tmp/fake.sh" --baseline "$dbase" --threshold 1000% --out r5 -- "${run[@]}"
grep -q -- "--sequential 1:5" fake.log || fail "a baseline directory's default design is not 1:5"
FAKE_DECIDE_AT=2 expect 4 "UNDECIDED" bash "$gate" --gauntlet "$tmp/fake.sh" \
    --baseline "$dbase" --runs 1 --out r6 -- "${run[@]}"
[ -s r6/new.json ] && [ ! -e r6/new ] || fail "--runs 1 made more than one run (or no r6/new.json)"

# --- ab.sh: interleaved A/B, the verdict from paired runs -------------------------------
ab="$root/ci/jobs/ab.sh"
mm=(kernels/matmul_fwd/fp32/N64_C768_OC768 --quick --quiet)
expect 2 "--base 'CMD' and --new 'CMD' are both required" bash "$ab" -- "${mm[@]}"
expect 2 "--pairs 2: at least 3" bash "$ab" --base "$g" --new "$g" --pairs 2 -- "${mm[@]}"
expect 2 "'--report' among the run's arguments" bash "$ab" --base "$g" --new "$g" -- \
    "${mm[@]}" --report x.json
expect 2 "the new stack's run 1 exited 127" bash "$ab" --gauntlet "$g" --base "$g" \
    --new /nonexistent/gauntlet --pairs 3 --out ab0 -- "${mm[@]}"
# the same stack on both sides: may ship, judged from 3 pairs (--threshold 1000% as
# above: with one tested metric, alpha alone would fail 1 run in 20)
expect 0 "time_us .* pairs " bash "$ab" --gauntlet "$g" --base "$g" --new "$g" --pairs 3 \
    --out ab1 --compare-args "--verbose --threshold 1000%" -- "${mm[@]}"
[ "$(ls ab1/base/*.json ab1/new/*.json | wc -l)" -eq 6 ] || fail "ab.sh: not 3 reports a side"
# NEW ten times as slow on that case (a wrapper standing in for a slower library; three
# pairs under a loaded CI machine detect no less than about 150%)
printf '#!/bin/sh\nexec "%s" "$@" --inject-slowdown matmul_fwd:10\n' "$g" >slower.sh
chmod +x slower.sh
expect 3 "SLOWER +kernels/matmul_fwd/fp32/N64_C768_OC768 .*pairs p" bash "$ab" --gauntlet "$g" \
    --base "$g" --new "$tmp/slower.sh" --pairs 3 --out ab2 -- "${mm[@]}"
expect 2 "--paired needs BASE and NEW to be directories of as many reports" "$g" compare \
    --paired ab1/base ab2/new/run1.json

if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "jobs: all passed"
