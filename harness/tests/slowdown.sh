#!/usr/bin/env bash
# --inject-slowdown lists and classes, and the results' class families
# ("groups"), end to end on a few quick cases:
#   - kernels with gemm:1.5: every matmul_fwd and conv2d_fwd case is slowed
#     (param injected_slowdown 1.5) and carries groups ["gemm"], the
#     memory-bound relu_fwd is not slowed and carries ["memory"]; a case item
#     beside the class slows its case by its own factor;
#   - collectives with collective:1.2,allreduce:1.5: broadcast by the class,
#     allreduce by its own item, both with groups ["collective"];
#   - the report validates; a list with an item that names nothing, and a
#     class with a factor below 1, are refused (exit 2) naming the item.
# usage: slowdown.sh GAUNTLET REPORT_CHECK
set -u
g=$1
check=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"

EXPECT_TIMEOUT=120 expect 0 "" "$g" run kernels/matmul_fwd kernels/conv2d_fwd/fp32/N2_C3_H7_W7_OC5_K3_s2_p1 \
    kernels/relu_fwd/fp32/n65 --quick --quiet --topologies 1 \
    --inject-slowdown gemm:1.5,matmul_fwd/fp32/N64_C768_OC768:3 --report "$tmp/k.json"
"$check" "$tmp/k.json" --no-errors > "$tmp/check.out" 2>&1 && ok "the kernels report validates" ||
    { fail "report_check (kernels)"; cat "$tmp/check.out"; }
python3 - "$tmp/k.json" <<'EOF' && ok "kernels: gemm slowed and grouped, relu not" || fail "kernels"
import json, sys
rep = json.load(open(sys.argv[1]))
bad = []
res = rep["results"]
def where(r): return r["case"]
mm = [r for r in res if r["case"].startswith("matmul_fwd/")]
cv = [r for r in res if r["case"].startswith("conv2d_fwd/")]
rl = [r for r in res if r["case"].startswith("relu_fwd/")]
if len(mm) < 2 or len(cv) != 1 or len(rl) != 1:
    bad.append("expected >= 2 matmul_fwd, 1 conv2d_fwd, 1 relu_fwd results, got %d, %d, %d"
               % (len(mm), len(cv), len(rl)))
for r in mm + cv:
    want = 3 if r["case"] == "matmul_fwd/fp32/N64_C768_OC768" else 1.5
    got = r["params"].get("injected_slowdown")
    if got != want: bad.append("%s: injected_slowdown %r, expected %r" % (where(r), got, want))
    if r.get("groups") != ["gemm"]: bad.append("%s: groups %r, expected ['gemm']" % (where(r), r.get("groups")))
for r in rl:
    if "injected_slowdown" in r["params"]:
        bad.append("%s: slowed (%r), but relu is not in gemm" % (where(r), r["params"]["injected_slowdown"]))
    if r.get("groups") != ["memory"]: bad.append("%s: groups %r, expected ['memory']" % (where(r), r.get("groups")))
    if "working_set" not in r["metrics"]: bad.append("%s: no working_set, yet in memory" % where(r))
for r in res:
    if "groups" in r["params"]: bad.append("%s: groups as a param" % where(r))
for b in bad: print("  " + b)
sys.exit(1 if bad else 0)
EOF

EXPECT_TIMEOUT=60 expect 0 "" "$g" run collectives/allreduce collectives/broadcast --quick --quiet \
    --topologies 1 --rounds 1 --inject-slowdown collective:1.2,allreduce:1.5 --report "$tmp/c.json"
python3 - "$tmp/c.json" <<'EOF' && ok "collectives: each by its item, grouped" || fail "collectives"
import json, sys
rep = json.load(open(sys.argv[1]))
bad = []
seen = set()
for r in rep["results"]:
    coll = r["case"].split("/")[0]
    seen.add(coll)
    want = {"allreduce": 1.5, "broadcast": 1.2}.get(coll)
    got = r["params"].get("injected_slowdown")
    if got != want: bad.append("%s: injected_slowdown %r, expected %r" % (r["case"], got, want))
    if r.get("groups") != ["collective"]: bad.append("%s: groups %r" % (r["case"], r.get("groups")))
if seen != {"allreduce", "broadcast"}: bad.append("collectives run: %r" % sorted(seen))
for b in bad[:10]: print("  " + b)
sys.exit(1 if bad else 0)
EOF

# refusals name the bad item
expect 2 "nosuchop:1.2" "$g" run kernels/relu_fwd --quick --inject-slowdown matmul_fwd:1.2,nosuchop:1.2
expect 2 "'gemm:0.5'" "$g" run kernels/relu_fwd --quick --inject-slowdown gemm:0.5
expect 2 "'matmul_fwd:1.2,,gemm:1.1'" "$g" run kernels/relu_fwd --quick \
    --inject-slowdown matmul_fwd:1.2,,gemm:1.1

[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
echo "all passed"
