#!/usr/bin/env bash
# Example job: gate a driver / CUDA / cuDNN / NCCL upgrade (docs/ci-gating.md).
#
#   ci/jobs/gate.sh --baseline reports/baselines/h100/gate.json [options] -- RUN-ARGS...
#
# RUN-ARGS are `gauntlet run`'s (suites, --backend, --quick, --topologies ...) and
# must be the same for the baseline and every later run: they are part of each
# result's identity. The job runs them on the stack it finds, then
# `gauntlet compare BASELINE NEW`, and exits with the gate's verdict:
#
#   0  NEW may ship (or, with --accept and no baseline yet, NEW is the first baseline)
#   3  NEW must not ship: a slower metric or family, a failed check, a missing or
#      failed result
#   4  undecided: a family (or a metric in no family) is slower than the threshold
#      by its estimate, not shown; compare's `needed:` line says how many more
#      runs would decide: keep more baseline runs (--baseline DIR/) or run again;
#      or that a run on a quiet machine would (times with no record of their
#      waits for a CPU, on a loaded machine, or NEW's runs beside a neighbour
#      that the baseline's runs did not have: the job adds no runs for them).
#      The baseline is never replaced on 4
#   5  not comparable: NEW ran on another machine class than the baseline (CPU or
#      GPU model, topology, threads per rank, ranks); the baseline stays
#   2  the job could not decide: a bad option, no gauntlet binary, no baseline
#      (without --accept), or `gauntlet run` ended in an error (see OUT/run.log)
#
# Options:
#   --baseline FILE   the last good report of this machine class (required), or
#   --baseline DIR/   a directory of the last good runs (a trailing / or an
#                     existing directory): their spread is then each metric's
#                     measured noise, a sharper gate than one report
#   --accept          when the gate passes, NEW becomes the baseline (written
#                     atomically; a directory keeps the newest GATE_KEEP runs,
#                     default 5); with no baseline yet, a run whose checks all
#                     passed becomes the first one
#   --out DIR         where the job writes (default gate-out): env.txt, run.log,
#                     new.json (new/runK.json in a design of several runs),
#                     compare.txt, junit.xml, compare.html
#   --gauntlet PATH   the binary (default: build/harness/gauntlet beside this script)
#   --threshold X%    compare's minimum effect size (default: compare's, 5%)
#   --runs N[:M]      N runs of the new stack, judged as one side; with M, an
#                     adaptive design: while the gate is undecided (4), one
#                     more run, up to M; each look is tested at its share of
#                     alpha (compare --sequential N:M), so the chance of a
#                     false alarm stays alpha over all looks. M needs a
#                     baseline directory (--baseline DIR/: its runs' spread is
#                     what one more run is judged against). Default: 1:5
#                     with a baseline directory (one run where that decides,
#                     as on a quiet machine; on a loaded one a gate decides
#                     from 3 runs: docs/ci-gating.md, "The gate job's
#                     default"), 1 with a baseline file; --runs 1 is one run
#                     and one look. With M, writes OUT/new/runK.json and
#                     runK.log, compare-K.txt (the look at K runs) and
#                     compare.txt (the last); --accept keeps every run of a
#                     pass
#
# A launcher for multi-rank runs goes in GATE_LAUNCHER, e.g.
# GATE_LAUNCHER="mpirun -np 8" or "srun"; it is split on spaces.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
gauntlet="$here/../../build/harness/gauntlet"
baseline='' out=gate-out accept=0 threshold='' runs=''

die() { echo "gate: $*" >&2; exit 2; }
need() { if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value (ci/jobs/gate.sh --help)"; fi; }
is_dir() { [ -d "$baseline" ] || [[ "$baseline" == */ ]]; }
# the baseline replaced by NEW in one rename (a directory: NEW added in one
# rename, the oldest runs beyond GATE_KEEP removed): a reader never sees half a file
store() { # store REPORT INDEX (the order of the job's runs)
    if is_dir; then
        local keep=${GATE_KEEP:-5} name
        # several runs of one job stored in one second keep their order
        name=$(date -u +%Y%m%dT%H%M%SZ)-$$-$(printf '%03d' "$2").json
        mkdir -p "$baseline" && cp "$1" "$baseline/.$name.tmp" &&
            mv -f "$baseline/.$name.tmp" "$baseline/$name" || return 1
        # names sort by time: drop all but the newest $keep
        ls "$baseline"/*.json | sort | head -n -"$keep" | while read -r old; do rm -f "$old"; done
        return 0
    fi
    mkdir -p "$(dirname "$baseline")" && cp "$1" "$baseline.tmp.$$" &&
        mv -f "$baseline.tmp.$$" "$baseline"
}
# a baseline exists: the file, or a directory holding a report
have_baseline() {
    if is_dir; then compgen -G "$baseline/*.json" >/dev/null; else [ -e "$baseline" ]; fi
}

while [ $# -gt 0 ]; do
    case $1 in
        --baseline) need "$@"; baseline=$2; shift 2 ;;
        --out) need "$@"; out=$2; shift 2 ;;
        --gauntlet) need "$@"; gauntlet=$2; shift 2 ;;
        --threshold) need "$@"; threshold=$2; shift 2 ;;
        --runs) need "$@"; runs=$2; shift 2 ;;
        --accept) accept=1; shift ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        --) shift; break ;;
        *) die "unknown option '$1' (the run's own arguments go after --)" ;;
    esac
done
[ -n "$baseline" ] || die "--baseline FILE is required: the last good report of this machine class"
[ $# -gt 0 ] || die "nothing to run: give gauntlet run's arguments after --, e.g. -- collectives --quick"
for a in "$@"; do
    case $a in
        --report | --report=* | --baseline | --baseline=*)
            die "'$a' among the run's arguments: the job passes the report and compares itself" ;;
    esac
done
[ -x "$gauntlet" ] || die "no gauntlet binary at $gauntlet: build it (make build) or pass --gauntlet PATH"
# the default design: more runs while undecided where a baseline directory can judge them
if [ -z "$runs" ]; then
    runs=1
    is_dir && runs=1:5
fi
first=${runs%%:*} most=${runs##*:}
case $first:$most in
    *[!0-9:]* | :* | *: ) die "--runs '$runs': N or N:M, whole numbers of runs (e.g. 1:3)" ;;
esac
first=$((10#$first)) most=$((10#$most))
[ "$first" -ge 1 ] && [ "$most" -le 100 ] || die "--runs '$runs': N from 1, M at most 100"
[ "$most" -ge "$first" ] || die "--runs $runs: M below N (the budget must hold the first look; --runs $first is one look)"
if [ "$most" -gt 1 ] && ! is_dir; then
    die "--runs $runs needs a baseline directory (--baseline DIR/): one baseline report has no spread to judge several runs against"
fi
case ${GATE_KEEP:-5} in '' | *[!0-9]* | 0) die "GATE_KEEP='${GATE_KEEP:-}': a whole number of runs, 1 or more" ;; esac
if [ -e "$baseline" ] && [ ! -r "$baseline" ]; then die "cannot read the baseline $baseline"; fi
if ! have_baseline && [ "$accept" -eq 0 ]; then
    die "no baseline at $baseline: run this job once with --accept on the current (known good) stack"
fi
mkdir -p "$out" || die "cannot create the output folder $out"

read -r -a launcher <<<"${GATE_LAUNCHER:-}"
cmp_opts=()
[ -n "$threshold" ] && cmp_opts=(--threshold "$threshold")

# 1. the stack under test, as gauntlet sees it (the report has it too)
"$gauntlet" env >"$out/env.txt" 2>&1 || echo "gate: gauntlet env failed (see $out/env.txt); going on" >&2

# 2. the runs; a failed check (exit 1) is the gate's to judge, an error is not.
# One run (the default) is OUT/new.json; a design of several, OUT/new/runK.json.
many=0
[ "$most" -gt 1 ] && many=1
rm -rf "$out/new.json" "$out/new" "$out"/compare-*.txt
if [ "$many" -eq 1 ]; then mkdir -p "$out/new" || die "cannot create $out/new"; fi
failed=0 done_runs=0
run_new() { # the next run of the new stack: OUT/new.json or OUT/new/runK.json
    done_runs=$((done_runs + 1))
    local log=$out/run.log rep=$out/new.json rc
    if [ "$many" -eq 1 ]; then rep=$out/new/run$done_runs.json log=$out/new/run$done_runs.log; fi
    "${launcher[@]}" "$gauntlet" run "$@" --report "$rep" >"$log" 2>&1
    rc=$?
    tail -n 12 "$log"
    [ "$many" -eq 1 ] && cp "$log" "$out/run.log"
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
        die "gauntlet run exited $rc: the run could not be judged (see $log)"
    fi
    [ -s "$rep" ] || die "gauntlet run wrote no report (see $log)"
    [ "$rc" -eq 0 ] || failed=$((failed + 1))
}
# what NEW is for compare: the report, or the directory of the runs so far
new_side() { if [ "$many" -eq 1 ]; then echo "$out/new"; else echo "$out/new.json"; fi; }
new_reports() { # in the order they ran
    if [ "$many" -eq 0 ]; then echo "$out/new.json"; return; fi
    local k
    for k in $(seq 1 "$done_runs"); do echo "$out/new/run$k.json"; done
}
keep_all() { # every run made: the baseline (a file keeps the last)
    local k=0 rep
    while read -r rep; do
        k=$((k + 1))
        store "$rep" "$k" || return 1
    done < <(new_reports)
}
while [ "$done_runs" -lt "$first" ]; do run_new "$@"; done

# 3. no baseline yet (--accept): runs whose checks all passed become it
if ! have_baseline; then
    if [ "$failed" -ne 0 ]; then
        echo "gate: no baseline at $baseline, and $failed run(s) had failed checks: not stored (see $out/run.log)" >&2
        exit 3
    fi
    keep_all || die "cannot write the baseline $baseline"
    echo "gate: no baseline yet: this run is now the baseline ($baseline)"
    exit 0
fi

# 4. the verdict: one look, or looks while undecided and the budget holds runs
seq_opts=()
[ "$many" -eq 1 ] && seq_opts=(--sequential "$first:$most")
look() {
    "$gauntlet" compare "$baseline" "$(new_side)" --junit "$out/junit.xml" "${cmp_opts[@]}" \
        "${seq_opts[@]}" >"$out/compare.txt" 2>&1
    verdict=$?
    [ "$many" -eq 1 ] && cp "$out/compare.txt" "$out/compare-$done_runs.txt"
}
look
# more runs decide nothing where every undecided one waits for a quiet machine
# (times with no record of their waits for a CPU, on a loaded machine; NEW's
# runs on a loaded machine against a baseline's on a quiet one)
quiet_only() { grep -q '^needed: a run on a quiet machine' "$out/compare.txt"; }
while [ "$verdict" -eq 4 ] && [ "$done_runs" -lt "$most" ] && ! quiet_only; do
    echo "gate: look at $done_runs run(s): undecided; $(grep -m1 '^needed: ' "$out/compare.txt" || echo 'compare said no more'); one more run"
    run_new "$@"
    look
done
cat "$out/compare.txt"
[ "$many" -eq 1 ] && echo "gate: judged on $done_runs run(s) of the new stack (--runs $first:$most)"
# the page sets NEW beside one report: a directory's newest run
page_base=$baseline page_new=$(new_reports | tail -n 1)
is_dir && page_base=$(ls "$baseline"/*.json | sort | tail -n 1)
"$gauntlet" report "$page_base" "$page_new" --html "$out/compare.html" >/dev/null 2>&1 ||
    echo "gate: the HTML page could not be written (the verdict stands)" >&2
case $verdict in
    0)
        echo "gate: PASS: NEW may ship"
        if [ "$accept" -eq 1 ]; then
            keep_all || die "the gate passed, but the baseline $baseline could not be replaced"
            echo "gate: NEW is the baseline now ($baseline)"
        fi
        exit 0 ;;
    3) echo "gate: FAIL: NEW must not ship (details above, $out/junit.xml, $out/compare.html)"; exit 3 ;;
    4)
        echo "gate: UNDECIDED: a change above the threshold is not yet shown or ruled out (see the needed: line above)"
        quiet_only && echo "gate: the machine was loaded (another process) and what is undecided needs a quiet machine (no record of its waits for a CPU, or NEW's runs beside a neighbour the baseline's runs did not have): run the job again when the machine is left to it"
        # one baseline report and one run is one run a side, which assumes how runs differ
        is_dir || echo "gate: a baseline of one report is one run a side: keep a baseline directory (--baseline DIR/, --accept keeps GATE_KEEP runs) and the job adds runs of NEW (--runs 1:5) until the gate decides"
        exit 4 ;;
    5) echo "gate: NOT COMPARABLE: NEW ran on another machine class than the baseline (see machine class above); the baseline stays"; exit 5 ;;
    *) die "gauntlet compare exited $verdict (see $out/compare.txt)" ;;
esac
