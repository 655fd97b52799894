#!/usr/bin/env bash
# Installs the Debian packages gauntlet builds against, when any is missing.
# Idempotent: does nothing (and needs no network) when all are present.
# As root it runs apt-get; otherwise it prints the exact command and stops.
#
# Required: cmake, a C compiler, pkg-config, jansson.
# Optional, auto-detected by CMake: OpenMPI (MPICH with -DGT_MPI=mpich), hwloc, OpenBLAS,
# SQLite, the CUDA toolkit (never installed here: it comes from NVIDIA, see README.md).
# CI's hardening steps (docs/reliability.md): clang with libFuzzer and the
# sanitizer runtimes (libclang-rt-dev), valgrind; slurm-wlm and munge for the
# slurm-labelled tests' two-node cluster (ci/slurm/cluster.sh).
set -euo pipefail

packages=(build-essential cmake pkg-config libjansson-dev
          libopenblas-dev libopenmpi-dev openmpi-bin libhwloc-dev chromium
          clang libclang-rt-dev valgrind)
# The slurm-labelled tests' two-node cluster (ci/slurm/cluster.sh, docs/clusters.md):
# slurmctld, slurmd and the clients, munge for their authentication (its tests read
# reports with python3, below).
packages+=(slurm-wlm munge)
# the run history (reports/history.h, docs/history.md): optional to CMake
# (GT_WITH_SQLITE), installed here so that `make run` records into reports/history.db
# and python3 (standard library only) reads the history page's screenshot in its test
packages+=(libsqlite3-dev python3)
# MPICH beside Open MPI for the MPICH build (-DGT_MPI=mpich, build-mpich in CI;
# docs/clusters.md): Debian keeps the mpi/mpirun alternatives on Open MPI, MPICH
# answers to mpicc.mpich and mpiexec.mpich.
packages+=(mpich libmpich-dev)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    echo "gauntlet: missing Debian packages: ${missing[*]}" >&2
    echo "gauntlet: run as root, then re-run make:" >&2
    echo "    sudo sh -c '$cmd'" >&2
    exit 1
fi

echo "gauntlet: installing ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
