#!/usr/bin/env bash
# Example job: interleaved A/B of two stacks that can both run on this machine
# (docs/ci-gating.md, "Interleaved A/B"): a library swap (two LD_LIBRARY_PATHs
# for a cuDNN, NCCL or BLAS upgrade, two OPENBLAS_CORETYPEs) or two builds.
#
#   ci/jobs/ab.sh --base 'CMD' --new 'CMD' [options] -- RUN-ARGS...
#
# CMD is how to start that stack's gauntlet, e.g.
#   --base 'env LD_LIBRARY_PATH=/opt/cudnn-9.10/lib build/harness/gauntlet'
#   --new  'env LD_LIBRARY_PATH=/opt/cudnn-9.14/lib build/harness/gauntlet'
# (split on spaces). The job runs `CMD run RUN-ARGS` for BASE and NEW
# alternately, a pair at a time (the order within a pair alternates too, ABBA,
# so neither stack always runs on a machine warmed by the other), and judges
# the pairs with `gauntlet compare --paired OUT/base OUT/new`: each pair ran
# side by side, so a drift of the machine cancels in its ratio.
#
# It is adaptive: after the first N pairs (--pairs) it compares with
# `--sequential N:M`; may ship (0) or must not ship (3) ends the job; undecided
# (4: a metric slower than the threshold whose interval still holds no change)
# adds one pair, continuing the ABBA order, and compares again, until the
# verdict is decided, M pairs (--max-pairs) have run, or the time budget
# (--budget-min) is spent. compare tests each look at its share of alpha (the
# spending function), so looking after every pair keeps the chance of a false
# alarm at alpha overall. --max-pairs equal to --pairs is the fixed design.
#
# Exit codes, compare's:
#   0  NEW may ship               3  NEW must not ship
#   4  undecided when the budget (pairs or minutes) ran out: more pairs needed
#      (compare's `needed:` line says about how many)
#   5  not comparable: the two commands ran as different machine classes (threads
#      per rank, CPU model ...: compare's machine class lines); speed not judged
#   2  the job could not decide: a bad option, a run that ended in an error,
#      compare refusing its input
#
# Options:
#   --pairs N         pairs before the first look (default 5; 3 at least)
#   --max-pairs M     the budget in pairs (default 12, or N when N is more;
#                     M >= N; M = N is the fixed design, one look)
#   --budget-min MIN  a wall-clock budget in minutes from the job's start
#                     (default none): no pair beyond the first N starts once
#                     it is spent, nor when the time left is less than a
#                     pair's mean time so far. The first N pairs always run.
#   --spending S      how compare spends alpha over the looks: pocock (even
#                     shares, compare's default) or obf (O'Brien-Fleming:
#                     little at the early looks, nearly all at the last)
#   --out DIR         where the job writes (default ab-out): base/ and new/
#                     (runK.json, runK.log), compare-K.txt (the look at K
#                     pairs), compare.txt (the last look), junit.xml (the
#                     last look's), pairs.txt (the pairs used)
#   --gauntlet PATH   the binary that compares (default: build/harness/gauntlet)
#   --compare-args 'ARGS'  more options for compare (e.g. '--threshold 3%')
#
# It ends with one line: `ab: decided after K pairs (verdict ...)` or
# `ab: undecided after K pairs (budget of M pairs / MIN minutes spent)`.
#
# A driver upgrade cannot interleave (one driver per boot): keep a baseline
# directory of several runs instead (ci/jobs/gate.sh, compare BASE-DIR NEW).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
gauntlet="$here/../../build/harness/gauntlet"
base='' new='' out=ab-out pairs=5 max='' budget='' spending='' cargs=''

die() { echo "ab: $*" >&2; exit 2; }
need() { if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value (ci/jobs/ab.sh --help)"; fi; }
# microseconds since the epoch (bash 5's clock; no process per reading)
now_us() { local t=${EPOCHREALTIME:-}; if [ -n "$t" ]; then echo "${t/[.,]/}"; else echo "$(date +%s)000000"; fi; }

while [ $# -gt 0 ]; do
    case $1 in
        --base) need "$@"; base=$2; shift 2 ;;
        --new) need "$@"; new=$2; shift 2 ;;
        --out) need "$@"; out=$2; shift 2 ;;
        --pairs) need "$@"; pairs=$2; shift 2 ;;
        --max-pairs) need "$@"; max=$2; shift 2 ;;
        --budget-min) need "$@"; budget=$2; shift 2 ;;
        --spending) need "$@"; spending=$2; shift 2 ;;
        --gauntlet) need "$@"; gauntlet=$2; shift 2 ;;
        --compare-args) need "$@"; cargs=$2; shift 2 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        --) shift; break ;;
        *) die "unknown option '$1' (the run's own arguments go after --)" ;;
    esac
done
if [ -z "$base" ] || [ -z "$new" ]; then die "--base 'CMD' and --new 'CMD' are both required"; fi
case $pairs in '' | *[!0-9]*) die "--pairs '$pairs': a whole number, 3 or more" ;; esac
pairs=$((10#$pairs))
[ "$pairs" -ge 3 ] || die "--pairs $pairs: at least 3 (two pairs leave one degree of freedom)"
if [ -z "$max" ]; then
    max=$((pairs > 12 ? pairs : 12))
else
    case $max in '' | *[!0-9]*) die "--max-pairs '$max': a whole number of pairs, at least --pairs ($pairs)" ;; esac
    max=$((10#$max))
    [ "$max" -ge "$pairs" ] ||
        die "--max-pairs $max is below --pairs $pairs: the budget must hold the first look (--max-pairs $pairs is the fixed design)"
fi
budget_us=''
if [ -n "$budget" ]; then
    [[ "$budget" =~ ^[0-9]+([.][0-9]+)?$|^[.][0-9]+$ ]] ||
        die "--budget-min '$budget': minutes, a positive number (e.g. 30 or 0.5)"
    budget_us=$(awk -v m="$budget" 'BEGIN { printf "%.0f", m * 60e6 }')
    [ "$budget_us" -gt 0 ] || die "--budget-min '$budget': minutes, a positive number (e.g. 30 or 0.5)"
fi
case $spending in '' | pocock | obf) ;; *) die "--spending '$spending': pocock or obf" ;; esac
[ $# -gt 0 ] || die "nothing to run: give gauntlet run's arguments after --, e.g. -- kernels --quick"
for a in "$@"; do
    case $a in
        --report | --report=* | --baseline | --baseline=*)
            die "'$a' among the run's arguments: the job writes the reports and compares itself" ;;
    esac
done
[ -x "$gauntlet" ] || die "no gauntlet binary at $gauntlet: build it (make build) or pass --gauntlet PATH"
read -r -a base_cmd <<<"$base"
read -r -a new_cmd <<<"$new"
read -r -a extra <<<"$cargs"
mkdir -p "$out/base" "$out/new" || die "cannot create $out"
rm -f "$out"/base/run* "$out"/new/run* "$out"/compare*.txt "$out/pairs.txt" "$out/junit.xml"

# run SIDE I RUN-ARGS...: one run of that stack into OUT/SIDE/runI.json
run() {
    local side=$1 i=$2 rc
    shift 2
    local -a cmd
    if [ "$side" = base ]; then cmd=("${base_cmd[@]}"); else cmd=("${new_cmd[@]}"); fi
    "${cmd[@]}" run "$@" --report "$out/$side/run$i.json" >"$out/$side/run$i.log" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
        die "the $side stack's run $i exited $rc (see $out/$side/run$i.log)"
    fi
    [ -s "$out/$side/run$i.json" ] || die "the $side stack's run $i wrote no report ($out/$side/run$i.log)"
}

# pair K RUN-ARGS...: the K-th pair, BASE first when K is odd (ABBA), as
# runK.json on each side (compare pairs the runs by their place in the sorted
# names, the same on both sides)
done_pairs=0 pair_us=0
start_us=$(now_us)
pair() {
    local k=$1 side order t0
    shift
    if [ $((k % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
    t0=$(now_us)
    for side in $order; do
        echo "ab: pair $k: $side"
        run "$side" "$k" "$@"
    done
    pair_us=$((pair_us + $(now_us) - t0))
    done_pairs=$k
    echo "$done_pairs" >"$out/pairs.txt"
}

# time_left: 0 when another pair may start within --budget-min; else prints why not
time_left() {
    [ -n "$budget_us" ] || return 0
    local used mean
    used=$(($(now_us) - start_us))
    mean=$((pair_us / done_pairs))
    if [ "$used" -ge "$budget_us" ]; then
        echo "budget of $budget minutes spent"
    elif [ $((used + mean)) -gt "$budget_us" ]; then
        echo "budget of $budget minutes spent: $(((budget_us - used) / 1000000)) s left, a pair takes about $((mean / 1000000)) s"
    else
        return 0
    fi
    return 1
}

for k in $(seq 1 "$pairs"); do pair "$k" "$@"; done
if [ -n "$budget_us" ] && [ $(($(now_us) - start_us)) -gt "$budget_us" ]; then
    echo "ab: the first $pairs pairs took longer than --budget-min $budget: no pair will be added"
fi

seq_opts=(--sequential "$pairs:$max")
[ -n "$spending" ] && seq_opts+=(--spending "$spending")
verdict=''
while :; do
    look="$out/compare-$done_pairs.txt"
    "$gauntlet" compare --paired "${seq_opts[@]}" "$out/base" "$out/new" --junit "$out/junit.xml" \
        "${extra[@]}" >"$look" 2>&1
    verdict=$?
    cp "$look" "$out/compare.txt"
    case $verdict in
        0 | 3 | 5) break ;;
        4) ;;
        *) cat "$look"; die "gauntlet compare exited $verdict (see $look)" ;;
    esac
    echo "ab: look at $done_pairs pairs: undecided; $(grep -m1 '^needed: ' "$look" || echo 'compare said no more')"
    if [ "$done_pairs" -ge "$max" ]; then
        why="budget of $max pairs spent"
        break
    fi
    if ! why=$(time_left); then break; fi
    pair $((done_pairs + 1)) "$@"
done

cat "$out/compare.txt"
case $verdict in
    0) echo "ab: decided after $done_pairs pairs (verdict 0: NEW may ship)" ;;
    3) echo "ab: decided after $done_pairs pairs (verdict 3: NEW must not ship)" ;;
    4) echo "ab: undecided after $done_pairs pairs ($why)" ;;
    5) echo "ab: NOT COMPARABLE: BASE and NEW ran on different machine classes (see machine class above); run both here, or pass --across-machines after --" ;;
esac
exit "$verdict"
