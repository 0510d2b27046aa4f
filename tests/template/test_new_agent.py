"""`make new-agent` in this checkout bakes a project wherever the user says, pinned to it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.template.baking import CHECKOUT


def _new_agent(tmp_path: Path, *answers: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("make") is None:
        pytest.fail("make is not installed")
    config = tmp_path / "config.yaml"
    config.write_text(f"cookiecutters_dir: {tmp_path / 'cc'}\nreplay_dir: {tmp_path / 'replay'}\n")
    # This environment's cookiecutter, so the test does not build the checkout's .venv.
    cookiecutter = f"{sys.executable} -m cookiecutter --config-file {config}"
    # As a user types it, also when the suite itself runs under `make test`: an inherited
    # MAKELEVEL would make this a sub-make, whose messages read `make[1]: ...`.
    outer = ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES")
    env = {name: value for name, value in os.environ.items() if name not in outer}
    return subprocess.run(
        ["make", "--no-print-directory", "new-agent", f"COOKIECUTTER={cookiecutter}", *answers],
        cwd=CHECKOUT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_make_new_agent_bakes_a_name_with_accents_and_an_apostrophe(tmp_path: Path) -> None:
    result = _new_agent(
        tmp_path, "NAME=Café d'Été Ops", f"DIR={tmp_path / 'projects'}", "longterm_backend=redis"
    )

    assert result.returncode == 0, result.stdout + result.stderr
    project = tmp_path / "projects" / "cafe-d-ete-ops"
    assert (project / "src" / "cafe_d_ete_ops" / "agent.py").is_file()
    pyproject = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["dependencies"][0] == (
        f"beam-agents[memory-stores,telemetry] @ {CHECKOUT.as_uri()}"
    )
    context = json.loads((project / ".cruft.json").read_text())["context"]["cookiecutter"]
    assert (context["project_name"], context["longterm_backend"]) == ("Café d'Été Ops", "redis")
    check = subprocess.run(
        [sys.executable, "-m", "cruft", "check"], cwd=project, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_make_new_agent_says_where_it_created_the_project(tmp_path: Path) -> None:
    """Also for a DIR given relatively (to the checkout, where make runs) that is not yet there."""
    (tmp_path / "projects").mkdir()
    (tmp_path / "projects" / "older-desk").mkdir()  # what was there before is not named

    result = _new_agent(tmp_path, "NAME=Triage Desk", f"DIR={tmp_path / 'projects'}")
    fresh = _new_agent(
        tmp_path, "NAME=Fresh Desk", f"DIR={os.path.relpath(tmp_path / 'new', CHECKOUT)}"
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == (
        f"make new-agent: created {(tmp_path / 'projects' / 'triage-desk').resolve()} "
        "(cd there, then make run)"
    )
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert fresh.stdout.splitlines()[-1] == (
        f"make new-agent: created {(tmp_path / 'new' / 'fresh-desk').resolve()} "
        "(cd there, then make run)"
    )


def test_a_make_new_agent_project_runs_and_passes_its_own_tests(tmp_path: Path) -> None:
    """`make run`'s command and `make test`'s pytest, in this environment (no virtualenv)."""
    result = _new_agent(tmp_path, "NAME=Café d'Été Ops", f"DIR={tmp_path}")
    assert result.returncode == 0, result.stdout + result.stderr
    project = tmp_path / "cafe-d-ete-ops"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(CHECKOUT), str(project / "src")])}

    run = subprocess.run(
        [sys.executable, "-m", "cafe_d_ete_ops.pipeline", "--input", "data/events.jsonl"],
        cwd=project, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=project, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip

    assert run.returncode == 0, run.stderr[-3000:]
    assert [line.split(" ", 1)[0] for line in run.stdout.splitlines()].count("outputs") == 4
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert " passed" in tests.stdout


def test_make_new_agent_without_a_name_says_how_to_call_it(tmp_path: Path) -> None:
    result = _new_agent(tmp_path)

    assert result.returncode != 0
    assert 'make new-agent NAME="Project name"' in result.stdout + result.stderr
    assert not (tmp_path / "projects").exists()


def test_make_new_agent_passes_package_name_and_project_slug_through(tmp_path: Path) -> None:
    result = _new_agent(
        tmp_path,
        "NAME=Fraud Desk",
        f"DIR={tmp_path}",
        "project_slug=fd",
        "package_name=fraud_core",
        "description=Flags odd payments.",
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "fd" / "src" / "fraud_core" / "agent.py").is_file()
    context = json.loads((tmp_path / "fd" / ".cruft.json").read_text())["context"]["cookiecutter"]
    assert (context["project_slug"], context["description"]) == ("fd", "Flags odd payments.")


def test_make_new_agent_reads_its_option_list_from_the_template() -> None:
    """Every question of template/cookiecutter.json can be answered on make's command line."""
    questions = [
        key
        for key in json.loads((CHECKOUT / "template" / "cookiecutter.json").read_text())
        if not key.startswith("_") and key != "project_name"
    ]
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "new-agent", "NAME=x", "COOKIECUTTER=cc"]
        + [f"{key}=v" for key in questions],
        cwd=CHECKOUT,
        capture_output=True,
        text=True,
        check=True,
    )

    for key in questions:
        assert f'{key}="${key}"' in done.stdout, key


def test_a_refused_answer_is_one_line_naming_it_without_a_traceback(tmp_path: Path) -> None:
    result = _new_agent(tmp_path, "NAME=Fraud Desk", f"DIR={tmp_path}", "package_name=class")

    assert result.returncode != 0
    ours = [line for line in result.stderr.splitlines() if not line.startswith("make: ***")]
    assert ours == ["make new-agent: invalid package_name 'class': it is a Python keyword"]
    assert "Traceback" not in result.stdout + result.stderr
    assert not (tmp_path / "fraud-desk").exists()
