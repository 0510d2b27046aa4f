# The README's commands. `make demo` on a fresh machine creates the
# virtualenv and runs the triage reference application offline; `make test`
# installs the same way, then runs lint, types, the docs build and the tests.
# Every install goes through the lock (constraints.txt, made by `make lock`), so a
# fresh machine gets exactly the versions CI ran.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
LOCK := constraints.txt
# pip names each package as it goes (no --quiet: a first install takes minutes, and
# silence would look like a hang); the lock fixes every version it resolves.
PIP_INSTALL := $(BIN)/python -m pip install --progress-bar on --constraint $(LOCK)
PYTEST_ARGS ?=
# pytest workers for `make test` (pytest-xdist; each test file's tests run on one worker).
# Much of the suite waits on servers, timers and subprocesses: on two cores, two workers kept
# the CPU 63% busy (648 s), three 80% (553 s), so three is the default.
PYTEST_WORKERS ?= 3

.PHONY: setup local-embeddings langgraph demo console eval new-agent test check lint types docs unit bench proto lock newest clean deploy

setup: $(STAMP)

# Later runs skip this step, until pyproject.toml or the lock changes.
$(STAMP): pyproject.toml $(LOCK)
	@echo "setup 1/3: creating $(VENV)"
	$(PYTHON) -m venv $(VENV)
	@echo "setup 2/3: upgrading pip"
	$(BIN)/python -m pip install --progress-bar on --upgrade pip
	@echo "setup 3/3: installing beam-agents with Beam, the store clients, the console and the dev tools (first time: about 4-6 minutes)"
	$(PIP_INSTALL) -e '.[memory-stores,providers,console,tools,dev]'
	@echo "setup: done ($(VENV)); later runs skip this step"
	touch $(STAMP)

# The local embedder's extra (sentence-transformers on torch), for Python 3.11: torch
# 2.13.0 goes in first, by itself, so pip takes the CPU build this machine keeps on disk
# (left to resolve torch itself, pip would download a CUDA build of several GB); a CUDA
# build stops here. Then the extra, whose torch is already satisfied. Its own stamp
# follows setup's, so `make setup` and `make test` never install over it.
EMBED_STAMP := $(VENV)/.local-embeddings-stamp
local-embeddings: $(EMBED_STAMP)

$(EMBED_STAMP): $(STAMP)
	$(BIN)/python -m pip install --progress-bar on 'torch==2.13.0'
	@$(BIN)/python -c 'import sys, torch; sys.exit(torch.version.cuda is not None)' || \
		{ echo "local-embeddings: pip installed a CUDA build of torch, not the CPU build" >&2; exit 1; }
	$(PIP_INSTALL) -e '.[local-embeddings]'
	touch $(EMBED_STAMP)

# Google ADK, for the ADK adapter (beam_agents.adapters.adk, the adk extra); its
# tests skip without it. Its own stamp follows setup's, like local-embeddings'.
ADK_STAMP := $(VENV)/.adk-stamp
.PHONY: adk
adk: $(ADK_STAMP)

$(ADK_STAMP): $(STAMP)
	$(PIP_INSTALL) -e '.[adk]'
	touch $(ADK_STAMP)

# The LangGraph adapter's extra (langgraph and langchain-core, pure Python, under a
# minute): its tests skip without it, except where every service is required. Its own
# stamp follows setup's, like the local embedder's.
LANGGRAPH_STAMP := $(VENV)/.langgraph-stamp
langgraph: $(LANGGRAPH_STAMP)

$(LANGGRAPH_STAMP): $(STAMP)
	$(PIP_INSTALL) -e '.[langgraph]'
	touch $(LANGGRAPH_STAMP)

demo: setup
	$(BIN)/python -m app.triage demo

# The triage app live (one hour of alerts per minute) with the console beside it:
# approve or deny P1s at http://127.0.0.1:$(PORT)/approvals. Ctrl-C stops both.
PORT ?= 8080
console: setup
	$(BIN)/python -m app.triage live --console --port $(PORT)

# The triage agent with and without recall, scored on labelled alerts (docs/triage.md,
# "Evaluating a change"): every model and embedding call is answered from the committed
# recording, so it is offline, free and the same on every run. Prints the class
# accuracy of each with its 95% interval, the decisions recall changed and why, and
# exits 1 when a gate fails. Any of the variables below can be set on the command line.
EVAL_HOURS ?= 6
EVAL_SERVICES ?= 12
EVAL_OUT ?= out/eval
EVAL_RECORDING ?= app/triage/recordings/eval.jsonl
EVAL_TRIAGE := app.triage.candidates
EVAL_CANDIDATES ?= no-recall=$(EVAL_TRIAGE):triage_without_recall?$(EVAL_TRIAGE):no_recall_config \
	recall=$(EVAL_TRIAGE):triage_with_recall?$(EVAL_TRIAGE):recall_config
EVAL_GATES ?= class>=0.99 delta(class)>=0
# The agent completes with a typed Decision; `class` is the JSON name of its `priority` field.
EVAL_OUTPUT_TYPE ?= app.triage.decision:Decision
# What a triage decision is (`changes` says the same): outputs that differ only in what was
# recalled are shown in the report, not counted as changed decisions.
EVAL_DECISION_FIELDS ?= class decision
eval: setup
	$(BIN)/python -m app.triage labels --hours $(EVAL_HOURS) --first-services $(EVAL_SERVICES) \
		--out $(EVAL_OUT)
	@status=0; PYTHONPATH="$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH}" \
		$(BIN)/beam-agents eval $(EVAL_OUT)/events.jsonl --quiet \
		$(foreach c,$(EVAL_CANDIDATES),--candidate '$(c)') --output-type $(EVAL_OUTPUT_TYPE) \
		--labels $(EVAL_OUT)/labels.jsonl --recording $(EVAL_RECORDING) --scorer field:class \
		$(foreach f,$(EVAL_DECISION_FIELDS),--decision-field $(f)) \
		$(foreach g,$(EVAL_GATES),--gate '$(g)') --out $(EVAL_OUT) || status=$$?; \
	if [ $$status -le 1 ]; then $(BIN)/python -m app.triage changes $(EVAL_OUT); \
		echo "report: $(EVAL_OUT)/report.html"; fi; exit $$status

# A new agent project from template/, pinned to this checkout:
#   make new-agent NAME="Fraud Desk" [DIR=..] [longterm_backend=redis model_provider=gemini ...]
# Any of the template's questions can be answered the same way (every top-level key of
# template/cookiecutter.json: project_slug, package_name, description, ...); DIR (default:
# beside this checkout) is where the project directory is created; the last line names it.
# A refused answer is one line.
DIR ?= ..
COOKIECUTTER ?= $(BIN)/cookiecutter
TEMPLATE_ANSWERS := $(filter-out project_name,$(shell sed -n 's/^  "\([a-z][a-z0-9_]*\)": .*/\1/p' template/cookiecutter.json))

new-agent:
	@test -n "$$NAME" || { echo 'usage: make new-agent NAME="Project name" [DIR=..] [longterm_backend=...]'; exit 2; }
	$(if $(filter command line,$(origin COOKIECUTTER)),,@$(MAKE) --no-print-directory setup)
	@log=$$(mktemp); ls -A "$(DIR)" >"$$log.before" 2>/dev/null || true; \
	if $(COOKIECUTTER) --no-input --output-dir "$(DIR)" template/ project_name="$$NAME" \
		$(foreach answer,$(TEMPLATE_ANSWERS),$(if $(filter command line,$(origin $(answer))),$(answer)="$$$(answer)")) \
		>"$$log" 2>&1; then cat "$$log"; \
		made=$$(ls -A "$(DIR)" | grep -vxF -f "$$log.before" | while read -r new; do \
			if [ -f "$(DIR)/$$new/pyproject.toml" ]; then echo "$$new"; fi; done | head -n 1); \
		rm -f "$$log" "$$log.before"; \
		echo "make new-agent: created $$(cd "$(DIR)/$$made" && pwd) (cd there, then make run)"; \
	else rm -f "$$log.before"; refused=$$(grep -v '^ERROR: Stopping' "$$log" | sed -n 's/^ERROR: //p' | head -n 1); \
		echo "make new-agent: $${refused:-$$(grep -v '^[[:space:]]*$$' "$$log" | tail -n 1)}" >&2; \
		rm -f "$$log"; exit 1; fi

test: setup lint types docs unit

check: test

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types: setup
	$(BIN)/mypy

docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir $(VENV)/site

unit: setup
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

bench: setup
	@for script in benchmarks/bench_*.py; do \
		echo "== $$script"; $(BIN)/python $$script || exit 1; done

proto: setup
	$(BIN)/python -m grpc_tools.protoc -I . --python_out=. --pyi_out=. \
		beam_agents/proto/beam_agents.proto

# The lock (docs/development.md, "Dependencies"). constraints.txt pins every package of
# every extra, with the build backend, for every supported Python at once (a universal
# resolution, markers where versions differ), so one file serves 3.11 to 3.13, this
# Makefile, .ci/run and the projects the template bakes. app/requirements.lock is the
# triage image's: the same versions (resolved under constraints.txt), narrowed to the
# image's Python (3.11, as app/Dockerfile's BEAM_IMAGE) and extras (app/deploy.py's
# EXTRAS), with their hashes. Both are resolved against PyPI alone, by a pinned uv in a
# venv of its own (never .venv: a pyproject.toml the old lock cannot satisfy must still
# lock). `make lock` keeps every pin the ranges still admit; `make lock UPGRADE=1` takes
# the newest each range allows, `make lock UPGRADE="NAME ..."` only those packages':
# that is how a new upstream release comes in.
LOCK_EXTRAS := memory-stores providers telemetry
# The lowest Beam the range admits gets a lock of its own, for CI's run on the range's
# floor: the same pins as constraints.txt except where that Beam needs others (it starts
# from constraints.txt, which uv keeps wherever it can).
FLOOR_LOCK := .ci/constraints-beam-floor.txt
LOCK_INDEX ?= https://pypi.org/simple
UV_VERSION := 0.13.9
LOCK_VENV := .venv-lock
UV := $(LOCK_VENV)/bin/uv
UPGRADE ?=
UPGRADE_FLAGS = $(if $(filter 1,$(UPGRADE)),--upgrade,$(foreach name,$(UPGRADE),--upgrade-package $(name)))
BUILD_REQUIRES = $(PYTHON) -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], sep="\n")'
UV_COMPILE = env -u UV_INDEX_URL -u UV_EXTRA_INDEX_URL -u UV_FIND_LINKS -u UV_CONSTRAINT \
	UV_NO_CONFIG=1 $(UV) pip compile --quiet --default-index $(LOCK_INDEX) --python-version 3.11

$(UV):
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install --quiet 'uv==$(UV_VERSION)'

lock: $(UV)
	$(BUILD_REQUIRES) | $(UV_COMPILE) --universal --all-extras $(UPGRADE_FLAGS) \
		--output-file $(LOCK) pyproject.toml -
	$(PYTHON) -c 'import re, tomllib; (beam,) = [d for d in tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"] if d.startswith("apache-beam")]; print("apache-beam==" + re.search(r">=\s*([0-9.]+)", beam).group(1))' >$(LOCK_VENV)/beam-floor.txt
	cp $(LOCK) $(FLOOR_LOCK)
	$(BUILD_REQUIRES) | $(UV_COMPILE) --universal --all-extras --constraint $(LOCK_VENV)/beam-floor.txt \
		--output-file $(FLOOR_LOCK) pyproject.toml -
	$(BUILD_REQUIRES) | $(UV_COMPILE) --python-platform x86_64-manylinux_2_28 \
		--generate-hashes --constraint $(LOCK) $(foreach extra,$(LOCK_EXTRAS),--extra $(extra)) \
		--output-file app/requirements.lock pyproject.toml -

# What a user without the lock gets today: the newest versions pyproject.toml's ranges
# allow, resolved by pip into a fresh venv, then the core tests, the README's and docs'
# code and a baked project's `make run` on them. A failure names the packages that
# differ from the lock and the one whose locked version makes the failure go away.
NEWEST_VENV ?= .venv-newest
newest:
	$(PYTHON) .ci/newest.py --venv $(NEWEST_VENV) --lock $(LOCK)

# Deploy the triage app: make deploy PROJECT=p REGION=r [STORE=bigtable|cloudsql|firestore|redis]
# [TAG=v1] [UPDATE=1] [DRY_RUN=1] [TF_OUTPUTS=file]. Reads the Terraform outputs of
# infra/examples/triage_$(STORE); DRY_RUN=1 prints every command and runs none.
# The values reach app/deploy.py as environment variables, never spliced into the shell
# command, and `$(value ...)` keeps make from expanding what they contain; deploy.py
# validates each one before it runs anything.
STORE ?= bigtable
ifeq ($(origin TAG),undefined)
TAG := $(shell git rev-parse --short HEAD 2>/dev/null || echo dev)
endif

# Make itself would export (and so expand) variables given on its command line.
unexport PROJECT REGION STORE TAG TF_OUTPUTS UPDATE DRY_RUN

deploy: export DEPLOY_PROJECT = $(value PROJECT)
deploy: export DEPLOY_REGION = $(value REGION)
deploy: export DEPLOY_STORE = $(value STORE)
deploy: export DEPLOY_TAG = $(value TAG)
deploy: export DEPLOY_OUTPUTS = $(value TF_OUTPUTS)
deploy:
	$(PYTHON) app/deploy.py --project "$$DEPLOY_PROJECT" --region "$$DEPLOY_REGION" \
		--store "$$DEPLOY_STORE" --tag "$$DEPLOY_TAG" $(if $(value UPDATE),--update) \
		$(if $(value DRY_RUN),--dry-run) $(if $(value TF_OUTPUTS),--outputs-json "$$DEPLOY_OUTPUTS")

clean:
	rm -rf $(VENV) $(LOCK_VENV) $(NEWEST_VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
