#!/usr/bin/env bash
# usage: ab.sh GAUNTLET REPORT_EDIT
# The adaptive A/B job (ci/jobs/ab.sh) and the power experiment of ci/bench_gate.sh
# (pool, trials, adaptive) on kernels/matmul_fwd/fp32/N64_C768_OC768 --quick (about 1 ms,
# a gated time; a few seconds a run): refusals, the fixed design (3:3), a look that is
# undecided adding a pair, the budget in pairs and in minutes ending an undecided job
# with 4, a pool run beside a noisy neighbour, trials with a synthetic injection.
#
# Undecided verdicts cannot be had on demand from real runs, so a wrapper (fake.sh,
# written below) stands in for gauntlet: `run` runs the real one (or, with FAKE_RUN,
# copies that report after FAKE_SLEEP seconds: the budget tests need time to pass, not
# measurements); `compare` logs its arguments to FAKE_LOG and answers exit 4 when
# FAKE_COMPARE says (first4: the first call; always4; at3: when NEW holds 3 runs),
# otherwise runs the real compare.
set -uo pipefail
g=$1
report_edit=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
ab="$root/ci/jobs/ab.sh"
bench="$root/ci/bench_gate.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=/dev/null  # lib.sh: fail, ok, expect and $fails
. "$(dirname "$0")/lib.sh"
cd "$tmp" || exit 2

mm=(kernels/matmul_fwd/fp32/N64_C768_OC768 --quick --quiet)
fake="$tmp/fake.sh"
cat >"$fake" <<EOF
#!/usr/bin/env bash
real='$g'
if [ "\$1" = run ] && [ -n "\${FAKE_RUN:-}" ]; then
    rep=''
    while [ \$# -gt 0 ]; do [ "\$1" = --report ] && rep=\$2; shift; done
    sleep "\${FAKE_SLEEP:-0}"
    cp "\$FAKE_RUN" "\$rep"
    exit 0
fi
[ "\$1" = compare ] || exec "\$real" "\$@"
echo "\$*" >>"\${FAKE_LOG:-/dev/null}"
calls=\$(wc -l <"\${FAKE_LOG:-/dev/null}")
dirs=()
for a in "\$@"; do [ -d "\$a" ] && dirs+=("\$a"); done
case \${FAKE_COMPARE:-} in
    always4 | first4 | at3)
        if [ "\$FAKE_COMPARE" = always4 ] || { [ "\$FAKE_COMPARE" = first4 ] && [ "\$calls" -eq 1 ]; } ||
            { [ "\$FAKE_COMPARE" = at3 ] && [ "\$(ls "\${dirs[1]}"/*.json | wc -l)" -eq 3 ]; }; then
            echo "  UNDECIDED kernels/matmul_fwd [topology 1, backend cpu]: (the wrapper)"
            echo "needed: about 1 more pairs would decide kernels/matmul_fwd time_us"
            exit 4
        fi ;;
esac
exec "\$real" "\$@"
EOF
chmod +x "$fake"

# --- ab.sh: refusals ---------------------------------------------------------------
abx=(bash "$ab" --gauntlet "$g" --base "$g" --new "$g")
expect 2 "--max-pairs 2 is below --pairs 3" "${abx[@]}" --pairs 3 --max-pairs 2 -- "${mm[@]}"
expect 2 "--max-pairs 4 is below --pairs 5" "${abx[@]}" --max-pairs 4 -- "${mm[@]}"
expect 2 "--pairs 'three': a whole number" "${abx[@]}" --pairs three -- "${mm[@]}"
expect 2 "--max-pairs '1e3': a whole number" "${abx[@]}" --max-pairs 1e3 -- "${mm[@]}"
expect 2 "--budget-min 'soon': minutes, a positive number" "${abx[@]}" --budget-min soon -- "${mm[@]}"
expect 2 "--budget-min '0': minutes, a positive number" "${abx[@]}" --budget-min 0 -- "${mm[@]}"
expect 2 "--spending 'linear': pocock or obf" "${abx[@]}" --spending linear -- "${mm[@]}"
expect 2 "--max-pairs needs a value" "${abx[@]}" --max-pairs
expect 0 "--budget-min MIN +a wall-clock budget" bash "$ab" --help
[ ! -e ab-out ] || fail "a refused job wrote ab-out"

# --- the fixed design: exactly 3 pairs, one look at 3:3 ----------------------------
expect 0 "ab: decided after 3 pairs \(verdict 0" env FAKE_LOG="$tmp/c1.log" bash "$ab" \
    --gauntlet "$fake" --base "$g" --new "$g" --pairs 3 --max-pairs 3 --out ab1 \
    --compare-args "--threshold 1000%" -- "${mm[@]}"
[ "$(cat ab1/pairs.txt 2>/dev/null)" = 3 ] || fail "fixed 3:3: pairs.txt is '$(cat ab1/pairs.txt 2>/dev/null)', not 3"
count() { find "$@" -name '*.json' | wc -l; }
[ "$(count ab1/base ab1/new)" -eq 6 ] || fail "fixed 3:3: not 3 reports a side"
cmp -s ab1/compare-3.txt ab1/compare.txt || fail "fixed 3:3: no compare-3.txt equal to compare.txt"
[ "$(wc -l <c1.log)" -eq 1 ] || fail "fixed 3:3: compare ran $(wc -l <c1.log) times, not once"
grep -q -- "--paired --sequential 3:3 " c1.log || fail "fixed 3:3: compare was not asked for --sequential 3:3 ($(cat c1.log))"

# --- an undecided look adds one pair (ABBA: pair 4 runs NEW first) ------------------
out=$(env FAKE_LOG="$tmp/c2.log" FAKE_COMPARE=first4 bash "$ab" --gauntlet "$fake" --base "$g" \
    --new "$g" --pairs 3 --max-pairs 6 --spending obf --out ab2 --compare-args "--threshold 1000%" \
    -- "${mm[@]}" 2>&1)
rc=$?
[ "$rc" -eq 0 ] || { fail "undecided then decided: exit $rc, not 0"; tail -5 <<<"$out"; }
grep -q "ab: look at 3 pairs: undecided; needed: about 1 more" <<<"$out" || fail "the undecided look is not reported"
grep -q "ab: decided after 4 pairs (verdict 0" <<<"$out" || fail "not 'decided after 4 pairs'"
[ "$(cat ab2/pairs.txt 2>/dev/null)" = 4 ] || fail "undecided at 3: pairs.txt is not 4"
for f in ab2/compare-3.txt ab2/compare-4.txt ab2/base/run4.json ab2/new/run4.json; do
    [ -s "$f" ] || fail "undecided at 3, decided at 4: no $f"
done
grep -q '^needed: ' ab2/compare-3.txt || fail "compare-3.txt lacks the undecided look's needed: line"
[ "$(grep -c -- '--sequential 3:6 --spending obf' c2.log)" -eq 2 ] || fail "the looks were not both 3:6 with --spending obf"
first_new=$(grep -n 'ab: pair 4: new' <<<"$out" | cut -d: -f1)
first_base=$(grep -n 'ab: pair 4: base' <<<"$out" | cut -d: -f1)
[ "${first_new:-9999}" -lt "${first_base:-0}" ] || fail "pair 4 did not run NEW before BASE (ABBA)"

# --- undecided to the end: the budget in pairs, then in minutes ---------------------
# (FAKE_RUN: the runs copy a report, 1 s each in the minutes test)
FAKE_RUN="$tmp/ab1/base/run1.json" FAKE_COMPARE=always4 expect 4 \
    "ab: undecided after 4 pairs \(budget of 4 pairs spent\)" bash "$ab" --gauntlet "$fake" \
    --base "$fake" --new "$fake" --pairs 3 --max-pairs 4 --out ab3 -- "${mm[@]}"
[ "$(cat ab3/pairs.txt 2>/dev/null)" = 4 ] || fail "budget of 4 pairs: pairs.txt is not 4"
grep -q '^needed: ' ab3/compare.txt || fail "the undecided job's compare.txt lacks needed:"
# 3 pairs take over 6 s; 7.5 s leave no room for a fourth of about 2 s
FAKE_RUN="$tmp/ab1/base/run1.json" FAKE_SLEEP=1 FAKE_COMPARE=always4 expect 4 \
    "ab: undecided after 3 pairs \(budget of 0.125 minutes spent" bash "$ab" --gauntlet "$fake" \
    --base "$fake" --new "$fake" --pairs 3 --budget-min 0.125 --out ab4 -- "${mm[@]}"
[ "$(cat ab4/pairs.txt 2>/dev/null)" = 3 ] || fail "--budget-min: pairs.txt is not 3"
[ ! -e ab4/compare-4.txt ] || fail "--budget-min: a look at 4 pairs past the budget"

# --- bench_gate.sh: a pool beside a noisy neighbour ---------------------------------
export GAUNTLET="$g"
expect 2 "pool: the run's arguments go after --" bash "$bench" pool 3 pool x y kernels
expect 2 "pool: PAIRS 'x': a whole number" bash "$bench" pool x pool -- "${mm[@]}"
LOAD=1 expect 0 "pool: 3 pairs in pool" bash "$bench" pool 3 pool -- "${mm[@]}"
[ "$(count pool/base pool/new)" -eq 6 ] || fail "pool 3: not 3 reports a side"
pid=$(sed -n 's/.*pid \([0-9]*\), started.*/\1/p' pool/load.txt 2>/dev/null)
[ -n "$pid" ] || fail "pool LOAD=1: load.txt names no pid"
grep -q "^stopped (pid $pid)" pool/load.txt || fail "pool LOAD=1: load.txt does not record the stop"
[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && { fail "the noisy neighbour $pid still runs"; kill "$pid"; }
expect 2 "already holds runs" bash "$bench" pool 3 pool -- "${mm[@]}"

# --- trials: refusals, then a synthetic 10x on matmul_fwd in 2 trials of 3 pairs -----
export GAUNTLET="$fake" REPORT_EDIT="$report_edit" SEED=7
expect 2 "INJECT 'case:matmul_fwd'" bash "$bench" trials pool 2 3 case:matmul_fwd
expect 2 "FACTOR 'x' is not a number" bash "$bench" trials pool 2 3 case:matmul_fwd:x
expect 2 "not 'size:'" bash "$bench" trials pool 2 3 size:N64:2
expect 2 "4 pairs a trial, but the pool pool has 3" bash "$bench" trials pool 2 4
expect 2 "pairs 2: 3 or more" bash "$bench" trials pool 2 2
# the real pool: its verdicts are the noise's (LOAD=1), so only the row's form is checked
out=$(TRIALS_OUT="$tmp/tr1" FAKE_LOG="$tmp/c5.log" bash "$bench" trials pool 2 3 case:matmul_fwd:10 2>&1)
grep -qE "^\| case:matmul_fwd x10 \| 3 \| 2 \| [0-2] \| [0-2] \| [0-2] \| [0-2] \|$" <<<"$out" ||
    { fail "trials: no table row"; tail -5 <<<"$out"; }
grep -q "warning: 2 trials x 3 pairs = 6 > the pool's 3 pairs" <<<"$out" || fail "no warning for shared pairs"
grep -q "seed 7 (SEED=7 repeats the draw)" <<<"$out" || fail "trials: the seed is not printed"
grep -q "^trial 2: pairs .*; 3 used; exit [0-9]" tr1/trials.txt || fail "trials: trial 2's record is missing"
grep -q -- "--paired --sequential 3:3 " c5.log || fail "trials: compare was not asked for --sequential 3:3"
python3 - "$tmp" <<'PY' || fail "trials: the NEW runs are not the pool's times 10"
import json, sys
t = sys.argv[1]
def med(f): return json.load(open(f))["results"][0]["metrics"]["time_us"]["median"]
pool = sorted(med("%s/pool/new/run%d.json" % (t, i)) for i in (1, 2, 3))
trial = sorted(med("%s/tr1/trial1/new/run00%d.json" % (t, i)) / 10 for i in (1, 2, 3))
assert all(abs(a - b) < 1e-9 * a for a, b in zip(pool, trial)), (pool, trial)
PY
TRIALS_OUT="$tmp/tr2" expect 0 "^\| A/A \(no injection\) \| 3 \| 2 \| n/a \(exit 3: [0-2]\) \| [0-2] \| [0-2] \| [0-2] \|$" \
    bash "$bench" trials pool 2 3
# a pool without noise: one run copied into 4 pairs, with "groups": ["gemm"] as the
# suites record it. The verdicts are then certain: A/A may ship, 10x is named. Every
# fourth timed block is marked as having waited a fifth of its time for a CPU, so the
# copies are runs on a loaded machine (GT_STATE_LOADED, 4% of blocks) on any machine:
# the neighbour above does not make every machine wait (CI's did not), and a kernel
# without schedstats records no waits.
mkdir -p same/base same/new
for i in 1 2 3 4; do
    for side in base new; do
        python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for r in d["results"]:
    r["groups"] = ["gemm"]
    for m in r["metrics"].values():
        n = len(m.get("samples") or [])
        w = m.get("cpu_wait") or []  # a kernel without schedstats records none
        if n:
            m["cpu_wait"] = [0.2 if k % 4 == 0 else (k < len(w) and w[k]) or 0.0
                             for k in range(n)]
json.dump(d, open(sys.argv[2], "w"))' pool/base/run1.json "same/$side/run$i.json"
    done
done
TRIALS_OUT="$tmp/tr3" expect 0 "^\| A/A \(no injection\) \| 3 \| 2 \| n/a \(exit 3: 0\) \| 0 \| 2 \| 0 \|$" \
    bash "$bench" trials same 2 3
TRIALS_OUT="$tmp/tr4" expect 0 "^\| group:gemm x10 \| 3 \| 2 \| 2 \| 0 \| 0 \| 0 \|$" \
    bash "$bench" trials same 2 3 group:gemm:10
TRIALS_OUT="$tmp/tr5" expect 0 "^\| case:gelu x10 \| 3 \| 1 \| 0 \| 0 \| 1 \| 0 \|$" \
    bash "$bench" trials same 1 3 case:gelu:10

# --- unpaired and history: B base runs against K new ones, on the noiseless pool --------
# (its copies are runs on a loaded machine, where the gate needs 3 runs a side to decide)
GAUNTLET="$g" TRIALS_OUT="$tmp/tr7" expect 0 \
    "^\| A/A \(no injection\) \(unpaired\) \| 3 against 3 \| 2 \| n/a \(exit 3: 0\) \| 0 \| 2 \| 0 \| 3 \| 3 \|$" \
    bash "$bench" unpaired same 2 3 3
GAUNTLET="$g" TRIALS_OUT="$tmp/tr8" expect 0 \
    "^\| group:gemm x10 \(unpaired\) \| 3 against 3 \| 2 \| 2 \| 0 \| 0 \| 0 \| 3 \| 3 \|$" \
    bash "$bench" unpaired same 2 3 3 group:gemm:10
# history needs runs of their own (the noiseless pool's copies share one run.id): the
# real pool, whose verdicts are the noise's, so only the row's form is checked
GAUNTLET="$g" TRIALS_OUT="$tmp/tr9" expect 0 \
    "^\| A/A \(no injection\) \(history\) \| 2 against 1 \| 1 \| n/a \(exit 3: [01]\) \| [01] \| [01] \| [01] \| 1 \| 1 \|$" \
    bash "$bench" history pool 1 2 1
grep -qE "^trial 1: base .*; new .*; exit [034];" tr9/trials.txt ||
    fail "history: the gate did not judge (trials.txt: $(head -1 tr9/trials.txt 2>/dev/null))"
expect 2 "B 5 and K 1 runs a side, but the pool same has 4" bash "$bench" unpaired same 1 5 1
# K as FIRST:MAX, the design over NEW runs: undecided at the first look (the wrapper) and at
# the second (2 runs on a loaded machine), decided at the third, each with --sequential 1:3
GAUNTLET="$fake" FAKE_LOG="$tmp/fake_u.log" FAKE_COMPARE=first4 TRIALS_OUT="$tmp/tr10" expect 0 \
    "^\| A/A \(no injection\) \(unpaired\) \| 3 against 1:3 \| 1 \| n/a \(exit 3: 0\) \| 0 \| 1 \| 0 \| 3 \| 3 \|$" \
    bash "$bench" unpaired same 1 3 1:3
[ "$(grep -c -- "--sequential 1:3" "$tmp/fake_u.log" 2>/dev/null)" = 3 ] ||
    fail "unpaired 1:3: not three looks with --sequential 1:3 ($(cat "$tmp/fake_u.log" 2>/dev/null))"
expect 2 "MAX 1: 2 or more" bash "$bench" unpaired same 1 3 2:1

# --- adaptive: undecided at 3 pairs (the wrapper), decided at the 4th -----------------
TRIALS_OUT="$tmp/tr6" FAKE_COMPARE=at3 expect 0 \
    "^\| metric:time_us x10 \| 3:4 \| 2 \| 2 \| 0 \| 0 \| 0 \| 4 \| 4 \|$" \
    bash "$bench" adaptive same 2 3 4 metric:time_us:10
[ -s tr6/trial1/compare-3.txt ] || fail "adaptive: trial 1 kept no look at 3 pairs"
[ "$(count tr6/trial1/new)" -eq 4 ] || fail "adaptive: trial 1 did not end with 4 pairs"
expect 2 "5 pairs a trial, but the pool same has 4" bash "$bench" adaptive same 2 3 5

# shellcheck disable=SC2154  # set by lib.sh
if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "ab: all passed"
