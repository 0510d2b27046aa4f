"""A cancelled `upsert_many` is all or nothing on every atomic backend.

The runtime cancels a flush that outlives `longterm_timeout_s`. Cancelling
an `await` cannot recall a commit already on the wire, so a backend that
let the cancellation through while its commit landed reported "nothing
written" over rows that were written. The contract: cancelled before its
commit is sent, `upsert_many` raises `CancelledError` and writes nothing;
once it is sent, the commit finishes and its outcome is returned.

Each test sweeps the moment of cancellation across a whole upsert of 150
rows (measured first, uncancelled) and checks, after every attempt, that
the rows hold either every row of that attempt or none of them.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from beam_agents.memory.stores import InMemoryMemoryStore, MemoryRecord, MemoryStore, open_store
from beam_agents.memory.stores.sql import SqlMemoryStore

ROWS = 150
ATTEMPTS = 30


def _records(attempt: int) -> list[MemoryRecord]:
    value = b"attempt %d" % attempt
    return [MemoryRecord(f"r{i:03d}", value, attempt, attempt) for i in range(ROWS)]


async def _seqs(store: MemoryStore, entity: bytes) -> set[int]:
    return {record.seq for record in await store.search(entity, "r", 1000)}


async def _sweep(store: MemoryStore) -> list[bool]:
    """Cancel upserts at moments spread over one upsert's duration; what landed each time."""
    entity = uuid.uuid4().hex.encode()
    started = time.perf_counter()
    await store.upsert_many(entity, _records(1))
    duration = time.perf_counter() - started
    landed_at = 1
    outcomes = []
    for attempt in range(2, ATTEMPTS + 2):
        task = asyncio.ensure_future(store.upsert_many(entity, _records(attempt)))
        await asyncio.sleep(duration * 1.5 * (attempt - 2) / ATTEMPTS)
        task.cancel()
        try:
            applied = await task
        except asyncio.CancelledError:
            applied = None
        await asyncio.sleep(max(0.05, duration))  # what a driver thread may still be doing
        if applied is not None:
            assert applied == [True] * ROWS
            landed_at = attempt
        assert await _seqs(store, entity) == {landed_at}, (
            f"attempt {attempt} was {'returned' if applied else 'cancelled'}, "
            f"yet the rows are not all at seq {landed_at}"
        )
        outcomes.append(applied is not None)
    return outcomes


async def _provisioned(uri: str) -> MemoryStore:
    store = open_store(uri)
    if isinstance(store, SqlMemoryStore):
        await store.provision()
    return store


def _run(uri: str) -> list[bool]:
    async def body() -> list[bool]:
        store = await _provisioned(uri)
        try:
            return await _sweep(store)
        finally:
            await store.close()

    return asyncio.run(body())


def test_a_cancelled_upsert_is_all_or_nothing_on_sqlite(tmp_path: Path) -> None:
    outcomes = _run(f"sqlite+aiosqlite:///{tmp_path / 'store.db'}")
    assert not all(outcomes)  # the sweep cancelled before a commit...
    assert any(outcomes)  # ...and during or after one


def test_a_cancelled_upsert_is_all_or_nothing_on_postgres(postgres_database_url: str) -> None:
    outcomes = _run(postgres_database_url)
    assert not all(outcomes)
    assert any(outcomes)


def test_a_cancelled_upsert_is_all_or_nothing_on_redis(redis_store_uri: str) -> None:
    outcomes = _run(redis_store_uri)
    assert any(outcomes)


def test_a_cancelled_upsert_is_all_or_nothing_on_firestore(firestore_store_uri: str) -> None:
    # The client's calls finish within the store's grace once started, so
    # most attempts land: what matters is that none is half-written or misreported.
    assert any(_run(firestore_store_uri))


def test_a_cancelled_upsert_is_all_or_nothing_in_memory() -> None:
    namespace = f"cancel-{uuid.uuid4().hex}"
    try:
        assert any(_run(f"memory://{namespace}"))
    finally:
        InMemoryMemoryStore.drop_namespace(namespace)
