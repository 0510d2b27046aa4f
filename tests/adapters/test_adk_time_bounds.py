"""An ADK agent fed events at Beam's timestamp bounds, which no `datetime` holds.

ADK stamps each event with its platform clock, which the adapter binds to
the event's time, and its session services turn those stamps into
`datetime`s. `beam.Create` stamps Beam's minimum timestamp; an element at
the global window's end carries one about 290,000 years on. The events
reach the output, and the stamps ADK keeps are the nearest instants a
`datetime` holds.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to, is_empty
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MAX_TIMESTAMP
from pytest_httpserver import HTTPServer

from beam_agents import AgentConfig, RunAgent
from beam_agents.memory.stores import open_store
from beam_agents.model import provider_from_spec
from beam_agents.testing.streaming import Script, run_script
from tests.adapters.adk_support import KEY_ENV, ScriptedModel, provider_spec, triage_agent

pytestmark = pytest.mark.pipeline


@pytest.fixture
def model(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedModel:
    monkeypatch.setenv(KEY_ENV, "sk-adk-bounds-0123456789")
    return ScriptedModel(httpserver)


def _agent_and_config(server: HTTPServer, store: str) -> tuple[Any, AgentConfig]:
    """The triage agent, remembering each event's session in `store`'s long-term tier."""
    from beam_agents.adapters.adk import adk_agent, adk_tools

    root_agent = triage_agent()
    config = AgentConfig(
        provider_factory=provider_from_spec(provider_spec(server)),
        longterm_memory=store,
        tools=adk_tools(root_agent),
        activation_timeout_s=30.0,
    )
    return adk_agent(root_agent, remember=True), config


def _remembered_times(store: str, entity_key: bytes) -> set[datetime]:
    """ADK's stamps on the remembered events, as its session services read them."""
    rows = asyncio.run(open_store(store).search(entity_key, "adk/memory/", 10))
    assert rows
    return {datetime.fromtimestamp(json.loads(r.value)["timestamp"], UTC) for r in rows}


def test_beam_create_events_reach_the_output_stamped_with_year_one(
    httpserver: HTTPServer, model: ScriptedModel
) -> None:
    store = "memory://adk-bounds-create"
    agent, config = _agent_and_config(httpserver, store)
    with beam.Pipeline() as pipeline:
        events = pipeline | beam.Create([("db-3", b"disk full"), ("web-1", b"cpu idle")])
        result = events | RunAgent(agent, config)
        assert_that(result.errors | beam.Map(lambda e: e.reason), is_empty(), label="NoErrors")
        expected = [(b"db-3", b"heard: disk full"), (b"web-1", b"heard: cpu idle")]
        assert_that(result.outputs, equal_to(expected), label="Outputs")

    assert _remembered_times(store, b"db-3") == {datetime(1, 1, 1, tzinfo=UTC)}


@pytest.mark.parametrize(
    "event_ms",
    [MAX_TIMESTAMP.micros // 1000 - 1, GlobalWindow().max_timestamp().micros // 1000],
    ids=["last-ms-before-max-timestamp", "global-window-end"],
)
def test_an_event_at_beams_latest_times_reaches_the_output_stamped_with_year_9999(
    httpserver: HTTPServer, model: ScriptedModel, event_ms: int
) -> None:
    """`TestStream` refuses an element at `MAX_TIMESTAMP` itself: the last millisecond before."""
    store = f"memory://adk-bounds-{event_ms}"
    agent, config = _agent_and_config(httpserver, store)

    run = run_script(agent, config, Script().events(("db-3", b"disk full", event_ms)))

    assert run.errors == []
    assert run.outputs == [(b"db-3", b"heard: disk full")]
    (stamp,) = _remembered_times(store, b"db-3")
    assert (stamp.year, stamp.month, stamp.day, stamp.hour, stamp.minute) == (9999, 12, 31, 23, 59)
