# specdecode-operator: every target installs what it needs, so a fresh machine needs only
# `make demo` (the main job) and `make test` (all tests). See README.md.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
SCENARIO ?= promote

.PHONY: help venv system-deps binaries test test-unit test-e2e lint crds verify-crds \
        cluster-up cluster-down demo bench ci clean

help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(BIN)/python: pyproject.toml
	@command -v $(PY) >/dev/null || PY=python3; $${PY:-$(PY)} -m venv $(VENV) 2>/dev/null || python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[sim,dev]'
	@touch $@

venv: $(BIN)/python ## Python virtualenv with the operator, the simulator and dev tools

system-deps: ## Debian packages the local cluster needs (Prometheus, Lua for the Argo CD health check)
	@bash tests/cluster/install-system-deps.sh

binaries: ## Build (or reuse) etcd, kube-*, kubectl and helm from Go modules, cached outside the repo
	@bash tests/cluster/build-binaries.sh >/dev/null

test: venv system-deps binaries ## All tests: unit, then e2e on the local control plane
	$(BIN)/pytest -m unit $(PYTEST_ARGS)
	$(BIN)/pytest -m e2e $(PYTEST_ARGS)

test-unit: venv ## Only the fast, pure tests
	$(BIN)/pytest -m unit $(PYTEST_ARGS)

test-e2e: venv system-deps binaries ## Only the end-to-end tests
	$(BIN)/pytest -m e2e $(PYTEST_ARGS)

lint: venv ## ruff, mypy --strict, import-linter
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy operator/specdecode operator/specdecode_load engine-image/specdecode_sim
	$(BIN)/lint-imports

crds: venv ## Regenerate crds/ and the chart's CRD from the pydantic models
	$(BIN)/python -m specdecode.api.crdgen --write

verify-crds: venv ## Fail if crds/ or the chart's CRD drifted from the pydantic models
	$(BIN)/python -m specdecode.api.crdgen --check

cluster-up: venv system-deps binaries ## Start the local control plane, GPU node agent and Prometheus in the background
	PYTHONPATH=tests/cluster $(BIN)/python -m localcluster up

cluster-down: venv ## Stop everything cluster-up started
	PYTHONPATH=tests/cluster $(BIN)/python -m localcluster down

demo: venv system-deps binaries ## The main job: a live rollout on the local control plane with simulated engines
	PYTHONPATH=tests/cluster $(BIN)/python -m localcluster.demo --scenario $(SCENARIO)

bench: venv system-deps binaries ## Benchmarks that print tables
	PYTHONPATH=tests/cluster $(BIN)/python benchmarks/cluster.py
	$(BIN)/python benchmarks/gates.py

ci: verify-crds lint test ## What .ci/run runs

clean: cluster-down
	rm -rf $(VENV) .cluster
