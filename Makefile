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

.PHONY: all deps setup build demo test bench clean

all: build

deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "== installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

setup: deps
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD)

build: setup
	ninja -C $(BUILD) -j $(JOBS)

demo: setup
	ninja -C $(BUILD) -j $(JOBS) examples/fashion_mnist
	./$(BUILD)/examples/fashion_mnist --out $(RUN_DIR) $(DEMO_ARGS)

test: setup
	ninja -C $(BUILD) -j $(JOBS)
	meson test -C $(BUILD) --no-rebuild --print-errorlogs --num-processes $(JOBS)

bench: setup
	ninja -C $(BUILD) -j $(JOBS) benchmarks/bench_pytree
	./$(BUILD)/benchmarks/bench_pytree

clean:
	rm -rf $(BUILD)
