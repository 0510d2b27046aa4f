"""An ADK agent under RunAgent on the streaming DirectRunner, against loopback servers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from beam_agents import AgentConfig, FlushToLongterm
from beam_agents.memory.stores import open_store
from beam_agents.model import provider_from_spec
from beam_agents.testing.chaos import fail_commit_once
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.adapters.adk_support import (
    KEY_ENV,
    PAGER_ENV,
    Pager,
    ScriptedModel,
    provider_spec,
    triage_agent,
)

pytestmark = pytest.mark.pipeline


@pytest.fixture
def model(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedModel:
    monkeypatch.setenv(KEY_ENV, "sk-adk-test-0123456789")
    return ScriptedModel(httpserver)


@pytest.fixture
def pager(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> Pager:
    pager = Pager(httpserver)
    monkeypatch.setenv(PAGER_ENV, pager.url)
    return pager


def _config(
    server: HTTPServer, store: str, root_agent: Any, read_only: tuple[str, ...] = (), **options: Any
) -> AgentConfig:
    from beam_agents.adapters.adk import adk_tools

    return AgentConfig(
        provider_factory=provider_from_spec(provider_spec(server)),
        longterm_memory=store,
        tools=adk_tools(root_agent, read_only_tools=read_only),
        activation_timeout_s=30.0,
        **options,
    )


def _run(server: HTTPServer, store: str, script: Script, **options: Any) -> StreamRun:
    from beam_agents.adapters.adk import adk_agent

    root_agent = triage_agent()
    return run_script(adk_agent(root_agent), _config(server, store, root_agent, **options), script)


def test_a_keys_second_event_sees_its_first_events_conversation(
    httpserver: HTTPServer, model: ScriptedModel, pager: Pager
) -> None:
    script = (
        Script()
        .events(("db", b"db latency is high", 1_000), ("web", b"web is slow", 1_000))
        .watermark(1_500)
        .events(("db", b"db latency is still high", 2_000))
    )

    run = _run(httpserver, "memory://adk-conversation", script)

    assert run.errors == []
    assert sorted(run.outputs) == [
        (b"db", b"heard: db latency is high"),
        (b"db", b"heard: db latency is high | db latency is still high"),
        (b"web", b"heard: web is slow"),
    ]
    assert model.calls == 3


def test_a_retried_bundle_asks_the_model_nothing_more_and_pages_once(
    httpserver: HTTPServer, model: ScriptedModel, pager: Pager
) -> None:
    script = Script().events(("db", b"db is down", 1_000))

    with fail_commit_once(b"db", 1) as fault:
        run = _run(httpserver, "memory://adk-retry", script)

    assert fault.fired == [(b"db", 1)]
    assert run.errors == []
    assert run.outputs == [(b"db", b'paged: {"page":"P-1"}')]
    assert model.calls == 2  # the tool call, then the answer to its result
    assert pager.pages == {"db": 1}
    assert run.counter("beam_agents.runtime", "tool_calls") == 1


def _flushed_session(store: str, key: bytes) -> bytes:
    """The working memory FlushToLongterm wrote for `key`, as the store holds it."""
    record = asyncio.run(open_store(store).load(key, "working_memory"))
    assert record is not None
    return record.value


def _expiring(*events: tuple[str, bytes, int]) -> Script:
    return Script().events(*events).watermark(events[-1][2] + 1).watermark(1_000_000)


@pytest.mark.parametrize("faulty", [False, True])
def test_session_bytes_are_identical_whether_calls_park_or_not_and_after_a_retry(
    httpserver: HTTPServer, model: ScriptedModel, pager: Pager, faulty: bool
) -> None:
    """ADK's uuids and clock are bound to the activation: the flushed session is byte-equal."""
    script = _expiring(("db", b"db is down", 1_000), ("db", b"db is back", 2_000))
    flushed, parks = [], []
    for inflight, store in ((1, "memory://adk-bytes-1"), (256, "memory://adk-bytes-256")):
        model.delay_s = 0.05 if inflight > 1 else 0.0
        with fail_commit_once(b"db", 2, times=1 if faulty else 0):
            run = _run(
                httpserver,
                f"{store}-{faulty}",
                script,
                max_inflight_calls=inflight,
                tool_ledger=f"memory://adk-bytes-ledger-{faulty}",
                ttl_ms=10_000,
                on_expire=FlushToLongterm(),
            )
        assert run.errors == []
        parks.append(run.counter("beam_agents.runtime", "parks"))
        flushed.append(_flushed_session(f"{store}-{faulty}", b"db"))

    assert parks[0] == 0
    assert parks[1] > 0
    assert flushed[0] == flushed[1]
    assert b"adk/session/db" in flushed[0]
    assert pager.pages == {"db": 1}  # the second pipeline finds the page in the ledger


def test_a_new_pipeline_continues_the_conversation_from_the_longterm_tier(
    httpserver: HTTPServer, model: ScriptedModel, pager: Pager
) -> None:
    store = "memory://adk-restart"
    options: dict[str, Any] = {"ttl_ms": 10_000, "on_expire": FlushToLongterm()}
    first = _run(httpserver, store, _expiring(("db", b"db latency is high", 1_000)), **options)
    second = _run(
        httpserver, store, Script().events(("db", b"db latency is still high", 500_000)), **options
    )

    assert first.outputs == [(b"db", b"heard: db latency is high")]
    assert second.outputs == [(b"db", b"heard: db latency is high | db latency is still high")]
    assert second.errors == []


def test_remembered_sessions_are_found_by_adks_memory_tools_in_a_new_pipeline(
    httpserver: HTTPServer, model: ScriptedModel, pager: Pager
) -> None:
    """`remember=True` saves to the long-term tier; ADK's preload_memory finds it by its words."""
    from google.adk.agents import LlmAgent
    from google.adk.tools.preload_memory_tool import PreloadMemoryTool

    from beam_agents.adapters.adk import BeamAgentsLlm, adk_agent

    store = "memory://adk-remember"
    root_agent = LlmAgent(
        name="triage",
        model=BeamAgentsLlm(model="gpt-test"),
        instruction="Triage the alert.",
        tools=[PreloadMemoryTool()],
    )
    agent = adk_agent(root_agent, read_only_tools=["preload_memory"], remember=True)
    config = _config(httpserver, store, root_agent, ("preload_memory",))
    first = run_script(agent, config, Script().events(("db", b"db latency is high", 1_000)))
    rows = asyncio.run(open_store(store).search(b"db", "adk/memory/", 10))
    second = run_script(agent, config, Script().events(("db", b"db latency again", 9_000)))

    assert first.errors == second.errors == []
    assert sorted(json.loads(row.value)["text"] for row in rows) == [
        "db latency is high",
        "heard: db latency is high",
    ]
    (recalled,) = [
        message["content"]
        for message in model.requests[-1]["messages"]
        if "db latency is high" in message["content"]
    ]
    assert "user: db latency is high\ntriage: heard: db latency is high" in recalled
    # A fresh session: the first pipeline's turns reached the model only as recalled memory.
    ((key, output),) = second.outputs
    assert key == b"db"
    assert output.endswith(b"</PAST_CONVERSATIONS>\n | db latency again")
