#!/usr/bin/env bash
# The gate's own benchmark (docs/ci-gating.md, "How far the gate can be
# trusted"): how often it fails identical builds, and how often it catches an
# injected slowdown.
#
#   ci/bench_gate.sh aa PAIRS [SUITES] [OUT]
#       PAIRS + 1 runs of `gauntlet run SUITES --quick` back to back (SUITES:
#       a comma list, default every suite); each run compared with the one
#       before it, as a whole and suite by suite (compare --suite). Prints a
#       table of clean pairs (exit 0) and every metric that failed a pair.
#   ci/bench_gate.sh detect TRIALS NAME [FACTOR] [BASE_RUNS] [NEW_RUNS] [OUT]
#       BASE_RUNS runs (default 10) of the suite NAME belongs to, kept as one
#       baseline directory; then TRIALS times NEW_RUNS runs (default 3) with
#       --inject-slowdown NAME:FACTOR (default 1.2), each trial's runs a
#       directory compared with the baseline: a hit is exit 3 with NAME's
#       results slower, a false alarm anything else slower. NAME may be a
#       collective (allreduce ...): the collectives suite then runs, and
#       RUN_OPTS="--topologies 2" gives it two ranks to time.
#   ci/bench_gate.sh gate RUNS [SUITES] [OUT]
#       the upgrade job as a user runs it with one report as its baseline:
#       `ci/jobs/gate.sh --accept -- SUITES --quick` RUNS + 1 times (the first
#       run becomes the baseline, each passing run replaces it); counts the
#       runs that passed.
#
# REUSE=1 with an OUT that holds the runs of an earlier call judges them again
# without running anything (aa, gate): for a change to compare alone.
#
# GAUNTLET (default build/harness/gauntlet) is the binary; extra options for
# `run` go in RUN_OPTS (e.g. "--topologies 1,2", make run's), for compare in
# COMPARE_OPTS (e.g. "--run-noise 5%"). Nothing else may run on the machine
# meanwhile if the figures are to mean this machine's noise.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
g=${GAUNTLET:-$here/build/harness/gauntlet}
opts=${COMPARE_OPTS:-}
read -r -a run_opts <<<"${RUN_OPTS:-}"
[ -x "$g" ] || { echo "bench_gate.sh: no gauntlet at $g (make build, or set GAUNTLET)" >&2; exit 2; }

usage() { sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

# compare BASE NEW [args]: prints the exit code, then the SLOWER/MISSING/FAILED lines
cmp_pair() {
    local out rc
    # shellcheck disable=SC2086
    out=$("$g" compare "$@" $opts 2>&1)
    rc=$?
    echo "$rc"
    printf '%s\n' "$out" | grep -E '^  (SLOWER|MISSING|FAILED) ' || true
}

aa() {
    local pairs=$1 suites=${2:-} out=${3:-$(mktemp -d /tmp/gt_gate_aa.XXXXXX)}
    mkdir -p "$out"
    local sel=()
    [ -n "$suites" ] && sel=("${suites//,/ }")
    echo "A/A: $((pairs + 1)) runs of gauntlet run ${suites:-(every suite)} --quick ${RUN_OPTS:-} into $out" >&2
    for i in $(seq 0 "$pairs"); do
        [ "${REUSE:-0}" = 1 ] && [ -s "$out/run$i.json" ] && continue
        # shellcheck disable=SC2068
        "$g" run ${sel[@]} --quick --quiet "${run_opts[@]}" --report "$out/run$i.json" >"$out/run$i.log" 2>&1 ||
            echo "  run $i exited $? (its checks: see $out/run$i.log)" >&2
    done
    local names
    names=$(python3 -c 'import json,sys; print(" ".join(sorted({r["suite"] for r in json.load(open(sys.argv[1]))["results"]})))' "$out/run0.json")
    declare -A clean
    local rows="all $names"
    for r in $rows; do clean[$r]=0; done
    : >"$out/failures.txt"
    for i in $(seq 1 "$pairs"); do
        for r in $rows; do
            local args=("$out/run$((i - 1)).json" "$out/run$i.json")
            [ "$r" != all ] && args+=(--suite "$r")
            local res rc
            res=$(cmp_pair "${args[@]}")
            rc=$(printf '%s\n' "$res" | head -1)
            if [ "$rc" = 0 ]; then
                clean[$r]=$((clean[$r] + 1))
            else
                printf 'pair %d (%s): exit %s\n%s\n' "$i" "$r" "$rc" \
                    "$(printf '%s\n' "$res" | tail -n +2)" >>"$out/failures.txt"
            fi
        done
    done
    echo "| compared | clean A/A pairs (exit 0) |"
    echo "|---|---|"
    for r in $rows; do echo "| $r | ${clean[$r]} / $pairs |"; done
    echo
    echo "failed pairs and what failed them: $out/failures.txt"
    cat "$out/failures.txt"
}

detect() {
    local trials=$1 name=$2 factor=${3:-1.2} nbase=${4:-10} nnew=${5:-3}
    local out=${6:-$(mktemp -d /tmp/gt_gate_detect.XXXXXX)}
    local first=${name%%/*} suite=kernels
    case "$first" in
        allreduce | reduce | broadcast | allgather | reduce_scatter | alltoall | sendrecv)
            suite=collectives ;;
    esac
    mkdir -p "$out/base"
    echo "detect: $nbase baseline runs of '$suite --quick', then $trials trials of $nnew runs with --inject-slowdown $name:$factor, in $out" >&2
    for i in $(seq -w 1 "$nbase"); do
        "$g" run "$suite" --quick --quiet "${run_opts[@]}" --report "$out/base/run$i.json" >/dev/null 2>&1
    done
    local hits=0 others=0 missed=0
    : >"$out/trials.txt"
    for t in $(seq 1 "$trials"); do
        mkdir -p "$out/trial$t"
        for i in $(seq -w 1 "$nnew"); do
            "$g" run "$suite" --quick --quiet "${run_opts[@]}" --inject-slowdown "$name:$factor" \
                --report "$out/trial$t/run$i.json" >/dev/null 2>&1
        done
        local res rc lines hit=0 other=0
        res=$(cmp_pair "$out/base" "$out/trial$t")
        rc=$(printf '%s\n' "$res" | head -1)
        lines=$(printf '%s\n' "$res" | tail -n +2)
        while IFS= read -r l; do
            [ -z "$l" ] && continue
            case "$l" in
                *" $suite/$name"[/\ ]*) hit=1 ;;
                *) other=1 ;;
            esac
        done <<<"$lines"
        [ "$rc" = 3 ] && [ $hit = 1 ] && hits=$((hits + 1))
        [ $hit = 0 ] && missed=$((missed + 1))
        [ $other = 1 ] && others=$((others + 1))
        printf 'trial %d: exit %s\n%s\n' "$t" "$rc" "$lines" >>"$out/trials.txt"
        # shellcheck disable=SC2086
        "$g" compare "$out/base" "$out/trial$t" --verbose $opts 2>/dev/null |
            grep -A2 "^$suite/${name}[/ ]" | grep -E "^$suite|time_us " >>"$out/trials.txt"
    done
    echo "| injected | baseline runs / runs per trial | caught (exit 3, named) | missed | trials with anything else flagged |"
    echo "|---|---|---|---|---|"
    echo "| $name x$factor | $nbase / $nnew | $hits / $trials | $missed | $others |"
    echo
    cat "$out/trials.txt"
}

gate_runs() {
    local runs=$1 suites=${2:-kernels,collectives,train} out=${3:-$(mktemp -d /tmp/gt_gate_job.XXXXXX)}
    local sel=()
    read -r -a sel <<<"${suites//,/ }"
    mkdir -p "$out"
    echo "gate: ci/jobs/gate.sh --accept -- ${sel[*]} --quick ${RUN_OPTS:-}, $((runs + 1)) times, one report as the baseline, in $out" >&2
    local passed=0
    : >"$out/failures.txt"
    for i in $(seq 0 "$runs"); do
        local rc
        if [ "${REUSE:-0}" = 1 ] && [ -s "$out/job$i/new.json" ]; then
            # the job again, from its report: compare with the baseline as it
            # stood, and a pass becomes the baseline
            if [ "$i" = 0 ]; then
                cp "$out/job0/new.json" "$out/baseline.json"
                continue
            fi
            # shellcheck disable=SC2086
            "$g" compare "$out/baseline.json" "$out/job$i/new.json" $opts >"$out/job$i/compare.txt" 2>&1
            rc=$?
            [ "$rc" = 0 ] && cp "$out/job$i/new.json" "$out/baseline.json"
        else
            "$here/ci/jobs/gate.sh" --gauntlet "$g" --baseline "$out/baseline.json" \
                --accept --out "$out/job$i" -- "${sel[@]}" --quick "${run_opts[@]}" >"$out/job$i.log" 2>&1
            rc=$?
        fi
        [ "$i" = 0 ] && { echo "  first run (the baseline): exit $rc" >&2; continue; }
        if [ "$rc" = 0 ]; then
            passed=$((passed + 1))
        else
            printf 'run %d: exit %s\n%s\n' "$i" "$rc" \
                "$(grep -E '^  (SLOWER|MISSING|FAILED) ' "$out/job$i/compare.txt" 2>/dev/null)" >>"$out/failures.txt"
        fi
    done
    echo "| gate.sh runs after the first (one report as the baseline) | passed (exit 0) |"
    echo "|---|---|"
    echo "| ${sel[*]} --quick ${RUN_OPTS:-} | $passed / $runs |"
    echo
    cat "$out/failures.txt"
}

case "${1:-}" in
    gate) [ $# -ge 2 ] || usage; shift; gate_runs "$@" ;;
    aa) [ $# -ge 2 ] || usage; shift; aa "$@" ;;
    detect) [ $# -ge 3 ] || usage; shift; detect "$@" ;;
    *) usage ;;
esac
