#!/usr/bin/env bash
# usage: mllog.sh GAUNTLET MLLOG_CHECK
# --mllog on gauntlet train and gauntlet run (harness/mllog.h, docs/mllog.md):
# every line parses and carries the keys the MLPerf logging format requires
# (mllog_check.c), evaluations give eval_accuracy, a failed check ends in
# status aborted, an unwritable file is refused before any work, and the
# checker itself rejects a log that breaks the rules.
# The trainings give --peak-gflops: no SGEMM probe per process (seconds each under ASan).
set -u
g=$1
check=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"

# an mlp with periodic evaluations: blocks cut at each, eval_accuracy the held-out loss
expect 0 "" "$g" train --model mlp-tiny --steps 30 --peak-gflops 100 --eval-samples 256 --eval-every 10 --quiet \
    --mllog "$tmp/mlp.log"
expect 0 "format and required keys ok" "$check" "$tmp/mlp.log" --eval --train
n=$(grep -c '"key": "eval_accuracy"' "$tmp/mlp.log")
[ "$n" -eq 4 ] && ok "4 eval_accuracy (3 periodic + the final one)" || fail "$n eval_accuracy, expected 4"
grep -q '"key": "eval_accuracy", "value": [0-9.]*, "metadata": {[^}]*"samples_count": 80, "epoch_num": 10' "$tmp/mlp.log" &&
    ok "the first evaluation after step 10, 80 samples" || fail "first evaluation's metadata"
grep -q '"key": "run_stop".*"status": "success"' "$tmp/mlp.log" && ok "run_stop success" ||
    fail "run_stop not success"
grep -q '"key": "submission_benchmark", "value": "gauntlet-mlp-tiny"' "$tmp/mlp.log" &&
    ok "benchmark named after the model" || fail "submission_benchmark"

# gpt2 without evaluation: no eval_accuracy, still a valid log
expect 0 "" "$g" train --steps 5 --peak-gflops 100 --quiet --mllog "$tmp/gpt2.log"
expect 0 "format and required keys ok" "$check" "$tmp/gpt2.log" --train
grep -q eval_accuracy "$tmp/gpt2.log" && fail "eval_accuracy without an evaluation" ||
    ok "no eval_accuracy without an evaluation"

# a failed check: the run is aborted in the log
expect 1 "" "$g" train --steps 3 --peak-gflops 100 --quiet --expect-loss-margin 0 --mllog "$tmp/fail.log"
expect 0 "format and required keys ok" "$check" "$tmp/fail.log" --train
grep -q '"key": "run_stop".*"status": "aborted"' "$tmp/fail.log" && ok "failed check: run_stop aborted" ||
    fail "failed check: run_stop not aborted"

# gauntlet run: a block per suite x topology x backend
expect 0 "" "$g" run kernels/conv2d_fwd --quick --quiet --mllog "$tmp/run.log"
expect 0 "format and required keys ok" "$check" "$tmp/run.log"
grep -q '"key": "block_stop".*"suite": "kernels", "topology": 1, "backend": "cpu"' "$tmp/run.log" &&
    ok "run: the kernels block" || fail "run: no kernels block"

# refused before any work
expect 2 "cannot write the --mllog file '/nonexistent-dir/x.log'" "$g" train --steps 2 --quiet \
    --mllog /nonexistent-dir/x.log
expect 2 "cannot write the --mllog file" "$g" run kernels/conv2d_fwd --quick --quiet \
    --mllog /nonexistent-dir/x.log

# the checker fails what breaks the format
grep -v '"key": "run_stop"' "$tmp/mlp.log" >"$tmp/no-stop.log"
expect 1 "not exactly once: run_stop" "$check" "$tmp/no-stop.log"
sed '3s/"time_ms"/"time"/' "$tmp/mlp.log" >"$tmp/field.log"
expect 1 "missing field: time_ms" "$check" "$tmp/field.log"
sed '5s/}}$/}/' "$tmp/mlp.log" >"$tmp/json.log"
expect 1 "not a JSON object" "$check" "$tmp/json.log"
grep -v '"key": "block_stop"' "$tmp/mlp.log" >"$tmp/nostop.log"
expect 1 "started again before its stop: block_start" "$check" "$tmp/nostop.log"
sed 's/"samples_count": 80, "epoch_num": 10, "metric"/"metric"/' "$tmp/mlp.log" >"$tmp/evmd.log"
expect 1 "without epoch_num or samples_count: eval_accuracy" "$check" "$tmp/evmd.log"

[ "$fails" -eq 0 ] && echo "mllog: all checks passed" || echo "mllog: $fails check(s) failed"
[ "$fails" -eq 0 ]
