#!/usr/bin/env bash
# gpt2-124m B=4 T=64 on the cpu backend against PyTorch on the same machine, in turns
# (gauntlet, torch, gauntlet, torch ...) so that a drift of the machine's speed hits
# both: median step time, start-up (process start to the first step) and peak
# resident memory of each. A benchmark for docs/performance.md, not a test.
#
#   ci/bench_gpt2_cpu.sh [ROUNDS] [GAUNTLET]     (defaults: 3, build/harness/gauntlet)
#
# PyTorch: Debian's python3-torch (1.13 on Debian 12: apt-get install python3-torch),
# run by /usr/bin/python3 with ci/torch_gpt2_baseline.py --device cpu, the same threads
# as gauntlet (nproc). Variables such as OPENBLAS_CORETYPE apply to both.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
g=${2:-build/harness/gauntlet}
threads=$(nproc)
py=/usr/bin/python3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$py" -c 'import torch' 2>/dev/null || { echo "bench_gpt2_cpu: $py cannot import torch (apt-get install python3-torch)" >&2; exit 2; }
for r in $(seq 1 "$rounds"); do
    /usr/bin/time -f "%M" -o "$out/g$r.rss" "$g" train --model gpt2-124m --batch 4 --seq 64 \
        --steps 8 --threads "$threads" --report "$out/g$r.json" >"$out/g$r.log" 2>&1
    /usr/bin/time -f "%M" -o "$out/t$r.rss" "$py" ci/torch_gpt2_baseline.py --device cpu \
        --threads "$threads" --batch 4 --seq 64 --warmup 2 --steps 6 --peak-gflops 1 \
        --json "$out/t$r.json" >"$out/t$r.log" 2>&1
    echo "round $r done" >&2
done
"$py" - "$out" "$rounds" <<'PY'
import json, statistics as st, sys
out, n = sys.argv[1], int(sys.argv[2])
rows = []
for r in range(1, n + 1):
    g = json.load(open(f"{out}/g{r}.json"))["results"][0]["metrics"]
    t = json.load(open(f"{out}/t{r}.json"))
    rss = lambda p: int(open(p).read().split()[-1]) / 2**20
    rows.append((g["ms_per_step"]["value"], g["startup_ms"]["value"], rss(f"{out}/g{r}.rss"),
                 t["ms_per_step"], rss(f"{out}/t{r}.rss"), t["torch"]))
print("| round | gauntlet ms/step | gauntlet start-up ms | gauntlet peak RSS GiB | torch ms/step | torch peak RSS GiB | speed ratio |")
print("|---|---|---|---|---|---|---|")
for i, (gm, gs, gr, tm, tr, tv) in enumerate(rows, 1):
    print(f"| {i} | {gm:.0f} | {gs:.0f} ({gs / gm:.2f} steps) | {gr:.2f} | {tm:.0f} | {tr:.2f} | {tm / gm:.2f}x |")
med = lambda k: st.median(x[k] for x in rows)
print(f"| median | {med(0):.0f} | {med(1):.0f} ({med(1) / med(0):.2f} steps) | {med(2):.2f} | {med(3):.0f} | {med(4):.2f} | {st.median(x[3] / x[0] for x in rows):.2f}x |")
print(f"torch {rows[0][5]}")
PY
