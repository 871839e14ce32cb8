# Thin wrapper around CMake. Every target first makes sure the dependencies are there
# (scripts/install-deps is quick when nothing is missing).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
WERROR ?= OFF

.PHONY: all deps build test bench gpu-check demo report format clean sanitize

all: build

deps:
	scripts/install-deps

$(BUILD)/CMakeCache.txt:
	scripts/install-deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DINTERPLACE_WERROR=$(WERROR) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	scripts/install-deps
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# Kernel microbenchmarks and the resnet20 training step beside PyTorch at 1 and 2 threads.
bench: build
	scripts/install-deps --with-torch
	bench/run $(BUILD)

# On a machine with a GPU: build, test and benchmark the CUDA backend in build-gpu/ and
# compare with PyTorch; results in bench/out/gpu/ (see bench/gpu-check).
gpu-check:
	bench/gpu-check

# Tables (Markdown, CSV, LaTeX) and plots from result files (docs/analysis.md):
#   make report FILE=results.h5 [OUT=dir]      several files: FILE="a.h5 b.h5"
# OUT defaults to $(BUILD)/reports/<first file's stem>/, outside git; copy a report worth
# keeping (its small tables) into results/ by hand.
report:
	@test -n "$(FILE)" || { echo "make report: give the result file(s): make report FILE=path/to/results.h5 [OUT=dir]" >&2; exit 2; }
	scripts/install-deps
	.venv/bin/python -m interplace_analysis report $(FILE) \
	  --out $(or $(OUT),$(BUILD)/reports/$(basename $(notdir $(firstword $(FILE)))))

# The main job: the demo sweep (runs/configs/demo.toml) on DEMO_RANKS local MPI ranks into
# $(DEMO_DIR)/demo.h5, then the report (tables, plots) in $(DEMO_DIR)/report/. Rerunning
# resumes: finished configurations are kept (delete the file to start over).
DEMO_RANKS ?= 2
DEMO_DIR ?= $(BUILD)/demo
MPIRUN_AS_ROOT := OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
demo: build
	@mkdir -p $(DEMO_DIR)
	$(MPIRUN_AS_ROOT) mpirun --oversubscribe -np $(DEMO_RANKS) $(BUILD)/runs/interplace \
	  sweep runs/configs/demo.toml --out $(DEMO_DIR)/demo.h5 --resume
	$(BUILD)/runs/interplace inspect $(DEMO_DIR)/demo.h5
	.venv/bin/python -m interplace_analysis report $(DEMO_DIR)/demo.h5 --out $(DEMO_DIR)/report --quiet
	@echo; echo "Recommendations ($(DEMO_DIR)/report/tables/recommendations.md):"; echo
	@cat $(DEMO_DIR)/report/tables/recommendations.md
	@echo; echo "Full report: $(DEMO_DIR)/report/report.md; plots: $(DEMO_DIR)/report/plots/"

# AddressSanitizer + UndefinedBehaviorSanitizer: everything but CUDA built with them
# (-DINTERPLACE_SANITIZE=ON) in $(ASAN_BUILD)/, then every test that can run under them
# (CMake leaves out the rest and says why: tests/CMakeLists.txt). Leak detection is off:
# Open MPI keeps its own allocations to the end (hundreds of reports that are not ours), and
# LeakSanitizer cannot run under ptrace restrictions in some containers. Any other finding
# stops the test that made it (halt_on_error). The bad-input cases run without their
# address-space cap (ASan's shadow memory needs terabytes of it; the one case refused only
# by the cap skips), and bounds on ratios of timings that the sanitizers distort are not
# checked (INTERPLACE_TEST_SANITIZED). SANITIZE_TESTS (a ctest -R expression) narrows the
# run; the default is all of them.
ASAN_BUILD ?= build-asan
SANITIZE_TESTS ?= .
SANITIZE_ENV := ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 $(MPIRUN_AS_ROOT) OMP_NUM_THREADS=1 \
  INTERPLACE_TEST_NO_CAP=1 INTERPLACE_TEST_SANITIZED=1
sanitize:
	scripts/install-deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINTERPLACE_SANITIZE=ON \
	  -DINTERPLACE_CUDA=OFF -DINTERPLACE_BENCH=OFF
	$(SANITIZE_ENV) cmake --build $(ASAN_BUILD) -j $(JOBS)
	$(SANITIZE_ENV) ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) \
	  -R '$(SANITIZE_TESTS)'

format:
	git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
