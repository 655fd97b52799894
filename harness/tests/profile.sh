# The per-op profile end to end (docs/profile.md): every train result carries
# it (gpt2 and mlp), --trace writes a Chrome trace that parses with the
# structure docs/profile.md promises (one file per rank on 2 ranks),
# --profile off leaves it out, bad options are refused, and an op slowed by
# --inject-slowdown (gauntlet train and the train suite) is the op compare
# names first behind the slower step while two honest runs ship.
# usage: profile.sh basic|gate GAUNTLET PROFILE_CHECK [MPIEXEC]
# basic: the profile and the trace, refusals; gate: the gate naming the op,
# the HTML page, the train suite, 2 ranks (many more training runs: slow
# under the sanitizers, where engine.profile.host and reports.profile.host
# cover the same code).
set -u
part=$1
g=$2
check=$3
mpiexec=${4:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"

train() { "$g" train --quiet --print-every 0 --peak-gflops 100 "$@" >"$tmp/last.log" 2>&1; }

case $part in
    basic|gate) ;;
    *) echo "usage: profile.sh basic|gate GAUNTLET PROFILE_CHECK [MPIEXEC]" >&2; exit 2 ;;
esac

if [ "$part" = basic ]; then
# the profile and the trace of gpt2 and mlp
train --model gpt2-tiny --steps 16 --trace "$tmp/t.json" --report "$tmp/gpt2.json" ||
    { fail "gpt2 train"; tail -5 "$tmp/last.log"; }
"$check" "$tmp/gpt2.json" --trace "$tmp/t.json" --expect-op matmul_bwd --expect-op attention_fwd \
    --expect-op layernorm_bwd --expect-op classifier_bwd >"$tmp/check.log" 2>&1 &&
    ok "gpt2: profile and trace as documented" || { fail "gpt2 profile or trace"; cat "$tmp/check.log"; }
grep -q '"trace": ".*t.json"' "$tmp/gpt2.json" && ok "the report names its trace" ||
    fail "the report does not name the trace"
train --model mlp-tiny --steps 12 --report "$tmp/mlp.json" || fail "mlp train"
"$check" "$tmp/mlp.json" --expect-op matmul_fwd --expect-op matmul_bwd >"$tmp/check.log" 2>&1 &&
    ok "mlp: profile" || { fail "mlp profile"; cat "$tmp/check.log"; }
train --model gpt2-tiny --steps 6 --profile off --report "$tmp/off.json" || fail "--profile off"
"$check" "$tmp/off.json" --no-profile >"$tmp/check.log" 2>&1 && ok "--profile off: no profile" ||
    { fail "--profile off still profiles"; cat "$tmp/check.log"; }

# refusals: what was wrong and what to do, exit 2, nothing written
expect 2 "--profile 'maybe': use on or off" "$g" train --profile maybe --steps 2
expect 2 "--inject-slowdown 'nope:2': expected OP:FACTOR" "$g" train --inject-slowdown nope:2 --steps 2
expect 2 "--inject-slowdown 'allreduce:2': expected OP:FACTOR, OP an op" "$g" train \
    --inject-slowdown allreduce:2 --steps 2
expect 2 "--inject-slowdown 'matmul_bwd:1': expected OP:FACTOR" "$g" train \
    --inject-slowdown matmul_bwd:1 --steps 2
expect 2 "--trace draws the profile's timings: drop --profile off" "$g" train --profile off \
    --trace "$tmp/x.json" --steps 2
expect 2 "--trace: cannot create '/nonexistent-dir/t.json'.*writable directory" "$g" train \
    --trace /nonexistent-dir/t.json --steps 2 --quiet
[ -e "$tmp/x.json" ] && fail "a refused run wrote its trace"

[ "$fails" -eq 0 ] && echo "profile basic: all checks passed" || echo "profile basic: $fails check(s) failed"
[ "$fails" -eq 0 ]
exit
fi

# the gate names the op: two honest runs ship; matmul_bwd made 8x as long is
# the op compare names first behind the slower step (the step itself ~2.5x as
# long). The op's own verdict is slower on a quiet machine; on one loaded many
# times over (the fault's spin stretches with every preemption) it may be
# ambiguous, but it is still the part that grew most, named first. The gate's
# step verdict itself drowns in such load now and then: up to three attempts,
# each with a fresh honest and slowed run, as a person would rerun it.
# (the profile adds no gated metric: two honest runs ship as before; a loaded
# machine can still stall blocks of one run, so a second pair is allowed)
for attempt in 1 2; do
    for r in a b; do
        train --model gpt2-tiny --batch 4 --seq 32 --steps 30 --report "$tmp/$r.json" ||
            fail "honest run $r"
    done
    "$g" compare "$tmp/a.json" "$tmp/b.json" >"$tmp/aa.log" 2>&1 && break
    echo "note: honest pair $attempt: $(grep -m2 -E 'SLOWER|FASTER' "$tmp/aa.log")"
done
grep -q "NEW may ship" "$tmp/aa.log" && ok "two honest runs ship (pair $attempt)" ||
    { fail "two honest runs do not ship"; grep -E "SLOWER|ship" "$tmp/aa.log"; }
named=0
for attempt in 1 2 3; do
    if [ "$attempt" -gt 1 ]; then
        train --model gpt2-tiny --batch 4 --seq 32 --steps 30 --report "$tmp/a.json" || fail "honest run, attempt $attempt"
    fi
    train --model gpt2-tiny --batch 4 --seq 32 --steps 30 --inject-slowdown matmul_bwd:8 --report "$tmp/slow.json" ||
        fail "slowed run"
    "$g" compare "$tmp/a.json" "$tmp/slow.json" >"$tmp/cmp.log" 2>&1
    rc=$?
    if [ "$rc" -eq 3 ] &&
        grep -qE '^ +ops: step \+[0-9.]+% slower: matmul_bwd \+[0-9]+% (slower|ambiguous)' "$tmp/cmp.log"; then
        named=1
        break
    fi
    echo "note: attempt $attempt: compare exited $rc: $(grep -m1 -E 'ops:|may ship|MUST NOT' "$tmp/cmp.log")"
done
if [ "$named" -eq 1 ]; then
    ok "compare: exit 3 (attempt $attempt), $(grep -m1 -oE 'ops: .{0,90}' "$tmp/cmp.log")"
else
    fail "compare did not name matmul_bwd first in 3 attempts"; grep -E "SLOWER|ops:|ship" "$tmp/cmp.log"
fi
"$check" "$tmp/slow.json" --slowed matmul_bwd >"$tmp/check.log" 2>&1 &&
    ok "the slowed run's profile says so" || { fail "slowed profile"; cat "$tmp/check.log"; }

# the HTML page: the profile section, the two reports side by side, drawn without a
# script error in headless Chromium (as harness.html.cpu runs it)
expect 0 "prof.html \(2 reports\)" "$g" report "$tmp/a.json" "$tmp/slow.json" --html "$tmp/prof.html"
grep -q '"samples_ms"' "$tmp/prof.html" && fail "the page embeds the profile's samples" ||
    ok "no profile samples embedded"
if [ -x /usr/bin/chromium ]; then
    browse "$tmp/prof.html" --dump-dom --window-size=1280,2000 >"$tmp/dom.html"
    grep -q 'data-render-errors="0"' "$tmp/dom.html" && grep -q '<section id="profile"' "$tmp/dom.html" &&
        ok "page: the profile section, no render error" ||
        { fail "page: no profile section or a render error"; grep -o 'id="render-errors"[^<]*' "$tmp/dom.html"; }
    n=$(grep -o '<tr data-part="[a-z_0-9]*"' "$tmp/dom.html" | wc -l)
    [ "$n" -ge 10 ] && ok "page: $n parts in the table" || fail "page: $n parts in the table"
    grep -o '<tr data-part="matmul_bwd">.*' "$tmp/dom.html" | sed 's|</tr>.*||' |
        grep -qE 'class="[^"]*\bworse\b[^"]*" data-verdict="slower" title="change against R1' &&
        ok "page: matmul_bwd slower against R1 (its samples' verdict)" || fail "page: matmul_bwd not marked slower against R1"
    [ "$(grep -o 'class="profile-bar"' "$tmp/dom.html" | wc -l)" -eq 2 ] &&
        ok "page: a step bar per report" || fail "page: not one step bar per report"
else
    echo "note: /usr/bin/chromium is absent: the page is not drawn"
fi

# the train suite passes the slowdown to its training loop
"$g" run train/mlp-tiny/run_to_run --quick --quiet --inject-slowdown relu_fwd:2 \
    --report "$tmp/suite.json" >"$tmp/last.log" 2>&1 || { fail "train suite run"; tail -5 "$tmp/last.log"; }
"$check" "$tmp/suite.json" --slowed relu_fwd >"$tmp/check.log" 2>&1 &&
    ok "train suite: profile with the slowed op" || { fail "train suite profile"; cat "$tmp/check.log"; }

# 2 ranks: one trace file per rank, each its own pid, the all-reduce's bytes
if [ -n "$mpiexec" ]; then
    mpi_launcher "$mpiexec"
    "$mpiexec" "${mpi_flags[@]}" -np 2 "$g" train --quiet --print-every 0 \
        --peak-gflops 100 --model gpt2-tiny --batch 8 --steps 8 --trace "$tmp/r.json" \
        --report "$tmp/np2.json" >"$tmp/last.log" 2>&1 || { fail "2-rank train"; tail -5 "$tmp/last.log"; }
    [ -s "$tmp/r.rank0.json" ] && [ -s "$tmp/r.rank1.json" ] && [ ! -e "$tmp/r.json" ] &&
        ok "2 ranks: r.rank0.json and r.rank1.json" || { fail "2 ranks: trace files"; ls "$tmp"; }
    "$check" "$tmp/np2.json" --ranks 2 --trace "$tmp/r.rank0.json" --trace "$tmp/r.rank1.json" \
        >"$tmp/check.log" 2>&1 && ok "2 ranks: profile with all-reduce bytes, both traces" ||
        { fail "2-rank profile or traces"; cat "$tmp/check.log"; }
    grep -q '"pid":1' "$tmp/r.rank1.json" && ! grep -q '"pid":0' "$tmp/r.rank1.json" &&
        ok "rank 1's trace is pid 1" || fail "rank 1's trace pid"
fi

[ "$fails" -eq 0 ] && echo "profile gate: all checks passed" || echo "profile gate: $fails check(s) failed"
[ "$fails" -eq 0 ]
