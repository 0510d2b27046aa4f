# The README's commands. `make demo` on a fresh machine creates the
# virtualenv and runs the triage reference application offline; `make test`
# installs the same way, then runs lint, types, the docs build and the tests.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: setup demo test check lint types docs unit bench proto clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[memory-stores,providers,dev]'
	touch $(STAMP)

demo: setup
	$(BIN)/python -m app.triage demo

test: setup lint types docs unit

check: test

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types: setup
	$(BIN)/mypy

docs: setup
	$(BIN)/mkdocs build --strict --quiet --site-dir $(VENV)/site

unit: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: setup
	@for script in benchmarks/bench_*.py; do \
		echo "== $$script"; $(BIN)/python $$script || exit 1; done

proto: setup
	$(BIN)/python -m grpc_tools.protoc -I . --python_out=. --pyi_out=. \
		beam_agents/proto/beam_agents.proto

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
