# The Python client's two extra environments (see clients/python/README.md), included by the
# root Makefile and run from the repo root:
#   .venv-client-gen    the pinned stub generator of clients/python/generator.txt: generate.py
#                       and the drift test in tests/clients run it
#   .venv-client-floor  the client installed with the oldest dependencies it claims
#                       (clients/python/floors.txt): tests/clients/test_oldest_runtime.py
# Each is rebuilt from scratch when its pin file changes, and left alone otherwise (a stamp file
# marks a finished build). A `.gitignore` of `*` inside keeps each out of git.
CLIENT_GEN_VENV := .venv-client-gen
CLIENT_FLOOR_VENV := .venv-client-floor
PYTHON ?= python3

.PHONY: client-envs
client-envs: $(CLIENT_GEN_VENV)/.built $(CLIENT_FLOOR_VENV)/.client

$(CLIENT_GEN_VENV)/.built: clients/python/generator.txt
	rm -rf $(CLIENT_GEN_VENV)
	$(PYTHON) -m venv $(CLIENT_GEN_VENV)
	echo '*' > $(CLIENT_GEN_VENV)/.gitignore
	$(CLIENT_GEN_VENV)/bin/pip install --quiet --upgrade pip
	$(CLIENT_GEN_VENV)/bin/pip install --quiet --no-deps -r clients/python/generator.txt
	touch $@

$(CLIENT_FLOOR_VENV)/.built: clients/python/floors.txt clients/python/pyproject.toml
	rm -rf $(CLIENT_FLOOR_VENV)
	$(PYTHON) -m venv $(CLIENT_FLOOR_VENV)
	echo '*' > $(CLIENT_FLOOR_VENV)/.gitignore
	$(CLIENT_FLOOR_VENV)/bin/pip install --quiet --upgrade pip
	$(CLIENT_FLOOR_VENV)/bin/pip install --quiet -c clients/python/floors.txt \
		'clients/python[plot]'
	touch $@

# The client itself is installed as a user gets it (a built wheel, not an editable checkout, so
# a file missing from the package fails the tests), and reinstalled when its sources change.
CLIENT_SOURCES := $(shell find clients/python/src -type f -not -name '*.pyc')
$(CLIENT_FLOOR_VENV)/.client: $(CLIENT_FLOOR_VENV)/.built $(CLIENT_SOURCES)
	$(CLIENT_FLOOR_VENV)/bin/pip install --quiet --no-deps --force-reinstall ./clients/python
	touch $@
