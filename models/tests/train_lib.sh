# Sourced by the model tests that train through `gauntlet train` and compare
# final weights (gpt2_dp.sh, gpt2_pp.sh, gpt2_tp.sh, gpt2_recompute.sh), after
# harness/tests/lib.sh. They set: g (gauntlet), diff (report_diff), tmp, common
# (the train options every run shares) and, for train_mpi, mpiexec with
# mpi_flags (lib.sh's mpi_launcher).

# train_mpi NAME NP ARGS...: trains on NP ranks under the launcher (also NP 1:
# the mpi communicator), keeps $tmp/NAME.json, NAME.out and the final-weights
# digest in NAME.digest
train_mpi() {
    local name=$1 np=$2
    shift 2
    "$mpiexec" "${mpi_flags[@]}" -np "$np" "$g" train $common "$@" \
        --report "$tmp/$name.json" > "$tmp/$name.out" 2>&1
    train_kept "$name" $? gauntlet
}
# train_kept NAME RC [GREP]: after a run, the failure (its output's last lines,
# or those matching GREP) or the final-weights digest
train_kept() {
    local name=$1 rc=$2
    if [ "$rc" -ne 0 ]; then
        fail "$name: exit code $rc"
        if [ -n "${3:-}" ]; then grep -i "$3" "$tmp/$name.out" | tail -3; else tail -3 "$tmp/$name.out"; fi
        return
    fi
    grep -o 'fnv1a64 [0-9a-f]*' "$tmp/$name.out" | head -1 | cut -d' ' -f2 > "$tmp/$name.digest"
}
# same A B WHAT: runs A and B ended with bitwise-equal weights and losses
same() {
    if [ -s "$tmp/$1.digest" ] && cmp -s "$tmp/$1.digest" "$tmp/$2.digest" &&
       "$diff" "$tmp/$1.json" "$tmp/$2.json" --rtol 0 > /dev/null; then
        ok "$3 ($(cat "$tmp/$1.digest"))"
    else
        fail "$3: weights $(cat "$tmp/$1.digest" 2>/dev/null) vs $(cat "$tmp/$2.digest" 2>/dev/null)"
        "$diff" "$tmp/$1.json" "$tmp/$2.json"
    fi
}

# traffic_equal NAME...: each run's traffic per step per collective kind
# (result.traffic) present and equal to its formula; prints the ones that are not
traffic_equal() {
    local files=() n
    for n in "$@"; do files+=("$tmp/$n.json"); done
    python3 - "${files[@]}" <<'PYEOF'
import json, sys
bad = []
for f in sys.argv[1:]:
    t = json.load(open(f))["results"][0].get("traffic", {})
    b, fm = t.get("bytes_per_step"), t.get("formula_bytes_per_step")
    if not b or b != fm: bad.append((f.split("/")[-1], b, fm))
print(bad or "all equal")
sys.exit(1 if bad else 0)
PYEOF
}

# refused WHAT NP PATTERN ARGS...: a train on NP ranks with ARGS exits non-zero
# saying PATTERN (before any work)
refused() {
    local what=$1 np=$2 pattern=$3
    shift 3
    local out rc
    out=$("$mpiexec" "${mpi_flags[@]}" -np "$np" "$g" train --steps 2 --batch 8 --threads 1 \
          --print-every 0 --peak-gflops 100 "$@" 2>&1)
    rc=$?
    if [ $rc -ne 0 ] && grep -q -- "$pattern" <<<"$out"; then ok "$what refused"
    else fail "$what: rc $rc"; echo "$out" | grep -i gauntlet | tail -3; fi
}
