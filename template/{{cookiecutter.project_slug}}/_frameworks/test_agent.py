{%- set store = cookiecutter.longterm_backend != "none" -%}
{%- set hitl = cookiecutter.include_hitl == "yes" -%}
"""The {% if cookiecutter.framework == "adk" %}ADK{% else %}LangGraph{% endif %} agent on the streaming DirectRunner (TestStream) with the scripted model.

`run_agent(..., output_type=Decision)` runs it as the pipeline does: its
outputs are `(key, Decision)`, typed decisions, not bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from beam_agents.local import Script, run_agent

from {{ cookiecutter.package_name }}.agent import Decision, agent
from {{ cookiecutter.package_name }}.graph import SCRIPTED_MODEL, config
from {{ cookiecutter.package_name }}.pipeline import main

DATA = Path(__file__).resolve().parents[1] / "data"
#: In-process stores named after this package: each test's own, whatever else runs beside it.
STORE = "memory://{{ cookiecutter.package_name }}"


def _labels(outputs: list[tuple[bytes, Decision]]) -> dict[str, list[str]]:
    labels: dict[str, list[str]] = {}
    for key, decision in outputs:
        labels.setdefault(key.decode(), []).append(decision.label)
    return labels


def test_each_event_gets_one_typed_decision_from_the_model() -> None:
    script = Script().events(
        ("acct-1", b"question: how do I export my data?", 1_000),
        ("acct-2", b"newsletter opened", 2_000),
    )

    run = run_agent(
        agent,
        config(SCRIPTED_MODEL{% if store %}, f"{STORE}-decisions-test"{% endif %}),
        script,
        output_type=Decision,
    )

    assert run.errors == []
    assert _labels(run.outputs) == {"acct-1": ["reply"], "acct-2": ["ignore"]}
    assert [decision.answer for _, decision in sorted(run.outputs)] == [
        "needs an answer",
        "nothing to do",
    ]


def test_working_memory_carries_the_entity_history_into_the_next_call() -> None:
    """The second event alone asks nothing; its history in working memory does."""
    script = Script().events(("acct-9", b"question: can I change my plan?", 1_000))
    script = script.watermark(1_500).events(("acct-9", b"ok, thanks", 2_000))

    run = run_agent(
        agent,
        config(SCRIPTED_MODEL{% if store %}, f"{STORE}-history-test"{% endif %}),
        script,
        output_type=Decision,
    )

    assert run.errors == []
    assert _labels(run.outputs) == {"acct-9": ["reply", "reply"]}


def test_make_run_processes_the_bundled_sample_events(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["--input", str(DATA / "events.jsonl"), "--model", SCRIPTED_MODEL]
{%- if hitl %}
    argv += ["--answers", str(DATA / "answers.jsonl")]
{%- endif %}
{%- if cookiecutter.longterm_backend == "sqlite" %}
    argv += ["--longterm", f"{STORE}-sample-run"]
{%- endif %}

    assert main(argv) == 0

    printed = [line.split(" ", 1) for line in capsys.readouterr().out.splitlines()]
    outputs = [json.loads(payload) for kind, payload in printed if kind == "outputs"]
    assert len(outputs) == 5
    assert {o["entity"]: o["label"] for o in outputs}["acct-3"] == "act"
    intents = [json.loads(payload) for kind, payload in printed if kind == "intents"]
{%- if hitl %}
    (approval,) = intents  # the tool itself runs in the pipeline: it is no intent
    assert (approval["entity"], approval["awaits_answer"]) == ("acct-3", True)
{%- else %}
    assert intents == []  # the tool runs in the pipeline, through the ledger: no intent
{%- endif %}
    answers = {o["entity"]: o["answer"] for o in outputs}
    assert answers["acct-3"] == "action taken"  # take_action ran, through the ledger
    assert "errors" not in [kind for kind, _ in printed]


def test_a_local_run_needs_no_flags_and_no_network(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scripted model is the local default{% if cookiecutter.longterm_backend == "sqlite" %}; the local SQLite file is provisioned under out/{% endif %}."""
    monkeypatch.chdir(tmp_path)

    assert main(["--input", str(DATA / "events.jsonl")]) == 0

    printed = [line.split(" ", 1) for line in capsys.readouterr().out.splitlines()]
{%- if hitl %}
    # No answers file: the approval acct-3 waits for is never given.
    assert [kind for kind, _ in printed].count("outputs") == 4
    errors = [json.loads(payload)["reason"] for kind, payload in printed if kind == "errors"]
    assert errors == ["ttl_wiped_suspension"]
{%- else %}
    assert [kind for kind, _ in printed].count("outputs") == 5
    assert "errors" not in [kind for kind, _ in printed]
{%- endif %}
{%- if cookiecutter.longterm_backend == "sqlite" %}
    assert (tmp_path / "out" / "longterm.sqlite").is_file()
{%- endif %}


def test_an_event_with_an_empty_key_is_dead_lettered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text('{"key": "", "text": "urgent: who am I?", "time_ms": 5}\n')
    argv = ["--input", str(events){% if store %}, "--longterm", f"{STORE}-empty-key"{% endif %}]

    assert main(argv) == 1  # nothing succeeded: the run says so in its exit status

    captured = capsys.readouterr()
    assert captured.err.splitlines()[-2:] == [
        "dead letters: 1 (invalid_event 1)",
        "error: every event was dead-lettered; nothing succeeded",
    ]
    printed = [line.split(" ", 1) for line in captured.out.splitlines()]
    (error,) = [json.loads(payload) for kind, payload in printed if kind == "errors"]
    assert (error["reason"], error["entity"], error["payload"]) == (
        "invalid_event",
        "",
        "urgent: who am I?",
    )
    assert "outputs" not in [kind for kind, _ in printed]


def test_a_malformed_input_line_is_reported_with_its_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text('{"key": "a", "text": "x", "time_ms": 1}\n{"key": "b"}\n')

    assert main(["--input", str(events)]) == 2

    assert f"{events}:2: missing text, time_ms" in capsys.readouterr().err
{%- if store %}


def test_a_local_run_on_an_unprovisioned_store_fails_in_one_line_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "never-provisioned.sqlite"
    argv = ["--input", str(DATA / "events.jsonl"), "--longterm", f"sqlite+aiosqlite:///{missing}"]

    assert main(argv) == 1

    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert "beam-agents provision" in line
    assert not missing.exists()
{%- endif %}
