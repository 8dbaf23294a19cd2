# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
WARP ?= 1.19.0
VENV ?= .venv
# The full suite runs on the boundary versions: 1.19.0 in `make test`, 1.9.1 here (MATRIX); a fast suite
# (FAST_TESTS) on the latest patch of every other supported minor (MINORS, warp_zerostore._compat.SUPPORTED).
# The choice and the timings are in docs/development.md.
MATRIX ?= 1.9.1
MINORS ?= 1.10.1 1.11.1 1.12.1 1.13.0 1.14.0 1.15.0 1.16.0 1.17.0 1.18.0
FAST_TESTS ?= tests/test_store_forms.py tests/test_facade_identity.py tests/test_never_worse_than_stock.py \
	tests/test_composite_slots.py tests/test_replay.py tests/test_seed_program.py tests/test_tape_safety.py \
	tests/test_warp_suite_modules.py tests/test_demo.py tests/test_fuzz_launches.py tests/test_fuzz_programs.py \
	tests/test_local_copies.py tests/test_codegen_safety.py
HYPOTHESIS_PROFILE ?= ci
# .venv gets the PyTorch and JAX bridges' and Newton's dependencies too; the matrix venvs stay small (those
# tests skip). The `test` extra carries checkpoint-schedules and tqdm, so checkpointing is tested on every version;
# `lint` carries mypy and pyright. pyproject.toml's extras declare ranges; constraints/ci.txt pins this project's
# own environments to exact versions (`pip install -c`), so CI is reproducible and users are not pinned.
EXTRAS ?= test,lint,torch,jax,newton,examples
CONSTRAINTS ?= constraints/ci.txt
export HYPOTHESIS_PROFILE

BIN := $(VENV)/bin
comma := ,
STAMP := $(VENV)/.installed-$(WARP)-$(subst $(comma),-,$(EXTRAS))

# `make test` lints first (ruff, and import-linter's layer contracts, which need warp-lang >= 1.10); the
# matrix venvs skip the lint (RUN_LINT=0): it does not depend on the Warp version.
RUN_LINT ?= $(if $(filter 1.9.%,$(WARP)),0,1)

.PHONY: install demo lint typecheck test test-fast fuzz-matrix test-matrix test-minors matrix-job test-low-ends test-torch-low test-torch-high test-torch-range bench gpu-check test-warp-suite test-warp-examples probe-versions docs wheel-check clean

$(STAMP): pyproject.toml $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c $(CONSTRAINTS) "warp-lang==$(WARP)" -e ".[$(EXTRAS)]"
	touch $@

install: $(STAMP)

demo: install
	$(BIN)/python -m warp_zerostore demo

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(MAKE) --no-print-directory typecheck VENV=$(VENV) WARP=$(WARP) EXTRAS=$(EXTRAS)

# mypy and pyright over tests/typing/ (a user's script through the facade, a plain Warp script through both, and
# a negative twin whose errors must appear), and the facade's stub up to date with this Warp's (~2 min).
typecheck: install
	$(BIN)/python tests/typing/generate_stub.py --check
	$(BIN)/python tests/typing/check_types.py

test: install
ifeq ($(RUN_LINT),1)
	$(MAKE) --no-print-directory lint VENV=$(VENV) WARP=$(WARP) EXTRAS=$(EXTRAS)
endif
	$(BIN)/python -m pytest -q $(PYTEST_FLAGS)

# The fast suite: the flag on every store form, 1-D to 4-D launches through the facade (C++ byte-identical to
# stock's, a shared kernel cache), the never-worse-than-stock paths (plain, snapshot and check Tapes), the seed
# program, Tape checks, Warp's own gradient test modules importing, the demo, a fixed-seed fuzzing campaign
# with 1-D to 3-D launches (the flagged kernels through the facade), and the program fuzzer's fixed-seed campaign
# (12 drawn launch sequences on every Tape path) with its references by hand.
test-fast: install
	$(BIN)/python -m pytest -q $(PYTEST_FLAGS) $(FAST_TESTS)

# The full suite on the boundary versions, the fast suite on every other minor, each in its own venv, and the
# torch range's low end: MATRIX_JOBS at a time (each venv has its own Warp and kernel cache; the suites are
# compile-bound, one core each), a log per job in .matrix-logs/, printed whole where a job fails.
MATRIX_JOBS ?= 2
PYTEST_FLAGS ?=
# reads "KIND VERSION" lines, runs each as a matrix-job, MATRIX_JOBS at a time
MATRIX_POOL = xargs -P $(MATRIX_JOBS) -L 1 sh -c '$(MAKE) --no-print-directory matrix-job KIND=$$0 V=$$1'
test-matrix:
	@mkdir -p .matrix-logs
	@{ for v in $(MATRIX); do echo "full $$v"; done; for v in $(MINORS); do echo "fast $$v"; done; \
		echo "torch-low $(WARP)"; } | $(MATRIX_POOL)

test-minors:
	@mkdir -p .matrix-logs
	@for v in $(MINORS); do echo "fast $$v"; done | $(MATRIX_POOL)

# One job of the matrix (KIND: full, fast or torch-low; V: the Warp version), quiet unless it fails.
matrix-job:
	@log=.matrix-logs/$(KIND)-$(V).log; start=$$(date +%s); \
	case "$(KIND)" in \
		full) set -- test VENV=.venv-warp-$(V) WARP=$(V) EXTRAS=test RUN_LINT=0 ;; \
		fast) set -- test-fast VENV=.venv-warp-$(V) WARP=$(V) EXTRAS=test ;; \
		torch-low) set -- test-torch-low ;; \
		*) echo "matrix-job: KIND is full, fast or torch-low, not '$(KIND)'"; exit 255 ;; \
	esac; \
	if $(MAKE) --no-print-directory "$$@" PYTEST_FLAGS="-p no:cacheprovider" > $$log 2>&1; then \
		echo "=== warp-lang $(V) ($(KIND)), $$(( $$(date +%s) - start )) s: $$(tail -n 1 $$log)"; \
	else \
		echo "=== warp-lang $(V) ($(KIND)) FAILED after $$(( $$(date +%s) - start )) s; its log:"; cat $$log; exit 255; \
	fi

# The program fuzzer on every version the matrix builds (.venv-warp-*; venvs not built are skipped) and this
# venv, one after the other, one table: version x finding class x (wrong stock, wrong flagged, warned, missed by
# check). FUZZ_MINUTES per version (docs/testing.md, "Fuzzing whole programs").
FUZZ_MINUTES ?= 5
FUZZ_SEED ?= 1
fuzz-matrix: install
	$(BIN)/python -m warp_zerostore fuzz --programs --minutes $(FUZZ_MINUTES) --seed $(FUZZ_SEED) \
		--out fuzz-program-repros --python $(wildcard $(foreach v,$(MATRIX) $(MINORS),.venv-warp-$(v)/bin/python)) \
		$(BIN)/python

# The stock behaviours _compat tells apart, measured on every supported minor (one JSON line each), each checked
# against _compat's facts: a disagreement is printed and fails the target (a few minutes: old Warp builds slowly).
probe-versions:
	@fail=0; err=$$(mktemp); for v in $(MATRIX) $(MINORS); do \
		$(MAKE) --no-print-directory install VENV=.venv-warp-$$v WARP=$$v EXTRAS=test >/dev/null && \
		.venv-warp-$$v/bin/python scripts/probe_warp_versions.py --check 2>$$err | tail -1; \
		grep "measured vs _compat" $$err && fail=1; \
	done; rm -f $$err; exit $$fail

# The two ends of the torch range pyproject.toml declares, each in its own venv with the torch test files. The
# low end (constraints/torch-low.txt: torch 2.5.1, a CUDA build from PyPI that runs on CPU; ~4-6 min cold, then
# ~1 min) runs in CI, through `make test-matrix`. The high end (constraints/torch-high.txt: torch 2.15.0, a CUDA
# build of ~5.8 GB with its libraries) is over CI's time: `make test-torch-range` runs both (docs/development.md
# says when it was last run). PIP_CONFIG_FILE=/dev/null: a machine-wide pip constraint capping torch lower (as
# some build machines have) must not pick another torch than the file's.
TORCH_TESTS := tests/test_torch_bridge.py tests/test_torch_compile.py tests/test_torch_views.py \
	tests/test_torch_ddp.py tests/test_torch_optional.py tests/test_torch_wrap.py tests/test_torch_in_place.py
TORCH_LOW_STAMP := .venv-torch-low/.installed-torch-low-$(WARP)
$(TORCH_LOW_STAMP): pyproject.toml $(CONSTRAINTS) constraints/torch-low.txt
	$(MAKE) --no-print-directory install VENV=.venv-torch-low WARP=$(WARP) EXTRAS=test
	.venv-torch-low/bin/python -m pip install -q --no-deps -r constraints/torch-low.txt
	touch $@

TORCH_HIGH_STAMP := .venv-torch-high/.installed-torch-high-$(WARP)
$(TORCH_HIGH_STAMP): pyproject.toml $(CONSTRAINTS) constraints/torch-high.txt
	$(MAKE) --no-print-directory install VENV=.venv-torch-high WARP=$(WARP) EXTRAS=test
	PIP_CONFIG_FILE=/dev/null .venv-torch-high/bin/python -m pip install -q -r constraints/torch-high.txt
	touch $@

test-torch-low: $(TORCH_LOW_STAMP)
	.venv-torch-low/bin/python -m pytest -q $(PYTEST_FLAGS) $(TORCH_TESTS)

test-torch-high: $(TORCH_HIGH_STAMP)
	.venv-torch-high/bin/python -m pytest -q $(TORCH_TESTS)

test-torch-range: test-torch-low test-torch-high

bench: install
	$(BIN)/python benchmarks/bench_store.py
	$(BIN)/python benchmarks/bench_zeroing.py
	$(BIN)/python benchmarks/bench_build.py
	$(BIN)/python benchmarks/bench_tiles.py
	$(BIN)/python benchmarks/bench_testing.py
	$(BIN)/python benchmarks/bench_torch_bridge.py
	$(BIN)/python benchmarks/bench_jax_bridge.py
	$(BIN)/python benchmarks/bench_tape_safety.py
	$(BIN)/python benchmarks/bench_tape_scale.py
	$(BIN)/python benchmarks/bench_checkpoint.py

# On a machine with CUDA: the suite on cuda:0 and the benchmarks on the GPU, one summary (JSON too). Without
# CUDA it says so and exits 0. GPU_CHECK_ARGS=--quick for fewer benchmark repeats, --dry-run to list the steps.
gpu-check: install
	$(BIN)/python benchmarks/gpu_check.py $(GPU_CHECK_ARGS)

# Warp's own unittest modules, with this package imported and with zero_store forced on.
test-warp-suite: install
	$(BIN)/python -m warp_zerostore warp-suite
	$(BIN)/python -m warp_zerostore warp-suite --zero-store true

# Warp's own examples that differentiate, each in every mode of the package (stock, imported, zero_store forced,
# under check, every Tape a snapshot Tape), compared with stock bitwise; a table and warp-examples.json
# (docs/development.md, "Warp's own examples"). WARP_EXAMPLES: names to run (default: every one).
WARP_EXAMPLES ?=
WARP_EXAMPLES_FLAGS ?=
test-warp-examples: install
	$(BIN)/python -m warp_zerostore warp-examples $(WARP_EXAMPLES) --json warp-examples.json $(WARP_EXAMPLES_FLAGS)

# The documentation site (build/site): the pictures first (docs/pictures.py runs docs/pictures.md's examples
# into docs/generated/), then mkdocs with --strict (a warning fails it). GraphViz's `dot` renders the Tape
# picture: installed with apt-get when missing and run as root, else the build stops and says how to get it.
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -c $(CONSTRAINTS) -e ".[docs]"
	touch $@

docs: $(DOCS_STAMP)
	@command -v dot >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ apt-get install -y -q graphviz || { apt-get update -q && apt-get install -y -q graphviz; }; } >/dev/null; } || true
	$(BIN)/python docs/pictures.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict  # not --quiet: it hides the warnings --strict counts

# The low ends of the extras' ranges (constraints/low.txt) on the checkpointing tests, in .venv-low (~1-2 min).
test-low-ends:
	$(MAKE) --no-print-directory install VENV=.venv-low WARP=$(WARP) EXTRAS=test CONSTRAINTS=constraints/low.txt
	.venv-low/bin/python -m pytest -q tests/test_checkpoint.py tests/test_testing_strategies.py tests/test_progress.py

# The package as a user gets it: an sdist and a wheel built from a clean checkout of HEAD, the wheel installed
# non-editable in a fresh venv, checked from another folder (scripts/wheel_check.sh; a few minutes, not in CI).
wheel-check:
	PYTHON=$(PYTHON) WARP=$(WARP) CONSTRAINTS=$(CONSTRAINTS) sh scripts/wheel_check.sh

clean:
	rm -rf $(VENV) .venv-warp-* .venv-torch-low *.egg-info .pytest_cache .hypothesis .mypy_cache build dist .matrix-logs
