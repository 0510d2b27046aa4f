"""What a user does: bake with no answers, then `make test`, `make run` and `cruft check`.

The one test here that builds a virtualenv (the others run in this
environment). The bake runs in a committed snapshot of this checkout, with no
answer at all, so the project pins the snapshot by default (pip builds a
local project in its own tree, so the snapshot also keeps `build/` out of the
checkout). `make` creates `.venv` with the `python3` on PATH and installs the
project. pip's cache keeps the install to about a minute and a half on a warm
machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.template.baking import CHECKOUT

MAKE_TIMEOUT_S = 1500
_NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv*", "build", "site", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
)


def _user_environment() -> dict[str, str]:
    """This process's environment minus anything pointing at its own virtualenv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    own_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != own_bin)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _git_environment() -> dict[str, str]:
    identity = {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.invalid"}
    identity |= {"GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.invalid"}
    return {**os.environ, **identity}


def _make(target: str, project: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = subprocess.run(
        ["make", target],
        cwd=project,
        env=_user_environment(),
        capture_output=True,
        text=True,
        timeout=MAKE_TIMEOUT_S,
        check=False,
    )
    return result, time.monotonic() - started


def test_default_bake_passes_make_test_and_make_run_in_a_fresh_virtualenv(
    tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    if shutil.which("make") is None:
        pytest.fail("make is not installed")
    checkout = tmp_path / "beam-agents"
    shutil.copytree(CHECKOUT, checkout, ignore=_NOT_SOURCE)
    for git in (["init", "--quiet"], ["add", "-A"], ["commit", "--quiet", "-m", "snapshot"]):
        subprocess.run(["git", *git], cwd=checkout, env=_git_environment(), check=True)
    config = tmp_path / "cookiecutter.yaml"
    config.write_text(f"cookiecutters_dir: {tmp_path / 'cc'}\nreplay_dir: {tmp_path / 'replay'}\n")
    bake = subprocess.run(
        [
            sys.executable,
            "-m",
            "cookiecutter",
            "--no-input",
            "--config-file",
            str(config),
            "--output-dir",
            str(tmp_path),
            "template/",
        ],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=False,
    )
    assert bake.returncode == 0, bake.stderr
    project = tmp_path / "fraud-desk"
    assert f"beam-agents[memory-stores,telemetry] @ {checkout.as_uri()}" in (
        project / "pyproject.toml"
    ).read_text(encoding="utf-8")
    assert not (project / ".venv").exists()

    test, test_s = _make("test", project)
    record_property("make_test_seconds", round(test_s, 1))
    assert test.returncode == 0, test.stdout[-4000:] + test.stderr[-4000:]
    assert (project / ".venv" / "bin" / "python").is_file()
    assert " passed" in test.stdout
    assert " failed" not in test.stdout

    run, run_s = _make("run", project)
    record_property("make_run_seconds", round(run_s, 1))
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    kinds = [line.split(" ", 1)[0] for line in run.stdout.splitlines()]
    assert kinds.count("outputs") == 5, run.stdout
    assert kinds.count("intents") == 2, run.stdout  # the approval, then the approved action
    assert "errors" not in kinds, run.stdout
    assert (project / "out" / "longterm.sqlite").is_file()
    cruft = subprocess.run(
        [sys.executable, "-m", "cruft", "check"], cwd=project, capture_output=True, text=True
    )
    assert cruft.returncode == 0, cruft.stdout + cruft.stderr
