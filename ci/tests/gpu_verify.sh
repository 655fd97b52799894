#!/usr/bin/env bash
# shellcheck disable=SC2016  # check's conditions are expanded when it evaluates them
# ci.gpu_verify.host: ci/gpu_verify.sh and ci/gpu_summary.py where there is no GPU
# (docs/gpu-verification.md, "Checked without a GPU"). No build: the stages checked here
# need none.
#   1. no GPU: every GPU stage, call1 and call2 exit 3 at once, before any work
#   2. a fake nvidia-smi and a fake torch that fails to import when the toolkit's lib64
#      shadows its libraries (LD_LIBRARY_PATH): the torch stage runs python in the
#      environment the script started with, reports NOT VERIFIED (torch sees no GPU),
#      never a silent skip, and no environment variable reaches the logs
#   3. the budget: a torch run that would take 100 s is cut inside GV_BUDGET_S and the
#      files still come back
#   4. gpu_summary.py: ctest counts from the progress lines of a cut run ("not reached"),
#      a failed cuDNN-forced run shows the end of cuDNN's log, merging two calls
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export PYTHONDONTWRITEBYTECODE=1
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

mkdir -p "$T/nogpu" "$T/gpu" "$T/py/torch/nn"
printf '#!/bin/sh\necho "NVIDIA-SMI has failed (test)" >&2\nexit 9\n' >"$T/nogpu/nvidia-smi"
cat >"$T/gpu/nvidia-smi" <<'EOF'
#!/bin/sh
case "$*" in
  -L) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-test)" ;;
  *compute_cap*) echo "9.0" ;;
  *--query-gpu=name*) echo "NVIDIA H100 80GB HBM3" ;;
  *) echo "fake nvidia-smi (test)" ;;
esac
EOF
# a torch whose import fails the way a real one does when another CUDA's libraries come
# first on LD_LIBRARY_PATH; imported in its own environment it works and sees no GPU
cat >"$T/py/torch/__init__.py" <<'EOF'
import os, time
time.sleep(float(os.environ.get("FAKE_TORCH_SLEEP", "0")))
if os.environ["FAKE_TORCH_SHADOW"] in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
    raise OSError("libcudnn_graph.so.9: undefined symbol (fake torch, shadowed)")
__version__ = "0.0+test"
class version: cuda = "13.0"
class cuda:
    @staticmethod
    def is_available(): return False
EOF
: >"$T/py/torch/nn/__init__.py"
: >"$T/py/torch/nn/functional.py"
chmod +x "$T/nogpu/nvidia-smi" "$T/gpu/nvidia-smi"
GV=$ROOT/ci/gpu_verify.sh

# 1. no GPU
for st in call1 call2 gputest train torch kernels nccl models sanitize own test; do
    s=$(date +%s)
    out=$(PATH="$T/nogpu:$PATH" OUT="$T/out0" GV_BUILD="$T/b0" bash "$GV" "$st" 2>&1)
    rc=$?
    export out rc
    check "no GPU: '$st' exits 3 at once" '[ $rc -eq 3 ] && [ $(($(date +%s) - s)) -le 3 ] && [[ $out == *"NO GPU here: nvidia-smi -L failed"* ]]'
done
check "no GPU: nothing built" '[ ! -e "$T/b0/CMakeCache.txt" ]'

# 2. the torch stage after probe (whose setup_env puts $CUDA_HOME/lib64 first)
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
orig_ld=$T/orig/lib
(PATH="$T/gpu:$PATH" PYTHONPATH="$T/py" LD_LIBRARY_PATH="$orig_ld" FAKE_TORCH_SHADOW="$CUDA_HOME/lib64" \
    GV_SECRET_PROBE=do-not-log OUT="$T/out1" GV_BUILD="$T/b1" GV_BUDGET_S=120 bash "$GV" probe torch) \
    >"$T/run1.log" 2>&1
rc=$?
check "torch: exit 1 (NOT VERIFIED)" '[ $rc -eq 1 ]'
check "probe: the script's own LD_LIBRARY_PATH puts the toolkit first" \
    'grep -q "^LD_LIBRARY_PATH=$CUDA_HOME/lib64:" "$T/b1/verify/probe.txt"'
check "probe: torch as the torch stage sees it (imports)" 'grep -q "^torch 0.0+test" "$T/b1/verify/probe.txt"'
check "torch: ran with the original LD_LIBRARY_PATH" \
    'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d[\"ld_library_path\"] != sys.argv[2])" "$T/out1/torch_baseline.json" "$orig_ld"'
check "torch: NOT VERIFIED with the reason in the stage row" \
    'grep -q "| torch | NOT VERIFIED: torch sees no CUDA GPU" "$T/out1/summary.md"'
check "torch: NOT VERIFIED in the training table" \
    'grep -q "| PyTorch torch.compile | NOT VERIFIED: torch sees no CUDA GPU" "$T/out1/summary.md"'
check "torch: no environment value in the logs or the tarball" \
    '! grep -rq do-not-log "$T/b1/verify" && ! (cd "$T/out1" && tar xzOf gpu-verify.tar.gz | grep -q do-not-log)'
check "the saved environment is removed at exit" '! grep -lqs do-not-log "${TMPDIR:-/tmp}"/gv-env.* '

# 3. the budget: torch would take 100 s; GV_BUDGET_S=22 leaves it 7 s
s=$(date +%s)
(PATH="$T/gpu:$PATH" PYTHONPATH="$T/py" FAKE_TORCH_SHADOW=/none FAKE_TORCH_SLEEP=100 OUT="$T/out2" \
    GV_BUILD="$T/b2" GV_BUDGET_S=22 bash "$GV" torch) >"$T/run2.log" 2>&1
rc=$?
export rc
el=$(($(date +%s) - s))
check "budget: the cut run ends inside GV_BUDGET_S ($el s)" '[ $el -le 22 ]'
check "budget: cut, NOT VERIFIED, exit 1" '[ $rc -eq 1 ] && grep -q "TIMEOUT after" "$T/b2/verify/torch_baseline.log" && grep -q "| torch | NOT VERIFIED: no JSON (exit 124)" "$T/out2/summary.md"'
check "budget: the files came back" '[ -s "$T/out2/summary.md" ] && [ -s "$T/out2/gpu-verify.tar.gz" ] && [ -s "$T/out2/torch_baseline.json" ]'

# 4. gpu_summary.py
S=$ROOT/ci/gpu_summary.py
W=$T/w1; mkdir -p "$W"
cat >"$W/gputest.log" <<'EOF'
1/3 Test  #1: a.one.cuda .......................   Passed    0.10 sec
2/3 Test  #2: a.two.cuda .......................***Failed    0.20 sec
gpu_verify: TIMEOUT after 60s: ctest
EOF
printf 'a.one.cuda\na.two.cuda\na.three.cuda\n' >"$W/gputest-list.txt"
c=$(python3 "$S" --junit "$W/gputest-junit.xml" --log "$W/gputest.log" --list "$W/gputest-list.txt")
check "counts of a cut ctest: $c" \
    '[ "$c" = "3 tests: 1 passed, 1 failed, 0 skipped, 1 not reached; FAILED: a.two.cuda; not reached: a.three.cuda" ]'
printf '| stage | result |\n|---|---|\n| gputest | x |\n' >"$W/stages.md"
{ echo "I! CuDNN (v91900) function cudnnCreate() called:"
  echo "E! CuDNN (v91900) function cudnnBackendFinalize() called:"
  echo "e!     Error: CUDNN_STATUS_NOT_SUPPORTED; Reason: test reason" ; } >"$W/cudnn-train.log"
echo 2 >"$W/cudnn-train.log.rc"
: >"$W/cudnn-kernels.attention_cudnn.cuda.log"; echo 0 >"$W/cudnn-kernels.attention_cudnn.cuda.log.rc"
python3 "$S" --work "$W" --rc 1 >"$T/s1.md"
check "summary: the end of a failed run's cuDNN log" \
    'grep -q "The end of cudnn-train.log (the run failed)" "$T/s1.md" && grep -q "Reason: test reason" "$T/s1.md" && grep -q "| cudnn-train.log | 2 | 3 | 1 | 0 |" "$T/s1.md"'
check "summary: no tail for a run that passed" '! grep -q "The end of cudnn-kernels" "$T/s1.md"'
W2=$T/w2; mkdir -p "$W2"
printf '| stage | result |\n|---|---|\n| gputest | x |\n| torch | y |\n' >"$W2/stages.md"
python3 "$S" --work "$W" --work "$W2" >"$T/s2.md"
check "merge: a stage row of a warm machine's earlier call once" \
    '[ "$(grep -c "^| gputest | x |" "$T/s2.md")" = 1 ] && grep -q "^| torch | y |" "$T/s2.md"'

[ $fail -eq 0 ] && echo "ci.gpu_verify.host: all passed" || echo "ci.gpu_verify.host: FAILED (logs: $T kept)"
[ $fail -eq 0 ] || trap - EXIT
exit $fail
