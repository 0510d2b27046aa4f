"""ADK's tool confirmation as a Suspend, answered from the console, resuming the agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from app.triage.records import intent_json
from beam_agents import AgentConfig
from beam_agents.console.activity import RunActivity
from beam_agents.console.answers import AnswersFile
from beam_agents.model import provider_from_spec
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.adapters.adk_support import (
    KEY_ENV,
    PAGER_ENV,
    Pager,
    ScriptedModel,
    provider_spec,
    restart_agent,
    triage_agent,
)

pytestmark = pytest.mark.pipeline

ALERT = ("db", b"db is down", 1_000)


@pytest.fixture
def model(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedModel:
    monkeypatch.setenv(KEY_ENV, "sk-adk-test-0123456789")
    return ScriptedModel(httpserver)


@pytest.fixture
def pager(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> Pager:
    pager = Pager(httpserver)
    monkeypatch.setenv(PAGER_ENV, pager.url)
    return pager


def _run(server: HTTPServer, store: str, script: Script, root_agent: Any = None) -> StreamRun:
    from beam_agents.adapters.adk import adk_agent, adk_tools

    root_agent = root_agent or triage_agent(confirm=True)
    config = AgentConfig(
        provider_factory=provider_from_spec(provider_spec(server)),
        longterm_memory=store,
        tools=adk_tools(root_agent),
        activation_timeout_s=30.0,
    )
    return run_script(adk_agent(root_agent), config, script)


def _answer_from_console(run_dir: Path, suspended: StreamRun, decision: str) -> tuple[str, bytes]:
    """The approval the pipeline emitted, answered the way a person answers it in the console."""
    run_dir.mkdir()
    (run_dir / "intents.jsonl").write_bytes(
        b"".join(intent_json(intent) + b"\n" for intent in suspended.intents)
    )
    activity = RunActivity(run_dir, approval_timeout_ms=86_400_000)
    activity.refresh()
    (approval,) = activity.approvals()
    AnswersFile(run_dir / "answers.jsonl", activity).submit(
        approval.intent_id, decision, "checked the dashboard", "Ada"
    )
    (line,) = (run_dir / "answers.jsonl").read_bytes().splitlines()
    return approval.intent_id, line


def _suspend_then_answer(
    server: HTTPServer, tmp_path: Path, decision: str
) -> tuple[StreamRun, StreamRun]:
    store = f"memory://adk-hitl-{decision}"
    suspended = _run(server, store, Script().events(ALERT))
    intent_id, answer = _answer_from_console(tmp_path / "run", suspended, decision)
    script = Script().events(ALERT).watermark(2_000).answers(("db", intent_id, answer, 3_000))
    return suspended, _run(server, store, script)


def test_a_tool_confirmation_suspends_and_the_consoles_approval_resumes_it(
    httpserver: HTTPServer, tmp_path: Path, model: ScriptedModel, pager: Pager
) -> None:
    suspended, resumed = _suspend_then_answer(httpserver, tmp_path, "approve")

    assert suspended.outputs == []
    (approval,) = suspended.intents
    assert approval.awaits_answer
    prompt: dict[str, Any] = json.loads(approval.prompt)
    assert prompt["kind"] == "confirmation"
    assert (prompt["tool"], prompt["entity"]) == ("page_oncall", "db")
    assert prompt["args"] == {"service": "db", "reason": "db is down"}
    assert resumed.errors == []
    assert resumed.outputs == [(b"db", b'paged: {"page":"P-1"}')]
    assert pager.pages == {"db": 1}
    # One call before the suspension in each pipeline; the resume replays it, then one more.
    assert model.calls == 3
    assert resumed.counter("beam_agents.runtime", "model_cache_hits") >= 1


def test_a_denied_confirmation_resumes_the_agent_without_running_the_tool(
    httpserver: HTTPServer, tmp_path: Path, model: ScriptedModel, pager: Pager
) -> None:
    _, resumed = _suspend_then_answer(httpserver, tmp_path, "deny")

    assert resumed.errors == []
    ((key, output),) = resumed.outputs
    assert key == b"db"
    assert b"rejected" in output
    assert pager.pages == {}


def test_a_long_running_tool_suspends_until_its_result_arrives_as_the_answer(
    httpserver: HTTPServer, model: ScriptedModel, pager: Pager
) -> None:
    store = "memory://adk-long-running"
    alert = ("db", b"db needs a restart", 1_000)
    suspended = _run(httpserver, store, Script().events(alert), restart_agent())
    (waiting,) = suspended.intents
    done = b'{"status":"done"}'
    script = Script().events(alert).watermark(2_000).answers(("db", waiting.intent_id, done, 3_000))

    resumed = _run(httpserver, store, script, restart_agent())

    prompt = json.loads(waiting.prompt)
    assert (prompt["kind"], prompt["tool"], prompt["args"]) == (
        "long_running",
        "restart_service",
        {"service": "db"},
    )
    assert resumed.errors == []
    assert resumed.outputs == [(b"db", b'paged: {"status":"done"}')]
    assert pager.pages == {"restart-db": 1}  # started once, though both pipelines ran it
