#!/usr/bin/env bash
# usage: history.sh GAUNTLET
# The run history (reports/history.h, docs/history.md) end to end: recording,
# the listing and its filters, a series with its change point and the
# fingerprint field that changed there, the gate against the last good run of
# the class; a missing, foreign, corrupt or newer-schema database refused and
# left byte for byte as it was; two writers at once both landing; a writer
# killed with -9 mid-write leaving the database consistent. In a build without
# SQLite: every history command and --history refuse with the message that
# says how to get it.
set -u
g=$1
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
. "$(dirname "$0")/lib.sh"

if "$g" history "$tmp/x.db" 2>&1 | grep -q "built without SQLite"; then
    expect 2 "built without SQLite.*libsqlite3-dev" "$g" history add "$tmp/x.db" nothing.json
    expect 2 "built without SQLite" "$g" history "$tmp/x.db" --case c --metric m
    expect 2 "built without SQLite" "$g" train --steps 2 --quiet --report "$tmp/r.json" \
        --history "$tmp/x.db"
    [ -e "$tmp/x.db" ] && fail "a build without SQLite created a database"
    [ "$fails" -eq 0 ] && echo "history: all checks passed (no SQLite in this build)"
    [ "$fails" -eq 0 ]
    exit
fi

. "$(dirname "$0")/history_lib.sh"
db=$tmp/h.db
files=()
for i in $(seq 1 12); do
    day=$(printf "2026-10-%02d" "$i")
    if [ "$i" -le 6 ]; then drv=550.54; lvl=100; else drv=555.42; lvl=130; fi
    mk "$tmp/r$i.json" "run-$i" "${day}T01:00:00Z" "$drv" pass "$lvl"
    files+=("$tmp/r$i.json")
done

# ---- recording and listing
expect 2 "no history database at .*missing.db.*--history" "$g" history "$tmp/missing.db"
[ -e "$tmp/missing.db" ] && fail "listing a missing database created it"
expect 0 "recorded as run 12" "$g" history add "$db" "${files[@]}"
expect 0 "was already recorded as run 3" "$g" history add "$db" "$tmp/r3.json"
expect 2 "was already recorded.*|cannot read report .*missing.json" "$g" history add "$db" "$tmp/r3.json" "$tmp/missing.json"
out=$("$g" history "$db")
n=$(grep -c "node-a" <<<"$out")
[ "$n" -eq 12 ] && ok "12 runs listed" || { fail "$n runs listed, expected 12"; echo "$out"; }
grep -qE "^ +7  2026-10-07T01:00:00Z  abcrun-7 +node-a +- +555\.42 +12\.4 +2\.21 +0/1/0/0|^ +7 .*555\.42 +12\.4 +2\.21 +2/0/0/0" <<<"$out" &&
    ok "a run's line: id, start, git, host, driver, CUDA, NCCL, counts" ||
    { fail "run 7's line"; echo "$out"; }
n=$("$g" history "$db" --last 2 | grep -cE "2026-10-1[12]T")
[ "$n" -eq 2 ] && ok "--last 2: runs 11 and 12" || fail "--last 2: $n of runs 11 and 12"
n=$("$g" history "$db" --since 2026-10-10 | grep -c node-a)
[ "$n" -eq 3 ] && ok "--since 2026-10-10: 3 runs" || fail "--since: $n runs, expected 3"
expect 0 "no run in .* matches the filters" "$g" history "$db" --host node-b
expect 2 "--since 'last week' is not a date" "$g" history "$db" --since "last week"
expect 2 "needs --metric" "$g" history "$db" --case drift
expect 2 "unknown option '--cases'" "$g" history "$db" --cases drift
expect 0 "consistent: 12 run" "$g" history "$db" --check

# ---- the series and its change point
out=$("$g" history "$db" --case drift --metric time_us)
echo "$out" | sed -n '1,3p'
grep -q "12 runs, 1 change point$" <<<"$out" && ok "drift: one change point" ||
    { fail "drift: not one change point"; echo "$out"; }
grep -q "change point at run 7 (2026-10-07T01:00:00Z): slower, 100 -> 130 us (+30.0%" <<<"$out" &&
    ok "at run 7, slower by 30%" || { fail "the change point's place or size"; echo "$out"; }
grep -q "fingerprint changed at run 7: .*env.software.cuda_driver: 550.54 -> 555.42" <<<"$out" &&
    ok "names the driver that changed there" || { fail "changed fields"; echo "$out"; }
grep -q "git_revision: abcrun-6 -> abcrun-7" <<<"$out" && ok "and the git revision" ||
    fail "git revision not among the changed fields"
grep -qE "^> +7 " <<<"$out" && ok "run 7 marked in the table" || { fail "run 7 not marked"; echo "$out"; }
expect 0 "12 runs, 0 change points" "$g" history "$db" --case kernels/flat --metric time_us
expect 0 "6 runs, 0 change points" "$g" history "$db" --case drift --metric time_us --since 2026-10-07
expect 2 "case 'drift' has no metric 'gflops'.*its metrics: time_us" "$g" history "$db" --case drift --metric gflops
expect 2 "no case 'drfit'.*its cases: drift, flat" "$g" history "$db" --case drfit --metric time_us
expect 2 "has no metric 'time_us'" "$g" history "$db" --case drift --metric time_us --backend cuda

# ---- runs of 1 and 2 threads per rank (env.threads, part of the machine
# class) interleaved: before, one series (927, 850, 488, 496, 941 ... us) with
# 0 change points and nothing to explain the jumps; now a series per class,
# each flat, the class named, and a change within a class still found
tdb=$tmp/threads.db
thr=(1 1 2 2 1 1 2 2 1 2 1 2)
lv=(927 930 488 496 941 930 490 495 935 489 1300 492)
for i in $(seq 1 12); do
    t=${thr[$((i - 1))]}
    MK_ENV="\"threads\": {\"per_rank\": $t, \"obtained\": $t}" \
        mk "$tmp/t$i.json" "run-$((100 + i))" "$(printf "2026-11-%02dT01:00:00Z" "$i")" 550.54 pass "${lv[$((i - 1))]}"
    "$g" history add "$tdb" "$tmp/t$i.json" >/dev/null || fail "add t$i"
done
out=$("$g" history "$tdb" --case drift --metric time_us)
n1=$(grep -c "^kernels/drift on 1 rank(s), backend cpu, machine class 'Test CPU 9000, 8 logical CPUs; no GPU; 1 thread(s) per rank': time_us .*, 6 runs, 1 change point$" <<<"$out")
n2=$(grep -c "^kernels/drift on 1 rank(s), backend cpu, machine class 'Test CPU 9000, 8 logical CPUs; no GPU; 2 thread(s) per rank': time_us .*, 6 runs, 0 change points$" <<<"$out")
[ "$n1" -eq 1 ] && [ "$n2" -eq 1 ] && ok "1 and 2 threads per rank: a series per class, named" ||
    { fail "1 and 2 threads per rank: not a series per class"; echo "$out"; }
grep -q "one series per machine class: CPU and its count, GPUs, threads per rank" <<<"$out" &&
    ok "the split is explained" || fail "the split is not explained"
grep -q "change point at run 11 .*: slower, 93[0-9.]* -> 1300 us" <<<"$out" &&
    ok "the 1-thread runs' own regression at run 11 found" || { fail "run 11's change point"; echo "$out"; }
# a series of one class only names no class
"$g" history "$db" --case drift --metric time_us | grep -q "machine class" &&
    fail "a series of one class names its class" || ok "one class: no class named"
# the page: each class's plot says its class
"$g" report --history "$tdb" --history-case drift --html "$tmp/threads.html" >/dev/null || fail "threads page"
[ "$(grep -o '"class":"Test CPU 9000, 8 logical CPUs; no GPU; [12] thread(s) per rank"' "$tmp/threads.html" | sort -u | wc -l)" -eq 2 ] &&
    ok "the page: a plot per class, its class named" || fail "the page's series do not name their classes"

# ---- the gate against the last good run of the class
mk "$tmp/bad13.json" run-13 2026-10-13T01:00:00Z 555.42 fail 300
"$g" history add "$db" "$tmp/bad13.json" >/dev/null || fail "add a failed run"
mk "$tmp/new-ok.json" run-14 2026-10-14T01:00:00Z 555.42 pass 131
mk "$tmp/new-slow.json" run-15 2026-10-15T01:00:00Z 555.42 pass 200
mk "$tmp/other.json" run-16 2026-10-16T01:00:00Z 555.42 pass 130 "Other CPU"
expect 0 "NEW may ship" "$g" history "$db" --gate "$tmp/new-ok.json"
"$g" history "$db" --gate "$tmp/new-ok.json" | grep -q "against the last 5 good runs of its class .*(the newest: run 12)" &&
    ok "the gate took runs 8-12 as its baseline (run 13 failed)" || fail "the gate did not take the last 5 good runs, newest 12"
expect 3 "NEW MUST NOT SHIP" "$g" history "$db" --gate "$tmp/new-slow.json" --junit "$tmp/j.xml"
grep -q "<failure" "$tmp/j.xml" 2>/dev/null && ok "--gate --junit wrote the failure" || fail "no JUnit failure"
expect 2 "no good run .*of this report's class: host kind 'Other CPU, 8 logical CPUs; no GPU; " \
    "$g" history "$db" --gate "$tmp/other.json"
expect 2 "cannot read the NEW report" "$g" history "$db" --gate "$tmp/missing.json"
# REPORT recorded already and the only good run of its class: said so (before:
# "no good run of this report's class", then that same class among "the
# classes with good runs")
mk "$tmp/lone.json" run-17 2026-10-17T01:00:00Z 555.42 pass 130 "Lone CPU"
"$g" history add "$db" "$tmp/lone.json" >/dev/null || fail "add a run of a class of its own"
expect 2 "the only good run of this report's class \(host kind 'Lone CPU, .* is the report itself \(recorded as run 14, the same run.id\)" \
    "$g" history "$db" --gate "$tmp/lone.json"
out=$("$g" history "$db" --gate "$tmp/lone.json" 2>&1)
grep -q "has no good run" <<<"$out" && fail "the lone run's gate still says the class has no good run"
grep -q "other classes with good runs: Test CPU 9000" <<<"$out" && ! grep -q "good runs: [^)]*Lone CPU" <<<"$out" &&
    ok "the other classes are listed, not the lone run's own" || { fail "the classes listed"; echo "$out"; }
expect 2 "has no good run .*of this report's class: host kind 'Other CPU.*other classes with good runs: .*Lone CPU" \
    "$g" history "$db" --gate "$tmp/other.json"
# several runs of the new stack as a directory: one side, none of them a baseline run
mkdir -p "$tmp/cands-ok" "$tmp/cands-slow" "$tmp/cands-empty"
mk "$tmp/cands-ok/a.json" run-20 2026-10-20T01:00:00Z 555.42 pass 131
mk "$tmp/cands-ok/b.json" run-21 2026-10-20T02:00:00Z 555.42 pass 129
expect 0 "NEW may ship" "$g" history "$db" --gate "$tmp/cands-ok"
mk "$tmp/cands-slow/a.json" run-22 2026-10-21T01:00:00Z 555.42 pass 200
mk "$tmp/cands-slow/b.json" run-23 2026-10-21T02:00:00Z 555.42 pass 198
expect 3 "NEW MUST NOT SHIP" "$g" history "$db" --gate "$tmp/cands-slow"
"$g" history add "$db" "$tmp/cands-ok/a.json" >/dev/null || fail "add a candidate run"
"$g" history "$db" --gate "$tmp/cands-ok" | grep -q "against the last 5 good runs of its class .*(the newest: run 12)" &&
    ok "a candidate recorded already is no baseline run" || fail "a candidate run became its own baseline"
expect 2 "the NEW directory .* holds no .json report" "$g" history "$db" --gate "$tmp/cands-empty"
# the candidate runs as one look of a design over NEW runs (ci/jobs/gate.sh --runs)
expect 0 "sequential look at 2 NEW runs of 1..3" "$g" history "$db" --gate "$tmp/cands-ok" \
    --sequential 1:3 --spending obf
expect 3 "NEW MUST NOT SHIP" "$g" history "$db" --gate "$tmp/cands-slow" --sequential 2:4
expect 2 "NEW holds 2 runs, outside the design's looks \\(3 to 4\\)" "$g" history "$db" \
    --gate "$tmp/cands-ok" --sequential 3:4
expect 2 "--sequential and --spending need --gate DIR" "$g" history "$db" --sequential 1:3
expect 2 "--spending needs --sequential" "$g" history "$db" --gate "$tmp/cands-ok" --spending obf
expect 2 "--sequential '3:1': FIRST:MAX" "$g" history "$db" --gate "$tmp/cands-ok" --sequential 3:1

# ---- databases that must be refused and left as they were
sum() { md5sum "$1" | cut -d' ' -f1; }
echo "not a database" >"$tmp/text.db"
before=$(sum "$tmp/text.db")
expect 2 "text.db' is not an SQLite database.*left untouched" "$g" history "$tmp/text.db"
expect 2 "is not an SQLite database" "$g" history add "$tmp/text.db" "$tmp/r1.json"
expect 2 "--history: .*is not an SQLite database" "$g" train --steps 2 --quiet \
    --report "$tmp/t.json" --history "$tmp/text.db"
[ "$(sum "$tmp/text.db")" = "$before" ] && ok "the text file is unchanged" || fail "text file changed"

# header fields (big-endian, SQLite's file format): user_version at 60, application_id at 68
poke() { printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
cp "$db" "$tmp/newer.db"
poke "$tmp/newer.db" 60 '\x00\x00\x00\x02'
before=$(sum "$tmp/newer.db")
expect 2 "schema version 2, newer than this gauntlet's 1.*left untouched" "$g" history "$tmp/newer.db"
expect 2 "newer than this gauntlet's" "$g" history add "$tmp/newer.db" "$tmp/new-ok.json"
[ "$(sum "$tmp/newer.db")" = "$before" ] && ok "the newer database is unchanged" || fail "newer db changed"
cp "$db" "$tmp/foreign.db"
poke "$tmp/foreign.db" 68 '\x12\x34\x56\x78'
expect 2 "of another program \(application_id 0x12345678" "$g" history add "$tmp/foreign.db" "$tmp/new-ok.json"

cp "$db" "$tmp/corrupt.db"
size=$(stat -c %s "$tmp/corrupt.db")
head -c $((size - 4096)) /dev/urandom | dd of="$tmp/corrupt.db" bs=4096 seek=1 conv=notrunc status=none
before=$(sum "$tmp/corrupt.db")
expect 2 "corrupt.db' is corrupt .*left as it is" "$g" history "$tmp/corrupt.db"
expect 2 "is corrupt" "$g" history add "$tmp/corrupt.db" "$tmp/new-ok.json"
expect 2 "is corrupt" "$g" history "$tmp/corrupt.db" --case drift --metric time_us
[ "$(sum "$tmp/corrupt.db")" = "$before" ] && ok "the corrupt database is unchanged" ||
    fail "the corrupt database was written"
ls "$tmp"/corrupt.db-* >/dev/null 2>&1 && fail "WAL or journal files left beside the corrupt one"

# ---- two writers at once: the first holds the write lock mid-report, the
# second waits for it (busy timeout) and lands after it
wait_for() { # FILE PATTERN: up to 30 s
    for _ in $(seq 1 300); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    return 1
}
c=$tmp/conc.db
GT_HISTORY_TEST_PAUSE_MS=1500 "$g" history add "$c" "$tmp/r1.json" >"$tmp/w1.out" 2>"$tmp/w1.err" &
p1=$!
pids+=("$p1")
wait_for "$tmp/w1.err" "paused mid-write" || fail "the first writer never paused"
"$g" history add "$c" "$tmp/r2.json" >"$tmp/w2.out" 2>"$tmp/w2.err" &
p2=$!
pids+=("$p2")
wait "$p1" && wait "$p2" && ok "both writers succeeded" ||
    { fail "a writer failed"; cat "$tmp"/w*.err; }
n=$("$g" history "$c" | grep -c node-a)
[ "$n" -eq 2 ] && ok "both runs landed" || fail "$n runs in the database, expected 2"
# two trainings recording into a fresh database at the same moment
for k in 1 2; do
    "$g" train --model mlp-tiny --steps 5 --quiet --seed $k --report "$tmp/tr$k.json" \
        --history "$tmp/train.db" >"$tmp/tr$k.out" 2>&1 &
    pids+=($!)
done
okc=0
for p in "${pids[@]: -2}"; do wait "$p" && okc=$((okc + 1)); done
n=$("$g" history "$tmp/train.db" | grep -c "1/0/0/0")
[ "$okc" -eq 2 ] && [ "$n" -eq 2 ] && ok "two trainings at once: both recorded" ||
    { fail "two trainings: $okc succeeded, $n recorded"; cat "$tmp"/tr*.out | tail -10; }

# ---- a writer killed mid-write leaves the database as before that report
k=$tmp/kill.db
"$g" history add "$k" "$tmp/r1.json" "$tmp/r2.json" >/dev/null || fail "kill.db: first adds"
GT_HISTORY_TEST_PAUSE_MS=30000 "$g" history add "$k" "$tmp/r3.json" >/dev/null 2>"$tmp/k.err" &
pk=$!
pids+=("$pk")
wait_for "$tmp/k.err" "paused mid-write" || fail "the writer to kill never paused"
kill -9 "$pk"
wait "$pk" 2>/dev/null
expect 0 "consistent: 2 run\(s\)" "$g" history "$k" --check
n=$("$g" history "$k" | grep -c node-a)
[ "$n" -eq 2 ] && ok "the killed writer's run is absent, the others intact" || fail "$n runs after kill -9"
expect 0 "recorded as run 3" "$g" history add "$k" "$tmp/r3.json"
expect 0 "consistent: 3 run\(s\)" "$g" history "$k" --check

[ "$fails" -eq 0 ] && echo "history: all checks passed" || echo "history: $fails check(s) failed"
[ "$fails" -eq 0 ]
