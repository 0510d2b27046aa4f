"""Following a growing run directory, and what the answers sink accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beam_agents.console.activity import RunActivity
from beam_agents.console.answers import AnswerRefusedError, AnswersFile
from beam_agents.console.follow import JsonLinesFollower
from tests.console.conftest import approval, write_lines


def test_a_half_written_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "intents.jsonl"
    follower = JsonLinesFollower(path)
    path.write_bytes(b'{"a": 1}\n{"b"')

    first, _ = follower.read_new()
    with path.open("ab") as handle:
        handle.write(b": 2}\n")
    second, _ = follower.read_new()

    assert (first, second) == ([{"a": 1}], [{"b": 2}])


def test_a_line_nested_past_the_recursion_limit_is_skipped_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "intents.jsonl"
    follower = JsonLinesFollower(path)
    deep = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    path.write_bytes(b'{"a": 1}\n' + deep + b'\n{"b": 2}\n')

    records, _ = follower.read_new()

    assert records == [{"a": 1}, {"b": 2}]
    assert follower.skipped == 1


def test_a_rewritten_file_is_read_again_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "intents.jsonl"
    follower = JsonLinesFollower(path)
    path.write_bytes(b'{"a": 1}\n{"a": 2}\n')
    follower.read_new()
    path.write_bytes(b'{"a": 3}\n')

    assert follower.read_new() == ([{"a": 3}], True)


def test_an_approval_stops_being_pending_when_it_times_out(tmp_path: Path) -> None:
    write_lines(tmp_path / "intents.jsonl", [approval("svc-1", "a-1", "unreachable", "i-1")])
    activity = RunActivity(tmp_path, approval_timeout_ms=1000)
    activity.refresh()
    assert [a.pending for a in activity.approvals()] == [True]
    payload = json.dumps({"alert_id": "a-1", "service": "svc-1"})
    write_lines(
        tmp_path / "errors.jsonl",
        [{"service": "svc-1", "reason": "suspension_timeout", "payload": payload}],
    )

    activity.refresh()

    assert [a.state for a in activity.approvals()] == ["timed out"]
    with pytest.raises(AnswerRefusedError, match="no longer pending"):
        AnswersFile(tmp_path / "answers.jsonl", activity).submit("i-1", "approve", "", "Ada")


def test_a_follow_ups_later_escalation_leaves_the_answered_approval_paged(tmp_path: Path) -> None:
    """The outputs as the triage app writes them: the approved page, then a recheck's escalation."""
    write_lines(tmp_path / "intents.jsonl", [approval("svc-1", "a-1", "unreachable", "i-1")])
    decision = {"service": "svc-1", "alert_id": "a-1", "class": "P1", "seq": 1}
    write_lines(
        tmp_path / "outputs.jsonl",
        [{**decision, "decision": "paged"}, {**decision, "decision": "escalated", "seq": 2}],
    )
    activity = RunActivity(tmp_path, approval_timeout_ms=1000)

    activity.refresh()

    assert [(a.state, a.outcome) for a in activity.approvals()] == [("decided", "paged")]


@pytest.mark.parametrize(
    ("decision", "approver", "message"),
    [("page", "Ada", "decision must be one of"), ("approve", "  ", "approver is required")],
)
def test_a_malformed_answer_is_refused_and_nothing_is_written(
    tmp_path: Path, decision: str, approver: str, message: str
) -> None:
    write_lines(tmp_path / "intents.jsonl", [approval("svc-1", "a-1", "unreachable", "i-1")])
    activity = RunActivity(tmp_path, approval_timeout_ms=1000)
    activity.refresh()
    sink = AnswersFile(tmp_path / "answers.jsonl", activity)

    with pytest.raises(AnswerRefusedError, match=message):
        sink.submit("i-1", decision, "", approver)

    assert not (tmp_path / "answers.jsonl").exists()


def test_an_answer_already_in_the_sink_makes_the_approval_answered(tmp_path: Path) -> None:
    write_lines(tmp_path / "intents.jsonl", [approval("svc-1", "a-1", "unreachable", "i-1")])
    write_lines(tmp_path / "answers.jsonl", [{"intent_id": "i-1", "answer": "approve"}])
    activity = RunActivity(tmp_path, approval_timeout_ms=1000)
    activity.refresh()
    sink = AnswersFile(tmp_path / "answers.jsonl", activity)

    with pytest.raises(AnswerRefusedError, match="already answered"):
        sink.submit("i-1", "deny", "", "Bob")
    assert [a.state for a in activity.approvals()] == ["answered"]


def test_the_command_line_builds_without_importing_the_web_framework() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from beam_agents.cli import main; main(['console', '--help']);"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'starlette', 'uvicorn', 'jinja2',"
        " 'apache_beam'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )

    assert "--answers SINK" in done.stdout
    assert done.stdout.strip().endswith("[]")
