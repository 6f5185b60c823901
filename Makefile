# The two set-up commands (see README):
#   make run   installs missing Debian packages, builds, runs the default planning job
#   make test  installs missing Debian packages, builds with warnings as errors
#              (CAPPLAN_WERROR=ON), runs the whole test suite (ctest)
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release

.PHONY: all deps deps-test configure build run test clean

all: build

deps:
	@scripts/install_deps.sh build

deps-test:
	@scripts/install_deps.sh test

configure:
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory build
	@scripts/run_default.sh $(BUILD)

test:
	@$(MAKE) --no-print-directory deps-test
	@$(MAKE) --no-print-directory build CMAKE_FLAGS="$(CMAKE_FLAGS) -DCAPPLAN_WERROR=ON"
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD)
