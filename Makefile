# Thin wrapper over CMake presets for the two everyday commands.
#   make run   build if needed, start the service with the embedded development
#              cluster and the example job
#   make test  install what is missing, build, run every test (unit tests under
#              ASan+UBSan, then all tests — unit, integration against a real
#              Kafka broker started and stopped by ctest, e2e — in the dev build)
#   make bench the benchmarks (see bench/README.md)
#   make install  release build, then CMake's install rules: binary, systemd
#              unit and sysusers file, example config, docs (PREFIX, DESTDIR)
PRESET ?= dev
BUILD := build/$(PRESET)
JOBS ?= $(shell nproc)
EXAMPLE ?= examples/generated-orders.json
LISTEN ?= 127.0.0.1:8080

.PHONY: all deps deps-run build run test test-unit test-asan bench install clean lint format

all: build

deps:
	@deploy/install-deps.sh

deps-run:
	@deploy/install-deps.sh --no-kafka

build:
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET) -j $(JOBS)

run: deps-run build
	$(BUILD)/streamvisor serve --listen $(LISTEN) --data-dir build/run-data \
		--example-job $(EXAMPLE)

test-asan:
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)

test-unit: build
	ctest --preset dev -L unit -j $(JOBS)

test: deps lint test-asan build
	ctest --preset dev

# Style checks (STYLE.md): clang-format with the committed .clang-format,
# cppcheck over our code. `make format` rewrites the files in place.
lint:
	@deploy/lint.sh

format:
	@clang-format -i $$(git ls-files '*.c' '*.h' '*.cc')

bench: deps
	bench/run.sh

PREFIX ?= /usr/local
install: deps-run
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS) --target streamvisor
	cmake --install build/release --prefix $(PREFIX)

clean:
	rm -rf build
