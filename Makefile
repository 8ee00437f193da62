# The two commands of the README:
#   make run    - install and start the service (REST :8000, gRPC :50051 on 127.0.0.1)
#   make test   - install everything and run every check and test
# The inner loop (docs/development.md):
#   make check  - ruff, ruff format and mypy --strict (under a minute)
#   make quick  - the tests without the slow ones (-m "not slow"), in parallel
#   make docs   - serve the documentation site on 127.0.0.1:8001
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
FILE ?= examples/fawcett.csv

.PHONY: install install-test run evaluate proto test check quick lint typecheck unit bench clean
.PHONY: prometheus-tools browser-tools image-tools image report-vendor docs docs-build
.PHONY: proto-check proto-release

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Each install runs again only when what it installs from changed (a stamp file marks it done).
install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[service]'
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml clients/python/pyproject.toml
	$(BIN)/pip install --quiet -e '.[test]' -e 'clients/python[plot]'
	touch $@

run: install
	$(BIN)/evalserve serve

evaluate: install
	$(BIN)/evalserve evaluate --task binary $(FILE)

# The server's stubs (src/evalserve/v1) and the Python client's (its own pinned generator, in
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

PY_SOURCES := core service src proto tests bench deploy clients docs

lint: install-test
	$(BIN)/ruff check $(PY_SOURCES)
	$(BIN)/ruff format --check $(PY_SOURCES) README.md

typecheck: install-test
	$(BIN)/mypy
	$(BIN)/mypy --strict clients/python/src/evalserve_client

check: lint typecheck

# Every test, in parallel, with the coverage gate on evalserve.core and evalserve.service
# (pyproject.toml [tool.coverage.report] fail_under). Coverage takes their folders: given as
# package names, it imports them (and numpy) before the tests and then unloads them again.
unit: install-test prometheus-tools browser-tools image-tools client-envs ts-install
	$(BIN)/pytest -n auto -m "not alone" --cov=core --cov=service --cov-report=term:skip-covered
	$(BIN)/pytest -m alone

quick: install-test
	$(BIN)/pytest -n auto -m "not slow"

# The documentation site: built with --strict (a broken link or nav entry fails), served locally.
# --strict without --quiet: --quiet drops the warnings that --strict counts (a broken anchor
# passed with both).
docs-build: install-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site

docs: install-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8001

test: check proto-check ts-check docs-build unit

# The clients' own targets: client-envs (clients/python/envs.mk) and ts-install / ts-check
# (clients/typescript/ts.mk).
include clients/python/envs.mk clients/typescript/ts.mk

# System tools the tests use, from Debian, installed only when missing (apt-get as root, as in
# CI, or through sudo). Each target below sets the shell variable `missing` to the packages
# it lacks, then runs $(APT_INSTALL).
APT_INSTALL = if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; \
		elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
		else echo "missing Debian packages: $$missing (install them as root)" >&2; exit 1; fi; \
		$$SUDO apt-get update && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y --no-install-recommends $$missing; \
	fi

# Prometheus and promtool (package `prometheus`) for tests/deploy/ and curl for the README's
# examples (tests/clients/test_readme_examples.py).
prometheus-tools:
	@missing=; \
	command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || missing="prometheus"; \
	command -v curl >/dev/null 2>&1 || missing="$$missing curl"; \
	$(APT_INSTALL)

# Headless Chromium (Debian packages `chromium` and a font, only when missing, as above) and axe-core
# (npm, pinned, into .browser-tools/) for the report's browser tests (tests/report/).
AXE_CORE_VERSION := 4.14.1
browser-tools:
	@missing=; \
	command -v chromium >/dev/null 2>&1 || missing="chromium fonts-dejavu-core"; \
	$(APT_INSTALL)
	@test -f .browser-tools/node_modules/axe-core/axe.min.js || \
		npm install --silent --no-save --no-package-lock --prefix .browser-tools \
			axe-core@$(AXE_CORE_VERSION)

# buildah (builds and runs OCI images without a daemon, for `make image` and the image's test,
# tests/deploy/test_image.py) and mmdebstrap (that test's stand-in base image, made from Debian
# packages): Debian packages, installed only when missing, as above.
image-tools:
	@missing=; \
	command -v buildah >/dev/null 2>&1 || missing="buildah"; \
	command -v mmdebstrap >/dev/null 2>&1 || missing="$$missing mmdebstrap"; \
	$(APT_INSTALL)

# The image (deploy/Dockerfile), tagged $(IMAGE): `docker build` when a Docker daemon answers,
# else buildah (`make image-tools` installs it), whose images live in containers-storage
# (`buildah images`). PYTHON_IMAGE=... replaces the python:3.11-slim base (a digest, a mirror,
# a local image). WHEELHOUSE=1 first builds the wheels with the host's pip and its configuration
# into deploy/wheelhouse, which the build then installs from offline (and which is emptied
# after it): for hosts whose package index or proxy the build cannot reach; the host's Python
# must be the image's (3.11). The image's format is Docker's, which keeps the HEALTHCHECK.
# IMAGE_BUILDER=buildah or docker skips the choice.
IMAGE ?= evalserve:$(VERSION)
PYTHON_IMAGE ?=
WHEELHOUSE ?=
WHEELHOUSE_PYTHON ?= $(BIN)/python
IMAGE_BUILDER ?=

image:
	rm -f deploy/wheelhouse/*.whl
ifneq ($(WHEELHOUSE),)
	$(WHEELHOUSE_PYTHON) -m pip wheel --quiet --wheel-dir deploy/wheelhouse '.[service]' \
		$$($(WHEELHOUSE_PYTHON) -c 'import tomllib; \
			print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"])')
	rm -f deploy/wheelhouse/evalserve-*.whl
endif
	@builder='$(IMAGE_BUILDER)'; \
	if [ -z "$$builder" ]; then \
		if docker info >/dev/null 2>&1; then builder=docker; else builder=buildah; fi; \
	fi; \
	set -- $(if $(PYTHON_IMAGE),--build-arg PYTHON_IMAGE=$(PYTHON_IMAGE)) -t '$(IMAGE)' .; \
	if [ "$$builder" = docker ]; then \
		set -x; docker build -f deploy/Dockerfile "$$@"; \
	else \
		set -x; buildah build --isolation chroot --format docker -f deploy/Dockerfile \
			--ignorefile deploy/Dockerfile.dockerignore "$$@"; \
	fi; \
	status=$$?; rm -f deploy/wheelhouse/*.whl; exit $$status

# The report's vendored charting scripts, again from the npm registry (versions pinned in
# src/evalserve/report/_vendor.py).
report-vendor: install-test
	$(BIN)/python -m evalserve.report._vendor

bench: install-test
	$(BIN)/python bench/binary_core.py
	$(BIN)/python bench/service_bench.py
	$(BIN)/python bench/multiclass_core.py
	$(BIN)/python bench/auc_simulation.py
	$(BIN)/python bench/monitor_simulation.py
	$(BIN)/python bench/operating_simulation.py
	$(BIN)/python bench/stream_cost.py
	$(BIN)/python bench/memory_cost.py
	$(BIN)/python bench/load.py
	$(BIN)/python bench/refusal_cost.py
	$(BIN)/python bench/offline_scale.py
	$(BIN)/python bench/segments_cost.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info

# Reference values from the R package pROC for tests/core/test_proc_reference.py; not part of
# `make test`. Needs Debian's r-base-core, r-cran-proc and r-cran-jsonlite.
.PHONY: proc-fixtures
proc-fixtures:
	Rscript tests/fixtures/proc/generate.R
