"""A bake records its template, so `cruft check` passes and `cruft update` brings changes in.

The default `beam_agents_requirement` pins where the template came from: the
checkout for a local path (however it was written), the repository at the
baked commit for a URL.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from cookiecutter.main import cookiecutter

from tests.template.baking import CHECKOUT, TEMPLATE, Bake

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}


def _run(*command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, **GIT_IDENTITY},
        capture_output=True,
        text=True,
        check=False,
    )


def _git(cwd: Path, *args: str) -> str:
    result = _run("git", *args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def _cruft(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(sys.executable, "-m", "cruft", *args, cwd=project)


def _dependency(project: Path) -> str:
    pyproject = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    requirement: str = pyproject["project"]["dependencies"][0]
    return requirement


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "config.yaml"
    config.write_text(f"cookiecutters_dir: {tmp_path / 'cc'}\nreplay_dir: {tmp_path / 'replay'}\n")
    return config


def _upstream(tmp_path: Path) -> Path:
    """A repository holding this checkout's template as it is now (committed or not)."""
    upstream = tmp_path / "upstream"
    shutil.copytree(TEMPLATE, upstream / "template")
    _git(upstream, "init", "--quiet")
    _git(upstream, "add", "-A")
    _git(upstream, "commit", "--quiet", "-m", "template")
    return upstream


def test_cruft_check_passes_on_a_fresh_bake(bake: Bake) -> None:
    project = bake()
    state = json.loads((project / ".cruft.json").read_text())

    assert (state["template"], state["directory"], state["commit"]) == (
        str(CHECKOUT),
        "template",
        _git(CHECKOUT, "rev-parse", "HEAD"),
    )
    assert state["context"]["cookiecutter"]["longterm_backend"] == "sqlite"
    result = _cruft(project, "check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "up to date" in result.stdout


def test_a_bake_from_a_relative_path_records_the_checkout_and_pins_it(tmp_path: Path) -> None:
    """`cookiecutter --no-input template/` from the checkout, exactly as the docs show it."""
    result = _run(
        sys.executable,
        "-m",
        "cookiecutter",
        "--no-input",
        "--config-file",
        str(_config(tmp_path)),
        "--output-dir",
        str(tmp_path / "out"),
        "template/",
        cwd=CHECKOUT,
    )
    assert result.returncode == 0, result.stderr
    project = tmp_path / "out" / "fraud-desk"

    state = json.loads((project / ".cruft.json").read_text())
    assert (state["template"], state["directory"]) == (str(CHECKOUT), "template")
    assert _dependency(project) == f"beam-agents[memory-stores,telemetry] @ {CHECKOUT.as_uri()}"
    check = _cruft(project, "check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_an_explicit_requirement_wins_over_the_template_source(bake: Bake) -> None:
    project = bake(beam_agents_requirement="beam-agents==0.4.2", longterm_backend="none")

    assert _dependency(project) == "beam-agents[telemetry]==0.4.2"


def test_a_bake_from_the_repository_url_pins_the_baked_commit(tmp_path: Path) -> None:
    """`cookiecutter <git url> --directory template`, the way users outside a clone bake."""
    remote = tmp_path / "remote.git"
    _git(tmp_path, "clone", "--quiet", "--bare", str(_upstream(tmp_path)), str(remote))
    project = Path(
        cookiecutter(
            remote.as_uri(),
            directory="template",
            no_input=True,
            extra_context={"longterm_backend": "bigtable"},
            output_dir=str(tmp_path / "out"),
            config_file=str(_config(tmp_path)),
        )
    )
    commit = _git(remote, "rev-parse", "HEAD")

    state = json.loads((project / ".cruft.json").read_text())
    assert (state["template"], state["directory"], state["commit"]) == (
        remote.as_uri(),
        "template",
        commit,
    )
    assert (
        _dependency(project)
        == f"beam-agents[memory-stores,telemetry] @ git+{remote.as_uri()}@{commit}"
    )
    main_tf = (project / "infra" / "main.tf").read_text()
    assert f'"git::{remote.as_uri()}//infra/modules/dataflow_runtime?ref={commit}"' in main_tf
    check = _cruft(project, "check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_cruft_update_brings_a_template_change_into_the_project(tmp_path: Path) -> None:
    upstream = _upstream(tmp_path)
    project = Path(
        cookiecutter(
            str(upstream / "template"),
            no_input=True,
            output_dir=str(tmp_path / "out"),
            config_file=str(_config(tmp_path)),
        )
    )
    _git(project, "init", "--quiet")
    _git(project, "add", "-A")
    _git(project, "commit", "--quiet", "-m", "baked")
    readme = upstream / "template" / "{{cookiecutter.project_slug}}" / "README.md"
    readme.write_text(readme.read_text() + "\nA line the template gained later.\n")
    _git(upstream, "commit", "--quiet", "-am", "template: one more line")
    assert _cruft(project, "check").returncode != 0

    update = _cruft(project, "update", "--skip-apply-ask", "--allow-untracked-files")

    assert update.returncode == 0, update.stdout + update.stderr
    assert "A line the template gained later." in (project / "README.md").read_text()
    state = json.loads((project / ".cruft.json").read_text())
    assert state["commit"] == _git(upstream, "rev-parse", "HEAD")
    assert _cruft(project, "check").returncode == 0
    assert _git(project, "status", "--porcelain", "--", "pyproject.toml", "infra") == ""
    assert _dependency(project) == f"beam-agents[memory-stores,telemetry] @ {upstream.as_uri()}"
