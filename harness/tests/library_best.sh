#!/usr/bin/env bash
# usage: library_best.sh GAUNTLET REPORT_CHECK
# The kernels suite sets matmul_fwd against the GEMM library's own best
# (be->gemm_library_best: cuBLASLt's algorithms for the same GEMM, timed):
# on --backend cuda every timed matmul_fwd result carries library_best_us,
# fraction_of_library_best and a library_best param naming what was
# searched; the other ops and the cpu backend carry none. The check
# vs_library_best is only made for GEMMs of 100 us or more on a GPU, so the
# small shapes here never have it. The same run checks the device peaks:
# hot and cold fractions of peak in (0, 1], memory-bound ops with their
# working set, hot against L2 or device memory, cold against device memory.
# Exit 77 where the cuda backend cannot
# run (no GPU, not the emulator).
set -u
g=$1
check=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"

cases=(kernels/matmul_fwd/fp32/N17_C64_OC65_nobias kernels/matmul_fwd/bf16/N3_C7_OC17
       kernels/gelu_fwd/fp32/n65)
"$g" run "${cases[@]}" --backend cuda --quick --report "$tmp/cuda.json" >"$tmp/cuda.out" 2>&1
rc=$?
# no cuda backend here: the suite reports one skipped "backend" result per run
skip=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
b = [x for x in r["results"] if x["case"] == "backend" and x["status"] == "skip"]
print(b[0].get("message", "skipped") if b else "")' "$tmp/cuda.json" 2>/dev/null)
if [ "$rc" -eq 0 ] && [ -n "$skip" ]; then
    echo "skipped: the cuda backend cannot run here: $skip"
    exit 77
fi
[ "$rc" -eq 0 ] || { fail "run on cuda exited $rc"; tail -20 "$tmp/cuda.out"; }
"$check" "$tmp/cuda.json" --no-errors --no-failed-checks || fail "report check (cuda)"

python3 - "$tmp/cuda.json" <<'EOF' || fails=$((fails + 1))
import json, sys
rep = json.load(open(sys.argv[1]))
bad = []
mm = [r for r in rep["results"] if r["case"].startswith("matmul_fwd/")]
other = [r for r in rep["results"] if not r["case"].startswith("matmul_fwd/")]
if len(mm) != 2 or not other:
    bad.append("expected 2 matmul_fwd results and a gelu_fwd one, got %d and %d"
               % (len(mm), len(other)))
for r in mm:
    m, p = r.get("metrics", {}), r.get("params", {})
    best, frac = m.get("library_best_us"), m.get("fraction_of_library_best")
    if not best or not frac:
        bad.append("%s: no library_best_us / fraction_of_library_best" % r["case"])
        continue
    t = m["time_us"]["value"]
    if not best["value"] > 0 or abs(frac["value"] - best["value"] / t) > 1e-9 * frac["value"]:
        bad.append("%s: library best %r us, ours %r us, fraction %r" %
                   (r["case"], best["value"], t, frac["value"]))
    if best.get("better") != "lower" or frac.get("better") != "higher":
        bad.append("%s: directions %s / %s" % (r["case"], best.get("better"), frac.get("better")))
    what = p.get("library_best", "")
    if "cuBLASLt" not in what or "timed" not in what:
        bad.append("%s: library_best param %r" % (r["case"], what))
    if any(c["name"] == "vs_library_best" for c in r.get("checks", [])):
        bad.append("%s: vs_library_best checked on a GEMM this small" % r["case"])
for r in other:
    if any(k.startswith("library_best") or "library_best" in k for k in r.get("metrics", {})):
        bad.append("%s: library best metrics on another op" % r["case"])
# the peaks on a device backend (docs/suites.md, "Peaks"): hot and cold
# fractions in (0, 1], the cap stated by peak_exceeded; memory-bound ops
# judged by their working set, hot against L2 (2) or device memory (0), cold
# always against device memory
for r in rep["results"]:
    m = r.get("metrics", {})
    for sfx in ("", "_cold"):
        f = m.get("fraction_of_peak" + sfx)
        if not f or not 0 < f["value"] <= 1:
            bad.append("%s: fraction_of_peak%s %r" % (r["case"], sfx, f and f["value"]))
        if ("peak_exceeded" + sfx) in m and m["peak" + sfx]["value"] <= 0:
            bad.append("%s: peak_exceeded%s with peak %r" % (r["case"], sfx, m["peak" + sfx]))
    if r["params"].get("bound") == "memory":
        ws = m.get("working_set", {}).get("value")
        moved = m["gbps"]["value"] * m["time_us"]["value"] * 1e3
        if not ws or ws > moved * (1 + 1e-6):
            bad.append("%s: working_set %r, bytes moved %r" % (r["case"], ws, moved))
        if m.get("peak_level", {}).get("value") not in (0, 2):
            bad.append("%s: peak_level %r" % (r["case"], m.get("peak_level")))
        if m.get("peak_level_cold", {}).get("value") != 0:
            bad.append("%s: peak_level_cold %r" % (r["case"], m.get("peak_level_cold")))
for b in bad:
    print("FAIL:", b)
if not bad:
    print("ok: %d matmul_fwd results against the library's best, %d others without"
          % (len(mm), len(other)))
sys.exit(1 if bad else 0)
EOF

# a host backend has no GEMM library to ask
"$g" run kernels/matmul_fwd/fp32/N17_C64_OC65_nobias --backend cpu --quick \
    --report "$tmp/cpu.json" >"$tmp/cpu.out" 2>&1 || fail "run on cpu exited $?"
grep -q "library_best" "$tmp/cpu.json" && fail "library best metrics on the cpu backend"

if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "library_best: all checks passed"
