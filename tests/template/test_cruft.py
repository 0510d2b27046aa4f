"""A fresh bake records its template, so `cruft check` passes and `cruft update` can work."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from baking import CHECKOUT, LOCAL_REQUIREMENT
from conftest import Bake
from cookiecutter.main import cookiecutter


def test_cruft_check_passes_on_a_fresh_bake(bake: Bake) -> None:
    project = bake()
    state = json.loads((project / ".cruft.json").read_text())
    head = subprocess.run(
        ["git", "-C", str(CHECKOUT), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert (state["template"], state["directory"], state["commit"]) == (
        str(CHECKOUT),
        "template",
        head,
    )
    assert state["context"]["cookiecutter"]["longterm_backend"] == "sqlite"

    result = subprocess.run(
        [sys.executable, "-m", "cruft", "check"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "up to date" in result.stdout


def test_cruft_check_passes_on_a_bake_from_the_repository_url(tmp_path: Path) -> None:
    """`cookiecutter <git url> --directory template`, the way users outside a clone bake."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(CHECKOUT), str(remote)], check=True)
    config = tmp_path / "config.yaml"
    config.write_text(f"cookiecutters_dir: {tmp_path / 'cc'}\nreplay_dir: {tmp_path / 'replay'}\n")
    project = Path(
        cookiecutter(
            remote.as_uri(),
            directory="template",
            no_input=True,
            extra_context={"beam_agents_requirement": LOCAL_REQUIREMENT},
            output_dir=str(tmp_path / "out"),
            config_file=str(config),
        )
    )
    state = json.loads((project / ".cruft.json").read_text())
    assert (state["template"], state["directory"]) == (remote.as_uri(), "template")

    result = subprocess.run(
        [sys.executable, "-m", "cruft", "check"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
