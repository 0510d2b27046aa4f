"""A LangGraph graph fed events at Beam's timestamp bounds, which no `datetime` holds.

`beam.Create` stamps Beam's minimum timestamp (about 290,000 years before
year 1); an element at the global window's end carries one about 290,000
years after. The checkpoint's time is the event's, shown as the nearest
instant a `datetime` holds, and nothing is dead-lettered.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, is_empty
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MAX_TIMESTAMP
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from tests.adapters.conftest import require_langgraph

require_langgraph()

from beam_agents import AgentConfig, FlushToLongterm, RunAgent  # noqa: E402
from beam_agents.adapters.langgraph import CHECKPOINT_KEY, graph_agent  # noqa: E402
from beam_agents.adapters.langgraph._serde import CheckpointSerializer  # noqa: E402
from beam_agents.memory.expire import read_expired_memory  # noqa: E402
from beam_agents.memory.facade import Memory  # noqa: E402
from beam_agents.memory.longterm import LongtermMemory  # noqa: E402
from beam_agents.memory.stores import open_store  # noqa: E402
from beam_agents.model import provider_from_spec  # noqa: E402
from beam_agents.testing.streaming import Script, run_script  # noqa: E402
from tests.adapters import lg_graph  # noqa: E402

pytestmark = pytest.mark.pipeline

KEY_ENV = "BEAM_AGENTS_TEST_LG_BOUNDS_KEY"
agent = graph_agent(lg_graph.graph, read_only_tools=["lookup_runbook"])


@pytest.fixture
def server(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> HTTPServer:
    """A loopback OpenAI-compatible model answering from `lg_graph.script`."""
    monkeypatch.setenv(KEY_ENV, "sk-test-langgraph-bounds")

    def answer(request: Request) -> Response:
        message = lg_graph.script(json.loads(request.get_data(as_text=True))["messages"])
        completion = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "triage-served",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
        }
        return Response(json.dumps(completion), content_type="application/json")

    httpserver.expect_request("/v1/chat/completions").respond_with_handler(answer)
    return httpserver


def _config(server: HTTPServer, store: str) -> AgentConfig:
    spec = (
        f"openai:triage?base_url={server.url_for('/v1')}&api_key_env={KEY_ENV}"
        "&timeout_s=5&max_retries=0"
    )
    return AgentConfig(
        provider_factory=provider_from_spec(spec),
        activation_timeout_s=30.0,
        longterm_memory=store,
        on_expire=FlushToLongterm(),
    )


def _flushed_checkpoint_time(store: str, entity_key: bytes) -> str:
    """The `ts` of the checkpoint the TTL flushed for `entity_key`, as LangGraph reads it."""

    async def read() -> bytes | None:
        longterm = LongtermMemory(
            open_store(store), entity_key=entity_key, seq=99, now_ms=0, timeout_s=5.0
        )
        blob = await read_expired_memory(longterm)
        return None if blob is None else Memory(blob, now_ms=0).get(CHECKPOINT_KEY)

    data = asyncio.run(read())
    assert data is not None
    kind, _, body = data.removeprefix(b"beam-agents/langgraph/1\0").partition(b"\0")
    record: dict[str, Any] = CheckpointSerializer().loads_typed((kind.decode(), body))
    return str(record["checkpoint"]["ts"])


def test_beam_create_events_reach_the_output_and_the_checkpoint_shows_year_one(
    server: HTTPServer,
) -> None:
    """Two events of one key from `beam.Create`: the second sees the first's conversation,
    so the checkpoint stamped with Beam's minimum timestamp was committed and read back."""
    store = "memory://lg-bounds-create"
    with beam.Pipeline() as pipeline:
        events = pipeline | beam.Create([("db-3", b"disk full"), ("db-3", b"disk fuller")])
        result = events | RunAgent(agent, _config(server, store))
        assert_that(result.errors | beam.Map(lambda e: e.reason), is_empty(), label="NoErrors")
        assert_that(result.outputs, _one_turn_then_the_next, label="Outputs")

    assert _flushed_checkpoint_time(store, b"db-3") == "0001-01-01T00:00:00+00:00"


def _one_turn_then_the_next(outputs: list[tuple[bytes, bytes]]) -> None:
    """Whichever event ran first, the other saw its turn (`noted 2`)."""
    assert sorted((key, text[: len("noted 1")]) for key, text in outputs) == [
        (b"db-3", b"noted 1"),
        (b"db-3", b"noted 2"),
    ], outputs


@pytest.mark.parametrize(
    "event_ms",
    [MAX_TIMESTAMP.micros // 1000 - 1, GlobalWindow().max_timestamp().micros // 1000],
    ids=["last-ms-before-max-timestamp", "global-window-end"],
)
def test_an_event_at_beams_latest_times_reaches_the_output_and_shows_year_9999(
    server: HTTPServer, event_ms: int
) -> None:
    """`TestStream` refuses an element at `MAX_TIMESTAMP` itself: the last millisecond before."""
    store = f"memory://lg-bounds-{event_ms}"
    script = Script().events(("db-3", b"disk full", event_ms))

    run = run_script(agent, _config(server, store), script)

    assert run.errors == []
    assert run.outputs == [(b"db-3", b"noted 1: disk full")]
    assert _flushed_checkpoint_time(store, b"db-3") == "9999-12-31T23:59:59.999000+00:00"
