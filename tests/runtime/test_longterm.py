"""The long-term tier in a running pipeline: the long-term scenarios and on_expire."""

from __future__ import annotations

import asyncio
import uuid

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, is_empty

from beam_agents import AgentConfig, FlushToLongterm, RunAgent
from beam_agents.memory.stores import InMemoryMemoryStore, open_store
from beam_agents.proto import MemoryBlob
from beam_agents.testing.chaos import fail_store_reads, fail_store_writes
from beam_agents.testing.streaming import Script, run_script
from tests.runtime import agents

pytestmark = pytest.mark.pipeline

RUNTIME = "beam_agents.runtime"


@pytest.fixture
def uri() -> str:
    """A fresh process-wide memory:// namespace the test and the DoFns share."""
    return f"memory://longterm-{uuid.uuid4().hex}"


def _store(uri: str) -> InMemoryMemoryStore:
    store = open_store(uri)
    assert isinstance(store, InMemoryMemoryStore)
    return store


def _events(*events: tuple[str, bytes, int]) -> Script:
    script = Script()
    for event in events:
        script.events(event).watermark(event[2] + 1)
    return script


def test_working_tier_operations_never_reach_the_store(uri: str) -> None:
    script = _events(("k", b"1", 1_000), ("k", b"2", 2_000), ("k", b"3", 3_000))

    run = run_script(agents.working_memory_only, AgentConfig(longterm_memory=uri), script)

    assert len(run.outputs) == 3
    assert run.errors == []
    assert run.counter("beam_agents.memory", "soft_cap_warnings") >= 1  # compaction ran
    assert _store(uri).operations == []


def test_a_failed_activation_flushes_nothing(uri: str) -> None:
    run = run_script(
        agents.save_then_raise, AgentConfig(longterm_memory=uri), _events(("k", b"v", 1_000))
    )

    assert run.reasons() == ["activation_error"]
    assert _store(uri).operations == []
    assert run.counter(RUNTIME, "longterm_upserts") == 0


def test_a_flush_failure_fails_the_activation_closed(uri: str) -> None:
    script = _events(("k", b"first", 1_000), ("k", b"second", 2_000))

    with fail_store_writes(b"k", times=1) as fault:
        run = run_script(agents.save_case, AgentConfig(longterm_memory=uri), script)

    assert len(fault.fired) == 1
    assert run.reasons() == ["longterm_flush_failed"]
    assert run.errors[0].payload == b"first"
    # No output, intent or state from the failed activation: the second event runs at seq 1.
    assert run.outputs == [(b"k", b"case/0001")]
    assert [i.seq for i in run.intents] == [1]
    rows = asyncio.run(_store(uri).read_raw(b"k", "case/0001"))
    assert rows is not None
    assert run.counter(RUNTIME, "longterm_upserts") == 1


def test_staged_saves_are_visible_to_reads_before_any_flush(uri: str) -> None:
    run = run_script(
        agents.read_your_writes, AgentConfig(longterm_memory=uri), _events(("k", b"v1", 1_000))
    )

    assert run.outputs == [(b"k", b"v1|v1")]
    ops = [op for op, _, _ in _store(uri).operations]
    # Both reads reached the store before its first write: the values came from staging.
    assert ops == ["search", "upsert"]


def test_a_long_term_read_failure_is_longterm_read_failed(uri: str) -> None:
    script = _events(("k", b"a", 1_000), ("k", b"b", 2_000))

    with fail_store_reads(b"k", times=1):
        run = run_script(agents.load_profile, AgentConfig(longterm_memory=uri), script)

    assert run.reasons() == ["longterm_read_failed"]
    assert run.outputs == [(b"k", b"none")]


def test_expire_flushes_committed_working_memory_under_working_memory(uri: str) -> None:
    config = AgentConfig(longterm_memory=uri, on_expire=FlushToLongterm(), ttl_ms=10_000)
    script = _events(("k", b"1", 1_000), ("k", b"2", 2_000)).watermark(30_000)

    run = run_script(agents.remember, config, script)

    record = _record(uri, b"k", "working_memory")
    assert (record.seq, record.updated_at_ms) == (2, 12_000)
    blob = MemoryBlob.FromString(record.value)
    assert [e.key for e in blob.entries] == ["seen"]
    assert run.counter(RUNTIME, "expire_flushes") == 1
    assert run.counter(RUNTIME, "ttl_wipes") == 1


def test_expire_then_new_activity_then_expire_again_lands_the_second_flush(uri: str) -> None:
    """SEQ survives the wipe, so the second flush is not rejected by the seq guard."""
    config = AgentConfig(longterm_memory=uri, on_expire=FlushToLongterm(), ttl_ms=10_000)
    script = (
        _events(("k", b"1", 1_000), ("k", b"2", 2_000))
        .watermark(30_000)
        .events(("k", b"3", 31_000))
        .watermark(60_000)
    )

    run = run_script(agents.remember, config, script)

    assert [o for _, o in run.outputs] == [b"1:1", b"2:1,2", b"3:3"]
    record = _record(uri, b"k", "working_memory")
    assert (record.seq, record.updated_at_ms) == (3, 41_000)
    ring = MemoryBlob.FromString(record.value).entries[0].value
    assert ring.endswith(b"3")
    assert b"1" not in ring[1:]
    assert run.counter(RUNTIME, "expire_flushes") == 2


def test_expire_with_empty_memory_makes_no_store_call(uri: str) -> None:
    config = AgentConfig(longterm_memory=uri, on_expire=FlushToLongterm(), ttl_ms=1_000)

    run = run_script(agents.load_profile, config, _events(("k", b"v", 1_000)).watermark(10_000))

    assert [op for op, _, _ in _store(uri).operations] == ["load"]
    assert run.counter(RUNTIME, "ttl_wipes") == 1


def test_an_expire_flush_failure_leaves_the_key_unwiped_until_the_store_is_back(uri: str) -> None:
    config = AgentConfig(longterm_memory=uri, on_expire=FlushToLongterm(), ttl_ms=10_000)
    script = _events(("k", b"1", 1_000)).watermark(30_000)

    with fail_store_writes(b"k", times=2) as fault:
        run = run_script(agents.remember, config, script)

    assert len(fault.fired) == 2  # two failed timer bundles, retried by the runner
    record = _record(uri, b"k", "working_memory")
    # The third attempt flushed the memory the failed attempts had not wiped.
    assert MemoryBlob.FromString(record.value).entries[0].value.endswith(b"1")
    assert run.counter(RUNTIME, "expire_flushes") == 1


def test_saves_from_beam_create_carry_updated_at_ms_clamped_to_the_epoch(uri: str) -> None:
    """`beam.Create` stamps Beam's minimum timestamp; saves and the expire flush store 0."""
    config = AgentConfig(longterm_memory=uri, on_expire=FlushToLongterm())
    with beam.Pipeline() as pipeline:
        events = pipeline | beam.Create([("k", b"first"), ("k", b"second")])
        result = events | RunAgent(agents.save_case, config)
        errors = result.errors | beam.Map(lambda e: e.reason)
        assert_that(errors, is_empty())

    saved = _record(uri, b"k", "case/0002")
    assert (saved.seq, saved.updated_at_ms, saved.value) == (2, 0, b"summary of second")
    expired = _record(uri, b"k", "working_memory")
    assert (expired.seq, expired.updated_at_ms) == (2, 0)


def test_a_save_under_the_empty_key_fails_the_activation_and_writes_nothing(uri: str) -> None:
    script = _events(("k", b"", 1_000), ("k", b"profile", 2_000))

    run = run_script(agents.save_under_event, AgentConfig(longterm_memory=uri), script)

    assert run.reasons() == ["activation_error"]
    assert "InvalidRecordError: record key must not be empty" in run.errors[0].detail
    assert run.outputs == [(b"k", b"profile")]
    assert _store(uri).operations == [("upsert", b"k", "profile")]


def _record(uri: str, entity_key: bytes, key: str):  # type: ignore[no-untyped-def]
    import asyncio

    record = asyncio.run(_store(uri).load(entity_key, key))
    assert record is not None
    return record
