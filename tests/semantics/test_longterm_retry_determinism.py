"""The retry-determinism gate of the long-term tier.

Sequence forced: an activation's long-term flush succeeds, its bundle commit
fails (chaos failpoint), the streaming DirectRunner retries the bundle and
the activation replays. The replay can read back its own discarded attempt's
row (the residual read-back window); under the blind-upsert discipline that
must not matter: staged rows, intents and outputs are byte-identical to a
fault-free run.
"""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest
from beam_agents.memory.stores import InMemoryMemoryStore, open_store
from beam_agents.model import FakeLLM
from beam_agents.testing.chaos import fail_commit_once
from beam_agents.testing.streaming import Script, StreamRun, run_script

pytestmark = pytest.mark.pipeline

EVENTS = [("a", b"e1", 1_000), ("a", b"e2", 2_000), ("b", b"x", 2_500), ("a", b"e3", 3_000)]


async def blind_upsert(ctx: ActivationContext) -> Complete:
    """Reads history for the model's context; saves and emits from the event only."""
    history = await ctx.memory.longterm.search("case/", limit=10)
    context = [record.key for record in history]
    await ctx.call_model(LlmRequest(model_id="fake-1", messages=[json.dumps(context)]))
    key = f"case/{ctx.seq:04d}"
    ctx.memory.longterm.save(key, b"summary of " + ctx.event)
    ctx.emit_intent("record", {"key": key})
    return Complete(key.encode())


def _run(uri: str, provider: FakeLLM) -> StreamRun:
    script = Script()
    for event in EVENTS:
        script.events(event).watermark(event[2] + 1)
    config = AgentConfig(longterm_memory=uri, provider_factory=provider)
    return run_script(blind_upsert, config, script)


def _store(uri: str) -> InMemoryMemoryStore:
    store = open_store(uri)
    assert isinstance(store, InMemoryMemoryStore)
    return store


def _rows(uri: str) -> dict[tuple[bytes, str], bytes | None]:
    store = _store(uri)
    written = {(entity, key) for op, entity, key in store.operations if op == "upsert"}
    return {row: asyncio.run(store.read_raw(*row)) for row in sorted(written)}


def test_a_bundle_retry_across_a_completed_flush_converges() -> None:
    clean_uri = f"memory://gate-clean-{uuid.uuid4().hex}"
    faulty_uri = f"memory://gate-faulty-{uuid.uuid4().hex}"
    clean_provider = FakeLLM(name="gate-clean")
    clean_provider.reset()
    clean = _run(clean_uri, clean_provider)

    faulty_provider = FakeLLM(name="gate-faulty")
    faulty_provider.reset()
    with fail_commit_once(b"a", 2) as fault:
        faulty = _run(faulty_uri, faulty_provider)

    assert fault.fired == [(b"a", 2)]
    assert faulty.fingerprint() == clean.fingerprint()
    assert _rows(faulty_uri) == _rows(clean_uri)
    # The retry re-flushed seq 2 onto its own row through the equal-seq guard...
    upserts = [key for op, _, key in _store(faulty_uri).operations if op == "upsert"]
    assert upserts.count("case/0002") == 2

    # ...after reading that row back: the read-back window was open, and harmless.
    def contexts(provider: FakeLLM) -> list[object]:
        return [json.loads(str(request.messages[0])) for request in provider.calls()]

    assert contexts(clean_provider) == [[], ["case/0001"], [], ["case/0001", "case/0002"]]
    retry_saw_its_own_flush = ["case/0001", "case/0002"]
    assert contexts(faulty_provider) == [
        [],
        ["case/0001"],
        retry_saw_its_own_flush,
        [],
        ["case/0001", "case/0002"],
    ]
