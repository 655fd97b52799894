#!/usr/bin/env bash
# What `gauntlet run` prints by default (README.md, "Using it"): one line per
# case and a summary with the machine's peaks, every scaling efficiency and
# each collective's busbw at its largest size against raw; no raw tables
# (they are --verbose); an estimate of the time left that counts the cases
# planned and ends at ~0 s; 1-rank busbw as n/a and absent from the report.
# Also: the nearest name for a mistyped suite or option, error lines after
# the job header when piped, and run and train --topologies relaunching under
# the build's launcher (Open MPI's mpirun or MPICH's mpiexec.mpich: the report's
# env.job.launcher says which started the ranks).
# usage: console.sh GAUNTLET [MPIEXEC]   (without MPIEXEC: one rank only)
set -u
g=$1
mpi=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
. "$(dirname "$0")/lib.sh" # fails, fail, ok, expect
topos=1
[ -n "$mpi" ] && topos=1,2

"$g" run health memory collectives scaling/mlp-small --quick --topologies $topos -e 64K \
    --rounds 1 --report "$tmp/r.json" > "$tmp/out" 2>&1
rc=$?
[ $rc -eq 0 ] && ok "run exits 0" || { fail "run exited $rc"; tail -5 "$tmp/out"; }
total=$(sed -n 's/^total: \([0-9]*\) results.*/\1/p' "$tmp/out")
cases=$(grep -cE '^  (pass|fail|skip|error) ' "$tmp/out")
lines=$(wc -l < "$tmp/out")
headers=$(grep -c '^== ' "$tmp/out")
summary=$(sed -n '/^summary (/,$p' "$tmp/out" | wc -l)
# a skipped case says why on the next line
nskip=$(grep -cE '^  skip ' "$tmp/out")
reasons=$(grep -cE '^        skipped: .+' "$tmp/out")
[ "$nskip" -gt 0 ] && [ "$reasons" -eq "$nskip" ] && ok "every skipped case ($nskip) says why" ||
    fail "$nskip skipped cases, $reasons reasons"
# every line is the job header, a unit header, a case (a skip with its reason), or the summary
if [ -n "$total" ] && [ "$cases" -eq "$total" ] &&
   [ "$lines" -eq $((1 + headers + cases + reasons + 1 + summary)) ]; then
    ok "one line per case ($cases), $headers unit headers, a $summary-line summary: $lines lines"
else
    fail "$lines lines: $cases case lines for $total results, $headers headers, $summary summary"
fi
[ "$summary" -le 40 ] && ok "the summary is short ($summary lines)" || fail "summary of $summary lines"
grep -qE '^#|^ +[0-9]+ +[0-9]+ +fp32' "$tmp/out" && fail "raw collectives table lines by default" ||
    ok "no raw tables by default"
# the estimate: cases done of those planned, ending at the last with ~0 s
last=$(grep -E '^  (pass|fail|skip|error) ' "$tmp/out" | tail -1)
grep -qF "[$total/$total, " <<<"$last" && grep -qF "~0 s left]" <<<"$last" &&
    ok "the last case is $total/$total with ~0 s left" || fail "last case line: $last"
first=$(grep -E '^  (pass|fail|skip|error) ' "$tmp/out" | head -1)
grep -qF "[1/$total, " <<<"$first" && grep -qF "+ memory, collectives, scaling, not timed yet]" <<<"$first" &&
    ok "the first case names the suites not timed yet" || fail "first case line: $first"
# the summary's figures
for pat in '^machine \(health\):' '^  FMA +[0-9.]+ GFLOP/s' '^  SGEMM +[0-9.]+ GFLOP/s' \
           '^  memory +[0-9.]+ GB/s' \
           '^  suite +pass +fail +skip +error'; do
    grep -qE "$pat" "$tmp/out" && ok "summary: /$pat/" || fail "summary lacks /$pat/"
done
n1=$(grep -cE '^  [a-z_]+/fp32(/sum)? +1 rank\(s\)' "$tmp/out")
[ "$n1" -eq 0 ] && ok "no 1-rank busbw in the summary" || fail "$n1 1-rank busbw lines in the summary"
# one rank: busbw n/a, no busbw metric in the report (out of plots and gates)
na=$(grep -c '"busbw": "n/a: one rank moves no data between ranks"' "$tmp/r.json")
c1=$(grep -c '"topology": "1"' "$tmp/r.json")
with=$(grep -cE '^ *"busbw_65536": \{' "$tmp/r.json")
if [ -n "$mpi" ]; then
    n2=$(grep -cE '^  [a-z_]+/fp32(/sum)? +2 rank\(s\) +64 KiB +busbw +[0-9.]+ GB/s +raw +[0-9.]+ GB/s' "$tmp/out")
    grep -qE '^collectives \(busbw at the largest size' "$tmp/out" || fail "no collectives summary"
    [ "$n2" -eq 7 ] && ok "summary: busbw against raw at 64 KiB for the 7 collectives on 2 ranks" ||
        fail "$n2 collectives lines for 2 ranks, expected 7"
    grep -qE '^scaling efficiency' "$tmp/out" &&
        grep -qE '^  mlp-small +2 rank\(s\) +strong +[0-9.]+%' "$tmp/out" &&
        ok "summary: mlp-small's strong scaling efficiency on 2 ranks" || fail "no scaling efficiency"
    grep -qE '^  mlp-small +2 rank\(s\) +strong .* memory/rank [0-9.]+ MiB \(formula [0-9.]+\)  exposed comm [0-9.]+ ms$' "$tmp/out" &&
        ok "summary: memory per rank beside its formula, and the exposed communication" ||
        fail "the scaling line lacks memory per rank or exposed communication"
    grep -qE '^  MPI latency +[0-9.]+ us' "$tmp/out" && ok "summary: MPI latency" ||
        fail "summary lacks the MPI latency"
    # one process relaunched itself under the build's launcher, which started the ranks
    mpi_launcher "$mpi"
    want=$([ "$mpi_family" = hydra ] && echo mpirun-mpich || echo mpirun-openmpi)
    grep -qE "\"launcher\": \"$want\"" "$tmp/r.json" &&
        ok "run --topologies 1,2 relaunched itself under $(basename "$mpi") ($want)" ||
        fail "run --topologies 1,2: env.job.launcher is not $want: $(grep -o '"launcher": "[^"]*"' "$tmp/r.json")"
    [ "$na" -gt 0 ] && [ "$with" -eq "$na" ] &&
        ok "1 rank: $na results with busbw n/a and no busbw metric; 2 ranks: $with with one" ||
        fail "busbw n/a on $na results, busbw_65536 on $with"
else
    grep -qE '^collectives \(busbw' "$tmp/out" && fail "a collectives busbw summary from one rank"
    [ "$na" -gt 0 ] && [ "$with" -eq 0 ] &&
        ok "1 rank: $na results with busbw n/a and no busbw metric" ||
        fail "busbw n/a on $na results, busbw_65536 on $with"
fi
[ "$c1" -gt 0 ] || fail "no 1-rank results"

# --verbose: the raw tables, n/a on one rank
"$g" run collectives/allreduce --quick --topologies 1 -e 1K --verbose > "$tmp/v.out" 2>&1
grep -qE '^# allreduce: 1 ranks' "$tmp/v.out" &&
    grep -qE '^ +1024 +256 +fp32 +sum +-1 +[0-9.]+ +[0-9.]+ +n/a +0 +(n/a|skip)' "$tmp/v.out" &&
    ok "--verbose: the raw table, busbw n/a on one rank" ||
    { fail "--verbose table"; grep -E '^#|1024' "$tmp/v.out" | head -4; }

# the nearest name
expect 2 "no suite 'kernel': did you mean kernels\?" "$g" run kernel
expect 2 "unknown option '--quik': did you mean --quick\?" "$g" run --quik
expect 2 "unknown option '--step': did you mean --steps\?" "$g" train --step 5
expect 2 "unknown option '--resume-alow=x': did you mean --resume-allow\?" "$g" train --resume-alow=x
expect 2 "unknown option '--zzzzzz' \(gauntlet train --help" "$g" train --zzzzzz
expect 2 "unknown command 'trian': did you mean train\?" "$g" trian
expect 2 "unknown subcommand 'synt': did you mean synth\?" "$g" data synt
expect 2 "unknown option '--quiett': did you mean --quiet\?" "$g" compare a.json b.json --quiett

# piped: the error after the job header it belongs to
"$g" train --data "$tmp/none.tok" --steps 2 2>&1 | cat > "$tmp/p.out"
if head -1 "$tmp/p.out" | grep -q '^gauntlet train: gpt2-tiny' &&
   sed -n 2p "$tmp/p.out" | grep -q "none.tok"; then
    ok "piped: the job header, then the error"
else
    fail "piped output order:"; cat "$tmp/p.out"
fi

# train --topologies 1,2 started as one process relaunches under the build's launcher
if [ -n "$mpi" ]; then
    out=$("$g" train --topologies 1,2 --steps 3 --batch 2 --seq 8 --print-every 0 \
        --peak-gflops 10 2>&1)
    rc=$?
    [ $rc -eq 0 ] && grep -qE "relaunching under [^ ]+ -n 2" <<<"$out" &&
        grep -q "strong scaling efficiency vs 1 rank(s)" <<<"$out" &&
        ok "train --topologies 1,2 relaunched itself: $(grep -o 'relaunching under [^ ]*' <<<"$out")" ||
        { fail "train --topologies 1,2: rc $rc"; tail -3 <<<"$out"; }
fi

[ $fails -eq 0 ] && echo "all cases passed" || { echo "$fails case(s) failed"; exit 1; }
