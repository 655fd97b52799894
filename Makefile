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

.PHONY: run test build deps clean

run: build
	$(GAUNTLET) train --model gpt2-tiny --steps 600 --lr 3e-3 --print-every 50 \
	    --expect-loss-margin 0.2 --report reports/latest.json

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

deps:
	@ci/deps.sh

clean:
	rm -rf $(BUILD)
