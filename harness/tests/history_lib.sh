# Shared by history.sh and history_html.sh (sourced): synthetic reports.

# mk FILE RUN_ID START DRIVER STATUS LEVEL [CPU]: a report of two kernels
# results: "drift" (time_us, 10 samples around LEVEL, +-1%) and "flat" (about
# 50 us whatever LEVEL), on host node-a with a given CUDA driver. MK_ENV and
# MK_RESULTS (JSON members and results, without the leading comma) add to the
# env and to the results when set (history_html.sh).
mk() {
    local f=$1 id=$2 start=$3 drv=$4 status=$5 level=$6 cpu=${7:-Test CPU 9000}
    local s1="" s2="" i d
    for i in 0 1 2 3 4 5 6 7 8 9; do
        d=$(( (i * 7 + ${id##*-} * 3) % 5 - 2 ))
        s1="$s1${s1:+, }$(awk -v l="$level" -v d="$d" 'BEGIN { printf "%.4f", l * (1 + d * 0.005) }')"
        s2="$s2${s2:+, }$(awk -v d="$d" 'BEGIN { printf "%.4f", 50 * (1 + d * 0.005) }')"
    done
    cat >"$f" <<EOF
{"schema_version": 1,
 "run": {"id": "$id", "start": "$start", "end": "$start",
         "command_line": ["gauntlet", "run", "kernels"], "git_revision": "abc$id"},
 "env": {"host": "node-a", "cpu": {"model": "$cpu", "logical": 8},
         "gpus": [], "software": {"cuda_driver": "$drv", "cuda_runtime": "12.4", "nccl": "2.21"},
         "topology_digest": "d1"${MK_ENV:+, $MK_ENV}},
 "results": [
  {"suite": "kernels", "case": "drift", "topology": "1", "backend": "cpu", "status": "$status",
   "params": {"n": 4}, "checks": [{"name": "conformance", "passed": $([ "$status" = pass ] && echo true || echo false)}],
   "metrics": {"time_us": {"value": $level, "unit": "us", "better": "lower", "n": 10,
                           "samples": [$s1]}}},
  {"suite": "kernels", "case": "flat", "topology": "1", "backend": "cpu", "status": "pass",
   "params": {}, "checks": [],
   "metrics": {"time_us": {"value": 50, "unit": "us", "better": "lower", "n": 10,
                           "samples": [$s2]}}}${MK_RESULTS:+, $MK_RESULTS}
 ],
 "summary": {}}
EOF
}
