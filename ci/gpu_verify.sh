#!/usr/bin/env bash
# shellcheck disable=SC2317,SC2086,SC2012  # stages are called as "stage_$s"; option lists split on purpose
# Verify the CUDA backend and the nccl communicator on a machine with an NVIDIA GPU,
# in as few calls as possible (docs/gpu-verification.md has the device-tool calls).
#
#   ci/gpu_verify.sh prep                  HERE, before the first GPU call: build-gpu-deps/
#                                          (jansson and a pkg-config stand-in, for a GPU
#                                          machine that lacks them; carry it)
#   ci/gpu_verify.sh STAGE [STAGE ...]     on the GPU machine, stages in order:
#       probe     what the machine has (GPU, nvcc, cuDNN/NCCL, MPI, jansson, sanitizer)
#       build     configure + build build-gpu/ for this GPU's architecture, `gauntlet env`
#       gputest   ctest -L gpu
#       test      every other CTest test (ctest -LE gpu -j)
#       sanitize  compute-sanitizer memcheck / racecheck / synccheck on cuda tests
#       train     gpt2-124m bf16 B=16 T=1024 (cuDNN and own attention), torch.compile baseline
#       kernels   gauntlet run kernels --backend cuda (conformance, hot/cold speed, peaks)
#       nccl      gauntlet run collectives --comm nccl on this GPU (under mpirun when MPI is built in)
#       models    gauntlet run train scaling memory --backend all --topologies 1 (gpt2, mlp,
#                 convnet; no cudaMalloc after the first step)
#       bench     train kernels nccl models
#       all       probe build gputest test sanitize train kernels nccl models (several calls' worth:
#                 set GV_BUDGET_S=0 where no 10-minute limit applies)
#   A GPU stage builds first when build-gpu/ has no finished build (a fresh machine keeps
#   nothing); naming `build` again on a warm machine is an incremental build (seconds).
#
# Output: everything under ${OUT:-build-gpu-out} (build-gpu-out is git-ignored):
# summary.md (figures and counts), gpu-verify.tar.gz (every log and JSON report), and
# the main reports as plain files: at most 8 files, what the device tool brings back.
# Exit: 0 every stage passed, 1 a test/check failed, 2 usage or build error,
# 3 no GPU here (a GPU stage stops at once and says so, before any work).
#
# Environment: GV_BUDGET_S (default 570: the invocation ends its stages inside this many
# seconds so that a 600 s device call always returns its files; 0: no limit), GV_STEPS
# (training steps, default 40), GV_JOBS (default nproc), GV_BUILD (default build-gpu),
# GV_DEPS (default build-gpu-deps), CUDNN_PATH / NCCL_HOME (looked at first), CUDA_HOME
# (default /usr/local/cuda), GV_ARCH (CUDA architectures, default: the GPU's compute
# capability, 90 without a GPU), GV_PEAK_GFLOPS (MFU reference, default: the GPU's dense
# bf16 datasheet peak), GV_KERNELS_ARGS (e.g. --quick or --full), GV_MODELS_ARGS (default
# --quick), GV_SANITIZER_ARGS.
# For checking the script without a GPU: GV_PREFER_WHEELS=1 (cuDNN/NCCL from Python
# wheels only), GV_PKG_CONFIG_STANDIN=1 (carried jansson + the pkg-config stand-in).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
BUILD=${GV_BUILD:-build-gpu}
DEPS=${GV_DEPS:-build-gpu-deps}
OUTDIR=${OUT:-$ROOT/build-gpu-out}
WORK=$ROOT/$BUILD/verify          # logs and reports; packed into $OUTDIR after each stage
JOBS=${GV_JOBS:-$(nproc 2>/dev/null || echo 4)}
BUDGET=${GV_BUDGET_S:-570}
STEPS=${GV_STEPS:-40}
T0=$(date +%s)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PYTHONUNBUFFERED=1 OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
# the device machine runs commands as root: Open MPI refuses that unless told
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

RC=0                               # worst outcome so far (0 < 1 < 3 < 2 is not needed: max)
note() { printf '[gpu_verify %4ds] %s\n' "$(($(date +%s) - T0))" "$*" | tee -a "$WORK/progress.log" >&2; }
worse() { [ "$1" -gt "$RC" ] && RC=$1; return 0; }
left() { [ "$BUDGET" -gt 0 ] && echo $((BUDGET - ($(date +%s) - T0))) || echo 1000000; }
# cap SECONDS: min(SECONDS, what is left of the budget minus 15 s for packing)
cap() { local l; l=$(($(left) - 15)); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
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
    local name=$1 inc=$2 lib=$3 dst=$ROOT/$BUILD/deps/$1 f base
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
        ld="$ld:$lib"; CUDNN_DESC="$inc | $lib"
    fi
    if r=$(find_lib nccl nccl.h); then
        read -r inc lib <<<"$r"
        d=$(link_dir nccl "$inc" "$lib")
        export NCCL_HOME=$d
        CMAKE_LIB_ARGS+=("-DNCCL_INCLUDE_DIR=$inc" "-DNCCL_LIBRARY=$d/lib/libnccl.so")
        ld="$ld:$lib"; NCCL_DESC="$inc | $lib"
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
        ld="$ld:$lib"; CUBLAS_DESC="$inc | $lib (wheel)"
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
        python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())' 2>&1 | tail -1
        echo "--- nvidia wheels"; py_nvidia_roots | while read -r r; do ls "$r" 2>/dev/null | tr '\n' ' '; echo; done
        echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    } >"$f" 2>&1
    cat "$f" >&2
    echo "| probe | see probe.txt; cuDNN: $CUDNN_DESC; NCCL: $NCCL_DESC; jansson: $JANSSON_DESC; MPI: $(command -v mpirun || echo absent) |" >>"$WORK/stages.md"
    have_gpu || { note "probe: NO GPU ($GPU_WHY)"; worse 3; }
    return 0
}

build_fresh() { [ -x "$ROOT/$BUILD/harness/gauntlet" ] && [ -f "$ROOT/$BUILD/.gv_built" ]; }

stage_build() {
    setup_env
    local log=$WORK/build.log arch
    : >"$log"
    command -v nvcc >/dev/null 2>&1 || { note "build: nvcc not found (CUDA_HOME=$CUDA_HOME)"; BUILD_FAILED=1; worse 2; return 2; }
    case $JANSSON_DESC in MISSING*) note "build: jansson $JANSSON_DESC"; BUILD_FAILED=1; worse 2; return 2 ;; esac
    if have_gpu; then arch=$(gpu_arch); else arch=${GV_ARCH:-90}; note "build: no GPU here ($GPU_WHY): compiling for sm_$arch only"; fi
    rm -f "$ROOT/$BUILD/.gv_built"
    local mpi=ON gen=()
    command -v mpicc >/dev/null 2>&1 || command -v mpirun >/dev/null 2>&1 || mpi=OFF
    # a new build folder gets Ninja when there is one (the image has ninja; make may be absent)
    if [ ! -f "$BUILD/CMakeCache.txt" ]; then
        if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja)
        elif ! command -v make >/dev/null 2>&1; then
            note "build: neither ninja nor make found"; BUILD_FAILED=1; worse 2; return 2
        fi
    fi
    note "build: configuring $BUILD (sm_$arch, MPI $mpi, cuDNN: $CUDNN_DESC, NCCL: $NCCL_DESC, jansson: $JANSSON_DESC)"
    if ! run_to "$(cap 300)" "$log" cmake "${gen[@]}" -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" -DGT_WITH_CUDA=ON -DGT_NATIVE=ON \
        -DGT_CUDA_ARCHITECTURES="$arch" -DGT_WITH_MPI=$mpi "${CMAKE_LIB_ARGS[@]}"; then
        note "build: configure FAILED (build.log)"; tail -40 "$log" >&2
        echo "| build | configure FAILED |" >>"$WORK/stages.md"; BUILD_FAILED=1; worse 2; return 2
    fi
    grep -A14 'gauntlet .* configuration' "$log" >"$WORK/configure-summary.txt"
    cat "$WORK/configure-summary.txt" >&2
    local t; t=$(date +%s)
    if ! run_to "$(cap 480)" "$log" cmake --build "$BUILD" -j "$JOBS"; then
        note "build: FAILED (build.log)"; grep -m20 -B2 -A8 'error' "$log" >&2
        echo "| build | FAILED after $(($(date +%s) - t)) s |" >>"$WORK/stages.md"; BUILD_FAILED=1; worse 2; return 2
    fi
    touch "$ROOT/$BUILD/.gv_built"
    note "build: done in $(($(date +%s) - t)) s"
    grep -q 'CUDA    : yes' "$WORK/configure-summary.txt" || { note "build: the CUDA backend was NOT configured"; worse 2; }
    local ws; ws=$(grep -c 'warning' "$log")
    echo "| build | ok in $(($(date +%s) - t)) s, sm_$arch, $ws warning lines; $(grep -E 'cuDNN|NCCL|MPI|CUDA ' "$WORK/configure-summary.txt" | sed 's/.*-- *//' | tr -s ' ' | paste -sd';') |" >>"$WORK/stages.md"
    run_to 60 "$WORK/env.txt" "$BUILD/harness/gauntlet" env || true
    return 0
}

BUILD_FAILED=0
ensure_built() {
    build_fresh && { setup_env; return 0; }
    [ "$BUILD_FAILED" = 1 ] && { note "$1: not run: the build failed"; return 1; }
    note "$1: no build in $BUILD yet: building first"
    stage_build
}

# ctest_run NAME ARGS...: junit + log, counts into stages.md
ctest_run() {
    local name=$1; shift
    local log=$WORK/$name.log junit=$WORK/$name-junit.xml lim
    lim=$(cap 600)
    : >"$log"
    (cd "$BUILD" && run_to "$lim" "$log" ctest --output-on-failure --output-junit "$junit" \
        --timeout "$((lim > 300 ? 300 : lim))" "$@")
    local rc=$?
    local counts
    counts=$(python3 "$ROOT/ci/gpu_summary.py" --junit "$junit" 2>/dev/null || echo "no junit (ctest rc $rc)")
    note "$name: $counts"
    # a GPU test that skips (77) on a GPU machine did not verify anything: say so and fail
    # (the 2-rank nccl tests skip legitimately with one GPU)
    local odd=""
    if [ "$name" = gputest ] && [[ $counts == *"skipped: "* ]]; then
        odd=$(echo "${counts#*skipped: }" | tr ',' '\n' | sed 's/^ *//' | grep -v '_np2$' | paste -sd' ')
        [ -n "$odd" ] && { note "gputest: SKIPPED ON A GPU MACHINE (not verified): $odd"; counts="$counts; NOT VERIFIED (skipped with a GPU present): $odd"; worse 1; }
    fi
    echo "| $name | $counts |" >>"$WORK/stages.md"
    [ $rc -eq 0 ] || worse 1
    return 0
}

stage_gputest() {
    need_gpu gputest || return 0
    ensure_built gputest || return 0
    ctest_run gputest -L gpu -j 4
}

stage_test() {
    need_gpu test || return 0
    ensure_built test || return 0
    ctest_run test -LE gpu -j "$JOBS"
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
        note "sanitize: compute-sanitizer not found: skipped"
        echo "| sanitize | skipped: no compute-sanitizer |" >>"$WORK/stages.md"
        return 0
    fi
    # most valuable first: the budget may end the list early
    local runs=("memcheck kernels.conformance.cuda" "memcheck kernels.conformance_bf16.cuda"
                "racecheck kernels.conformance_bf16.cuda" "synccheck kernels.conformance_bf16.cuda"
                "memcheck kernels.determinism.cuda" "racecheck kernels.determinism.cuda"
                "synccheck kernels.determinism.cuda" "memcheck kernels.cast.cuda"
                "memcheck kernels.attention_cudnn.cuda")
    local r tool t cmd log rc res=() nfail=0
    for r in "${runs[@]}"; do
        tool=${r%% *}; t=${r#* }
        mapfile -t cmd < <(test_cmd "$t")
        [ ${#cmd[@]} -gt 0 ] || { res+=("$tool $t: not built"); continue; }
        log=$WORK/sanitize-$tool-$t.log; : >"$log"
        note "sanitize: $tool $t"
        run_to "$(cap 150)" "$log" compute-sanitizer --tool "$tool" --error-exitcode 99 \
            --print-limit 50 ${GV_SANITIZER_ARGS:-} "${cmd[@]}"
        rc=$?
        local errs; errs=$(grep -m1 'ERROR SUMMARY' "$log" | sed 's/.*ERROR SUMMARY: *//')
        case $rc in
            0) res+=("$tool $t: clean (${errs:-0 errors})") ;;
            77) res+=("$tool $t: NOT VERIFIED, the test skipped (77) under the sanitizer") ;;
            124) res+=("$tool $t: TIMEOUT (${errs:-no summary})"); ;;
            *) res+=("$tool $t: FAIL rc $rc (${errs:-see log})"); nfail=$((nfail + 1)) ;;
        esac
    done
    [ $nfail -gt 0 ] && worse 1
    local IFS=';'
    echo "| sanitize | ${res[*]} |" >>"$WORK/stages.md"
}

gpu_peak() {
    # dense bf16 tensor-core datasheet peak (GFLOP/s): the MFU reference of the train stage
    local gpu
    gpu=$(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
    case $gpu in
        *H100*PCIe*) PEAK=756000 ;; *H100*|*H200*|*H800*) PEAK=989400 ;; *A100*) PEAK=312000 ;;
        *B200*) PEAK=2250000 ;; *L40S*) PEAK=362000 ;; *) PEAK= ;;
    esac
    PEAK=${GV_PEAK_GFLOPS:-$PEAK}
    echo "$gpu|$PEAK" >"$WORK/gpu.txt"
}

stage_train() {
    need_gpu train || return 0
    ensure_built train || return 0
    local G=$BUILD/harness/gauntlet PEAK
    gpu_peak
    [ -f "$WORK/env.txt" ] || run_to 60 "$WORK/env.txt" "$G" env
    # 1. gpt2-124m bf16, B=16 T=1024, cuDNN attention where it applies (auto)
    note "train: gpt2-124m bf16 B16 T1024, $STEPS steps (MFU against ${PEAK:-the measured SGEMM} GFLOP/s)"
    run_to "$(cap 240)" "$WORK/train_bf16.log" "$G" train --model gpt2-124m --backend cuda \
        --precision bf16 --batch 16 --seq 1024 --steps "$STEPS" --report "$WORK/train_bf16.json" \
        ${PEAK:+--peak-gflops $PEAK}
    local rc1=$? rc2 rc3=skipped
    [ $rc1 -eq 0 ] || worse 1
    # 2. the same with the own attention kernels: what cuDNN's fused attention buys
    note "train: the same with GT_CUDA_ATTENTION=own"
    GT_CUDA_ATTENTION=own run_to "$(cap 150)" "$WORK/train_bf16_own.log" "$G" train --model gpt2-124m \
        --backend cuda --precision bf16 --batch 16 --seq 1024 --steps $((STEPS / 2 > 10 ? STEPS / 2 : 10)) \
        --report "$WORK/train_bf16_own.json" ${PEAK:+--peak-gflops $PEAK}
    rc2=$?
    [ $rc2 -eq 0 ] || worse 1
    # 3. PyTorch torch.compile on the same model and shapes
    if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
        note "train: torch.compile baseline"
        run_to "$(cap 240)" "$WORK/torch_baseline.log" python3 "$ROOT/ci/torch_gpt2_baseline.py" \
            --batch 16 --seq 1024 --steps 30 --json "$WORK/torch_baseline.json" ${PEAK:+--peak-gflops $PEAK}
        rc3=$?
        [ $rc3 -eq 0 ] || note "train: torch baseline failed (torch_baseline.log)"
    else
        note "train: torch with CUDA not importable: no torch baseline"
        echo "torch baseline skipped: torch with CUDA not importable" >"$WORK/torch_baseline.log"
    fi
    echo "| train | gpt2-124m bf16 B16 T1024: gauntlet (cuDNN attention) exit $rc1, own attention exit $rc2, torch.compile baseline exit $rc3 (figures below) |" >>"$WORK/stages.md"
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
}

stage_models() {
    need_gpu models || return 0
    ensure_built models || return 0
    local G=$BUILD/harness/gauntlet
    # issue 7's gate: the train and scaling suites (gpt2, mlp, convnet: convergence,
    # run_to_run, topology, cross_backend, resume, precision, throughput) on every backend
    # this machine has (cpu and cuda), one rank; the memory suite checks that the caching
    # allocator makes no raw allocation after the first step; the report is rewritten after
    # every case
    note "models: gauntlet run train scaling memory --backend all --topologies 1 ${GV_MODELS_ARGS:---quick}"
    run_to "$(cap 240)" "$WORK/models.log" "$G" run train scaling memory --backend all --topologies 1 \
        ${GV_MODELS_ARGS:---quick} --report "$WORK/models.json"
    cuda_verdict models $? "cases ran on cuda" "model case"
    # the larger presets reach their targets too (--full cases; seconds on a GPU)
    note "models: mlp-small and resnet-small convergence and time to target (5 seeds) on cuda (--full)"
    run_to "$(cap 150)" "$WORK/models_small.log" "$G" run train/mlp-small/convergence \
        train/resnet-small/convergence train/mlp-small/time_to_target \
        train/resnet-small/time_to_target --backend cuda --topologies 1 --full \
        --report "$WORK/models_small.json"
    cuda_verdict models_small $? "cases ran on cuda" "convergence case"
}

stage_kernels() {
    need_gpu kernels || return 0
    ensure_built kernels || return 0
    local G=$BUILD/harness/gauntlet
    [ -f "$WORK/env.txt" ] || run_to 60 "$WORK/env.txt" "$G" env
    # conformance against ref + hot/cold speed; the report is rewritten after every case,
    # so a run cut by the budget still leaves what finished
    note "kernels: gauntlet run kernels --backend cuda ${GV_KERNELS_ARGS:-}"
    run_to "$(cap 420)" "$WORK/kernels.log" "$G" run kernels --backend cuda ${GV_KERNELS_ARGS:-} \
        --report "$WORK/kernels.json"
    cuda_verdict kernels $? "cases ran" "case"
}

stage_nccl() {
    need_gpu nccl || return 0
    ensure_built nccl || return 0
    local G=$BUILD/harness/gauntlet rc pre=()
    if ! grep -q 'NCCL    : yes' "$WORK/configure-summary.txt" 2>/dev/null; then
        note "nccl: SKIPPED: NCCL is not built in; see configure-summary.txt"
        echo "skipped: NCCL not built in" >"$WORK/collectives.log"
        echo "| nccl | skipped: NCCL not built in (configure summary: $(grep -E 'NCCL' "$WORK/configure-summary.txt" 2>/dev/null | sed 's/.*-- *//' | tr -s ' ' | paste -sd';')) |" >>"$WORK/stages.md"
        return 0
    fi
    # with MPI built in, under mpirun; without, one process on its own (the
    # nccl communicator then bootstraps without MPI, engine/comm_nccl.c)
    if grep -q 'MPI     : yes' "$WORK/configure-summary.txt" && command -v mpirun >/dev/null 2>&1; then
        pre=(mpirun -np 1)
        mpirun --version 2>&1 | grep -q 'Open MPI' && pre=(mpirun --allow-run-as-root -np 1)
    fi
    note "nccl: ${pre[*]} gauntlet run collectives --comm nccl -e 256M"
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 run_to "$(cap 240)" "$WORK/collectives.log" \
        "${pre[@]}" "$G" run collectives --comm nccl -e 256M --verbose --report "$WORK/collectives.json"
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
    local f lim=$((15 * 1024 * 1024)) excl=()
    for f in kernels.json train_bf16.json collectives.json torch_baseline.json models.json probe.txt; do
        rm -f "$OUTDIR/$f" "$OUTDIR/$f.gz"
        [ -f "$WORK/$f" ] || continue
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
        prep|probe|build|gputest|test|sanitize|train|kernels|nccl|models) stages+=("$a") ;;
        bench) stages+=(train kernels nccl models) ;;
        all) stages+=(probe build gputest test sanitize train kernels nccl models) ;;
        -h|--help|help) usage ;;
        *) echo "gpu_verify: unknown stage '$a' (prep probe build gputest test sanitize train kernels nccl models bench all)" >&2; exit 2 ;;
    esac
done
# A GPU stage on a machine without one: say so at once (no build, no probe of minutes).
for s in "${stages[@]}"; do
    case $s in gputest|test|sanitize|train|kernels|nccl|models)
        if ! have_gpu; then
            echo "gpu_verify: NO GPU here: $GPU_WHY." >&2
            echo "gpu_verify: stage '$s' needs an NVIDIA GPU: run it through the device tool (docs/gpu-verification.md)." >&2
            exit 3
        fi ;;
    esac
done
[ -f "$WORK/stages.md" ] || printf '| stage | result |\n|---|---|\n' >"$WORK/stages.md"
trap 'note "interrupted"; pack; exit 130' INT TERM
for s in "${stages[@]}"; do
    note "=== stage $s (budget left $(left) s)"
    "stage_$s"
    rc=$?
    [ "$s" = prep ] || pack
    if [ "$s" = build ] && [ $rc -ne 0 ]; then note "build failed: later stages not run"; break; fi
    [ "$s" = prep ] && [ $rc -ne 0 ] && exit 2
done
note "done: exit $RC; summary in $OUTDIR/summary.md"
exit "$RC"
