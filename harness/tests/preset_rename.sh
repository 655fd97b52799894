#!/usr/bin/env bash
# usage: preset_rename.sh GAUNTLET
# The gpt2 preset once called gpt2-small is gpt2-3m (docs/models.md, "Renamed"):
# the old name still runs, with one note on stderr naming the new one, and the
# report records the new name; an old report's results (case gpt2-small,
# params.model gpt2-small) pair with a new report's in compare, and a history
# database that recorded them under the old name goes on as one series.
set -u
g=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"

fast="--steps 2 --batch 2 --seq 16 --peak-gflops 100 --quiet"
# ---- the old name runs the new preset, says so once, records the new name
"$g" train --model gpt2-small $fast --report "$tmp/old-name.json" >"$tmp/o.out" 2>"$tmp/o.err" ||
    fail "train --model gpt2-small failed: $(tail -3 "$tmp/o.err")"
n=$(grep -c "note: model 'gpt2-small' is now 'gpt2-3m'" "$tmp/o.err")
[ "$n" -eq 1 ] && ok "--model gpt2-small: one note naming gpt2-3m" ||
    { fail "--model gpt2-small: $n notes"; cat "$tmp/o.err"; }
[ "$(wc -l <"$tmp/o.err")" -eq 1 ] && ok "the note is one line" || fail "stderr: $(cat "$tmp/o.err")"
# the command line is recorded as typed; every name the results carry is the new one
python3 - "$tmp/old-name.json" <<'PY' && ok "the report records gpt2-3m" || fail "the report does not record the new name"
import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"][0]
d["run"].pop("command_line", None)
sys.exit(0 if r["case"] == "gpt2-3m" and r["params"]["model"] == "gpt2-3m" and "gpt2-small" not in json.dumps(d) else 1)
PY
"$g" train --model gpt2-3m $fast --report "$tmp/new.json" >/dev/null 2>"$tmp/n.err" || fail "train gpt2-3m"
[ -s "$tmp/n.err" ] && fail "the new name printed on stderr: $(cat "$tmp/n.err")" || ok "the new name: no note"
"$g" train --help | grep -q "gpt2-small" && fail "--help still offers gpt2-small" || ok "--help names gpt2-3m only"
expect 2 "unknown model 'gpt2-smal'.*gpt2-3m" -- "$g" train --model gpt2-smal
# a selection under the old name
expect 0 "note: case 'scaling/gpt2-small/weak' is now 'scaling/gpt2-3m/weak'" -- \
    "$g" run scaling/gpt2-small/weak --quick --topologies 1 --quiet --report "$tmp/s.json"
grep -q '"case": "gpt2-3m/weak"' "$tmp/s.json" && ok "run scaling/gpt2-small/weak ran scaling/gpt2-3m/weak" ||
    fail "the scaling selection under the old name"
expect 0 "^  gpt2-3m/weak " -- "$g" list

# ---- an old report: its results read under the new names
# an old report (what an older gauntlet wrote): the old names, its own run id
oldrep() { # FROM TO RUN_ID
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["run"]["id"] = sys.argv[3]
for r in d["results"]:
    r["case"] = r["case"].replace("gpt2-3m", "gpt2-small")
    r["params"]["model"] = "gpt2-small"
json.dump(d, open(sys.argv[2], "w"), indent=1)
PY
}
oldrep "$tmp/new.json" "$tmp/old.json" old-run
grep -q '"case": "gpt2-small"' "$tmp/old.json" || fail "could not make an old report"
out=$("$g" compare "$tmp/old.json" "$tmp/new.json" 2>&1)
grep -q "results: 1 matched, 0 only in BASE (0 of them passed there), 0 only in NEW" <<<"$out" &&
    ok "compare: the old report's gpt2-small pairs with gpt2-3m" || { fail "compare did not pair them"; echo "$out" | head -20; }
grep -q "gpt2-small" <<<"$out" && fail "compare printed the old name"
out=$("$g" compare "$tmp/new.json" "$tmp/old.json" --verbose 2>&1)
grep -q "train/gpt2-3m" <<<"$out" && ! grep -q "gpt2-small" <<<"$out" &&
    ok "compare with the old report as NEW: the new name" || fail "compare NEW old: $(grep -m2 gpt2 <<<"$out")"

# ---- the history: an old report recorded now, and rows recorded before the rename
if "$g" history "$tmp/x.db" 2>&1 | grep -q "built without SQLite"; then
    echo "skip: no SQLite in this build (history part)"
else
    db=$tmp/h.db
    "$g" history add "$db" "$tmp/old.json" "$tmp/new.json" >/dev/null || fail "history add"
    expect 0 "train/gpt2-3m on 1 rank\(s\), backend cpu: ms_per_step .*, 2 runs" -- \
        "$g" history "$db" --case gpt2-3m --metric ms_per_step
    # a database written before the rename: its rows carry the old name
    odb=$tmp/before.db
    "$g" history add "$odb" "$tmp/new.json" >/dev/null || fail "history add (before)"
    python3 - "$odb" <<'PY' || fail "could not write old-name rows"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("UPDATE results SET case_name = 'gpt2-small', identity = replace(replace(identity, "
          "char(31) || 'gpt2-3m' || char(31), char(31) || 'gpt2-small' || char(31)), "
          "'\"model\":\"gpt2-3m\"', '\"model\":\"gpt2-small\"')")
c.execute("UPDATE metrics SET case_name = 'gpt2-small'")
c.commit()
n = c.execute("SELECT count(*) FROM results WHERE identity LIKE '%gpt2-small%' AND case_name = 'gpt2-small'").fetchone()[0]
sys.exit(0 if n == 1 else 1)
PY
    oldrep "$tmp/new.json" "$tmp/third.json" third-run
    "$g" history add "$odb" "$tmp/third.json" >/dev/null || fail "history add (after)"
    out=$("$g" history "$odb" --case train/gpt2-3m --metric ms_per_step 2>&1)
    grep -q "^train/gpt2-3m on 1 rank(s), backend cpu: ms_per_step .*, 2 runs" <<<"$out" &&
        [ "$(grep -c '^train/' <<<"$out")" -eq 1 ] &&
        ok "rows recorded under gpt2-small and a later run: one series under gpt2-3m" ||
        { fail "the history did not carry the old rows over"; echo "$out"; }
    expect 0 "consistent: 2 run" -- "$g" history "$odb" --check
fi

[ "$fails" -eq 0 ] && echo "preset_rename: all checks passed" || echo "preset_rename: $fails check(s) failed"
[ "$fails" -eq 0 ]
