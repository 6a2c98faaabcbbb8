# Thin front for Meson + ninja. `make run` and `make test` are the README's
# two commands: each installs missing Debian build dependencies first.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 20
MESON_OPTS ?=

.PHONY: all deps build run test check unit asan fuzz-smoke lint fmt bench clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD) $(MESON_OPTS) >/dev/null
	@ninja -C $(BUILD) >/dev/null || ninja -C $(BUILD)

# The main job on the embedded defaults, offline.
run: build
	@./$(BUILD)/bernstein demo

asan: deps
	@[ -f $(ASAN_BUILD)/build.ninja ] || CC=clang meson setup $(ASAN_BUILD) \
		-Db_sanitize=address,undefined -Db_lundef=false -Dharden=false \
		-Dbuildtype=debug -Dc_args='-fno-sanitize-recover=all -fno-omit-frame-pointer -O1' \
		>/dev/null
	@ninja -C $(ASAN_BUILD) >/dev/null || ninja -C $(ASAN_BUILD)

# Every suite, in the plain (gcc) build and again under ASan+UBSan (clang).
# The last line is "N passed, N failed".
# The pinned real agent CLIs (tests/agents) are installed from npm into a
# cache outside the repo first; an install failure surfaces in t0030.
test: build asan
	@scripts/install-deps.sh --test
	@tests/agents/install.sh >/dev/null || echo "make: installing the pinned agent CLIs failed; t0030 will say why" >&2
	@scripts/run-tests.sh $(BUILD) $(ASAN_BUILD)

check: test

unit: build
	@meson test -C $(BUILD) --suite unit --print-errorlogs

fuzz-smoke: deps
	@[ -f $(FUZZ_BUILD)/build.ninja ] || CC=clang meson setup $(FUZZ_BUILD) -Dfuzz=true \
		-Db_lundef=false -Dharden=false -Dbuildtype=debug >/dev/null
	@ninja -C $(FUZZ_BUILD) >/dev/null || ninja -C $(FUZZ_BUILD)
	@scripts/fuzz-smoke.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

lint: build
	@scripts/install-deps.sh --lint
	@scripts/lint.sh $(BUILD)

fmt:
	@clang-format -i $$(git ls-files '*.c' '*.h')

bench: build
	@scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
