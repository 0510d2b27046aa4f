"""The pre-generation hook refuses answers that cannot make a working project."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cookiecutter.exceptions import FailedHookException

from tests.template.baking import LOCAL_REQUIREMENT, TEMPLATE, bake_into

INVALID = [
    ("package_name", "1desk", "must be a lowercase Python identifier"),
    ("package_name", "fraud-desk", "must be a lowercase Python identifier"),
    ("package_name", "Fraud_Desk", "must be a lowercase Python identifier"),
    ("package_name", "class", "it is a Python keyword"),
    ("gcp_project", "my_project", "must be a Google Cloud project id"),
    ("gcp_project", "abc", "must be a Google Cloud project id"),
    ("gcp_project", "my-project-", "must be a Google Cloud project id"),
    ("gcp_region", "europe west1", "must be a Google Cloud region"),
    ("gcp_region", "Europe-West1", "must be a Google Cloud region"),
    ("gcp_region", "europe-west", "must be a Google Cloud region"),
    ("beam_agents_requirement", "beam-agents>=0.1", "must be a pip requirement for beam-agents"),
    ("beam_agents_requirement", "numpy==2.0", "must be a pip requirement for beam-agents"),
]


@pytest.mark.parametrize(
    ("name", "value", "rule"), INVALID, ids=[f"{n}={v}" for n, v, _ in INVALID]
)
def test_pre_gen_hook_rejects_an_invalid_answer_with_one_line(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], name: str, value: str, rule: str
) -> None:
    with pytest.raises(FailedHookException):
        bake_into(tmp_path, **{name: value})

    (line,) = [line for line in capfd.readouterr().err.splitlines() if line.startswith("ERROR:")]
    assert line.startswith(f"ERROR: invalid {name} {value!r}: ")
    assert rule in line
    assert not [p for p in tmp_path.iterdir() if not p.name.startswith(".")], "files were written"


@pytest.mark.parametrize(
    ("name", "value"),
    [("longterm_backend", "mysql"), ("model_provider", "anthropic"), ("include_hitl", "maybe")],
)
def test_an_unsupported_choice_is_refused_before_anything_is_baked(
    tmp_path: Path, name: str, value: str
) -> None:
    with pytest.raises(ValueError, match=f"{value} provided for choice variable {name}"):
        bake_into(tmp_path, **{name: value})

    assert not [p for p in tmp_path.iterdir() if not p.name.startswith(".")]


def test_a_project_name_that_derives_an_invalid_package_is_rejected(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(FailedHookException):
        bake_into(tmp_path, project_name="42 Desk")

    assert "invalid package_name '42_desk'" in capfd.readouterr().err


def test_the_documented_command_line_bakes_with_key_value_answers(tmp_path: Path) -> None:
    """`cookiecutter --no-input template/ key=value ...`, as docs/template.md shows it."""
    config = tmp_path / "config.yaml"
    config.write_text(f"cookiecutters_dir: {tmp_path / 'cc'}\nreplay_dir: {tmp_path / 'replay'}\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cookiecutter",
            "--no-input",
            "--config-file",
            str(config),
            "--output-dir",
            str(tmp_path),
            str(TEMPLATE),
            "project_name=Fraud Desk",
            "longterm_backend=redis",
            "include_hitl=no",
            f"beam_agents_requirement={LOCAL_REQUIREMENT}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    project = tmp_path / "fraud-desk"
    assert (project / "infra" / "memory_redis.tf").is_file()
    assert not (project / "tests" / "test_hitl.py").exists()


@pytest.mark.parametrize("framework", ["adk", "langgraph"])
def test_a_framework_without_a_longterm_store_is_refused(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], framework: str
) -> None:
    """Its tools run once through the tool ledger, which lives in the long-term store."""
    with pytest.raises(FailedHookException):
        bake_into(tmp_path, framework=framework, longterm_backend="none")

    (line,) = [line for line in capfd.readouterr().err.splitlines() if line.startswith("ERROR:")]
    assert line.startswith(f"ERROR: invalid framework {framework!r} with longterm_backend 'none'")
    assert "tool ledger" in line
    assert not [p for p in tmp_path.iterdir() if not p.name.startswith(".")], "files were written"
