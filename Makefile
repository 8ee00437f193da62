# The two commands of the README:
#   make run    - install and start the service (REST :8000, gRPC :50051 on 127.0.0.1)
#   make test   - install everything and run every check and test
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
FILE ?= examples/fawcett.csv

.PHONY: install install-test run evaluate proto test lint typecheck unit bench clean prometheus-tools
.PHONY: proto-check proto-release

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

install-test: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]' -e 'clients/python[plot]'

run: install
	$(BIN)/evalserve serve

evaluate: install
	$(BIN)/evalserve evaluate --task binary $(FILE)

# The server's stubs (gen/python) and the Python client's (its own pinned generator, in
# .venv-client-gen); the TypeScript client's: `cd clients/typescript && npm run generate`.
proto: install-test client-envs
	$(BIN)/python proto/generate.py
	$(CLIENT_GEN_VENV)/bin/python clients/python/generate.py

# The API's schema: buf lint, buf format, and buf breaking against the newest released proto
# (proto/released/v*.json, buf images); `make proto-release` snapshots the current proto as the
# version in pyproject.toml when that version ships. buf comes from clients/typescript's npm
# dependencies.
BUF := clients/typescript/node_modules/.bin/buf
RELEASED_PROTO = $(shell ls proto/released/v*.json | sort -V | tail -n 1)
VERSION = $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -n 1)

proto-check: ts-install
	$(BUF) lint
	$(BUF) format --diff --exit-code
	$(BUF) breaking --against $(RELEASED_PROTO)

proto-release: ts-install install
	$(BUF) build --exclude-source-info -o '-#format=json' \
		| $(BIN)/python -m json.tool --indent 1 > proto/released/v$(VERSION).json

lint: install-test
	$(BIN)/ruff check core service tests bench deploy clients
	$(BIN)/ruff format --check core service tests bench deploy clients

typecheck: install-test
	$(BIN)/mypy
	$(BIN)/mypy --strict clients/python/src/evalserve_client

unit: install-test prometheus-tools client-envs ts-install
	$(BIN)/pytest

test: lint typecheck proto-check ts-check unit

# The clients' own targets: client-envs (clients/python/envs.mk) and ts-install / ts-check
# (clients/typescript/ts.mk).
include clients/python/envs.mk clients/typescript/ts.mk

# System tools the tests use, from Debian, installed only when missing (apt-get as root, as in
# CI, or through sudo): Prometheus and promtool (package `prometheus`) for tests/deploy/ and
# curl for the README's examples (tests/clients/test_readme_examples.py).
prometheus-tools:
	@missing=; \
	command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || missing="prometheus"; \
	command -v curl >/dev/null 2>&1 || missing="$$missing curl"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; \
		elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
		else echo "missing Debian packages: $$missing (install them as root)" >&2; exit 1; fi; \
		$$SUDO apt-get update && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y --no-install-recommends $$missing; \
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
