# The README's commands. `make demo` on a fresh machine creates the
# virtualenv and runs the triage reference application offline; `make test`
# installs the same way, then runs lint, types, the docs build and the tests.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=
# pytest workers for `make test` (pytest-xdist; each test file's tests run on one worker).
# Much of the suite waits on servers, timers and subprocesses, so two overlap on two cores.
PYTEST_WORKERS ?= 2

.PHONY: setup local-embeddings langgraph demo console eval new-agent test check lint types docs unit bench proto lock clean deploy

setup: $(STAMP)

# pip names each package as it goes (no --quiet: a first install takes minutes, and
# silence would look like a hang); later runs skip this step.
$(STAMP): pyproject.toml
	@echo "setup 1/3: creating $(VENV)"
	$(PYTHON) -m venv $(VENV)
	@echo "setup 2/3: upgrading pip"
	$(BIN)/python -m pip install --progress-bar on --upgrade pip
	@echo "setup 3/3: installing beam-agents with Beam, the store clients, the console and the dev tools (first time: about 4-6 minutes)"
	$(BIN)/python -m pip install --progress-bar on -e '.[memory-stores,providers,console,tools,dev]'
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
	$(BIN)/python -m pip install --progress-bar on -e '.[local-embeddings]'
	touch $(EMBED_STAMP)

# Google ADK, for the ADK adapter (beam_agents.adapters.adk, the adk extra); its
# tests skip without it. Its own stamp follows setup's, like local-embeddings'.
ADK_STAMP := $(VENV)/.adk-stamp
.PHONY: adk
adk: $(ADK_STAMP)

$(ADK_STAMP): $(STAMP)
	$(BIN)/python -m pip install --progress-bar on -e '.[adk]'
	touch $(ADK_STAMP)

# The LangGraph adapter's extra (langgraph and langchain-core, pure Python, under a
# minute): its tests skip without it, except where every service is required. Its own
# stamp follows setup's, like the local embedder's.
LANGGRAPH_STAMP := $(VENV)/.langgraph-stamp
langgraph: $(LANGGRAPH_STAMP)

$(LANGGRAPH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --progress-bar on -e '.[langgraph]'
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
eval: setup
	$(BIN)/python -m app.triage labels --hours $(EVAL_HOURS) --first-services $(EVAL_SERVICES) \
		--out $(EVAL_OUT)
	@status=0; PYTHONPATH="$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH}" \
		$(BIN)/beam-agents eval $(EVAL_OUT)/events.jsonl --quiet \
		$(foreach c,$(EVAL_CANDIDATES),--candidate '$(c)') \
		--labels $(EVAL_OUT)/labels.jsonl --recording $(EVAL_RECORDING) --scorer field:class \
		$(foreach g,$(EVAL_GATES),--gate '$(g)') --out $(EVAL_OUT) || status=$$?; \
	if [ $$status -le 1 ]; then $(BIN)/python -m app.triage changes $(EVAL_OUT); \
		echo "report: $(EVAL_OUT)/report.html"; fi; exit $$status

# A new agent project from template/, pinned to this checkout:
#   make new-agent NAME="Fraud Desk" [DIR=..] [longterm_backend=redis model_provider=gemini ...]
# Any of the template's questions can be answered the same way (every top-level key of
# template/cookiecutter.json: project_slug, package_name, description, ...); DIR (default:
# beside this checkout) is where the project directory is created. A refused answer is one line.
DIR ?= ..
COOKIECUTTER ?= $(BIN)/cookiecutter
TEMPLATE_ANSWERS := $(filter-out project_name,$(shell sed -n 's/^  "\([a-z][a-z0-9_]*\)": .*/\1/p' template/cookiecutter.json))

new-agent:
	@test -n "$$NAME" || { echo 'usage: make new-agent NAME="Project name" [DIR=..] [longterm_backend=...]'; exit 2; }
	$(if $(filter command line,$(origin COOKIECUTTER)),,@$(MAKE) --no-print-directory setup)
	@log=$$(mktemp); \
	if $(COOKIECUTTER) --no-input --output-dir "$(DIR)" template/ project_name="$$NAME" \
		$(foreach answer,$(TEMPLATE_ANSWERS),$(if $(filter command line,$(origin $(answer))),$(answer)="$$$(answer)")) \
		>"$$log" 2>&1; then cat "$$log"; rm -f "$$log"; \
	else refused=$$(grep -v '^ERROR: Stopping' "$$log" | sed -n 's/^ERROR: //p' | head -n 1); \
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

# app/requirements.lock: every package the triage image installs, pinned with its hashes,
# for the image's Python (3.11, as this machine's: check app/Dockerfile's BEAM_IMAGE) and
# exactly the extras it installs (app/deploy.py's EXTRAS), plus the build backend the
# project itself is built with. Resolved against PyPI alone: this machine's pip settings
# (extra indexes, find-links, constraints) are set aside so the lock is the same anywhere.
LOCK_EXTRAS := memory-stores providers telemetry
LOCK_INDEX ?= https://pypi.org/simple
lock: setup
	$(BIN)/python -m pip install --quiet 'pip-tools>=7.4,<8'
	env -u PIP_FIND_LINKS -u PIP_CONSTRAINT -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null \
		$(BIN)/pip-compile --quiet --generate-hashes --allow-unsafe --all-build-deps \
		--strip-extras --no-emit-index-url --no-emit-find-links --index-url $(LOCK_INDEX) \
		$(foreach extra,$(LOCK_EXTRAS),--extra $(extra)) \
		--output-file app/requirements.lock pyproject.toml

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
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
