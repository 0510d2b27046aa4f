"""Recall replays exactly: parked or in place, retried or not, the same bytes everywhere.

An embedding is a model call, so a run that saves with `text=`, recalls,
flushes expiring memory with `text=`, fails a bundle's commit and parks its
slow embedding calls must emit, and write to the long-term tier, exactly
what the same script run in place and without faults does.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from beam_agents import ActivationContext, AgentConfig, Complete, FlushToLongterm
from beam_agents.memory.stores import InMemoryMemoryStore, open_store
from beam_agents.model.embedder import Embedded
from beam_agents.testing.chaos import fail_commit_once
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime import agents

pytestmark = pytest.mark.pipeline

RUNTIME = "beam_agents.runtime"
_lock = threading.Lock()
_embedded: dict[str, list[tuple[str, ...]]] = {}


@dataclass(frozen=True)
class WordEmbedder:
    """Words hashed into 16 buckets, after a wait: slow enough to park."""

    name: str
    delay_s: float = 0.02
    model_id: str = "words-16"
    dimensions: int = 16

    def __call__(self) -> WordEmbedder:
        return self

    async def embed(self, texts: Sequence[str]) -> Embedded:
        with _lock:
            _embedded.setdefault(self.name, []).append(tuple(texts))
        await asyncio.sleep(self.delay_s)
        vectors = []
        for text in texts:
            vector = [0.0] * self.dimensions
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                vector[hashlib.sha256(word.encode()).digest()[0] % self.dimensions] += 1.0
            vectors.append(vector)
        return Embedded(vectors, input_tokens=sum(len(t.split()) for t in texts))


async def remember(ctx: ActivationContext) -> Complete:
    """Saves the event as an incident, recalls the three most like it, notes it."""
    text = ctx.event.decode()
    longterm = ctx.memory.longterm
    longterm.save(f"incident/{ctx.seq:04d}", ctx.event, text=text)
    hits = await longterm.recall(text, k=3, prefix="incident/")
    ctx.memory.append("notes", ctx.event)
    found = [[hit.key, round(hit.score, 12)] for hit in hits]
    ctx.emit_intent("page", {"recalled": found})
    return Complete(json.dumps(found).encode())


EVENTS = [
    ("db", b"disk full on primary database", 1_000),
    ("db", b"primary database disk almost full", 1_100),
    ("web", b"certificate expired on edge proxy", 1_200),
    ("db", b"replication lag on replica database", 1_300),
    ("web", b"edge proxy certificate renewal failed", 1_400),
    ("db", b"disk full again on primary", 1_500),
]


def _script() -> Script:
    script = Script()
    for event in EVENTS:
        script.events(event)
    # Past the TTL: both keys expire and flush their notes, embedded.
    return script.watermark(1_600).processing_time(1_000).watermark(100_000)


def _run(inflight: int, *, fault: bool) -> tuple[StreamRun, str, str]:
    name = f"replay-{uuid.uuid4().hex}"
    uri = f"memory://{name}"
    config = AgentConfig(
        longterm_memory=uri,
        embedder=WordEmbedder(name),
        on_expire=FlushToLongterm(text="notes"),
        ttl_ms=10_000,
        max_inflight_calls=inflight,
    )
    if fault:
        with fail_commit_once(b"db", 2) as point:
            run = run_script(remember, config, _script(), clock_ms=agents.clock_just_ahead)
        assert point.fired == [(b"db", 2)]
    else:
        run = run_script(remember, config, _script(), clock_ms=agents.clock_just_ahead)
    return run, uri, name


def _rows(uri: str) -> dict[tuple[bytes, str], bytes | None]:
    store = open_store(uri)
    assert isinstance(store, InMemoryMemoryStore)
    written = {(entity, key) for op, entity, key in store.operations if op == "upsert"}
    return {row: asyncio.run(store.read_raw(*row)) for row in sorted(written)}


def test_recall_runs_byte_identically_parked_retried_and_in_place() -> None:
    serial, serial_uri, serial_name = _run(1, fault=False)
    parked, parked_uri, _ = _run(256, fault=True)

    assert serial.errors == []
    assert parked.fingerprint() == serial.fingerprint()
    assert _rows(parked_uri) == _rows(serial_uri)
    assert parked.counter(RUNTIME, "parks") > 0
    # The fourth db event recalls the earlier disk incidents first.
    db_outputs = [json.loads(value) for key, value in serial.outputs if key == b"db"]
    assert [hit[0] for hit in db_outputs[3]][:2] == ["incident/0004", "incident/0001"]
    # Expired notes were flushed with their embedding: recallable by meaning.
    flushed = asyncio.run(open_store(serial_uri).load(b"db", "working_memory"))
    assert flushed is not None
    assert flushed.embedding is not None
    assert flushed.embedding.model_id == "words-16"
    # One embedding call per activation (its query and its staged text together) and
    # one per expiring key: the staged text was embedded with the recall's query.
    assert len(_embedded[serial_name]) == len(EVENTS) + 2


def test_a_retried_bundle_makes_no_extra_embedding_calls_in_the_same_process() -> None:
    clean, _, clean_name = _run(1, fault=False)
    faulty, _, faulty_name = _run(1, fault=True)

    assert faulty.fingerprint() == clean.fingerprint()
    assert _embedded[faulty_name] == _embedded[clean_name]
