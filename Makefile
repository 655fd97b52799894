# Thin wrapper: `make run` and `make test` set everything up and do their job.
BUILD ?= build
JOBS  ?= $(shell nproc 2>/dev/null || echo 2)
# nvcc is used when present so that CUDA sources always compile (no GPU needed).
ifeq ($(origin CUDACXX),undefined)
ifneq ($(wildcard /usr/local/cuda/bin/nvcc),)
export CUDACXX := /usr/local/cuda/bin/nvcc
endif
endif

GAUNTLET = $(BUILD)/harness/gauntlet
comma := ,
# topologies 1 and 2 when MPI is there: gauntlet relaunches itself under mpirun
TOPOLOGIES ?= $(if $(shell command -v mpirun 2>/dev/null),1$(comma)2,1)

.PHONY: run test check build deps clean

# every run is also recorded in the run history: `gauntlet history reports/history.db`
HISTORY ?= reports/history.db

run: build
	$(GAUNTLET) run --quick --topologies $(TOPOLOGIES) --report reports/latest.json --history $(HISTORY)

# the quick tier: unit and conformance tests, one end-to-end path of each command
# (docs/testing.md); `make check`: the full tier (Slurm cluster, faults, multi-rank
# models, the gate's experiments, whole-suite runs)
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE full

check: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L full

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

deps:
	@ci/deps.sh

clean:
	rm -rf $(BUILD)
