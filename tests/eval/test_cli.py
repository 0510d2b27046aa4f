"""`beam-agents eval` gates a change: exit 0 if every gate passes, 1 if one fails, 2 on misuse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from beam_agents.cli import main
from tests.eval.logs import write_log

V1 = "v1=tests.eval.agents:triage_v1?tests.eval.agents:CONFIG"
V2 = "v2=tests.eval.agents:triage_v2?tests.eval.agents:CONFIG"
REPO = Path(__file__).resolve().parents[2]


def _argv(tmp_path: Path, *extra: str) -> list[str]:
    events, labels, recording = write_log(tmp_path)
    return [
        "eval",
        str(events),
        "--labels",
        str(labels),
        "--recording",
        str(recording),
        "--scorer",
        "field:priority",
        "--scorer",
        "trajectory:EXACT",
        "--out",
        str(tmp_path / "out"),
        "--quiet",
        *extra,
    ]


def test_passing_gates_exit_0_and_write_the_outputs(tmp_path: Path) -> None:
    code = main(
        _argv(
            tmp_path,
            "--candidate",
            V1,
            "--candidate",
            V2,
            "--gate",
            "priority>=0.5",
            "--gate",
            "delta(priority)>=0",
            "--gate",
            "dead_letters<=2",
        )
    )

    assert code == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [g["passed"] for g in summary["gates"]] == [True, True, True]
    assert summary["comparisons"][0]["deltas"]["priority"]["delta"] == 0.0
    assert (tmp_path / "out" / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_a_failing_gate_exits_1(tmp_path: Path) -> None:
    code = main(_argv(tmp_path, "--candidate", V1, "--gate", "priority>=0.9"))

    assert code == 1
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["gates"] == [{"expr": "priority>=0.9", "value": 0.5, "passed": False}]
    assert summary["passed"] is False


@pytest.mark.parametrize(
    "extra",
    [
        ("--candidate", V1, "--gate", "accuracy>=0.9"),  # no scorer named accuracy
        ("--candidate", V1, "--gate", "priority>0.9"),  # not the grammar
        ("--candidate", "v1=tests.eval.agents:no_such_agent"),
        ("--candidate", V1, "--scorer", "trajectory:SOMETIMES"),
    ],
)
def test_a_usage_error_exits_2_before_anything_runs(
    tmp_path: Path, extra: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(_argv(tmp_path, *extra))

    assert code == 2
    assert "beam-agents eval: error:" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_installed_command_exits_1_on_a_failing_gate(tmp_path: Path) -> None:
    """The process's own exit status, as a CI step sees it."""
    command = Path(sys.executable).with_name("beam-agents")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [str(command), *_argv(tmp_path, "--candidate", V1, "--gate", "priority>=0.9")],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
        check=False,
    )

    assert done.returncode == 1, done.stderr
    assert "gate priority>=0.9: FAIL (value 0.5)" in done.stderr
