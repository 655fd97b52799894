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
# alternately, PAIRS times (the order within a pair alternates too, ABBA, so
# neither stack always runs on a machine warmed by the other), then
# `gauntlet compare --paired OUT/base OUT/new`: each pair ran side by side, so
# a drift of the machine cancels in its ratio, and the verdict comes from the
# ratios. Exit codes as compare's (0 may ship, 3 must not, 2 could not decide).
#
# Options:
#   --pairs N         pairs of runs (default 5; 3 at least)
#   --out DIR         where the job writes (default ab-out): base/, new/, logs, compare.txt
#   --gauntlet PATH   the binary that compares (default: build/harness/gauntlet)
#   --compare-args 'ARGS'  more options for compare (e.g. '--threshold 3%')
#
# A driver upgrade cannot interleave (one driver per boot): keep a baseline
# directory of several runs instead (ci/jobs/gate.sh, compare BASE-DIR NEW).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
gauntlet="$here/../../build/harness/gauntlet"
base='' new='' out=ab-out pairs=5 cargs=''

die() { echo "ab: $*" >&2; exit 2; }
need() { if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value (ci/jobs/ab.sh --help)"; fi; }

while [ $# -gt 0 ]; do
    case $1 in
        --base) need "$@"; base=$2; shift 2 ;;
        --new) need "$@"; new=$2; shift 2 ;;
        --out) need "$@"; out=$2; shift 2 ;;
        --pairs) need "$@"; pairs=$2; shift 2 ;;
        --gauntlet) need "$@"; gauntlet=$2; shift 2 ;;
        --compare-args) need "$@"; cargs=$2; shift 2 ;;
        -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        --) shift; break ;;
        *) die "unknown option '$1' (the run's own arguments go after --)" ;;
    esac
done
[ -n "$base" ] && [ -n "$new" ] || die "--base 'CMD' and --new 'CMD' are both required"
case $pairs in '' | *[!0-9]*) die "--pairs '$pairs': a whole number, 3 or more" ;; esac
[ "$pairs" -ge 3 ] || die "--pairs $pairs: at least 3 (two pairs leave one degree of freedom)"
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
mkdir -p "$out/base" "$out/new" || die "cannot create $out"
rm -f "$out"/base/*.json "$out"/new/*.json

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

for i in $(seq -w 1 "$pairs"); do
    if [ $((10#$i % 2)) -eq 1 ]; then order="base new"; else order="new base"; fi
    for side in $order; do
        echo "ab: pair $i: $side"
        run "$side" "$i" "$@"
    done
done

read -r -a extra <<<"$cargs"
"$gauntlet" compare --paired "$out/base" "$out/new" --junit "$out/junit.xml" "${extra[@]}" \
    >"$out/compare.txt" 2>&1
verdict=$?
cat "$out/compare.txt"
case $verdict in
    0 | 3) exit "$verdict" ;;
    *) die "gauntlet compare exited $verdict (see $out/compare.txt)" ;;
esac
