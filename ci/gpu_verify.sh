#!/usr/bin/env bash
# shellcheck disable=SC2317,SC2086,SC2012  # stages are called as "stage_$s"; option lists split on purpose
# Verify the CUDA backend and the nccl communicator on a machine with an NVIDIA GPU,
# in two short device-tool calls (docs/gpu-verification.md has the exact calls).
#
#   ci/gpu_verify.sh prep                  HERE, before the first GPU call: build-gpu-deps/
#                                          (jansson and a pkg-config stand-in, for a GPU
#                                          machine that lacks them; carry it)
#   ci/gpu_verify.sh STAGE [STAGE ...]     on the GPU machine, stages in order:
#       probe     what the machine has (GPU, nvcc, ninja, cuDNN/NCCL, MPI, jansson, torch)
#       build     configure build-gpu/ (Ninja, this GPU's architecture only) and build only
#                 what the GPU stages run: gauntlet, report_check, profile_check and the
#                 executables of the gpu-labelled tests (GV_BUILD_ALL=1: everything)
#       gputest   ctest -L gpu; the cuDNN attention tests each alone, with cuDNN's log
#       train     gpt2-124m bf16 B=16 T=1024, cuDNN attention forced, with cuDNN's log
#                 (if that fails: the same in auto mode, for a figure)
#       torch     the same model in PyTorch torch.compile, with the environment this
#                 script was started with (not the toolkit's LD_LIBRARY_PATH)
#       kernels   gauntlet run kernels scaling/gpt2-124m/bf16 --quick: conformance and
#                 speed of every op, the peaks, the gpt2-124m figure; complete and all
#                 passed: the first GPU baseline report (baseline-CLASS-DATE.json)
#       nccl      gauntlet run collectives --comm nccl on this GPU
#       models    gauntlet run train scaling memory --backend cuda --topologies 1 --quick
#       sanitize  compute-sanitizer memcheck on kernels.attention_cudnn.cuda (GV_SANITIZE)
#       own       gpt2-124m with GT_CUDA_ATTENTION=own (what cuDNN buys; not in the calls)
#       test      every other CTest test (builds everything first; not in the calls)
#       call1     probe build gputest train               (the first device call, ~6 min)
#       call2     build torch kernels nccl models sanitize (the second, ~4 min)
#       all       probe build gputest train torch kernels nccl models sanitize own test
#   A GPU stage builds first when build-gpu/ has no finished build (a fresh machine keeps
#   nothing); `build` again on a warm machine is an incremental build (seconds).
#   The stages share the budget by value: each stage leaves the later ones of the same
#   invocation their minimum time (FLOOR below), so a long ctest never eats the training.
#
# Output: everything under ${OUT:-build-gpu-out} (build-gpu-out is git-ignored):
# summary.md (figures and counts), gpu-verify.tar.gz (every log and JSON report), and
# the main reports as plain files: at most 8 files, what the device tool brings back;
# all of it rewritten after every stage, so a call cut short still returns what finished.
# Exit: 0 every stage passed, 1 a test/check failed or something was NOT VERIFIED,
# 2 usage or build error, 3 no GPU here (a GPU stage stops at once and says so).
#
# Environment: GV_BUDGET_S (default 570: the invocation ends its stages inside this many
# seconds so that the device call returns its files; 0: no limit), GV_STEPS (training
# steps, default 30), GV_JOBS (default nproc), GV_CTEST_J (parallel GPU tests, default 8),
# GV_CTEST_R (gputest: only the tests matching this regex), GV_BUILD (default build-gpu;
# a relative path is in the repository), GV_BUILD_ALL (1: build every target), GV_DEPS (default
# build-gpu-deps), CUDNN_PATH / NCCL_HOME (looked at first), CUDA_HOME (default
# /usr/local/cuda), GV_ARCH (CUDA architectures, default: the GPU's compute capability,
# 90 without a GPU), GV_PEAK_GFLOPS (MFU reference, default: the GPU's dense bf16
# datasheet peak), GV_KERNELS_ARGS (default --quick), GV_KERNELS_SELECT (what the kernels
# stage runs, default "kernels scaling/gpt2-124m/bf16"), GV_MODELS_ARGS (default --quick),
# GV_MODELS_SMALL (1: also mlp/resnet-small convergence, --full), GV_NCCL_ARGS (default
# -e 64M), GV_SANITIZE ("TOOL TEST;TOOL TEST"; default "memcheck kernels.attention_cudnn.cuda";
# "all": the long list), GV_SANITIZER_ARGS, GV_TORCH_STEPS (default 20).
# For checking the script without a GPU: GV_PREFER_WHEELS=1 (cuDNN/NCCL from Python
# wheels only), GV_PKG_CONFIG_STANDIN=1 (carried jansson + the pkg-config stand-in).
set -uo pipefail

# The environment this script was started with, before anything below changes it: the
# PyTorch baseline runs in it (setup_env puts the toolkit's lib64 first on
# LD_LIBRARY_PATH, which would shadow torch's own CUDA, cuDNN and NCCL libraries).
if ! GV_ORIG_ENV=$(mktemp "${TMPDIR:-/tmp}/gv-env.XXXXXX") || ! env -0 >"$GV_ORIG_ENV"; then
    echo "gpu_verify: cannot save the environment" >&2; exit 2
fi
trap 'rm -f "$GV_ORIG_ENV"' EXIT
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
BUILD=${GV_BUILD:-build-gpu}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
DEPS=${GV_DEPS:-build-gpu-deps}
OUTDIR=${OUT:-$ROOT/build-gpu-out}
WORK=$BUILD/verify               # logs and reports; packed into $OUTDIR after each stage
JOBS=${GV_JOBS:-$(nproc 2>/dev/null || echo 4)}
CTEST_J=${GV_CTEST_J:-8}
BUDGET=${GV_BUDGET_S:-570}
STEPS=${GV_STEPS:-30}
T0=$(date +%s)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PYTHONUNBUFFERED=1 OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
# the device machine runs commands as root: Open MPI refuses that unless told
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# cuDNN's own log of its errors and warnings, for the runs that force cuDNN attention
# (GT_CUDA_ATTENTION=cudnn fails loudly; this says why, in cuDNN's words)
CUDNN_LOG_LEVEL=2
ATTN_RE=attention_cudnn            # the gpu tests that force cuDNN attention

RC=0                               # worst outcome so far (0 < 1 < 3 < 2 is not needed: max)
note() { printf '[gpu_verify %4ds] %s\n' "$(($(date +%s) - T0))" "$*" | tee -a "$WORK/progress.log" >&2; }
worse() { [ "$1" -gt "$RC" ] && RC=$1; return 0; }
left() { [ "$BUDGET" -gt 0 ] && echo $((BUDGET - ($(date +%s) - T0))) || echo 1000000; }
# The least time each stage needs to answer anything (seconds on an H100 machine): a
# stage leaves the stages after it in the same invocation at least this much.
declare -A FLOOR=([probe]=5 [build]=60 [gputest]=90 [train]=75 [torch]=100 [kernels]=60
                  [nccl]=25 [models]=40 [sanitize]=40 [own]=40 [test]=60)
RESERVE=0                          # what the later stages of this invocation are left
# cap SECONDS: min(SECONDS, what is left of the budget minus 15 s for packing and minus
# what the later stages are left); where the later stages' floors would leave this one
# under 20 s it takes what is left (the stages come in order of value, and the first
# ones are what the later ones need: the build)
cap() {
    local l; l=$(($(left) - 15 - RESERVE))
    [ "$l" -lt 20 ] && l=$(($(left) - 15))
    [ "$l" -lt "$1" ] && echo "$l" || echo "$1"
}
# ORIG: a command prefix that runs a program in the environment the script started with
# (read from the saved file when it runs: the environment never appears on a command
# line, in the logs or in ps)
orig_env() {
    # shellcheck disable=SC2016  # expanded by that bash, not this one
    ORIG=(bash -c 'mapfile -d "" -t e <"$0" && exec env -i "${e[@]}" PYTHONUNBUFFERED=1 "$@"' "$GV_ORIG_ENV")
}
# run_to LIMIT LOG CMD...: run with a time limit, output to LOG (and a tail to stderr)
run_to() {
    local lim=$1 log=$2; shift 2
    if [ "$lim" -le 5 ]; then
        echo "gpu_verify: no time left in the budget (GV_BUDGET_S=$BUDGET) for: $*" | tee -a "$log" >&2
        return 124
    fi
    echo "+ $* (limit ${lim}s)" >>"$log"
    timeout -k 10 "$lim" "$@" >>"$log" 2>&1
    local rc=$?
    [ $rc -eq 124 ] && echo "gpu_verify: TIMEOUT after ${lim}s: $*" | tee -a "$log" >&2
    return $rc
}

mkdir -p "$WORK" "$OUTDIR" 2>/dev/null || { echo "gpu_verify: cannot create $WORK or $OUTDIR" >&2; exit 2; }

# ---------------------------------------------------------------------------------------
# GPU presence (fast: never hangs on a machine without a driver)
have_gpu() {
    command -v nvidia-smi >/dev/null 2>&1 || { GPU_WHY="nvidia-smi not found (no NVIDIA driver)"; return 1; }
    local l
    l=$(timeout 30 nvidia-smi -L 2>&1) || { GPU_WHY="nvidia-smi -L failed: ${l:0:200}"; return 1; }
    echo "$l" | grep -q '^GPU ' || { GPU_WHY="nvidia-smi lists no GPU"; return 1; }
    return 0
}
need_gpu() {
    if ! have_gpu; then
        note "NO GPU: $GPU_WHY. Stage '$1' needs an NVIDIA GPU; run it on the device machine (docs/gpu-verification.md)."
        echo "| $1 | no GPU: $GPU_WHY |" >>"$WORK/stages.md"
        worse 3
        return 1
    fi
}

# ---------------------------------------------------------------------------------------
# Library lookup: cuDNN, NCCL (and cuBLAS when the toolkit lacks it) in CUDNN_PATH /
# NCCL_HOME, the CUDA toolkit, /usr, or the Python environment's nvidia-* wheels
# (site-packages/nvidia/<pkg>/{include,lib}). Wheels ship only libX.so.N: unversioned
# links are made in $BUILD/deps/<name>/lib so that find_library(X) finds them.
py_nvidia_roots() {
    local py
    for py in python3 python; do
        command -v "$py" >/dev/null 2>&1 || continue
        "$py" - 2>/dev/null <<'EOF'
import os, site, sys
roots = []
try:
    import nvidia
    roots += list(getattr(nvidia, "__path__", []))
except Exception:
    pass
cands = []
try:
    cands += site.getsitepackages()
except Exception:
    pass
try:
    cands.append(site.getusersitepackages())
except Exception:
    pass
cands += [p for p in sys.path if p.endswith("-packages")]
for c in cands:
    roots.append(os.path.join(c, "nvidia"))
seen = set()
for r in roots:
    r = os.path.realpath(r)
    if os.path.isdir(r) and r not in seen:
        seen.add(r)
        print(r)
EOF
        return 0
    done
}
# find_lib NAME HEADER: prints "INCDIR LIBDIR" or nothing
find_lib() {
    local name=$1 hdr=$2 var d inc lib r
    case $name in cudnn) var=${CUDNN_PATH:-} ;; nccl) var=${NCCL_HOME:-} ;; *) var= ;; esac
    local sys_dirs=("$CUDA_HOME" /usr /usr/local)
    [ "${GV_PREFER_WHEELS:-0}" = 1 ] && sys_dirs=()      # exercise the wheel lookup
    for d in $var "${sys_dirs[@]}"; do
        [ -n "$d" ] || continue
        inc=; lib=
        for i in "$d/include" "$d/include/x86_64-linux-gnu" "$d/targets/x86_64-linux/include"; do
            [ -f "$i/$hdr" ] && { inc=$i; break; }
        done
        for l in "$d/lib64" "$d/lib" "$d/lib/x86_64-linux-gnu" "$d/targets/x86_64-linux/lib"; do
            compgen -G "$l/lib$name.so*" >/dev/null && { lib=$l; break; }
        done
        [ -n "$inc" ] && [ -n "$lib" ] && { echo "$inc $lib"; return 0; }
    done
    while read -r r; do
        [ -n "$r" ] || continue
        inc=$(find "$r" -maxdepth 4 -name "$hdr" -path '*include*' 2>/dev/null | head -1)
        lib=$(find "$r" -maxdepth 4 -name "lib$name.so*" 2>/dev/null | sort | head -1)
        if [ -n "$inc" ] && [ -n "$lib" ]; then
            echo "$(dirname "$inc") $(dirname "$lib")"
            return 0
        fi
    done < <(py_nvidia_roots)
    return 1
}
# link_dir NAME INCDIR LIBDIR: $BUILD/deps/NAME/{include,lib} with unversioned links
link_dir() {
    local name=$1 inc=$2 lib=$3 dst=$BUILD/deps/$1 f base
    rm -rf "$dst"; mkdir -p "$dst/lib"
    ln -s "$inc" "$dst/include"
    for f in "$lib"/lib"$name"*.so*; do             # libcudnn_graph.so.9 etc. too
        [ -e "$f" ] || continue
        base=$(basename "$f")
        ln -sf "$f" "$dst/lib/$base"
        # libfoo.so.9[.x.y] -> libfoo.so when no unversioned file exists
        local un=${base%%.so*}.so
        [ -e "$lib/$un" ] || [ -e "$dst/lib/$un" ] || ln -s "$f" "$dst/lib/$un"
    done
    echo "$dst"
}

setup_env() {
    [ -n "${GV_ENV_DONE:-}" ] && return 0
    GV_ENV_DONE=1
    [ -x "$CUDA_HOME/bin/nvcc" ] && export PATH="$CUDA_HOME/bin:$PATH"
    command -v compute-sanitizer >/dev/null 2>&1 || {
        local cs
        cs=$(ls -d "$CUDA_HOME"/compute-sanitizer /opt/nvidia/*/compute-sanitizer 2>/dev/null | head -1)
        [ -n "$cs" ] && export PATH="$PATH:$cs"
    }
    local ld="$CUDA_HOME/lib64" r inc lib d f
    CMAKE_LIB_ARGS=()
    CUDNN_DESC="not found"; NCCL_DESC="not found"; CUBLAS_DESC="CUDA toolkit"
    if r=$(find_lib cudnn cudnn.h); then
        read -r inc lib <<<"$r"
        d=$(link_dir cudnn "$inc" "$lib")
        export CUDNN_PATH=$d
        CMAKE_LIB_ARGS+=("-DCUDNN_INCLUDE_DIR=$inc" "-DCUDNN_LIBRARY=$d/lib/libcudnn.so")
        ld="$ld:$lib"; CUDNN_DESC="$inc, $lib"
    fi
    if r=$(find_lib nccl nccl.h); then
        read -r inc lib <<<"$r"
        d=$(link_dir nccl "$inc" "$lib")
        export NCCL_HOME=$d
        CMAKE_LIB_ARGS+=("-DNCCL_INCLUDE_DIR=$inc" "-DNCCL_LIBRARY=$d/lib/libnccl.so")
        ld="$ld:$lib"; NCCL_DESC="$inc, $lib"
    fi
    # cuBLAS: the toolkit's, else a wheel's (CMake's FindCUDAToolkit looks in CMAKE_LIBRARY_PATH)
    if ! compgen -G "$CUDA_HOME/lib64/libcublasLt.so*" >/dev/null && r=$(find_lib cublasLt cublasLt.h); then
        read -r inc lib <<<"$r"
        d=$(link_dir cublas "$inc" "$lib")
        # only the cublas headers on CPATH: the wheel's folder also holds another
        # cuda_runtime.h that must not shadow the toolkit's
        rm -f "$d/include"; mkdir -p "$d/include"
        for f in "$inc"/cublas*.h; do ln -sf "$f" "$d/include/"; done
        export CMAKE_LIBRARY_PATH="$d/lib${CMAKE_LIBRARY_PATH:+:$CMAKE_LIBRARY_PATH}"
        export CPATH="$d/include${CPATH:+:$CPATH}"
        ld="$ld:$lib"; CUBLAS_DESC="$inc, $lib (wheel)"
    fi
    # other wheel libraries cuDNN may dlopen (nvrtc, cublas of the wheel) go last
    local w
    while read -r w; do
        [ -n "$w" ] && ld="$ld:$w"
    done < <(py_nvidia_roots | while read -r x; do find "$x" -maxdepth 3 -type d -name lib 2>/dev/null; done | sort -u)
    # first occurrence of each folder wins (the toolkit's lib64 before any wheel's)
    ld=$(printf '%s' "$ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" | tr ':' '\n' | awk 'NF && !seen[$0]++' | paste -sd:)
    export LD_LIBRARY_PATH="$ld"

    # jansson: the system's, else the carried one ($DEPS from `prep`); pkg-config likewise
    JANSSON_DESC=system
    local standin=${GV_PKG_CONFIG_STANDIN:-0}              # 1: as if pkg-config and jansson were absent
    if [ "$standin" != 1 ] && command -v pkg-config >/dev/null 2>&1 && pkg-config --exists jansson 2>/dev/null; then
        :
    elif [ -f "$ROOT/$DEPS/jansson/lib/pkgconfig/jansson.pc" ]; then
        export PKG_CONFIG_PATH="$ROOT/$DEPS/jansson/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
        export LD_LIBRARY_PATH="$ROOT/$DEPS/jansson/lib:$LD_LIBRARY_PATH"
        JANSSON_DESC="carried ($DEPS/jansson)"
        if [ "$standin" = 1 ] || ! command -v pkg-config >/dev/null 2>&1; then
            CMAKE_LIB_ARGS+=("-DPKG_CONFIG_EXECUTABLE=$ROOT/$DEPS/bin/pkg-config")
            JANSSON_DESC="$JANSSON_DESC, pkg-config stand-in"
        fi
    else
        JANSSON_DESC="MISSING (run ci/gpu_verify.sh prep here and carry $DEPS)"
    fi
}

gpu_arch() {
    [ -n "${GV_ARCH:-}" ] && { echo "$GV_ARCH"; return; }
    local cc
    cc=$(timeout 30 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
    case $cc in [0-9][0-9]|[0-9][0-9][0-9]) echo "$cc" ;; *) echo 90 ;; esac
}

# ---------------------------------------------------------------------------------------
stage_prep() {
    # HERE (with jansson installed, or apt-get download): build-gpu-deps/ for the carry
    local d=$ROOT/$DEPS inc lib tmp
    rm -rf "$d"; mkdir -p "$d/jansson/include" "$d/jansson/lib/pkgconfig" "$d/bin"
    inc=$(pkg-config --variable=includedir jansson 2>/dev/null)
    lib=$(pkg-config --variable=libdir jansson 2>/dev/null)
    if [ -z "$inc" ] || [ ! -f "$inc/jansson.h" ] || ! compgen -G "$lib/libjansson.so.*" >/dev/null; then
        tmp=$(mktemp -d)
        (cd "$tmp" && apt-get download libjansson-dev libjansson4 >/dev/null 2>&1 &&
            for f in ./*.deb; do dpkg -x "$f" x; done) ||
            { note "prep: jansson is neither installed nor downloadable (apt-get download libjansson-dev libjansson4)"; return 2; }
        inc=$tmp/x/usr/include; lib=$(dirname "$(find "$tmp/x" -name 'libjansson.so.*' | head -1)")
    fi
    cp "$inc/jansson.h" "$inc/jansson_config.h" "$d/jansson/include/" || return 2
    # real files, no links: a link travels as a link
    local real; real=$(readlink -f "$(ls "$lib"/libjansson.so.* | head -1)")
    cp "$real" "$d/jansson/lib/libjansson.so.4" && cp "$real" "$d/jansson/lib/libjansson.so" || return 2
    local ver; ver=$(sed -n 's/^#define JANSSON_VERSION *"\(.*\)"/\1/p' "$inc/jansson.h")
    cat >"$d/jansson/lib/pkgconfig/jansson.pc" <<EOF
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: Jansson
Description: Library for encoding, decoding and manipulating JSON data (carried by ci/gpu_verify.sh prep)
Version: ${ver:-2.14}
Libs: -L\${libdir} -ljansson
Cflags: -I\${includedir}
EOF
    # A pkg-config stand-in that knows jansson alone (CMake's FindPkgConfig queries):
    # used only where the GPU machine has no pkg-config at all.
    cat >"$d/bin/pkg-config" <<EOF
#!/usr/bin/env bash
# pkg-config stand-in written by ci/gpu_verify.sh prep: knows jansson only.
here=\$(cd "\$(dirname "\$0")/../jansson" && pwd)
ver="${ver:-2.14}"
qs=(); mods=(); skipnext=0
for a in "\$@"; do
    if [ \$skipnext = 1 ]; then skipnext=0; continue; fi
    case \$a in
        --version) echo 0.29.2; exit 0 ;;
        --atleast-pkgconfig-version*) exit 0 ;;
        --print-errors|--short-errors|--static|--silence-errors) ;;
        --*) qs+=("\$a") ;;
        '<'*|'>'*|'='*|'!'*) skipnext=1 ;;
        *) m=\${a%%[<>=!]*}; m=\${m%% *}; [ -n "\$m" ] && mods+=("\$m") ;;
    esac
done
for m in "\${mods[@]}"; do
    [ "\$m" = jansson ] || { echo "Package \$m was not found (pkg-config stand-in: jansson only)" >&2; exit 1; }
done
out=()
for q in "\${qs[@]}"; do
    case \$q in
        --exists|--validate) ;;
        --modversion) out+=("\$ver") ;;
        --variable=prefix|--variable=exec_prefix) out+=("\$here") ;;
        --variable=libdir) out+=("\$here/lib") ;;
        --variable=includedir) out+=("\$here/include") ;;
        --variable=pcfiledir) out+=("\$here/lib/pkgconfig") ;;
        --variable=*) out+=("") ;;
        --libs) out+=("-L\$here/lib -ljansson") ;;
        --libs-only-L) out+=("-L\$here/lib") ;;
        --libs-only-l) out+=("-ljansson") ;;
        --cflags|--cflags-only-I) out+=("-I\$here/include") ;;
        --libs-only-other|--cflags-only-other) out+=("") ;;
        *) ;;
    esac
done
[ \${#out[@]} -gt 0 ] && echo "\${out[*]}"
exit 0
EOF
    chmod +x "$d/bin/pkg-config"
    note "prep: $DEPS ready ($(du -sh "$d" | cut -f1)): jansson $ver and a pkg-config stand-in; name '$DEPS' in the device call's carry"
    echo "| prep | $DEPS: jansson ${ver:-?} + pkg-config stand-in |" >>"$WORK/stages.md"
}

stage_probe() {
    setup_env
    local f=$WORK/probe.txt
    {
        echo "date: $(date -u +%FT%TZ)   host: $(hostname)   kernel: $(uname -r)"
        grep -m1 PRETTY_NAME /etc/os-release 2>/dev/null
        echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)  x $(nproc)"
        echo "glibc: $(ldd --version 2>&1 | head -1)"
        echo "--- nvidia-smi"
        if command -v nvidia-smi >/dev/null 2>&1; then
            timeout 30 nvidia-smi 2>&1 | head -30
            timeout 30 nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv 2>&1
        else
            echo "nvidia-smi: not found"
        fi
        echo "--- nvcc"; nvcc --version 2>&1 | tail -2
        echo "--- compilers"; for c in gcc g++ cc cmake ctest ninja pkg-config mpicc mpirun compute-sanitizer python3; do
            printf '%-18s %s\n' "$c" "$(command -v $c || echo MISSING)"; done
        gcc --version 2>&1 | head -1; cmake --version 2>&1 | head -1
        mpirun --version 2>&1 | head -1
        command -v compute-sanitizer >/dev/null 2>&1 && compute-sanitizer --version 2>&1 | tail -1
        echo "--- cuDNN:  $CUDNN_DESC"
        [ -n "${CUDNN_PATH:-}" ] && grep -h '#define CUDNN_M[AI][JN]OR\|#define CUDNN_PATCHLEVEL' "$CUDNN_PATH"/include/cudnn_version.h 2>/dev/null | tr '\n' ' ' && echo
        echo "--- NCCL:   $NCCL_DESC"
        [ -n "${NCCL_HOME:-}" ] && grep -h '#define NCCL_M[AI][JN]OR\|#define NCCL_PATCH ' "$NCCL_HOME"/include/nccl.h 2>/dev/null | tr '\n' ' ' && echo
        echo "--- cuBLAS: $CUBLAS_DESC"
        echo "--- jansson: $JANSSON_DESC"
        echo "--- hwloc: $(pkg-config --modversion hwloc 2>/dev/null || echo absent)  openblas: $(pkg-config --modversion openblas 2>/dev/null || echo absent)"
        echo "--- python: $(python3 -c 'import sys; print(sys.version.split()[0], sys.executable)' 2>&1)"
        # torch as the torch stage runs it: in the environment the script started with
        orig_env
        "${ORIG[@]}" python3 -c '
import torch
try:
    dnn = torch.backends.cudnn.version()
except Exception as e:
    dnn = "? (%s)" % e
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", dnn, "gpu", torch.cuda.is_available())' 2>&1 | tail -1
        echo "--- nvidia wheels"; py_nvidia_roots | while read -r r; do ls "$r" 2>/dev/null | tr '\n' ' '; echo; done
        echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    } >"$f" 2>&1
    cat "$f" >&2
    echo "| probe | see probe.txt; cuDNN: $CUDNN_DESC; NCCL: $NCCL_DESC; jansson: $JANSSON_DESC; MPI: $(command -v mpirun || echo absent) |" >>"$WORK/stages.md"
    have_gpu || { note "probe: NO GPU ($GPU_WHY)"; worse 3; }
    return 0
}

# A finished build: .gv_built holds its scope, "gpu" (what the GPU stages run) or "all"
build_fresh() {
    [ -x "$BUILD/harness/gauntlet" ] && [ -f "$BUILD/.gv_built" ] || return 1
    [ "${1:-gpu}" = gpu ] || [ "$(cat "$BUILD/.gv_built")" = all ]
}

# gpu_targets: the build targets the gpu-labelled tests run (every argument of each
# add_test line that names a target: the test executables, also behind mpiexec), plus
# what the stages run themselves. Derived from CTest, as ci/emulate.sh does, so a new
# gpu test is built without a change here.
gpu_targets() {
    local names known n
    mapfile -t names < <(cd "$BUILD" && ctest -N -L gpu | sed -n 's/^ *Test *#[0-9]*: //p')
    if grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja' "$BUILD/CMakeCache.txt" 2>/dev/null; then
        known=$(ninja -C "$BUILD" -t targets all 2>/dev/null | sed -n 's/^\([A-Za-z0-9_.+-]*\): phony$/\1/p' | sort -u)
    else
        known=$(cmake --build "$BUILD" --target help 2>/dev/null | sed -n 's/^[.][.][.] \([^ ]*\).*/\1/p' | sort -u)
    fi
    {
        printf '%s\n' gauntlet report_check profile_check
        comm -12 <(for n in "${names[@]}"; do
                       grep -rhF --include=CTestTestfile.cmake "add_test([=[$n]=] " "$BUILD" |
                           grep -o '"[^"]*"' | tr -d '"'
                   done | xargs -r -n1 basename -- | sort -u) <(echo "$known")
    } | awk 'NF && !seen[$0]++'
}

stage_build() {
    setup_env
    local log=$WORK/build.log arch scope=gpu
    [ "${GV_BUILD_ALL:-0}" = 1 ] || [ "${1:-}" = all ] && scope=all
    : >"$log"
    command -v nvcc >/dev/null 2>&1 || { note "build: nvcc not found (CUDA_HOME=$CUDA_HOME)"; BUILD_FAILED=1; worse 2; return 2; }
    case $JANSSON_DESC in MISSING*) note "build: jansson $JANSSON_DESC"; BUILD_FAILED=1; worse 2; return 2 ;; esac
    if have_gpu; then arch=$(gpu_arch); else arch=${GV_ARCH:-90}; note "build: no GPU here ($GPU_WHY): compiling for sm_$arch only"; fi
    rm -f "$BUILD/.gv_built"
    local mpi=ON gen=() genname=make
    command -v mpicc >/dev/null 2>&1 || command -v mpirun >/dev/null 2>&1 || mpi=OFF
    # a new build folder gets Ninja when there is one (the image has ninja; make may be absent)
    if [ ! -f "$BUILD/CMakeCache.txt" ]; then
        if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja)
        elif ! command -v make >/dev/null 2>&1; then
            note "build: neither ninja nor make found"; BUILD_FAILED=1; worse 2; return 2
        fi
    fi
    note "build: configuring $BUILD (sm_$arch, MPI $mpi, cuDNN: $CUDNN_DESC, NCCL: $NCCL_DESC, jansson: $JANSSON_DESC)"
    local t0 tc tb; t0=$(date +%s)
    if ! run_to "$(cap 300)" "$log" cmake "${gen[@]}" -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" -DGT_WITH_CUDA=ON -DGT_NATIVE=ON \
        -DGT_CUDA_ARCHITECTURES="$arch" -DGT_WITH_MPI=$mpi "${CMAKE_LIB_ARGS[@]}"; then
        note "build: configure FAILED (build.log)"; tail -40 "$log" >&2
        echo "| build | configure FAILED |" >>"$WORK/stages.md"; BUILD_FAILED=1; worse 2; return 2
    fi
    tc=$(($(date +%s) - t0))
    grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja' "$BUILD/CMakeCache.txt" && genname=Ninja
    grep -A14 'gauntlet .* configuration' "$log" >"$WORK/configure-summary.txt"
    cat "$WORK/configure-summary.txt" >&2
    local targets=() what="every target"
    if [ $scope = gpu ]; then
        mapfile -t targets < <(gpu_targets)
        printf '%s\n' "${targets[@]}" >"$WORK/build-targets.txt"
        what="${#targets[@]} targets (build-targets.txt)"
        targets=(--target "${targets[@]}")
    fi
    note "build: $what, -j $JOBS, $genname"
    local t; t=$(date +%s)
    if ! run_to "$(cap 480)" "$log" cmake --build "$BUILD" -j "$JOBS" "${targets[@]}"; then
        note "build: FAILED (build.log)"; grep -m20 -B2 -A8 'error' "$log" >&2
        echo "| build | FAILED after $(($(date +%s) - t)) s |" >>"$WORK/stages.md"; BUILD_FAILED=1; worse 2; return 2
    fi
    tb=$(($(date +%s) - t))
    echo "$scope" >"$BUILD/.gv_built"
    # the build's cost, for docs/gpu-verification.md: steps from the last progress line
    local steps; steps=$(grep -o '^\[[0-9]*/[0-9]*\]' "$log" | tail -1 | tr -d '[]' | cut -d/ -f2)
    echo "configure ${tc} s; build ${tb} s: $what, ${steps:-?} steps, -j $JOBS, $genname, sm_$arch, $(nproc) cores" \
        >>"$WORK/build-times.txt"
    note "build: configure $tc s, build $tb s (${steps:-?} steps)"
    grep -q 'CUDA    : yes' "$WORK/configure-summary.txt" || { note "build: the CUDA backend was NOT configured"; worse 2; }
    local ws; ws=$(grep -c 'warning' "$log")
    echo "| build | ok: configure $tc s, build $tb s ($what, ${steps:-?} steps, $genname, -j $JOBS), sm_$arch, $ws warning lines; $(grep -E 'cuDNN|NCCL|MPI|CUDA ' "$WORK/configure-summary.txt" | sed 's/.*-- *//' | tr -s ' ' | paste -sd';') |" >>"$WORK/stages.md"
    [ -f "$WORK/env.txt" ] || run_to 30 "$WORK/env.txt" "$BUILD/harness/gauntlet" env --no-probes || true
    return 0
}

BUILD_FAILED=0
# ensure_built STAGE [all]: a finished build of the scope, building first where there is none
ensure_built() {
    build_fresh "${2:-gpu}" && { setup_env; return 0; }
    [ "$BUILD_FAILED" = 1 ] && { note "$1: not run: the build failed"; return 1; }
    note "$1: no ${2:-gpu} build in $BUILD yet: building first"
    stage_build "${2:-}"
}

# ctest_counts NAME JUNIT... : one line of counts from the JUnit files; where ctest was cut
# before it wrote one, from the progress lines of $WORK/NAME*.log; the tests of
# $WORK/NAME-list.txt that never ran are "not reached"
ctest_counts() {
    local name=$1; shift
    local args=() j l
    for j in "$@"; do args+=(--junit "$j"); done
    for l in "$WORK/$name".log "$WORK/$name"-*.log; do [ -f "$l" ] && args+=(--log "$l"); done
    [ -f "$WORK/$name-list.txt" ] && args+=(--list "$WORK/$name-list.txt")
    python3 "$ROOT/ci/gpu_summary.py" "${args[@]}" 2>/dev/null || echo "no counts (no JUnit file, no ctest log)"
}

# ctest_args LIMIT: CT, the ctest command every run here gets
ctest_args() { CT=(ctest --output-on-failure --timeout "$(($1 > 300 ? 300 : $1))"); }

# ctest_row NAME RC COUNTS: the stage row; a GPU test that skips (77) on a GPU machine did
# not verify anything: NOT VERIFIED, and the run fails (the 2-rank nccl tests skip
# legitimately with one GPU)
ctest_row() {
    local name=$1 rc=$2 counts=$3 odd="" sk
    note "$name: $counts"
    if [ "$name" = gputest ] && [[ $counts == *"; skipped: "* ]]; then
        sk=${counts#*; skipped: }; sk=${sk%%;*}
        odd=$(echo "$sk" | tr ',' '\n' | sed 's/^ *//' | grep -v '_np2$' | paste -sd' ')
        [ -n "$odd" ] && { note "gputest: SKIPPED ON A GPU MACHINE (not verified): $odd"; counts="$counts; NOT VERIFIED (skipped with a GPU present): $odd"; worse 1; }
    fi
    [[ $counts == *"not reached: "* ]] && worse 1
    echo "| $name | $counts |" >>"$WORK/stages.md"
    [ "$rc" -eq 0 ] || worse 1
}

stage_gputest() {
    need_gpu gputest || return 0
    ensure_built gputest || return 0
    local lim n rc rca=0 pid junits=("$WORK/gputest-junit.xml") attn=()
    rm -f "$WORK"/gputest*.log "$WORK"/gputest*-junit.xml "$WORK"/cudnn-kernels.*
    # GV_CTEST_R: only the tests matching it (a re-check of a fix)
    (cd "$BUILD" && ctest -N -L gpu ${GV_CTEST_R:+-R "$GV_CTEST_R"}) | sed -n 's/^ *Test *#[0-9]*: //p' \
        >"$WORK/gputest-list.txt"
    mapfile -t attn < <(grep -E "$ATTN_RE" "$WORK/gputest-list.txt")
    lim=$(cap 600)
    ctest_args "$lim"
    note "gputest: $(wc -l <"$WORK/gputest-list.txt") gpu tests, -j $CTEST_J; beside them the cuDNN-forced ones one at a time with CUDNN_LOGLEVEL_DBG=$CUDNN_LOG_LEVEL: ${attn[*]:-none}"
    (cd "$BUILD" && run_to "$lim" "$WORK/gputest.log" "${CT[@]}" --output-junit "$WORK/gputest-junit.xml" \
        -L gpu -E "$ATTN_RE" ${GV_CTEST_R:+-R "$GV_CTEST_R"} -j "$CTEST_J") &
    pid=$!
    # GT_CUDA_ATTENTION=cudnn fails naming cuDNN's reason; cuDNN's own log says more:
    # one log per test (whether cuDNN appends to or replaces the file is not documented)
    for n in "${attn[@]}"; do
        lim=$(cap 600)
        ctest_args "$lim"
        (cd "$BUILD" && CUDNN_LOGLEVEL_DBG=$CUDNN_LOG_LEVEL CUDNN_LOGDEST_DBG="$WORK/cudnn-$n.log" \
            run_to "$lim" "$WORK/gputest-$n.log" "${CT[@]}" --output-junit "$WORK/gputest-$n-junit.xml" \
            -R "^${n//./\\.}\$")
        rc=$?
        echo "$rc" >"$WORK/cudnn-$n.log.rc"
        [ -f "$WORK/cudnn-$n.log" ] || echo "(cuDNN wrote no log: CUDNN_LOGLEVEL_DBG=$CUDNN_LOG_LEVEL, ctest exit $rc)" >"$WORK/cudnn-$n.log"
        junits+=("$WORK/gputest-$n-junit.xml")
        [ $rc -eq 0 ] || rca=$rc
    done
    wait "$pid"
    rc=$?
    [ $rc -ne 0 ] || rc=$rca
    ctest_row gputest "$rc" "$(ctest_counts gputest "${junits[@]}")"
}

stage_test() {
    need_gpu test || return 0
    ensure_built test all || return 0
    local lim rc
    lim=$(cap 600)
    ctest_args "$lim"
    rm -f "$WORK"/test.log "$WORK"/test-junit.xml
    (cd "$BUILD" && ctest -N -LE gpu) | sed -n 's/^ *Test *#[0-9]*: //p' >"$WORK/test-list.txt"
    (cd "$BUILD" && run_to "$lim" "$WORK/test.log" "${CT[@]}" --output-junit "$WORK/test-junit.xml" -LE gpu -j "$JOBS")
    rc=$?
    ctest_row test "$rc" "$(ctest_counts test "$WORK/test-junit.xml")"
}

# test_cmd NAME: the test's command line from ctest (one argument per line)
test_cmd() {
    (cd "$BUILD" && ctest --show-only=json-v1) | python3 -c '
import json, sys
d = json.load(sys.stdin)
for t in d["tests"]:
    if t["name"] == sys.argv[1]:
        print("\n".join(t["command"])); break
' "$1"
}

stage_sanitize() {
    need_gpu sanitize || return 0
    ensure_built sanitize || return 0
    if ! command -v compute-sanitizer >/dev/null 2>&1; then
        note "sanitize: compute-sanitizer not found: NOT VERIFIED"
        echo "| sanitize | NOT VERIFIED: no compute-sanitizer on PATH or in \$CUDA_HOME |" >>"$WORK/stages.md"
        worse 1
        return 0
    fi
    # most valuable first: the budget may end the list early. The default is the one run
    # the second call has time for: the cuDNN attention test (host code around a
    # library's graphs, staged copies, the own kernels it compares against)
    local runs=() list=${GV_SANITIZE:-memcheck kernels.attention_cudnn.cuda}
    [ "$list" = all ] && list="memcheck kernels.attention_cudnn.cuda;memcheck kernels.conformance.cuda;memcheck kernels.conformance_bf16.cuda;racecheck kernels.conformance_bf16.cuda;synccheck kernels.conformance_bf16.cuda;memcheck kernels.determinism.cuda;racecheck kernels.determinism.cuda;synccheck kernels.determinism.cuda;memcheck kernels.cast.cuda"
    IFS=';' read -r -a runs <<<"$list"
    local r tool t cmd log rc res=() nfail=0 lim envs
    for r in "${runs[@]}"; do
        r=$(echo "$r" | xargs)
        tool=${r%% *}; t=${r#* }
        mapfile -t cmd < <(test_cmd "$t")
        [ ${#cmd[@]} -gt 0 ] || { res+=("$tool $t: NOT VERIFIED, no such test in this build"); nfail=$((nfail + 1)); continue; }
        log=$WORK/sanitize-$tool-$t.log; : >"$log"
        lim=$(cap 150)
        envs=()
        [[ $t =~ $ATTN_RE ]] && envs=("CUDNN_LOGLEVEL_DBG=$CUDNN_LOG_LEVEL" "CUDNN_LOGDEST_DBG=$WORK/cudnn-sanitize-$t.log")
        note "sanitize: $tool $t (limit ${lim}s)"
        run_to "$lim" "$log" env "${envs[@]}" compute-sanitizer --tool "$tool" --error-exitcode 99 \
            --print-limit 50 ${GV_SANITIZER_ARGS:-} "${cmd[@]}"
        rc=$?
        [ ${#envs[@]} -gt 0 ] && echo "$rc" >"$WORK/cudnn-sanitize-$t.log.rc"
        local errs; errs=$(grep -m1 'ERROR SUMMARY' "$log" | sed 's/.*ERROR SUMMARY: *//')
        case $rc in
            0) res+=("$tool $t: clean (${errs:-0 errors})") ;;
            77) res+=("$tool $t: NOT VERIFIED, the test skipped (77) under the sanitizer"); nfail=$((nfail + 1)) ;;
            124) res+=("$tool $t: NOT VERIFIED, cut at ${lim}s (${errs:-no summary})"); nfail=$((nfail + 1)) ;;
            *) res+=("$tool $t: FAIL rc $rc (${errs:-see log})"); nfail=$((nfail + 1)) ;;
        esac
    done
    [ $nfail -gt 0 ] && worse 1
    local IFS=';'
    echo "| sanitize | ${res[*]} |" >>"$WORK/stages.md"
}

gpu_peak() {
    # dense bf16 tensor-core datasheet peak (GFLOP/s): the MFU reference of the training runs
    local gpu
    gpu=$(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
    case $gpu in
        *H100*PCIe*) PEAK=756000 ;; *H100*|*H200*|*H800*) PEAK=989400 ;; *A100*) PEAK=312000 ;;
        *B200*) PEAK=2250000 ;; *L40S*) PEAK=362000 ;; *) PEAK= ;;
    esac
    PEAK=${GV_PEAK_GFLOPS:-$PEAK}
    echo "$gpu|$PEAK" >"$WORK/gpu.txt"
}

# gpt2 NAME STEPS [VAR=VALUE ...]: gauntlet train gpt2-124m bf16 B=16 T=1024 into NAME.json
gpt2() {
    local name=$1 steps=$2; shift 2
    run_to "$(cap 240)" "$WORK/$name.log" env "$@" "$BUILD/harness/gauntlet" train --model gpt2-124m \
        --backend cuda --precision bf16 --batch 16 --seq 1024 --steps "$steps" \
        --report "$WORK/$name.json" ${PEAK:+--peak-gflops $PEAK}
}

stage_train() {
    need_gpu train || return 0
    ensure_built train || return 0
    local PEAK rc rc2 row
    gpu_peak
    rm -f "$WORK"/train_bf16*.json "$WORK"/cudnn-train.log*
    # 1. cuDNN attention forced: fails loudly (its reason in train_bf16.log, cuDNN's own
    #    in cudnn-train.log) instead of falling back to the own kernels unseen
    note "train: gpt2-124m bf16 B16 T1024, $STEPS steps, GT_CUDA_ATTENTION=cudnn (MFU against ${PEAK:-the measured SGEMM} GFLOP/s)"
    gpt2 train_bf16 "$STEPS" GT_CUDA_ATTENTION=cudnn CUDNN_LOGLEVEL_DBG=$CUDNN_LOG_LEVEL \
        "CUDNN_LOGDEST_DBG=$WORK/cudnn-train.log"
    rc=$?
    echo "$rc" >"$WORK/cudnn-train.log.rc"
    [ -f "$WORK/cudnn-train.log" ] || echo "(cuDNN wrote no log: CUDNN_LOGLEVEL_DBG=$CUDNN_LOG_LEVEL, exit $rc)" >"$WORK/cudnn-train.log"
    row="cuDNN attention forced: exit $rc"
    if [ $rc -ne 0 ]; then
        worse 1
        note "train: FAILED with cuDNN attention forced (train_bf16.log, cudnn-train.log): the same in auto mode for a figure"
        # 2. auto: what a user gets (the own kernels where cuDNN cannot): a figure anyway
        gpt2 train_bf16_auto "$STEPS"
        rc2=$?
        [ $rc2 -eq 0 ] || worse 1
        row="$row (FAILED: see cudnn-train.log); auto mode: exit $rc2"
    fi
    echo "| train | gpt2-124m bf16 B16 T1024 $STEPS steps: $row (figures below) |" >>"$WORK/stages.md"
}

stage_own() {
    need_gpu own || return 0
    ensure_built own || return 0
    local PEAK rc
    gpu_peak
    note "own: gpt2-124m bf16 with GT_CUDA_ATTENTION=own (what cuDNN's fused attention buys)"
    gpt2 train_bf16_own $((STEPS / 2 > 10 ? STEPS / 2 : 10)) GT_CUDA_ATTENTION=own
    rc=$?
    [ $rc -eq 0 ] || worse 1
    echo "| own | gpt2-124m bf16, own attention kernels: exit $rc |" >>"$WORK/stages.md"
}

# The PyTorch baseline runs in the environment the script started with: setup_env's
# LD_LIBRARY_PATH (the toolkit's lib64 first) would load the toolkit's libraries in place
# of the ones torch was built with. A GPU machine whose torch is missing or sees no GPU
# gets NOT VERIFIED, never a silent skip.
stage_torch() {
    need_gpu torch || return 0
    local PEAK rc st why
    gpu_peak
    orig_env
    rm -f "$WORK/torch_baseline.json"
    if ! "${ORIG[@]}" sh -c 'command -v python3' >/dev/null 2>&1; then
        note "torch: NOT VERIFIED: no python3 on the PATH the script started with"
        echo "| torch | NOT VERIFIED: no python3 on the original PATH |" >>"$WORK/stages.md"
        echo '{"status": "skip", "reason": "no python3 on the original PATH"}' >"$WORK/torch_baseline.json"
        worse 1; return 0
    fi
    note "torch: torch.compile baseline (python3 in the original environment: $("${ORIG[@]}" sh -c 'command -v python3'))"
    run_to "$(cap 200)" "$WORK/torch_baseline.log" "${ORIG[@]}" python3 "$ROOT/ci/torch_gpt2_baseline.py" \
        --batch 16 --seq 1024 --steps "${GV_TORCH_STEPS:-20}" --json "$WORK/torch_baseline.json" \
        ${PEAK:+--peak-gflops $PEAK}
    rc=$?
    st=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("status","?") + "|" + str(d.get("reason","")))' \
        "$WORK/torch_baseline.json" 2>/dev/null || echo "none|no JSON (exit $rc): see torch_baseline.log")
    why=${st#*|}; st=${st%%|*}
    if [ "$st" = pass ] && [ $rc -eq 0 ]; then
        echo "| torch | pass (figures below) |" >>"$WORK/stages.md"
    else
        [ "$st" = pass ] && why="exit $rc after the run"
        note "torch: NOT VERIFIED: $why"
        echo "| torch | NOT VERIFIED: ${why:0:300} |" >>"$WORK/stages.md"
        # the summary reads this: a torch that could not run is not a skip
        [ -f "$WORK/torch_baseline.json" ] ||
            python3 -c 'import json,sys; json.dump({"status": "error", "reason": sys.argv[2]}, open(sys.argv[1], "w"))' \
                "$WORK/torch_baseline.json" "$why"
        worse 1
    fi
}

# cuda_verdict NAME RC RAN_WORDS CASE_WORD: the stage row of a `gauntlet run` stage whose
# report is $WORK/NAME.json and log $WORK/NAME.log. Exit 0 with every cuda case skipped
# means the cuda backend did not come up: NOT VERIFIED.
cuda_verdict() {
    local name=$1 rc=$2 ran why=""
    [ "$rc" -eq 0 ] || worse 1
    ran=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(r.get("backend")=="cuda" and r.get("status") in ("pass","fail") for r in d.get("results",[])))' "$WORK/$name.json" 2>/dev/null || echo 0)
    [ "$rc" -eq 124 ] && why=" (cut by the time limit: partial report)"
    if [ "${ran:-0}" -eq 0 ]; then
        why="$why; NOT VERIFIED: no $4 ran on cuda (see $name.log)"; worse 1
        note "$name: no case ran on the cuda backend ($name.log)"
    fi
    echo "| $name | exit $rc, $ran $3$why |" >>"$WORK/stages.md"
    CUDA_RAN=${ran:-0}
}

stage_models() {
    need_gpu models || return 0
    ensure_built models || return 0
    local G=$BUILD/harness/gauntlet
    # issue 7's gate: the train and scaling suites (gpt2, mlp, convnet: convergence,
    # run_to_run, topology, cross_backend against cpu, resume, precision, throughput) on
    # cuda, one rank; the memory suite checks that the caching allocator makes no raw
    # allocation after the first step; the report is rewritten after every case
    note "models: gauntlet run train scaling memory --backend cuda --topologies 1 ${GV_MODELS_ARGS:---quick}"
    run_to "$(cap 120)" "$WORK/models.log" "$G" run train scaling memory --backend cuda --topologies 1 \
        ${GV_MODELS_ARGS:---quick} --report "$WORK/models.json"
    cuda_verdict models $? "cases ran on cuda" "model case"
    [ "${GV_MODELS_SMALL:-0}" = 1 ] || return 0
    # the larger presets reach their targets too (--full cases; seconds on a GPU)
    note "models: mlp-small and resnet-small convergence and time to target (5 seeds) on cuda (--full)"
    run_to "$(cap 150)" "$WORK/models_small.log" "$G" run train/mlp-small/convergence \
        train/resnet-small/convergence train/mlp-small/time_to_target \
        train/resnet-small/time_to_target --backend cuda --topologies 1 --full \
        --report "$WORK/models_small.json"
    cuda_verdict models_small $? "cases ran on cuda" "convergence case"
}

# gpu_class: the machine class of a baseline (reports/baselines/README.md), from the GPU's
# name and count: "NVIDIA H100 80GB HBM3", one GPU -> h100-80gb-hbm3-x1
gpu_class() {
    local names n
    names=$(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null)
    n=$(echo "$names" | grep -c .)
    echo "$names" | head -1 | tr '[:upper:]' '[:lower:]' | sed 's/^nvidia //; s/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//' |
        sed "s/\$/-x$n/"
}

stage_kernels() {
    need_gpu kernels || return 0
    ensure_built kernels || return 0
    local G=$BUILD/harness/gauntlet rc args sel
    read -r -a args <<<"${GV_KERNELS_ARGS:---quick}"
    read -r -a sel <<<"${GV_KERNELS_SELECT:-kernels scaling/gpt2-124m/bf16}"
    [ -f "$WORK/env.txt" ] || run_to 30 "$WORK/env.txt" "$G" env --no-probes
    rm -f "$WORK"/baseline-*.json "$WORK/baseline.txt"
    # conformance against ref + hot/cold speed of every op, the suite's peak probes, and
    # gpt2-124m bf16 B=16 T=1024 as a suite case: one report, the first GPU baseline; it
    # is rewritten after every case, so a run cut by the budget still leaves what finished
    note "kernels: gauntlet run ${sel[*]} --backend cuda --topologies 1 ${args[*]}"
    run_to "$(cap 150)" "$WORK/kernels.log" "$G" run "${sel[@]}" --backend cuda \
        --topologies 1 "${args[@]}" --report "$WORK/kernels.json"
    rc=$?
    cuda_verdict kernels $rc "cases ran" "case"
    # The baseline: a complete report whose checks all passed (what ci/jobs/gate.sh
    # --accept takes), valid for report_check, that compare reads (itself against itself)
    local why="" cls date
    if [ ! -f "$WORK/kernels.json" ]; then why="no report"
    elif [ "$CUDA_RAN" -eq 0 ]; then why="no case ran on cuda"
    elif [ $rc -ne 0 ]; then why="gauntlet run exited $rc (a failed check, or cut: a baseline must be a finished run whose checks all passed)"
    elif ! "$BUILD/reports/report_check" "$WORK/kernels.json" >"$WORK/baseline-check.log" 2>&1; then why="report_check rejected it (baseline-check.log)"
    elif ! "$G" compare "$WORK/kernels.json" "$WORK/kernels.json" >>"$WORK/baseline-check.log" 2>&1; then why="compare of it with itself did not exit 0 (baseline-check.log)"
    fi
    cls=$(gpu_class); date=$(date -u +%Y%m%d)
    if [ -z "$why" ]; then
        cp "$WORK/kernels.json" "$WORK/baseline-$cls-$date.json"
        printf 'baseline-%s-%s.json\ncommit as reports/baselines/%s/gpu-verify.json\ngate: gauntlet run %s --backend cuda --topologies 1 %s --report new.json --baseline reports/baselines/%s/gpu-verify.json\n' \
            "$cls" "$date" "$cls" "${sel[*]}" "${args[*]}" "$cls" >"$WORK/baseline.txt"
        note "kernels: baseline-$cls-$date.json written (report_check ok, compare with itself exit 0)"
        echo "| baseline | baseline-$cls-$date.json: commit as reports/baselines/$cls/gpu-verify.json (report_check ok, compare with itself exit 0) |" >>"$WORK/stages.md"
        kernels_aa "$G" "${args[@]}"
    else
        note "kernels: NO baseline: $why"
        echo "NO baseline: $why" >"$WORK/baseline.txt"
        echo "| baseline | NOT written: $why |" >>"$WORK/stages.md"
        worse 1
    fi
}

# A/A on the GPU: the kernels suite again, compared with the first run's kernels (one
# run a side, --suite kernels). A report compared with itself cannot fail; two runs of one
# build can: a case named by a measured figure (MISSING), a false alarm (SLOWER). Exit 0
# ships, 4 is undecided (one run a side cannot show a change under its 15%), 3 is a
# false alarm on an unchanged stack.
kernels_aa() {
    local G=$1 rc; shift
    note "kernels A/A: gauntlet run kernels --backend cuda --topologies 1 $* again, compared with the first"
    run_to "$(cap 90)" "$WORK/kernels-aa.log" "$G" run kernels --backend cuda --topologies 1 \
        "$@" --report "$WORK/kernels-aa.json"
    rc=$?
    if [ $rc -ne 0 ] || [ ! -f "$WORK/kernels-aa.json" ]; then
        echo "| kernels A/A | NOT VERIFIED: the second run exited $rc (kernels-aa.log) |" >>"$WORK/stages.md"
        worse 1
        return 0
    fi
    "$G" compare "$WORK/kernels.json" "$WORK/kernels-aa.json" --suite kernels \
        >"$WORK/kernels-aa-compare.txt" 2>&1
    rc=$?
    local said
    said=$(grep -E '^compare:' "$WORK/kernels-aa-compare.txt" | sed 's/.*: //' | head -1)
    case $rc in
        0) echo "| kernels A/A | two runs compare clean: $said |" >>"$WORK/stages.md" ;;
        4) echo "| kernels A/A | undecided, not a false alarm: $said (kernels-aa-compare.txt) |" >>"$WORK/stages.md" ;;
        *) echo "| kernels A/A | FALSE ALARM on an unchanged stack (exit $rc): $(grep -E '^  (SLOWER|MISSING|FAILED)' "$WORK/kernels-aa-compare.txt" | head -3 | paste -sd';') |" >>"$WORK/stages.md"
           worse 1 ;;
    esac
    note "kernels A/A: compare exit $rc"
}

stage_nccl() {
    need_gpu nccl || return 0
    ensure_built nccl || return 0
    local G=$BUILD/harness/gauntlet rc pre=()
    if ! grep -q 'NCCL    : yes' "$WORK/configure-summary.txt" 2>/dev/null; then
        note "nccl: NOT VERIFIED: NCCL is not built in; see configure-summary.txt"
        echo "skipped: NCCL not built in" >"$WORK/collectives.log"
        echo "| nccl | NOT VERIFIED: NCCL not built in (configure summary: $(grep -E 'NCCL' "$WORK/configure-summary.txt" 2>/dev/null | sed 's/.*-- *//' | tr -s ' ' | paste -sd';')) |" >>"$WORK/stages.md"
        worse 1
        return 0
    fi
    # with MPI built in, under mpirun; without, one process on its own (the
    # nccl communicator then bootstraps without MPI, engine/comm_nccl.c)
    if grep -q 'MPI     : yes' "$WORK/configure-summary.txt" && command -v mpirun >/dev/null 2>&1; then
        pre=(mpirun -np 1)
        mpirun --version 2>&1 | grep -q 'Open MPI' && pre=(mpirun --allow-run-as-root -np 1)
    fi
    note "nccl: ${pre[*]} gauntlet run collectives --comm nccl ${GV_NCCL_ARGS:--e 64M}"
    run_to "$(cap 60)" "$WORK/collectives.log" "${pre[@]}" "$G" run collectives --comm nccl \
        ${GV_NCCL_ARGS:--e 64M} --verbose --report "$WORK/collectives.json"
    rc=$?
    [ $rc -eq 0 ] || worse 1
    echo "| nccl | exit $rc (1 rank, one GPU: busbw n/a, nothing moves between ranks; algbw and #wrong matter) |" >>"$WORK/stages.md"
}

# ---------------------------------------------------------------------------------------
pack() {
    python3 "$ROOT/ci/gpu_summary.py" --work "$WORK" --rc "$RC" >"$WORK/summary.md" 2>>"$WORK/progress.log" ||
        { echo "# gpu_verify summary (summary script failed)"; cat "$WORK/stages.md"; } >"$WORK/summary.md"
    cp "$WORK/summary.md" "$OUTDIR/summary.md"
    # The device tool brings back at most 8 files of at most 16 MiB each: big reports
    # travel gzipped, and leave the tarball when it would be too big with them.
    # At most 8 files in all: summary.md and the tarball, then the reports by value (a
    # warm machine's work folder also holds the earlier call's; all are in the tarball).
    local f lim=$((15 * 1024 * 1024)) excl=() n=2
    for f in "$OUTDIR"/baseline-*.json "$OUTDIR"/*.json "$OUTDIR"/*.json.gz "$OUTDIR/probe.txt"; do
        rm -f "$f"
    done
    for f in $(cd "$WORK" && ls baseline-*.json 2>/dev/null) kernels.json train_bf16.json torch_baseline.json \
             collectives.json models.json train_bf16_auto.json probe.txt; do
        if [ ! -f "$WORK/$f" ] || [ $n -ge 8 ]; then continue; fi
        n=$((n + 1))
        if [ "$(stat -c %s "$WORK/$f")" -le "$lim" ]; then
            cp "$WORK/$f" "$OUTDIR/$f"
        else
            gzip -c "$WORK/$f" >"$OUTDIR/$f.gz"
        fi
    done
    tar -C "$WORK/.." -czf "$OUTDIR/gpu-verify.tar.gz.tmp" "$(basename "$WORK")" 2>/dev/null
    if [ "$(stat -c %s "$OUTDIR/gpu-verify.tar.gz.tmp" 2>/dev/null || echo 0)" -gt "$lim" ]; then
        excl=(--exclude='*.json')
        tar -C "$WORK/.." -czf "$OUTDIR/gpu-verify.tar.gz.tmp" "${excl[@]}" "$(basename "$WORK")" 2>/dev/null
        note "pack: reports left out of gpu-verify.tar.gz (too big): they come back as separate files"
    fi
    mv -f "$OUTDIR/gpu-verify.tar.gz.tmp" "$OUTDIR/gpu-verify.tar.gz" 2>/dev/null
    return 0
}

usage() { sed -n '3,/^set -uo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] || usage
stages=()
for a in "$@"; do
    case $a in
        prep|probe|build|gputest|train|torch|kernels|nccl|models|sanitize|own|test) stages+=("$a") ;;
        call1) stages+=(probe build gputest train) ;;
        call2) stages+=(build torch kernels nccl models sanitize) ;;
        all) stages+=(probe build gputest train torch kernels nccl models sanitize own test) ;;
        -h|--help|help) usage ;;
        *) echo "gpu_verify: unknown stage '$a' (prep probe build gputest train torch kernels nccl models sanitize own test call1 call2 all)" >&2; exit 2 ;;
    esac
done
# A GPU stage on a machine without one: say so at once (no build, no probe of minutes).
for s in "${stages[@]}"; do
    case $s in gputest|train|torch|kernels|nccl|models|sanitize|own|test)
        if ! have_gpu; then
            echo "gpu_verify: NO GPU here: $GPU_WHY." >&2
            echo "gpu_verify: stage '$s' needs an NVIDIA GPU: run it through the device tool (docs/gpu-verification.md)." >&2
            exit 3
        fi ;;
    esac
done
[ -f "$WORK/stages.md" ] || printf '| stage | result |\n|---|---|\n' >"$WORK/stages.md"
trap 'note "interrupted"; pack; exit 130' INT TERM
for i in "${!stages[@]}"; do
    s=${stages[$i]}
    # what the later stages are left: their FLOOR each, in order, as far as the budget
    # holds this stage's own floor and theirs (the later a stage, the less it is worth:
    # where the floors do not all fit, the last ones are the ones left without)
    RESERVE=0
    if [ "$BUDGET" -gt 0 ]; then
        avail=$(($(left) - 15 - ${FLOOR[$s]:-0}))
        for later in "${stages[@]:$((i + 1))}"; do
            [ $((RESERVE + ${FLOOR[$later]:-0})) -le "$avail" ] || break
            RESERVE=$((RESERVE + ${FLOOR[$later]:-0}))
        done
    fi
    note "=== stage $s (budget left $(left) s, ${RESERVE} s of it kept for the later stages)"
    "stage_$s"
    rc=$?
    [ "$s" = prep ] || pack
    if [ "$s" = build ] && [ $rc -ne 0 ]; then note "build failed: later stages not run"; break; fi
    [ "$s" = prep ] && [ $rc -ne 0 ] && exit 2
done
note "done: exit $RC; summary in $OUTDIR/summary.md"
exit "$RC"
