"""A checkpoint row planted in the long-term store runs nothing and restores nothing.

Rows are written through the store API, as anyone with access to the store
could write them, into the in-memory store and a real Redis server; the
graph then runs under RunAgent on the streaming DirectRunner.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.conftest import require_langgraph

require_langgraph()

import ormsgpack  # noqa: E402
from langgraph.checkpoint.serde.jsonplus import (  # noqa: E402
    EXT_CONSTRUCTOR_SINGLE_ARG,
    EXT_METHOD_SINGLE_ARG,
    JsonPlusSerializer,
)

from beam_agents import AgentConfig, FlushToLongterm  # noqa: E402
from beam_agents.adapters.langgraph import CHECKPOINT_KEY, graph_agent  # noqa: E402
from beam_agents.adapters.langgraph._errors import CheckpointTypeError  # noqa: E402
from beam_agents.adapters.langgraph._serde import CheckpointSerializer  # noqa: E402
from beam_agents.errors import ConfigurationError, StateDecodeError  # noqa: E402
from beam_agents.memory.expire import expire_records, read_expired_memory  # noqa: E402
from beam_agents.memory.facade import Memory  # noqa: E402
from beam_agents.memory.longterm import LongtermMemory  # noqa: E402
from beam_agents.memory.stores import open_store  # noqa: E402
from beam_agents.state_signing import PREFIX  # noqa: E402
from beam_agents.testing.streaming import Script, StreamRun, run_script  # noqa: E402
from tests.adapters import lg_graph  # noqa: E402

pytestmark = pytest.mark.pipeline

SIGNING_ENV = "BEAM_AGENTS_TEST_LG_STATE_KEY"
SIGNING_KEY = "langgraph-state-signing-key-0123456789abcdef"
counting = graph_agent(lg_graph.counting_builder)


@pytest.fixture(params=["memory", "redis"])
def store_uri(request: pytest.FixtureRequest) -> str:
    """A store namespace of this test's own: the in-memory store, or Redis on loopback."""
    if request.param == "memory":
        return f"memory://lg-trust-{uuid.uuid4().hex}"
    return str(request.getfixturevalue("redis_store_uri"))


@pytest.fixture
def signing(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv(SIGNING_ENV, SIGNING_KEY)
    return {"answer_signing_key": f"env:{SIGNING_ENV}"}


def _function_call(module: str, name: str, arg: str) -> ormsgpack.Ext:
    """What LangGraph's default serializer reads as `module.name(arg)`."""
    return ormsgpack.Ext(EXT_CONSTRUCTOR_SINGLE_ARG, ormsgpack.packb((module, name, arg)))


def _planted_checkpoint(marker: Path) -> bytes:
    """A checkpoint entry whose decoding, by LangGraph's default serializer, creates `marker`."""
    record = {
        "checkpoint": {"channel_values": {"seen": _function_call("os", "mkdir", str(marker))}},
        "metadata": {},
    }
    return b"beam-agents/langgraph/1\0msgpack\0" + ormsgpack.packb(record)


def _plant(uri: str, entity_key: bytes, checkpoint: bytes) -> None:
    """Write `checkpoint` as the `working_memory` row a TTL flush writes, through the store API."""
    memory = Memory(now_ms=0)
    memory.set(CHECKPOINT_KEY, checkpoint)
    records = expire_records("working_memory", memory.to_blob(), seq=1_000, updated_at_ms=0)

    async def write() -> None:
        store = open_store(uri)
        try:
            await store.upsert_many(entity_key, records)
        finally:
            await store.close()

    asyncio.run(write())


def _flushed(uri: str, entity_key: bytes) -> bytes:
    """The checkpoint entry the TTL flush wrote for `entity_key`."""

    async def read() -> bytes | None:
        store = open_store(uri)
        try:
            longterm = LongtermMemory(store, entity_key=entity_key, seq=99, now_ms=0, timeout_s=5.0)
            blob = await read_expired_memory(longterm)
            return None if blob is None else Memory(blob, now_ms=0).get(CHECKPOINT_KEY)
        finally:
            await store.close()

    found = asyncio.run(read())
    assert found is not None
    return found


def _event(
    uri: str, entity_key: bytes = b"db-1", agent: Any = counting, **config: Any
) -> StreamRun:
    script = Script().events((entity_key.decode(), b"disk at 90%", 100_000))
    return run_script(agent, AgentConfig(longterm_memory=uri, **config), script)


def _flush_one_event(uri: str, **config: Any) -> StreamRun:
    script = Script().events(("db-1", b"disk at 80%", 1_000)).watermark(60_000)
    options = {"ttl_ms": 10_000, "on_expire": FlushToLongterm(), **config}
    return run_script(counting, AgentConfig(longterm_memory=uri, **options), script)


def test_the_planted_payload_runs_code_under_langgraphs_default_serializer(
    tmp_path: Path,
) -> None:
    """The payload the tests below plant is a real exploit of the serializer they replace."""
    marker = tmp_path / "ran"
    planted = _planted_checkpoint(marker)
    body = planted.split(b"\0", 2)[2]

    JsonPlusSerializer().loads_typed(("msgpack", body))

    assert marker.exists()


def test_a_planted_checkpoint_naming_a_function_is_refused_and_runs_nothing(
    store_uri: str, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    _plant(store_uri, b"db-1", _planted_checkpoint(marker))

    run = _event(store_uri)

    assert run.outputs == []
    (error,) = run.errors
    assert error.reason == "state_decode_error"
    assert error.detail.startswith("CheckpointTypeError: a checkpoint names 'os.mkdir'")
    assert "nothing was imported, constructed or called" in error.detail
    assert not marker.exists()


def test_under_a_signing_key_a_planted_unsigned_checkpoint_is_refused_unread(
    store_uri: str, tmp_path: Path, signing: dict[str, Any]
) -> None:
    marker = tmp_path / "ran"
    _plant(store_uri, b"db-1", _planted_checkpoint(marker))

    run = _event(store_uri, **signing)

    (error,) = run.errors
    assert error.reason == "state_decode_error"
    assert error.detail.startswith(
        f"StateSignatureError: {CHECKPOINT_KEY!r} of this entity key is not signed"
    )
    assert SIGNING_KEY not in error.detail
    assert not marker.exists()


def test_a_signed_checkpoint_continues_the_conversation_from_the_longterm_flush(
    store_uri: str, signing: dict[str, Any]
) -> None:
    before = _flush_one_event(store_uri, **signing)
    after = _event(store_uri, **signing)

    assert _flushed(store_uri, b"db-1").startswith(PREFIX)
    assert before.outputs == [(b"db-1", b'{"seen":["event"]}')]
    assert after.errors == []
    assert after.outputs == [(b"db-1", b'{"seen":["event","event"]}')]


def test_a_tampered_checkpoint_signature_is_refused(
    store_uri: str, signing: dict[str, Any]
) -> None:
    _flush_one_event(store_uri, **signing)
    signed = _flushed(store_uri, b"db-1")
    tag_at = len(PREFIX)
    tampered = signed[:tag_at] + bytes([signed[tag_at] ^ 1]) + signed[tag_at + 1 :]
    _plant(store_uri, b"db-1", tampered)

    run = _event(store_uri, **signing)

    assert run.outputs == []
    (error,) = run.errors
    assert error.reason == "state_decode_error"
    assert f"{CHECKPOINT_KEY!r} of this entity key fails its signature" in error.detail


def test_a_signed_checkpoint_copied_to_another_entity_key_is_refused(
    store_uri: str, signing: dict[str, Any]
) -> None:
    _flush_one_event(store_uri, **signing)
    _plant(store_uri, b"web-1", _flushed(store_uri, b"db-1"))

    run = _event(store_uri, b"web-1", **signing)

    (error,) = run.errors
    assert "fails its signature" in error.detail


def test_a_graph_state_class_it_does_not_name_fails_the_commit_by_name() -> None:
    agent = graph_agent(lg_graph.ticket_builder, output=lg_graph.ticket_count)

    run = run_script(agent, AgentConfig(), Script().events(("db-1", b"a", 1_000)))

    (error,) = run.errors
    assert error.reason == "state_decode_error"
    assert "holds 'tests.adapters.lg_graph.Ticket'" in error.detail
    assert "checkpoint_types" in error.detail


def test_a_graph_state_class_named_in_checkpoint_types_round_trips() -> None:
    agent = graph_agent(
        lg_graph.ticket_builder, output=lg_graph.ticket_count, checkpoint_types=[lg_graph.Ticket]
    )
    script = Script().events(("db-1", b"a", 1_000)).watermark(1_500).events(("db-1", b"b", 2_000))

    run = run_script(agent, AgentConfig(), script)

    assert run.errors == []
    assert run.outputs == [(b"db-1", b"1 ['Ticket']"), (b"db-1", b"2 ['Ticket']")]


@pytest.mark.parametrize("named", [[lg_graph.ticket_count], "Ticket", [uuid.uuid4()]])
def test_checkpoint_types_takes_classes_only(named: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"graph_agent\(checkpoint_types\)"):
        graph_agent(lg_graph.ticket_builder, checkpoint_types=named)


@pytest.mark.parametrize("encoding", ["pickle", "json"])
def test_encodings_the_adapter_never_writes_are_refused_undecoded(encoding: str) -> None:
    with pytest.raises(CheckpointTypeError, match=f"encoded as '{encoding}'"):
        CheckpointSerializer().loads_typed((encoding, b"\x80\x04N."))


def test_a_method_call_other_than_datetime_fromisoformat_is_refused() -> None:
    call = ormsgpack.Ext(EXT_METHOD_SINGLE_ARG, ormsgpack.packb(("datetime", "date", 0, "today")))

    with pytest.raises(CheckpointTypeError, match=r"'datetime.date.today', a method call"):
        CheckpointSerializer().loads_typed(("msgpack", ormsgpack.packb({"at": call})))


def test_a_constructor_that_rejects_its_arguments_is_a_decode_error_naming_the_class() -> None:
    bad = _function_call("uuid", "UUID", "not-a-uuid")

    with pytest.raises(StateDecodeError, match=r"does not decode: uuid.UUID: ValueError"):
        CheckpointSerializer().loads_typed(("msgpack", ormsgpack.packb([bad])))
