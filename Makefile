# The two commands of README.md: `make demo` (the main job) and `make test` (the whole suite).
# Both install what is missing with apt-get first, then configure and build with Meson.
BUILD ?= build
PACKAGES := g++ make cmake pkg-config meson ninja-build ccache python3 python3-numpy zlib1g-dev \
            libboost1.81-dev libeigen3-dev libdnnl-dev ocl-icd-opencl-dev doctest-dev libbenchmark-dev \
            libopenmpi-dev openmpi-bin \
            dataset-fashion-mnist
# Where `make demo` writes its run (checkpoints, metrics, TensorBoard events, the curves' SVG).
RUN_DIR ?= runs/fashion_mnist
DEMO_ARGS ?= --overwrite
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
JOBS ?= $(shell nproc)

.PHONY: all deps deps-clang setup build demo test sanitize bench fuzz tsan soak clean

all: build

# The shell command that installs those of the Debian packages $(1) that are missing.
install_missing = missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "== installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

deps:
	@$(call install_missing,$(PACKAGES))

setup: deps
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD)

build: setup
	ninja -C $(BUILD) -j $(JOBS)

demo: setup
	ninja -C $(BUILD) -j $(JOBS) examples/fashion_mnist
	./$(BUILD)/examples/fashion_mnist --out $(RUN_DIR) $(DEMO_ARGS)

# `make test` ends with the sanitizer suite below (`make test SANITIZE=0` skips it).
SANITIZE ?= 1
test: setup
	ninja -C $(BUILD) -j $(JOBS)
	meson test -C $(BUILD) --no-rebuild --print-errorlogs --num-processes $(JOBS)
	@if [ "$(SANITIZE)" != 0 ]; then $(MAKE) --no-print-directory sanitize; fi

# The test suite again under AddressSanitizer and UndefinedBehaviorSanitizer (part of `make test`):
# the library, the main test executable, the thread test and the fuzzers' corpus replays, built
# at -O0 in $(ASAN_BUILD) (with the sanitizers, 8x faster to compile than -O1). Allocations too
# large for the machine must return null (ResourceError) instead of aborting; leak checking is
# off (oneDNN's and OpenMP's process-lifetime caches).
ASAN_BUILD ?= build-asan
SANITIZER_ENV := ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=0:abort_on_error=1 \
                 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
sanitize: deps
	@[ -f $(ASAN_BUILD)/build.ninja ] || meson setup $(ASAN_BUILD) -Db_sanitize=address,undefined -Db_lundef=false \
	  -Dbuildtype=plain -Dcpp_args=-O0 -Dmpi=disabled -Dcuda=disabled
	ninja -C $(ASAN_BUILD) -j $(JOBS) tests/canopy_tests tests/canopy_threads_test \
	  $(foreach t,$(FUZZ_TARGETS),tests/fuzz/fuzz_$(t)_replay)
	$(SANITIZER_ENV) meson test -C $(ASAN_BUILD) --no-rebuild --print-errorlogs --num-processes $(JOBS) \
	  canopy_tests canopy_threads_test $(foreach t,$(FUZZ_TARGETS),fuzz_$(t)_corpus)

# libFuzzer (clang, in the Debian packages below), everything under ASan/UBSan in $(FUZZ_BUILD):
# each target runs $(FUZZ_SECONDS) s from its checked-in seeds (tests/fuzz/corpus/<target>), new
# inputs go to $(FUZZ_BUILD)/corpus/<target>, a crash to $(FUZZ_BUILD)/crashes/<target>/ (copy it
# to tests/fuzz/regressions/<target>/ with the fix). One OpenMP thread: the fuzzers look for
# memory errors, and clang's libomp would otherwise run beside oneDNN's libgomp.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := ops transforms safetensors idx
CLANG_PACKAGES := clang-14 libclang-rt-14-dev libomp-14-dev
deps-clang: deps
	@$(call install_missing,$(CLANG_PACKAGES))

fuzz: deps-clang
	@[ -f $(FUZZ_BUILD)/build.ninja ] || CC=clang-14 CXX=clang++-14 meson setup $(FUZZ_BUILD) -Dfuzz=true \
	  -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=plain -Dcpp_args=-O1 -Dmpi=disabled -Dcuda=disabled
	ninja -C $(FUZZ_BUILD) -j $(JOBS) $(foreach t,$(FUZZ_TARGETS),tests/fuzz/fuzz_$(t))
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/crashes/$$t; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	  OMP_NUM_THREADS=1 $(SANITIZER_ENV) ./$(FUZZ_BUILD)/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) \
	    -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/crashes/$$t/ \
	    $(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t || exit 1; \
	done

# ThreadSanitizer: the concurrent-callers test in $(TSAN_BUILD). One OpenMP thread, because
# Debian's libgomp is not instrumented and TSAN reports its barriers as races (false positives).
TSAN_BUILD ?= build-tsan
tsan: deps
	@[ -f $(TSAN_BUILD)/build.ninja ] || meson setup $(TSAN_BUILD) -Db_sanitize=thread -Db_lundef=false \
	  -Dbuildtype=plain -Dcpp_args=-O1 -Dmpi=disabled -Dcuda=disabled
	ninja -C $(TSAN_BUILD) -j $(JOBS) tests/canopy_threads_test
	OMP_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ./$(TSAN_BUILD)/tests/canopy_threads_test

# Training steps from 4 threads for SOAK_SECONDS with random shapes; RSS sampled (not in CI).
SOAK_SECONDS ?= 600
soak: setup
	ninja -C $(BUILD) -j $(JOBS) tests/soak
	./$(BUILD)/tests/soak $(SOAK_SECONDS) 4

bench: setup
	ninja -C $(BUILD) -j $(JOBS) benchmarks/bench_pytree
	./$(BUILD)/benchmarks/bench_pytree

clean:
	rm -rf $(BUILD)
