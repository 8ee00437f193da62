# The two commands of the README:
#   make run    - install and start the service (REST :8000, gRPC :50051 on 127.0.0.1)
#   make test   - install everything and run every check and test
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
FILE ?= examples/fawcett.csv

.PHONY: install install-test run evaluate proto test lint typecheck unit bench clean prometheus-tools

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

install-test: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]' -e clients/python

run: install
	$(BIN)/evalserve serve

evaluate: install
	$(BIN)/evalserve evaluate --task binary $(FILE)

proto: install-test
	$(BIN)/python proto/generate.py
	$(BIN)/python clients/python/generate.py

lint: install-test
	$(BIN)/ruff check core service tests bench deploy clients
	$(BIN)/ruff format --check core service tests bench deploy clients

typecheck: install-test
	$(BIN)/mypy
	$(BIN)/mypy --strict clients/python/src/evalserve_client

unit: install-test prometheus-tools
	$(BIN)/pytest

test: lint typecheck unit

# Prometheus and promtool (Debian package `prometheus`) for tests/deploy/: `promtool check/test
# rules` and the end-to-end test against a real Prometheus. Installed only when either is
# missing; apt-get as root (CI), through sudo otherwise when there is one.
prometheus-tools:
	@if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; \
		elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
		else echo "promtool is missing: install the Debian package prometheus (as root)" >&2; exit 1; fi; \
		$$SUDO apt-get update && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y --no-install-recommends prometheus; \
	fi

bench: install-test
	$(BIN)/python bench/binary_core.py
	$(BIN)/python bench/binary_core.py --allocator default
	$(BIN)/python bench/service_bench.py
	$(BIN)/python bench/multiclass_core.py
	$(BIN)/python bench/auc_simulation.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info

# Reference values from the R package pROC for tests/core/test_proc_reference.py; not part of
# `make test`. Needs Debian's r-base-core, r-cran-proc and r-cran-jsonlite.
.PHONY: proc-fixtures
proc-fixtures:
	Rscript tests/fixtures/proc/generate.R
