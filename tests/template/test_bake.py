"""Every combination of options bakes into a clean project with exactly the files it uses."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from baking import COMBINATIONS, combination_id, package_of, text_files

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
        "data/events.jsonl",
        "infra/main.tf",
        "infra/outputs.tf",
        "infra/variables.tf",
        "infra/versions.tf",
        "metadata.json",
        "pyproject.toml",
        f"src/{package}/__init__.py",
        f"src/{package}/agent.py",
        f"src/{package}/pipeline.py",
        "tests/test_agent.py",
        "tests/test_dataflow.py",
    }
    if backend != "none":
        files |= {"tests/conftest.py", "tests/test_longterm.py"}
    if backend in STORES_WITH_TERRAFORM:
        files.add(f"infra/memory_{backend}.tf")
    if backend in ("postgres", "redis"):
        files.add("infra/network.tf")
    if hitl == "yes":
        files |= {"data/answers.jsonl", "tests/test_hitl.py"}
    if provider != "fake":
        files |= {"tests/test_model.py", "infra/model_secret.tf"}
    return files


@pytest.mark.parametrize(
    ("backend", "provider", "hitl"), COMBINATIONS, ids=[combination_id(*c) for c in COMBINATIONS]
)
def test_combination_bakes_clean_with_only_the_files_it_uses(
    baked_combinations: dict[tuple[str, ...], Path], backend: str, provider: str, hitl: str
) -> None:
    project = baked_combinations[(backend, provider, hitl)]
    files = {path.relative_to(project).as_posix() for path in text_files(project)}

    assert files == expected_files(project, backend, provider, hitl)
    for path in text_files(project):
        text = path.read_text(encoding="utf-8")
        assert "{{" not in text, f"unrendered Jinja in {path}"
        assert "{%" not in text, f"unrendered Jinja in {path}"
        if path.suffix == ".py":
            compile(text, str(path), "exec", dont_inherit=True)
    parameters = json.loads((project / "metadata.json").read_text())["parameters"]
    assert ("answers_subscription" in {p["name"] for p in parameters}) == (hitl == "yes")
    json.loads((project / ".cruft.json").read_text())
    workflow = yaml.safe_load((project / ".github/workflows/ci.yml").read_text())
    assert workflow["jobs"]["test"]["steps"][-1]["run"] == "make test"
    dockerfile = _read(project, "Dockerfile")
    (workdir,) = re.findall(r"^WORKDIR (\S+)$", dockerfile, re.M)
    (py_file,) = re.findall(r"FLEX_TEMPLATE_PYTHON_PY_FILE=(\S+)", dockerfile)
    assert (project / Path(py_file).relative_to(workdir)).is_file()
    pyproject = tomllib.loads((project / "pyproject.toml").read_text())
    (requirement,) = pyproject["project"]["dependencies"]
    extras = requirement.split("[", 1)[1].split("]")[0].split(",") if "[" in requirement else []
    assert ("memory-stores" in extras) == (backend != "none")
    assert ("providers" in extras) == (provider != "fake")

    sources = "\n".join(p.read_text() for p in (project / "src").rglob("*.py"))
    assert ("Suspend" in sources) == (hitl == "yes")
    assert ("answers" in sources) == (hitl == "yes")
    assert ("longterm.save" in sources) == (backend != "none")
    infra = "\n".join(p.read_text() for p in (project / "infra").glob("*.tf"))
    for store in STORES_WITH_TERRAFORM:
        assert (f"{store}_store" in infra) == (store == backend)
    assert ("google_pubsub_subscription" in infra) == (hitl == "yes")


def test_every_baked_project_passes_ruff_check(
    baked_combinations: dict[tuple[str, ...], Path],
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
