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
# The power experiment of the paired gate: a pool of interleaved pairs,
# measured once, then many trials drawn from it and judged as the job would.
#
#   ci/bench_gate.sh pool PAIRS OUT [BASE_CMD NEW_CMD] -- RUN-ARGS...
#       PAIRS pairs of `CMD run RUN-ARGS` in ABBA order (as ci/jobs/ab.sh runs
#       them) into OUT/base/runK.json and OUT/new/runK.json, no compare.
#       BASE_CMD and NEW_CMD (split on spaces) default to $GAUNTLET: an A/A
#       pool. LOAD=1 runs a noisy neighbour meanwhile, one busy process
#       (`yes >/dev/null`, one core's worth), started and stopped by its PID
#       and recorded in OUT/load.txt. REUSE=1 keeps the pairs OUT has and
#       runs the missing ones (a pool can grow).
#   ci/bench_gate.sh trials POOL TRIALS K [INJECT...]
#       TRIALS trials, each K pairs drawn from POOL at random without
#       replacement, the INJECT items applied to the trial's NEW runs, judged
#       by `compare --paired --sequential K:K` (the fixed design; a
#       --sequential in COMPARE_OPTS replaces it). Prints a markdown table:
#       | what | K pairs | trials | MUST NOT SHIP (exit 3) naming the target |
#       undecided (exit 4) | may ship (exit 0) | trials with anything else flagged |
#   ci/bench_gate.sh adaptive POOL TRIALS FIRST MAX [INJECT...]
#       the adaptive job replayed: each trial takes the pool's pairs in a
#       random order, looks at FIRST with `--sequential FIRST:MAX`, adds one
#       pair while compare exits 4, up to MAX. The table adds the median and
#       the largest number of pairs used.
#   ci/bench_gate.sh unpaired POOL TRIALS B K [INJECT...]
#   ci/bench_gate.sh history POOL TRIALS B K [INJECT...]
#       the unpaired modes replayed: each trial draws B runs of the pool's
#       base/ and K of its new/ (no run twice), the INJECT items applied to
#       the K. unpaired: `compare BASE_DIR NEW_DIR` (a baseline directory
#       against K candidate runs, not paired); history: the B runs recorded
#       with `history add` and the K gated with `history DB --gate` (a report
#       when K is 1, their directory otherwise). The same table as trials,
#       with the NEW runs used. K as FIRST:MAX replays the design over NEW
#       runs (ci/jobs/gate.sh --runs FIRST:MAX): FIRST runs, then one more
#       while the look (`--sequential FIRST:MAX`) is undecided, up to MAX.
#
#   INJECT: case:PREFIX:FACTOR  the time metrics (ns, us, ms, s) of results
#                               whose case starts with PREFIX, times FACTOR
#           group:G:FACTOR      of results whose "groups" holds G (gemm,
#                               memory, collective)
#           metric:NAME:FACTOR  metric NAME in every result
#   The target is named when a SLOWER line names a result the injection
#   changed, or a family holding one (its op over the shapes, a class of its
#   groups); without INJECT (A/A) anything slower is a false alarm. "anything
#   else flagged": SLOWER lines off the target, FAILED and MISSING lines.
#   A trial's directories, compare output and verdicts are kept under
#   TRIALS_OUT (default a new /tmp/gt_gate_trials.XXXXXX); SEED (default the
#   clock, printed) repeats a draw.
#
#   Caveats. The injection is synthetic: report_edit (REPORT_EDIT, default
#   beside the gauntlet binary) multiplies every recorded sample, which
#   assumes that a slowdown multiplies each sample; the real
#   `run --inject-slowdown` spins for (factor - 1) x the call's time and adds
#   its own noise (the detect mode measures that). Trials drawn from one pool
#   share pairs: when TRIALS x K exceeds the pool, they are not independent
#   (a warning says so), and the rates describe this pool as much as the
#   machine.
#
#   Real swaps as pools (then `trials out-blas 10 5`, `adaptive out-blas 10 5 12`):
#     ci/bench_gate.sh pool 15 out-blas 'env OPENBLAS_CORETYPE=Haswell build/harness/gauntlet' \
#         'env OPENBLAS_CORETYPE=Sandybridge build/harness/gauntlet' -- kernels --quick
#     ci/bench_gate.sh pool 15 out-threads build/harness/gauntlet \
#         'env OMP_NUM_THREADS=1 build/harness/gauntlet' -- kernels --quick
#     ci/bench_gate.sh pool 15 out-mpi build/harness/gauntlet \
#         'env OMPI_MCA_btl=self,tcp build/harness/gauntlet' -- collectives --quick --topologies 2
#   and the false-alarm rate and synthetic power on an A/A pool:
#     ci/bench_gate.sh pool 20 out-aa -- kernels --quick
#     ci/bench_gate.sh trials out-aa 20 5
#     ci/bench_gate.sh trials out-aa 20 5 group:gemm:1.1
#
# REUSE=1 with an OUT that holds the runs of an earlier call judges them again
# without running anything (aa, gate): for a change to compare alone.
#
# GAUNTLET (default build/harness/gauntlet) is the binary; extra options for
# `run` go in RUN_OPTS (e.g. "--topologies 1,2", make run's), for compare in
# COMPARE_OPTS (e.g. "--run-noise 5%"). Nothing else may run on the machine
# meanwhile if the figures are to mean this machine's noise.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
g=${GAUNTLET:-$here/build/harness/gauntlet}
opts=${COMPARE_OPTS:-}
read -r -a run_opts <<<"${RUN_OPTS:-}"
[ -x "$g" ] || { echo "bench_gate.sh: no gauntlet at $g (make build, or set GAUNTLET)" >&2; exit 2; }

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
die() { echo "bench_gate.sh: $*" >&2; exit 2; }

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

# --- the power experiment: a pool of pairs, trials drawn from it ----------------------

# a whole number of at least $3, or die naming $1
whole() {
    case $2 in '' | *[!0-9]*) die "$1 '$2': a whole number, $3 or more" ;; esac
    [ $((10#$2)) -ge "$3" ] || die "$1 $2: $3 or more"
}

pool() {
    [ $# -ge 3 ] || usage
    local pairs=$1 out=$2 bcmd=$g ncmd=$g
    shift 2
    if [ "$1" != -- ]; then
        [ $# -ge 3 ] || usage
        bcmd=$1 ncmd=$2
        shift 2
    fi
    [ "${1:-}" = -- ] || die "pool: the run's arguments go after --"
    shift
    [ $# -gt 0 ] || die "pool: nothing to run after --, e.g. -- kernels --quick"
    whole "pool: PAIRS" "$pairs" 1
    pairs=$((10#$pairs))
    local -a bc nc cmd
    read -r -a bc <<<"$bcmd"
    read -r -a nc <<<"$ncmd"
    mkdir -p "$out/base" "$out/new" || die "cannot create $out"
    if [ "${REUSE:-0}" != 1 ] && compgen -G "$out/base/run*.json" >/dev/null; then
        die "pool: $out already holds runs (REUSE=1 adds the missing pairs to them)"
    fi
    {
        echo "base: $bcmd"
        echo "new:  $ncmd"
        echo "run:  $* ${RUN_OPTS:-}"
        echo "pairs: $pairs, ABBA, started $(date -u +%FT%TZ), LOAD=${LOAD:-0}"
    } >"$out/pool.txt"
    if [ "${LOAD:-0}" = 1 ]; then
        # the noisy neighbour: one busy process, stopped by its PID however the pool ends
        yes >/dev/null 2>&1 </dev/null &
        load_pid=$! load_txt="$out/load.txt"
        trap stop_load EXIT
        trap 'exit 130' INT TERM
        echo "noisy neighbour: 'yes >/dev/null' (one busy process), pid $load_pid, started $(date -u +%FT%TZ)" \
            >"$load_txt"
    fi
    echo "pool: $pairs pairs into $out: base '$bcmd', new '$ncmd', run $* ${RUN_OPTS:-}${LOAD:+ (LOAD=$LOAD)}" >&2
    local k i side order rc
    for k in $(seq 1 "$pairs"); do
        printf -v i '%0*d' "${#pairs}" "$k"
        if [ $((k % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
        if [ "${REUSE:-0}" = 1 ] && [ -s "$out/base/run$i.json" ] && [ -s "$out/new/run$i.json" ]; then
            continue
        fi
        for side in $order; do
            if [ "$side" = base ]; then cmd=("${bc[@]}"); else cmd=("${nc[@]}"); fi
            "${cmd[@]}" run "$@" "${run_opts[@]}" --report "$out/$side/run$i.json" >"$out/$side/run$i.log" 2>&1
            rc=$?
            if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ] || [ ! -s "$out/$side/run$i.json" ]; then
                die "pool: the $side run of pair $i exited $rc without a report (see $out/$side/run$i.log)"
            fi
        done
        echo "  pair $i done" >&2
    done
    echo "pool: $pairs pairs in $out"
}

stop_load() {
    [ -n "${load_pid:-}" ] || return 0
    kill "$load_pid" 2>/dev/null
    wait "$load_pid" 2>/dev/null
    echo "stopped (pid $load_pid) $(date -u +%FT%TZ)" >>"$load_txt"
    load_pid=''
}

# the pool's pairs: the run names present in both base/ and new/, sorted
pool_pairs() {
    local f n
    for f in "$1"/base/run*.json; do
        n=${f##*/}
        [ -s "$1/new/$n" ] && echo "$n"
    done
}

# report_edit's options for the INJECT items (one per line), or die
inject_args() {
    local item kind what f
    for item in "$@"; do
        kind=${item%%:*} f=${item##*:} what=${item#*:}
        what=${what%:*}
        if [[ "$item" != *:*:* ]] || [ -z "$what" ]; then
            die "INJECT '$item': case:PREFIX:FACTOR, group:G:FACTOR or metric:NAME:FACTOR"
        fi
        [[ "$f" =~ ^[0-9]*[.]?[0-9]+$ ]] || die "INJECT '$item': FACTOR '$f' is not a number"
        case $kind in
            case) printf '%s\n' --scale-case "$what" '*' "$f" ;;
            group) printf '%s\n' --scale-group "$what" '*' "$f" ;;
            metric) printf '%s\n' --scale-metric "$what" "$f" ;;
            *) die "INJECT '$item': case:, group: or metric:, not '$kind:'" ;;
        esac
    done
}

# classify COMPARE_OUT NEW_REPORT INJECT...: prints "HIT OTHER" (1 or 0 each),
# then the flagged lines that are not the target. A SLOWER line names the
# target when the result or family it names holds a result the injection
# changed: the result itself (suite/case), its op's family (suite/op) or a
# class family of its groups (suite/[G]); for metric:NAME the line's metric
# must be NAME too. Any other SLOWER, FAILED or MISSING line is "else flagged".
classify() {
    python3 - "$@" <<'PY'
import json, re, sys
out, report, items = sys.argv[1], sys.argv[2], sys.argv[3:]
lines = [l for l in open(out, errors="replace").read().splitlines()
         if re.match(r"^  (SLOWER|MISSING|FAILED) ", l)]
res = json.load(open(report)).get("results", [])
targets = []  # per item: the names it reaches, and a metric the line must name (or None)
for it in items:
    kind, rest = it.split(":", 1)
    what = rest.rsplit(":", 1)[0]
    names = set()
    for r in res:
        if (kind == "case" and r["case"].startswith(what)
                or kind == "group" and what in (r.get("groups") or [])
                or kind == "metric" and what in (r.get("metrics") or {})):
            names.add("%s/%s" % (r["suite"], r["case"]))
            names.add("%s/%s" % (r["suite"], r["case"].split("/")[0]))
            names.update("%s/[%s]" % (r["suite"], g) for g in (r.get("groups") or []))
    targets.append((names, re.compile(r"\s" + re.escape(what) + r"(:|\s)") if kind == "metric" else None))
hit, other = 0, []
for l in lines:
    f = l.split()
    named = f[0] == "SLOWER" and any(f[1] in n and (m is None or m.search(l)) for n, m in targets)
    if named:
        hit = 1
    else:
        other.append(l)
print(hit, 1 if other else 0)
for l in other:
    print(l)
PY
}

# draw SEED TRIALS N PAIRS: TRIALS lines of N distinct pair indices (0-based)
draw() {
    python3 -c 'import random, sys
seed, trials, n, p = (int(a) for a in sys.argv[1:])
rng = random.Random(seed)
for _ in range(trials):
    print(" ".join(str(i) for i in rng.sample(range(p), n)))' "$@"
}

# add_pair POOL TRIAL_DIR J NAME: the pool's pair NAME as the trial's J-th,
# NEW with the injection
add_pair() {
    local j
    printf -v j 'run%03d.json' "$3"
    if ! cp "$1/base/$4" "$2/base/$j" || ! cp "$1/new/$4" "$2/new/$j"; then die "cannot copy pair $4 into $2"; fi
    if [ ${#inj[@]} -gt 0 ]; then
        "$report_edit" "$2/new/$j" "$2/new/$j" "${inj[@]}" || die "report_edit failed on $2/new/$j"
    fi
}

# one look: compare the trial; sets rc, hit, other, und
look() {
    local dir=$1 seqo=$2
    local -a so=()
    [[ " $opts " == *" --sequential "* ]] || so=(--sequential "$seqo")
    # shellcheck disable=SC2086
    "$g" compare --paired "${so[@]}" "$dir/base" "$dir/new" $opts >"$dir/compare.txt" 2>&1
    rc=$?
    verdict "$dir/compare.txt" "$dir/new/run001.json"
}

# verdict COMPARE_OUT NEW_REPORT: sets hit, other and others (classify) for the
# caller's items
verdict() {
    local res
    res=$(classify "$1" "$2" "${items[@]}")
    read -r hit other <<<"$(head -1 <<<"$res")"
    others=$(tail -n +2 <<<"$res")
}

# record HEAD DIR: a trial's lines in trials.txt: HEAD, its SLOWER and
# UNDECIDED lines, the needed: line and what else was flagged
record() {
    printf '%s\n' "$1"
    grep -E '^  (SLOWER|UNDECIDED) |^needed: ' "$2/compare.txt"
    [ -n "$others" ] && printf 'else flagged:\n%s\n' "$others"
    return 0
}

# The INJECT items (the caller's arguments): checked here (a bad item ends the
# script), then inj (report_edit's options), report_edit and what (the row's
# first cell) set for the caller
injection() {
    inject_args "$@" >/dev/null # here, not in the subshell below: a bad item ends the script
    mapfile -t inj < <(inject_args "$@")
    report_edit=${REPORT_EDIT:-$(dirname "$g")/../reports/report_edit}
    if [ $# -gt 0 ] && [ ! -x "$report_edit" ]; then
        die "no report_edit at $report_edit (build its target, or set REPORT_EDIT)"
    fi
    what="A/A (no injection)"
    [ $# -gt 0 ] && what=$(for it in "$@"; do printf '%s x%s, ' "${it%:*}" "${it##*:}"; done | sed 's/, $//')
    return 0
}

# median_max N...: the median and the largest of the numbers (pairs or runs used)
median_max() {
    printf '%s\n' "$@" | sort -n |
        awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[NR] }'
}

# One trial's verdict (rc, hit, other) into the caller's counts
tally() {
    case $rc in
        0) n0=$((n0 + 1)) ;;
        3) if [ "$hit" = 1 ]; then n3=$((n3 + 1)); else n3off=$((n3off + 1)); fi ;;
        4) n4=$((n4 + 1)) ;;
        *) nelse=$((nelse + 1)) ;;
    esac
    [ "$other" = 1 ] && nother=$((nother + 1))
    return 0
}

# trials POOL TRIALS K [INJECT...] / adaptive POOL TRIALS FIRST MAX [INJECT...]
power() {
    local mode=$1 pool_dir=$2 trials=$3 first=$4 max=$4
    shift 4
    if [ "$mode" = adaptive ]; then
        [ $# -ge 1 ] || usage
        max=$1
        shift
    fi
    items=("$@")
    if [ ! -d "$pool_dir/base" ] || [ ! -d "$pool_dir/new" ]; then
        die "$pool_dir is not a pool (no base/ and new/: bench_gate.sh pool)"
    fi
    whole "TRIALS" "$trials" 1
    whole "pairs" "$first" 3
    whole "MAX" "$max" "$first"
    trials=$((10#$trials)) first=$((10#$first)) max=$((10#$max))
    local -a names
    mapfile -t names < <(pool_pairs "$pool_dir")
    local np=${#names[@]}
    [ "$max" -le "$np" ] || die "$max pairs a trial, but the pool $pool_dir has $np"
    local what
    injection "$@"
    local seed=${SEED:-$(date +%s)} tout=${TRIALS_OUT:-$(mktemp -d /tmp/gt_gate_trials.XXXXXX)}
    local design="$first"
    [ "$mode" = adaptive ] && design="$first:$max"
    mkdir -p "$tout" || die "cannot create $tout"
    echo "$mode: $trials trials of $design pairs from the $np of $pool_dir, $what; seed $seed (SEED=$seed repeats the draw); in $tout" >&2
    [ $# -gt 0 ] && echo "  synthetic injection: recorded samples scaled by report_edit (every sample times the factor), not a real slowdown" >&2
    local item
    for item in "${items[@]}"; do
        python3 -c 'import json, sys
kind, rest = sys.argv[2].split(":", 1)
what = rest.rsplit(":", 1)[0]
res = json.load(open(sys.argv[1])).get("results", [])
sys.exit(0 if any(kind == "case" and r["case"].startswith(what) or
                  kind == "group" and what in (r.get("groups") or []) or
                  kind == "metric" and what in (r.get("metrics") or {}) for r in res) else 1)' \
            "$pool_dir/new/${names[0]}" "$item" ||
            echo "  warning: INJECT $item changes no result of $pool_dir/new/${names[0]}" >&2
    done
    if [ $((trials * first)) -gt "$np" ]; then
        echo "  warning: $trials trials x $first pairs = $((trials * first)) > the pool's $np pairs: trials share pairs and are not independent" >&2
    fi
    local t k d idx n3=0 n4=0 n0=0 nother=0 n3off=0 nelse=0 used=() drawn
    : >"$tout/trials.txt"
    mapfile -t drawn < <(draw "$seed" "$trials" "$max" "$np")
    for t in $(seq 1 "$trials"); do
        d="$tout/trial$t"
        rm -rf "$d"
        mkdir -p "$d/base" "$d/new"
        read -r -a idx <<<"${drawn[$((t - 1))]}"
        for k in $(seq 1 "$first"); do add_pair "$pool_dir" "$d" "$k" "${names[${idx[$((k - 1))]}]}"; done
        look "$d" "$first:$max"
        k=$first
        while [ "$mode" = adaptive ] && [ "$rc" = 4 ] && [ "$k" -lt "$max" ]; do
            cp "$d/compare.txt" "$d/compare-$k.txt"
            k=$((k + 1))
            add_pair "$pool_dir" "$d" "$k" "${names[${idx[$((k - 1))]}]}"
            look "$d" "$first:$max"
        done
        used+=("$k")
        tally
        record "$(printf 'trial %d: pairs %s; %d used; exit %s; target named: %s' "$t" \
            "$(for i in "${idx[@]:0:k}"; do printf '%s ' "${names[$i]%.json}"; done)" "$k" "$rc" \
            "$([ "$hit" = 1 ] && echo yes || echo no)")" "$d" >>"$tout/trials.txt"
    done
    local cell3=$n3
    [ $# -eq 0 ] && cell3="n/a (exit 3: $n3off)"
    if [ "$mode" = adaptive ]; then
        local med top
        read -r med top < <(median_max "${used[@]}")
        echo "| what | pairs (first:max) | trials | MUST NOT SHIP (exit 3) naming the target | undecided (exit 4) | may ship (exit 0) | trials with anything else flagged | pairs used, median | pairs used, max |"
        echo "|---|---|---|---|---|---|---|---|---|"
        echo "| $what | $first:$max | $trials | $cell3 | $n4 | $n0 | $nother | $med | $top |"
        local sum=0 u
        for u in "${used[@]}"; do sum=$((sum + u)); done
        [ "$sum" -gt "$np" ] && echo "(the trials used $sum pairs in all from a pool of $np: they share pairs)"
    else
        echo "| what | K pairs | trials | MUST NOT SHIP (exit 3) naming the target | undecided (exit 4) | may ship (exit 0) | trials with anything else flagged |"
        echo "|---|---|---|---|---|---|---|"
        echo "| $what | $first | $trials | $cell3 | $n4 | $n0 | $nother |"
    fi
    [ $# -gt 0 ] && [ "$n3off" -gt 0 ] && echo "exit 3 without the target named: $n3off of $trials trials"
    [ "$nelse" -gt 0 ] && echo "other exit codes (compare could not judge): $nelse of $trials trials"
    echo
    echo "each trial: $tout/trials.txt (seed $seed)"
}

# unpaired_look MODE DIR F:M: one look at the trial DIR's base/ and new/
# (new/ as one report when it holds one run and there is no design), its
# verdict into rc, hit and other
unpaired_look() {
    local mode=$1 d=$2 design=$3 cand=$2/new seq=()
    local -a held=("$d"/new/*.json)
    [ "${design%%:*}" != "${design##*:}" ] && seq=(--sequential "$design")
    [ ${#seq[@]} -eq 0 ] && [ ${#held[@]} -eq 1 ] && cand=${held[0]}
    # shellcheck disable=SC2086
    if [ "$mode" = history ]; then
        "$g" history "$d/h.db" --gate "$cand" "${seq[@]}" $opts >"$d/compare.txt" 2>&1
    else
        "$g" compare "$d/base" "$cand" "${seq[@]}" $opts >"$d/compare.txt" 2>&1
    fi
    rc=$?
    verdict "$d/compare.txt" "${held[0]}"
}

# unpaired|history POOL TRIALS B K [INJECT...]: see the top. K as FIRST:MAX:
# the design over NEW runs, one more NEW run while the look is undecided
unpaired() {
    local mode=$1 pool_dir=$2 trials=$3 nb=$4 nk=$5
    shift 5
    items=("$@")
    [ -d "$pool_dir/base" ] && [ -d "$pool_dir/new" ] || die "$pool_dir is not a pool (bench_gate.sh pool)"
    local kf=${nk%%:*} km=${nk##*:}
    whole "TRIALS" "$trials" 1
    whole "B" "$nb" 1
    whole "K" "$kf" 1
    whole "MAX" "$km" "$kf"
    trials=$((10#$trials)) nb=$((10#$nb)) kf=$((10#$kf)) km=$((10#$km))
    local -a names
    mapfile -t names < <(pool_pairs "$pool_dir")
    local np=${#names[@]}
    [ "$nb" -le "$np" ] && [ "$km" -le "$np" ] || die "B $nb and K $km runs a side, but the pool $pool_dir has $np pairs"
    local what
    injection "$@"
    local seed=${SEED:-$(date +%s)} tout=${TRIALS_OUT:-$(mktemp -d /tmp/gt_gate_trials.XXXXXX)}
    mkdir -p "$tout" || die "cannot create $tout"
    echo "$mode: $trials trials of $nb BASE runs against $kf:$km NEW runs from the $np pairs of $pool_dir, $what; seed $seed; in $tout" >&2
    local t i k d n3=0 n4=0 n0=0 nother=0 n3off=0 nelse=0 bdraw ndraw used=()
    : >"$tout/trials.txt"
    mapfile -t bdraw < <(draw "$seed" "$trials" "$nb" "$np")
    mapfile -t ndraw < <(draw "$((seed + 1))" "$trials" "$km" "$np")
    for t in $(seq 1 "$trials"); do
        d="$tout/trial$t"
        rm -rf "$d"
        mkdir -p "$d/base" "$d/new"
        read -r -a bi <<<"${bdraw[$((t - 1))]}"
        read -r -a ni <<<"${ndraw[$((t - 1))]}"
        for i in "${bi[@]}"; do cp "$pool_dir/base/${names[$i]}" "$d/base/" || die "cannot copy"; done
        if [ "$mode" = history ]; then
            "$g" history add "$d/h.db" "$d"/base/*.json >/dev/null 2>&1 || die "history add failed in $d"
        fi
        k=0
        while :; do
            i=${ni[$k]}
            k=$((k + 1))
            cp "$pool_dir/new/${names[$i]}" "$d/new/" || die "cannot copy"
            if [ ${#inj[@]} -gt 0 ]; then
                "$report_edit" "$d/new/${names[$i]}" "$d/new/${names[$i]}" "${inj[@]}" || die "report_edit failed"
            fi
            [ "$k" -lt "$kf" ] && continue
            unpaired_look "$mode" "$d" "$kf:$km"
            [ "$rc" = 4 ] && [ "$k" -lt "$km" ] || break
            cp "$d/compare.txt" "$d/compare-$k.txt"
        done
        used+=("$k")
        tally
        record "$(printf 'trial %d: base %s; new %s; %d used; exit %s; target named: %s' "$t" \
            "$(for i in "${bi[@]}"; do printf '%s ' "${names[$i]%.json}"; done)" \
            "$(for i in "${ni[@]:0:k}"; do printf '%s ' "${names[$i]%.json}"; done)" "$k" "$rc" \
            "$([ "$hit" = 1 ] && echo yes || echo no)")" "$d" >>"$tout/trials.txt"
    done
    local cell3=$n3 med top
    [ $# -eq 0 ] && cell3="n/a (exit 3: $n3off)"
    read -r med top < <(median_max "${used[@]}")
    echo "| what | runs (B against K) | trials | MUST NOT SHIP (exit 3) naming the target | undecided (exit 4) | may ship (exit 0) | trials with anything else flagged | NEW runs used, median | max |"
    echo "|---|---|---|---|---|---|---|---|---|"
    local kcell=$kf
    [ "$km" -gt "$kf" ] && kcell="$kf:$km"
    echo "| $what ($mode) | $nb against $kcell | $trials | $cell3 | $n4 | $n0 | $nother | $med | $top |"
    [ "$nelse" -gt 0 ] && echo "other exit codes (compare could not judge): $nelse of $trials trials"
    echo
    echo "each trial: $tout/trials.txt (seed $seed)"
}

case "${1:-}" in
    unpaired | history) [ $# -ge 5 ] || usage; unpaired "$@" ;;
    gate) [ $# -ge 2 ] || usage; shift; gate_runs "$@" ;;
    aa) [ $# -ge 2 ] || usage; shift; aa "$@" ;;
    detect) [ $# -ge 3 ] || usage; shift; detect "$@" ;;
    pool) shift; pool "$@" ;;
    trials) [ $# -ge 4 ] || usage; shift; power trials "$@" ;;
    adaptive) [ $# -ge 5 ] || usage; shift; power adaptive "$@" ;;
    *) usage ;;
esac
