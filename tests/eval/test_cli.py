"""`beam-agents eval` gates a change: exit 0 if every gate passes, 1 if one fails, 2 on misuse."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from beam_agents.cli import main
from beam_agents.eval.cli import add_arguments
from beam_agents.model.messages import LlmRequest, canonical_request_bytes
from tests.eval import agents
from tests.eval.logs import TOOL_LINE, write_log

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


def _model_line(**fields: Any) -> str:
    """A recorded answer to v1's first request (the urgent alert of key a), with `fields` set."""
    request = LlmRequest(
        model_id="fake-1",
        messages=[
            {"role": "system", "content": agents.PROMPT},
            {"role": "user", "content": "disk urgent"},
        ],
    )
    line = {
        "kind": "model",
        "request": json.loads(canonical_request_bytes(request)),
        "response": '{"priority": "high", "reason": "says urgent"}',
        "model_id": "fake-1",
        "input_tokens": 12,
        "output_tokens": 7,
        "latency_ms": 3.5,
        **fields,
    }
    return json.dumps({k: v for k, v in line.items() if v is not None})


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (_model_line(model_id=None), "a model line needs model_id"),
        (_model_line(input_tokens=None), "a model line needs input_tokens"),
        (_model_line(output_tokens="7"), "a model line's output_tokens must be an int >= 0"),
        (_model_line(latency_ms=-1), "a model line's latency_ms must be a number >= 0"),
        (_model_line(tokens=19), "a model line has no field 'tokens'"),
        ('{"kind": "model", "request": ', "not JSON"),
        ('{"kind": "answer"}', "kind must be model, embed or tool, got 'answer'"),
        (json.dumps({**TOOL_LINE, "args": "7"}), "a tool line's args must be a JSON object"),
        (
            json.dumps({"kind": "embed", "model_id": "e", "texts": ["a"], "vectors": []}),
            "an embed line needs input_tokens",
        ),
    ],
)
def test_a_malformed_recording_line_exits_2_naming_the_file_line_and_field_before_anything_runs(
    tmp_path: Path, line: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _argv(tmp_path, "--candidate", V1, "--gate", "priority>=0.5")
    recording = tmp_path / "recording.jsonl"
    recording.write_text(recording.read_text() + line + "\n")

    code = main(argv)

    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"beam-agents eval: error: {recording}:2: ")
    assert says in err[0]
    assert agents.MODEL.call_count() == 0, "the candidate ran"
    assert not (tmp_path / "out").exists()


def test_a_candidate_whose_config_raises_exits_2_naming_it_in_one_line_without_a_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = "v1=tests.eval.agents:triage_v1?tests.eval.agents:broken_config"

    code = main(_argv(tmp_path, "--candidate", broken))

    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(
        "beam-agents eval: error: candidate v1: config 'tests.eval.agents:broken_config' raised "
        "RuntimeError: model catalogue unreachable"
    )
    assert agents.SECRET_IN_CONFIG_ERROR not in err[0]
    assert not (tmp_path / "out").exists()


def test_a_judge_whose_key_is_unset_exits_2_naming_it_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rubric = tmp_path / "rubric.txt"
    rubric.write_text("Is the priority right for the alert?")
    judge = f"judge:openai:gpt-4o-mini:{rubric}"

    code = main(_argv(tmp_path, "--candidate", V1, "--scorer", judge))

    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "scorer 'judge'" in err[0]
    assert "environment variable OPENAI_API_KEY is not set" in err[0]
    assert agents.MODEL.call_count() == 0, "the candidate ran before the judge was checked"


def test_every_eval_option_has_help_and_tools_says_what_each_mode_answers() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)

    for action in parser._actions:
        assert action.help, f"{action.option_strings or action.dest} has no help"
    tools = parser.format_help().split("--tools", 1)[1]
    for mode in ("record", "stub", "fail"):
        assert f"{mode}," in " ".join(tools.split()), mode


def test_quiet_prints_no_dead_letter_warning_and_the_summary_still_counts_them(
    tmp_path: Path,
) -> None:
    """As `make eval` runs it: the installed command, its stderr as a CI log shows it."""
    command = Path(sys.executable).with_name("beam-agents")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [str(command), *_argv(tmp_path, "--candidate", V1, "--gate", "dead_letters<=5")],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert "dead letter" not in done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["candidates"][0]["dead_letters"] == {
        "model_error": 1,
        "suspension_timeout": 1,
    }
    assert "gate dead_letters<=5: pass" in done.stderr
