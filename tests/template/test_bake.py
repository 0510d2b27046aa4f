"""Every combination of options bakes into a clean project; one concern per test."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.template.baking import COMBINATIONS, combination_id, package_of, text_files

STORES_WITH_TERRAFORM = ("postgres", "redis", "bigtable", "firestore")


def _read(project: Path, name: str) -> str:
    return (project / name).read_text(encoding="utf-8")


def expected_files(project: Path, backend: str, provider: str, hitl: str) -> set[str]:
    """The project's files for these options, relative to the project."""
    package = package_of(project)
    files = {
        ".cruft.json",
        ".github/workflows/ci.yml",
        ".gitignore",
        "Dockerfile",
        "Makefile",
        "README.md",
        "constraints.txt",
        "data/events.jsonl",
        "data/eval_events.jsonl",
        "data/eval_labels.jsonl",
        "infra/keys.tf",
        "infra/main.tf",
        "infra/outputs.tf",
        "infra/variables.tf",
        "infra/versions.tf",
        "metadata.json",
        "pyproject.toml",
        f"src/{package}/__init__.py",
        f"src/{package}/agent.py",
        f"src/{package}/files.py",
        f"src/{package}/graph.py",
        f"src/{package}/pipeline.py",
        f"src/{package}/pubsub_io.py",
        "tests/test_agent.py",
        "tests/test_dataflow.py",
    }
    if backend != "none":
        files.add("tests/test_longterm.py")
    if backend in STORES_WITH_TERRAFORM:
        files.add(f"infra/memory_{backend}.tf")
    if backend in ("postgres", "redis"):
        files.add("infra/network.tf")
    if backend == "redis":
        files.add("infra/longterm_secret.tf")
    if hitl == "yes":
        files |= {"data/answers.jsonl", "tests/test_hitl.py"}
    if provider != "fake":
        files.add("tests/test_model.py")
    return files


COMBINATION = pytest.mark.parametrize(
    ("backend", "provider", "hitl"), COMBINATIONS, ids=[combination_id(*c) for c in COMBINATIONS]
)
#: The longest function a generated module may hold, as in this repository.
MAX_FUNCTION_LINES = 60
#: The Flex Template parameters naming the deployment's keys.
KEY_PARAMETERS = ("entity_hash_secret", "answer_signing_secret")

Bakes = dict[tuple[str, ...], Path]


@COMBINATION
def test_combination_has_exactly_the_files_it_uses(
    baked_combinations: Bakes, backend: str, provider: str, hitl: str
) -> None:
    project = baked_combinations[(backend, provider, hitl)]
    files = {path.relative_to(project).as_posix() for path in text_files(project)}

    assert files == expected_files(project, backend, provider, hitl)


@COMBINATION
def test_no_jinja_is_left_unrendered(
    baked_combinations: Bakes, backend: str, provider: str, hitl: str
) -> None:
    project = baked_combinations[(backend, provider, hitl)]
    unrendered = [
        path.relative_to(project).as_posix()
        for path in text_files(project)
        if "{{" in (text := path.read_text(encoding="utf-8")) or "{%" in text
    ]

    assert unrendered == []


@COMBINATION
def test_every_python_file_compiles(
    baked_combinations: Bakes, backend: str, provider: str, hitl: str
) -> None:
    project = baked_combinations[(backend, provider, hitl)]
    for path in project.rglob("*.py"):
        compile(path.read_text(encoding="utf-8"), str(path), "exec", dont_inherit=True)


@COMBINATION
def test_no_generated_function_is_longer_than_a_screen(
    baked_combinations: Bakes, backend: str, provider: str, hitl: str
) -> None:
    project = baked_combinations[(backend, provider, hitl)]
    long = []
    for path in (project / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.name}:{node.name} ({lines} lines)")

    assert long == []


@COMBINATION
def test_the_flex_template_takes_answers_only_with_hitl(
    baked_combinations: Bakes, backend: str, provider: str, hitl: str
) -> None:
    project = baked_combinations[(backend, provider, hitl)]
    parameters = json.loads((project / "metadata.json").read_text())["parameters"]

    assert ("answers_subscription" in {p["name"] for p in parameters}) == (hitl == "yes")


@COMBINATION
def test_the_flex_template_takes_an_entity_hash_key_and_with_hitl_an_answer_signing_key(
    baked_combinations: Bakes, backend: str, provider: str, hitl: str
) -> None:
    """Both optional, both a Secret Manager version's name, never the key itself."""
    project = baked_combinations[(backend, provider, hitl)]
    parameters = {
        p["name"]: p for p in json.loads((project / "metadata.json").read_text())["parameters"]
    }
    keys = {"entity_hash_secret"} | ({"answer_signing_secret"} if hitl == "yes" else set())

    assert keys == {name for name in parameters if name in KEY_PARAMETERS}
    for name in keys:
        assert parameters[name]["isOptional"] is True
        (pattern,) = parameters[name]["regexes"]
        assert re.fullmatch(pattern, f"projects/my-gcp-project/secrets/{name}/versions/1")
        assert re.fullmatch(pattern, "projects/p/secrets/s/versions/latest")
        for bad in ("env:KEY", "projects/p/secrets/s/versions/0", "a-32-byte-key-pasted-in-as-is"):
            assert not re.fullmatch(pattern, bad), (name, bad)


@COMBINATION
def test_ci_runs_make_test_then_make_eval_and_cruft_state_is_json(
    baked_combinations: Bakes, backend: str, provider: str, hitl: str
) -> None:
    project = baked_combinations[(backend, provider, hitl)]
    workflow = yaml.safe_load((project / ".github/workflows/ci.yml").read_text())

    assert [step.get("run") for step in workflow["jobs"]["test"]["steps"][-2:]] == [
        "make test",
        "make eval",
    ]
    assert workflow["permissions"] == {"contents": "read"}
    for step in workflow["jobs"]["test"]["steps"]:
        if "uses" in step:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]
    assert json.loads((project / ".cruft.json").read_text())["template"]


@COMBINATION
def test_the_dockerfile_runs_the_pipeline_module(
    baked_combinations: Bakes, backend: str, provider: str, hitl: str
) -> None:
    project = baked_combinations[(backend, provider, hitl)]
    dockerfile = _read(project, "Dockerfile")
    (workdir,) = re.findall(r"^WORKDIR (\S+)$", dockerfile, re.M)
    (py_file,) = re.findall(r"FLEX_TEMPLATE_PYTHON_PY_FILE=(\S+)", dockerfile)

    assert (project / Path(py_file).relative_to(workdir)).is_file()


@COMBINATION
def test_dependencies_carry_the_extras_the_options_need(
    baked_combinations: Bakes, backend: str, provider: str, hitl: str
) -> None:
    project = baked_combinations[(backend, provider, hitl)]
    pyproject = tomllib.loads((project / "pyproject.toml").read_text())
    requirement, *others = pyproject["project"]["dependencies"]
    extras = requirement.split("[", 1)[1].split("]")[0].split(",") if "[" in requirement else []

    assert ("memory-stores" in extras) == (backend != "none")
    assert ("providers" in extras) == (provider != "fake")
    # Any job may be given --otlp_endpoint: its workers need the SDK to export.
    assert "telemetry" in extras
    # Only the stores whose deployed URI has a password (SQLite deploys to a shared SQL
    # store) need Secret Manager to deploy.
    secret_client = ["google-cloud-secret-manager>=2.20"]
    assert others == (secret_client if backend in ("sqlite", "postgres", "redis") else [])


@COMBINATION
def test_sources_hold_approval_and_longterm_code_only_when_chosen(
    baked_combinations: Bakes, backend: str, provider: str, hitl: str
) -> None:
    project = baked_combinations[(backend, provider, hitl)]
    sources = "\n".join(p.read_text() for p in (project / "src").rglob("*.py"))

    assert ("Suspend" in sources) == (hitl == "yes")
    assert ("answers" in sources) == (hitl == "yes")
    assert ("longterm.save" in sources) == (backend != "none")


@COMBINATION
def test_infra_composes_only_the_chosen_store_and_inputs(
    baked_combinations: Bakes, backend: str, provider: str, hitl: str
) -> None:
    project = baked_combinations[(backend, provider, hitl)]
    infra = "\n".join(p.read_text() for p in (project / "infra").glob("*.tf"))

    for store in STORES_WITH_TERRAFORM:
        assert (f"{store}_store" in infra) == (store == backend)
    # Topics, subscriptions and the model-key secret all come from the runtime module; the
    # root module adds the deployment's keys (keys.tf) and the store URI's secret, for the
    # stores whose URI has a password: Redis (PostgreSQL workers sign in with IAM).
    assert "google_pubsub" not in infra
    beside_keys = "\n".join(
        p.read_text() for p in (project / "infra").glob("*.tf") if p.name != "keys.tf"
    )
    assert ('resource "google_secret_manager' in beside_keys) == (backend == "redis")
    (inputs,) = re.findall(r"input_topics\s*=\s*(\[[^\]]*\])", infra)
    assert json.loads(inputs) == (["events", "answers"] if hitl == "yes" else ["events"])


def test_every_baked_project_passes_ruff_check(
    baked_combinations: Bakes,
) -> None:
    """With each project's own ruff configuration (one ruff run over every bake)."""
    projects = sorted(baked_combinations.values())
    failures = []
    for project in projects:
        result = subprocess.run(
            [sys.executable, "-m", "ruff", "check", "--no-cache", "--quiet", "."],
            cwd=project,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            failures.append(f"{project.name}:\n{result.stdout}{result.stderr}")
    assert failures == []
    assert len(projects) == len(COMBINATIONS)
