"""Inputs and agents that once wedged a pipeline, lost an intent or committed past a failure.

Each test drives a real pipeline (the streaming DirectRunner, a TestStream)
with what a user's data or agent can do, and checks the documented outcome:
a dead letter on `.errors`, or a run that keeps one entity whole, never a
failed pipeline.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from typing import Any

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.testing import test_stream
from apache_beam.transforms.window import FixedWindows, TimestampedValue
from apache_beam.utils.timestamp import Timestamp

from beam_agents import AgentConfig, FlushToLongterm, RunAgent, Suspend
from beam_agents.memory.stores import InMemoryMemoryStore, MemoryRecord, open_store
from beam_agents.memory.stores.base import MAX_ENTITY_KEY_BYTES, MAX_VALUE_BYTES
from beam_agents.proto import MemoryBlob
from beam_agents.testing.streaming import Script, run_script
from tests.runtime import agents

pytestmark = pytest.mark.pipeline

TTL_MS = 60_000


@pytest.fixture
def uri() -> str:
    return f"memory://robust-{uuid.uuid4().hex}"


def _store(uri: str) -> InMemoryMemoryStore:
    store = open_store(uri)
    assert isinstance(store, InMemoryMemoryStore)
    return store


# -- windows ------------------------------------------------------------------------------

_collected: dict[str, list[Any]] = {}
_lock = threading.Lock()


class _Collect(beam.DoFn):
    def __init__(self, name: str) -> None:
        self._name = name

    def process(self, element: Any, window: Any = beam.DoFn.WindowParam) -> list[None]:
        with _lock:
            _collected.setdefault(self._name, []).append((element, window))
        return []


def test_windowed_input_keeps_one_entity_across_windows() -> None:
    """Fixed windows upstream: one key still has one seq, one memory and distinct intent ids."""
    run_id = uuid.uuid4().hex
    stream = (
        test_stream.TestStream()
        .add_elements([TimestampedValue(("k", b"a"), Timestamp(micros=1_000_000))])
        .advance_watermark_to(Timestamp(micros=12_000_000))
        .add_elements([TimestampedValue(("k", b"b"), Timestamp(micros=15_000_000))])
        .advance_watermark_to_infinity()
    )
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    with beam.Pipeline(runner="DirectRunner", options=options) as p:
        events = p | stream | beam.WindowInto(FixedWindows(10))
        result = events | RunAgent(agents.note_and_notify, AgentConfig())
        _ = result.outputs | "Outputs" >> beam.ParDo(_Collect(run_id + "outputs"))
        _ = result.intents | "Intents" >> beam.ParDo(_Collect(run_id + "intents"))

    outputs = _collected.pop(run_id + "outputs")
    intents = [intent for intent, _ in _collected.pop(run_id + "intents")]
    assert sorted(out for out, _ in outputs) == [(b"k", b"1:a"), (b"k", b"2:a,b")]
    assert all(isinstance(window, beam.window.GlobalWindow) for _, window in outputs)
    assert sorted(i.seq for i in intents) == [1, 2]
    assert len({i.intent_id for i in intents}) == 2


# -- on_expire ----------------------------------------------------------------------------


def _expire(*events: tuple[str, bytes, int]) -> Script:
    script = Script()
    for event in events:
        script.events(event).watermark(event[2] + 1)
    return script.watermark(events[-1][2] + TTL_MS + 1)


class _Handle:
    """`read_expired_memory` reads through an entity's handle; this is one over a store."""

    def __init__(self, store: InMemoryMemoryStore, entity_key: bytes) -> None:
        self._store, self._entity_key = store, entity_key

    async def load(self, key: str) -> MemoryRecord | None:
        return await self._store.load(self._entity_key, key)

    async def search(self, prefix: str, limit: int = 100) -> list[MemoryRecord]:
        return await self._store.search(self._entity_key, prefix, limit)


def test_on_expire_flushes_a_memory_whose_blob_outgrows_one_row(uri: str) -> None:
    config = AgentConfig(longterm_memory=uri, on_expire=FlushToLongterm(), ttl_ms=TTL_MS)

    run = run_script(agents.remember_many_ids, config, _expire(("ids", b"e", 1_000)))

    assert run.errors == []
    assert run.outputs == [(b"ids", b"120000")]  # 15% of the soft cap, in value bytes
    store = _store(uri)
    rows = asyncio.run(store.search(b"ids", "working_memory", 100))
    assert len(rows) >= 2
    assert all(len(row.value) <= MAX_VALUE_BYTES and row.seq == 1 for row in rows)
    from beam_agents.memory.expire import read_expired_memory

    whole = asyncio.run(read_expired_memory(_Handle(store, b"ids")))
    assert whole is not None
    assert len(whole.entries) == 60_000
    assert [e.key for e in whole.entries] == [f"seen/{i:05d}" for i in range(60_000)]
    assert whole.total_value_bytes == 120_000


def test_an_expire_flush_no_store_can_hold_is_dead_lettered_with_the_memory(uri: str) -> None:
    config = AgentConfig(longterm_memory=uri, on_expire=FlushToLongterm(), ttl_ms=TTL_MS)
    script = _expire(("k", b"huge", 1_000))
    script.events(("k", b"after", 200_000)).watermark(200_001)

    run = run_script(agents.remember_under_a_huge_key, config, script)

    assert run.reasons() == ["expire_flush_refused"]
    refused = run.errors[0]
    assert "refused by the store" in refused.detail
    blob = MemoryBlob.FromString(refused.payload)
    assert [len(e.key) for e in blob.entries] == [1_200_000]
    # The key was wiped, not wedged: the next event starts from empty memory.
    assert run.outputs == [(b"k", b"1"), (b"k", b"0")]


def test_an_entity_key_over_the_store_limit_is_dead_lettered_where_it_enters(uri: str) -> None:
    long_key = "x" * (MAX_ENTITY_KEY_BYTES + 1)
    config = AgentConfig(longterm_memory=uri, on_expire=FlushToLongterm(), ttl_ms=TTL_MS)
    script = _expire((long_key, b"a", 1_000), ("ok", b"b", 2_000))

    run = run_script(agents.remember, config, script)

    assert run.reasons() == ["invalid_event"]
    error = run.errors[0]
    assert error.entity_key == long_key.encode()
    assert f"over the {MAX_ENTITY_KEY_BYTES}-byte limit" in error.detail
    assert error.payload == b"a"
    assert run.outputs == [(b"ok", b"1:b")]


def test_a_long_key_is_admitted_without_a_store() -> None:
    long_key = "x" * (MAX_ENTITY_KEY_BYTES + 1)

    run = run_script(agents.remember, AgentConfig(), Script().events((long_key, b"a", 1_000)))

    assert run.errors == []
    assert run.outputs == [(long_key.encode(), b"1:a")]


# -- text that UTF-8 cannot encode -------------------------------------------------------------


def _parse_json(element: tuple[bytes, ...]) -> tuple[Any, ...]:
    """What a pipeline reading JSON hands on: `json.loads('"\\ud800"')` is a lone surrogate."""
    return tuple(json.loads(part) for part in element)


def test_lone_surrogates_in_keys_events_and_answers_are_dead_lettered_as_invalid() -> None:
    run_id = uuid.uuid4().hex
    events = [(b'"\\ud800"', b'"x"'), (b'"k"', b'"\\udc00"'), (b'"k"', b'"fine"')]
    answers = [(b'"\\ud800"', b'"id"', b'"yes"'), (b'"k"', b'"id\\ud800"', b'"yes"')]
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    with beam.Pipeline(runner="DirectRunner", options=options) as p:
        stream = (
            test_stream.TestStream(output_tags={"events", "answers"})
            .add_elements(
                [TimestampedValue(e, Timestamp(micros=1_000_000)) for e in events], tag="events"
            )
            .add_elements(
                [TimestampedValue(a, Timestamp(micros=1_000_000)) for a in answers],
                tag="answers",
            )
            .advance_watermark_to_infinity(tag="events")
            .advance_watermark_to_infinity(tag="answers")
        )
        streams = p | stream
        answer_elements = streams["answers"] | "ParseAnswers" >> beam.Map(_parse_json)
        result = (
            streams["events"]
            | "ParseEvents" >> beam.Map(_parse_json)
            | RunAgent(agents.remember, AgentConfig(), answers=answer_elements)
        )
        _ = result.outputs | "Outputs" >> beam.ParDo(_Collect(run_id + "outputs"))
        _ = result.errors | "Errors" >> beam.ParDo(_Collect(run_id + "errors"))

    errors = [error for error, _ in _collected.pop(run_id + "errors")]
    assert [e.reason for e in errors] == ["invalid_event"] * 4
    assert all("lone surrogate" in error.detail for error in errors)
    assert [out for out, _ in _collected.pop(run_id + "outputs")] == [(b"k", b"1:fine")]


def test_an_intent_no_wire_format_can_carry_fails_only_its_activation() -> None:
    script = Script().events(("k", b"bad", 1_000), ("k", b"good", 2_000))

    run = run_script(agents.emit_unencodable_intent, AgentConfig(), script)

    assert run.reasons() == ["activation_error"]
    assert run.outputs == [(b"k", b"good")]


# -- agents that misbehave ---------------------------------------------------------------


def test_an_agent_that_swallows_the_timeout_commits_nothing() -> None:
    config = AgentConfig(activation_timeout_s=0.2)
    script = Script().events(("k", b"slow", 1_000)).watermark(1_001)
    script.events(("k", b"next", 2_000))

    run = run_script(agents.swallow_the_timeout, config, script)

    assert run.reasons() == ["activation_timeout"]
    # Neither its output, its intent nor its memory: the next event runs at seq 1.
    assert run.outputs == [(b"k", b"1:next")]
    assert [i.seq for i in run.intents] == [1]


def test_an_agent_that_ignores_every_cancellation_is_abandoned() -> None:
    config = AgentConfig(activation_timeout_s=0.2)
    script = Script().events(("k", b"slow", 1_000)).watermark(1_001)
    script.events(("k", b"next", 2_000))

    run = run_script(agents.ignore_every_cancellation, config, script)

    assert run.reasons() == ["activation_timeout"]
    assert "ignored cancellation" in run.errors[0].detail
    assert run.outputs == [(b"k", b"next")]


def test_an_exception_whose_str_raises_becomes_activation_error() -> None:
    script = Script().events(("k", b"boom", 1_000), ("k", b"fine", 2_000))

    run = run_script(agents.raise_unprintable, AgentConfig(), script)

    assert run.reasons() == ["activation_error"]
    assert run.errors[0].detail.startswith("_Unprintable: <str() of the exception raised")
    assert run.outputs == [(b"k", b"fine")]


# -- values that cross into int64 fields and timers ------------------------------------------


@pytest.mark.parametrize("timeout_ms", [2**63, 2**62, 100 * 365 * 86_400_000 + 1])
def test_an_approval_timeout_past_any_deadline_is_refused_at_construction(timeout_ms: int) -> None:
    with pytest.raises(ValueError, match=r"Suspend\.timeout_ms"):
        Suspend(b"ok?", timeout_ms=timeout_ms)
    with pytest.raises(ValueError, match=r"AgentConfig\.hitl_timeout_ms"):
        AgentConfig(hitl_timeout_ms=timeout_ms)


@pytest.mark.parametrize("clock_ms", [0, 2**62], ids=["clock at 0", "clock near int64"])
def test_the_longest_approval_timeout_commits(clock_ms: int) -> None:
    config = AgentConfig(hitl_timeout_ms=100 * 365 * 86_400_000)

    run = run_script(
        agents.ask_for_approval,
        config,
        Script().events(("k", b"x", 1_000)),
        clock_ms=lambda: clock_ms,
    )

    assert [i.tool for i in run.intents] == ["approval"]
    # Still waiting when the stream ends: the watermark at infinity wipes the key.
    assert run.reasons() == ["ttl_wiped_suspension"]
