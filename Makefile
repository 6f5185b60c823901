# The two set-up commands (see README):
#   make run   installs missing Debian packages, builds the capplan binary only
#              (no tests, benchmarks, Python module or WebAssembly page; in a
#              fresh build folder without the CUDA kernels), runs the default
#              planning job
#   make test  installs missing Debian packages, builds with warnings as errors
#              (CAPPLAN_WERROR=ON), runs the whole test suite (ctest)
#   make test-sanitize  the same suite (CPU code, CUDA off) built with clang,
#              AddressSanitizer and UndefinedBehaviorSanitizer, plus a short
#              run of every fuzz target (tests/fuzz/README.md)
#   make test-sanitize-fast  the same sanitizer build, but only the suite
#              labelled `fuzz` (regression inputs, the property test, the
#              fuzz smoke runs): what .ci/run adds after make test
#   make fuzz  runs each fuzz target FUZZ_SECONDS (default 60) in turn;
#              FUZZ_TARGETS="scenario card" picks some
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release
SANITIZE_BUILD ?= build-sanitize
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=

.PHONY: all deps deps-test configure build run test test-sanitize test-sanitize-fast sanitize-configure sanitize-build fuzz clean

all: build

deps:
	@scripts/install_deps.sh build

deps-test:
	@scripts/install_deps.sh test

configure:
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The planning job runs only the capplan binary: building the whole tree
# first (tests, benchmarks, kernels' harnesses) would triple a first run. The
# simulator needs no CUDA, so a first run configures without the kernels;
# `make test` turns them back on (where nvcc is) in the same folder, and a
# later `make run` keeps what the folder has.
RUN_CUDA_FLAG = $(if $(wildcard $(BUILD)/CMakeCache.txt),,-DCAPPLAN_WITH_CUDA=OFF)
run:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory configure CMAKE_FLAGS="$(CMAKE_FLAGS) $(RUN_CUDA_FLAG)"
	@cmake --build $(BUILD) -j $(JOBS) --target capplan
	@scripts/run_default.sh $(BUILD)

test:
	@$(MAKE) --no-print-directory deps-test
	@$(MAKE) --no-print-directory build \
	  CMAKE_FLAGS="$(CMAKE_FLAGS) -DCAPPLAN_WERROR=ON -DCAPPLAN_WITH_CUDA=ON"
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# One clang build serves both: sanitizers on all code, libFuzzer coverage
# instrumentation, the fuzz_<target> binaries.
sanitize-configure:
	@scripts/install_deps.sh sanitize
	@CC=clang-14 CXX=clang++-14 cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCAPPLAN_FUZZ=ON -DCAPPLAN_WITH_CUDA=OFF >/dev/null

sanitize-build: sanitize-configure
	@cmake --build $(SANITIZE_BUILD) -j $(JOBS)

test-sanitize: sanitize-build
	@cd $(SANITIZE_BUILD) && ctest --output-on-failure -j $(JOBS) -LE gpu

test-sanitize-fast: sanitize-configure
	@cmake --build $(SANITIZE_BUILD) -j $(JOBS) --target fuzz_suite
	@cd $(SANITIZE_BUILD) && ctest --output-on-failure -j $(JOBS) -L fuzz

fuzz: sanitize-build
	@scripts/fuzz.sh --build $(SANITIZE_BUILD) --seconds $(FUZZ_SECONDS) $(FUZZ_TARGETS)

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD)
