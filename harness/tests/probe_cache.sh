#!/usr/bin/env bash
# usage: probe_cache.sh GAUNTLET FILE
# The tests' probe cache (GT_PROBE_CACHE, docs/suites.md "Peaks"), measured afresh
# before the other tests start (a CTest fixture every test requires, run alone): the
# host peaks and memory levels of the cpu backend at the thread counts the tests use
# (1, a quarter, half and all of the online CPUs: one process, 2 and 4 ranks a node).
# Measured here on an idle machine rather than by whichever test needs them first,
# beside another test.
# A file written in the last 30 minutes is kept (one ctest after another measures once).
set -u
g=$1
file=$2
if [ -n "$(find "$file" -mmin -30 2>/dev/null)" ] && grep -qE "	level	[0-9]+ 0 0 " "$file"; then
    echo "probe_cache: $file is from the last 30 minutes: kept"
    exit 0
fi
rm -f "$file"
n=$(nproc)
for t in $(printf '%s\n' 1 $((n / 4)) $((n / 2)) "$n" | awk '$1 >= 1' | sort -un); do
    GT_PROBE_CACHE="$file" "$g" run health/fma_peak kernels/gelu_fwd/fp32/n65 --quick --quiet \
        --threads "$t" >/dev/null 2>&1 || { echo "probe_cache: the probes failed on $t thread(s)"; exit 1; }
done
peaks=$(grep -c "	peaks	" "$file" 2>/dev/null)
memory=$(grep -cE "	level	[0-9]+ 0 0 " "$file" 2>/dev/null)
echo "probe_cache: $file: peaks at ${peaks:-0} thread count(s), memory levels at ${memory:-0}"
[ "${peaks:-0}" -ge 1 ] && [ "${memory:-0}" -ge 1 ] || { echo "probe_cache: incomplete"; exit 1; }
