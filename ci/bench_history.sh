#!/usr/bin/env bash
# usage: ci/bench_history.sh [GAUNTLET]   (default build/harness/gauntlet)
# The run history's two costs that grow (docs/performance.md): adding one
# report of 1,000 results, and reading one metric's series (with its change
# points) over 10,000 runs. Synthetic reports (awk), a fresh database in a
# temporary directory; prints the times. A benchmark, not a test: run it by hand.
set -eu
g=${1:-build/harness/gauntlet}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }

# one report of 1,000 kernels results, 10 samples each
awk -v out="$tmp/big.json" 'BEGIN {
    printf "{\"schema_version\": 1, \"run\": {\"id\": \"big\", \"start\": \"2026-11-01T00:00:00Z\"}, " \
           "\"env\": {\"host\": \"bench\", \"cpu\": {\"model\": \"B\", \"logical\": 2}}, \"results\": [" > out
    for (i = 0; i < 1000; i++) {
        s = ""
        for (k = 0; k < 10; k++) s = s (k ? ", " : "") (100 + (i * 7 + k * 3) % 11)
        printf "%s{\"suite\": \"kernels\", \"case\": \"op%d\", \"topology\": \"1\", \"backend\": \"cpu\", " \
               "\"status\": \"pass\", \"params\": {\"n\": %d}, \"checks\": [{\"name\": \"conformance\", \"passed\": true}], " \
               "\"metrics\": {\"time_us\": {\"value\": 100, \"unit\": \"us\", \"better\": \"lower\", \"n\": 10, " \
               "\"samples\": [%s]}, \"gflops\": {\"value\": 5, \"unit\": \"GFLOP/s\", \"better\": \"higher\"}}}", \
               (i ? ", " : ""), i, i, s > out
    }
    print "], \"summary\": {}}" > out
}'
"$g" history add "$tmp/warm.db" "$tmp/big.json" >/dev/null   # page cache, binary loaded
t0=$(now)
"$g" history add "$tmp/a.db" "$tmp/big.json" >/dev/null
t1=$(now)
echo "add one report of 1000 results (2000 metrics, 10000 samples): $(echo "$t1 - $t0" | bc) s (the whole command)"

# 10,000 runs of 3 results each, recorded 1,000 reports per command
mkdir "$tmp/runs"
awk -v dir="$tmp/runs" 'BEGIN {
    for (r = 1; r <= 10000; r++) {
        f = sprintf("%s/r%05d.json", dir, r)
        lvl = r <= 5000 ? 100 : 120
        printf "{\"schema_version\": 1, \"run\": {\"id\": \"r%d\", \"start\": \"2026-01-01T00:00:00Z\"}, " \
               "\"env\": {\"host\": \"bench\", \"cpu\": {\"model\": \"B\", \"logical\": 2}, \"software\": {\"cuda_driver\": \"%s\"}}, \"results\": [", \
               r, (r <= 5000 ? "550" : "555") > f
        for (i = 0; i < 3; i++) {
            s = ""
            for (k = 0; k < 10; k++) s = s (k ? ", " : "") (lvl * (1 + ((r * 3 + k * 7) % 5 - 2) * 0.002))
            printf "%s{\"suite\": \"kernels\", \"case\": \"c%d\", \"topology\": \"1\", \"backend\": \"cpu\", " \
                   "\"status\": \"pass\", \"params\": {}, \"checks\": [], \"metrics\": {\"time_us\": " \
                   "{\"value\": %g, \"unit\": \"us\", \"better\": \"lower\", \"n\": 10, \"samples\": [%s]}}}", \
                   (i ? ", " : ""), i, lvl, s > f
        }
        print "], \"summary\": {}}" > f
        close(f)
    }
}'
t0=$(now)
for b in 0 1 2 3 4 5 6 7 8 9; do   # r00001-r00999, r01000-r01999, ..., r09000-r09999
    "$g" history add "$tmp/s.db" "$tmp"/runs/r0$b*.json >/dev/null
done
"$g" history add "$tmp/s.db" "$tmp"/runs/r10000.json >/dev/null
t1=$(now)
echo "record 10000 runs of 3 results (11 commands): $(echo "$t1 - $t0" | bc) s"
ls -l "$tmp/s.db" | awk '{ printf "database: %.1f MB\n", $5 / 1e6 }'
"$g" history "$tmp/s.db" --case c0 --metric time_us >/dev/null   # page cache
t0=$(now)
"$g" history "$tmp/s.db" --case c0 --metric time_us >"$tmp/series.txt"
t1=$(now)
echo "series of one metric over 10000 runs, with change points: $(echo "$t1 - $t0" | bc) s (the whole command)"
grep "change point at" "$tmp/series.txt" | head -3
t0=$(now)
"$g" history "$tmp/s.db" --last 20 >/dev/null
t1=$(now)
echo "list the last 20 of 10000 runs: $(echo "$t1 - $t0" | bc) s"
