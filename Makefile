# The two set-up commands (README.md): `make run` (builds and runs ebzipd)
# and `make test`. `make demo` shows the command line on a real field.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo
# Empty: every target. The Dockerfile builds only ebzipd and ebzip.
TARGETS ?=

.PHONY: run demo test build deps fuzz clean

run: build
	scripts/run_server.sh $(BUILD)

demo: build
	scripts/demo.sh $(BUILD)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

build: deps
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) $(if $(TARGETS),--target $(TARGETS))

deps:
	scripts/install_deps.sh

fuzz: deps
	scripts/fuzz.sh 60

clean:
	rm -rf $(BUILD)
