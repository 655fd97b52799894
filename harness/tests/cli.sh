#!/usr/bin/env bash
# usage: cli.sh GAUNTLET REPORT_CHECK
# Every case states the exit code and the words the user must see.
set -u
g=$1
check=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

EXPECT_GREP_FLAGS=-i
. "$(dirname "$0")/lib.sh"

fast="--peak-gflops 100 --quiet"
expect 2 "unknown command" -- "$g" frobnicate
expect 2 "unknown option '--bogus'" -- "$g" train --bogus
expect 2 "--steps 0 is out of range" -- "$g" train --steps 0
expect 2 "--lr expects a number" -- "$g" train --lr abc
expect 2 "needs a value" -- "$g" train --steps
# the cpu GEMM choice: a value other than own or blas is refused, naming both
expect 2 "GT_CPU_GEMM=fast: use 'own'.*'blas'" -- env GT_CPU_GEMM=fast "$g" train --model gpt2-tiny --steps 1
expect 2 "--warmup 20 must be shorter than --steps 5" -- "$g" train --steps 5 --warmup 20
expect 2 "unknown model 'gpt9'.*gpt2-tiny" -- "$g" train --model gpt9
expect 2 "max_seq_len" -- "$g" train --seq 65 $fast
expect 2 "multiple of num_heads" -- "$g" train --heads 3 $fast
expect 2 "sequential or shuffled" -- "$g" train --data-order random
expect 2 "cannot write report" -- "$g" train --steps 2 $fast --report /nonexistent-dir/r.json
expect 2 "no-such-file" -- "$g" train --steps 2 $fast --data "$tmp/no-such-file"
expect 2 "cannot open llm.c model file.*no-model.bin" -- "$g" train --steps 2 $fast --init-from "llmc:$tmp/no-model.bin"
expect 2 "expected llmc:FILE" -- "$g" train --steps 2 $fast --model gpt2-tiny --init-from "$tmp/x.bin"
expect 0 "" -- "$g" --help
expect 0 "--batch" -- "$g" train --help

# a run that trains and writes a valid report
expect 0 "final loss" -- "$g" train --steps 5 --peak-gflops 100 --report "$tmp/r.json"
expect 0 "valid" -- "$check" "$tmp/r.json" --steps 5 --status pass

# a check that fails: exit 1, the report says fail
expect 1 "FAILED" -- "$g" train --steps 3 --peak-gflops 100 --expect-loss-margin 0.01 --report "$tmp/f.json"
expect 0 "valid" -- "$check" "$tmp/f.json" --steps 3 --status fail

# token files: synth, encode, train on them, reject corrupt ones
expect 0 "entropy rate" -- "$g" data synth --out "$tmp/s.tok" --tokens 20000 --seed 3
expect 0 "final loss" -- "$g" train --steps 3 --data "$tmp/s.tok" $fast
seq 1 2000 | head -c 5000 > "$tmp/text"
expect 0 "5000 tokens" -- "$g" data encode "$tmp/text" --out "$tmp/b.tok"
expect 0 "final loss" -- "$g" train --steps 3 --data "$tmp/b.tok" --data-order shuffled $fast
head -c 30 "$tmp/s.tok" > "$tmp/trunc.tok"
expect 2 "trunc" -- "$g" train --steps 2 --data "$tmp/trunc.tok" $fast
printf 'not a token file at all, just text' > "$tmp/junk.tok"
expect 2 "magic" -- "$g" train --steps 2 --data "$tmp/junk.tok" $fast
expect 2 "--branch 9 is larger than --vocab 4" -- "$g" data synth --out "$tmp/x" --vocab 4 --branch 9

expect 0 "cpu" -- "$g" env --no-probes

if [ "$fails" -ne 0 ]; then echo "$fails case(s) failed"; exit 1; fi
echo "all cases passed"
