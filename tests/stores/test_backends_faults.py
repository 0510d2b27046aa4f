"""Server faults during a flush: Redis, Bigtable and Firestore fail as retryable errors,
never leave half a flush where the backend is atomic, and the same store client
recovers once the server is back on the same port.

These tests stop or freeze the session's servers and always bring them back.
The servers keep data in memory only, so a restart starts empty; the freeze
(SIGSTOP) keeps the data and is what proves all-or-nothing: the request may
sit in the server's socket buffer and run after the client gave up.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import pytest

from beam_agents.memory.stores import MemoryRecord, MemoryStore, StoreUnavailableError
from beam_agents.memory.stores.bigtable import BigtableMemoryStore
from beam_agents.memory.stores.firestore import FirestoreMemoryStore
from beam_agents.memory.stores.redis import RedisMemoryStore
from beam_agents.testing.services.bigtable import BigtableEmulator
from beam_agents.testing.services.firestore import FirestoreEmulator
from beam_agents.testing.services.redis import RedisServer

pytestmark = pytest.mark.filterwarnings("ignore:Connecting to Bigtable emulator:RuntimeWarning")

T = TypeVar("T")
ENTITY = b"entity-under-fault"
TIMEOUT_S = 1.5
OUTAGE_GUARD_S = 30.0
"""Twenty times the stores' deadline (TIMEOUT_S) and half the shortest retry deadline the
client libraries apply by default (60 s for a Firestore commit or a Bigtable call, 600 s
for Bigtable's batch mutations): a flush that rode out the client's retries would not end
within it, one bounded by TIMEOUT_S does even on a loaded machine. A guard, not a
measure: timings belong in benchmarks/."""
BATCH = [MemoryRecord(f"row/{i:02d}", b"x" * 64, 7, 7000) for i in range(20)]


Server = RedisServer | BigtableEmulator | FirestoreEmulator


@dataclass
class Backend:
    name: str
    server: Server
    store: MemoryStore
    atomic: bool
    table: BigtableMemoryStore | None = None

    async def reprovision(self) -> None:
        """The emulators start empty: put the table back (Bigtable only)."""
        if self.table is not None:
            await self.table.provision()


@pytest.fixture(params=["redis", "bigtable", "firestore"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    name = request.param
    if name == "redis":
        server = request.getfixturevalue("redis_server")
        store: MemoryStore = RedisMemoryStore(
            server.url, namespace=f"fault{uuid.uuid4().hex}", timeout_s=TIMEOUT_S
        )
        chosen = Backend(name, server, store, atomic=True)
    elif name == "bigtable":
        request.getfixturevalue("bigtable_emulator_host")
        server = request.getfixturevalue("bigtable_emulator")
        names = {"project": "test-project", "instance": "test-instance"}
        table = f"t{uuid.uuid4().hex}"
        store = BigtableMemoryStore(**names, table=table, timeout_s=TIMEOUT_S)
        admin = BigtableMemoryStore(**names, table=table, timeout_s=10)
        chosen = Backend(name, server, store, atomic=False, table=admin)
    else:
        request.getfixturevalue("firestore_emulator_host")
        server = request.getfixturevalue("firestore_emulator")
        store = FirestoreMemoryStore(
            project="test-project", collection=f"c{uuid.uuid4().hex}", timeout_s=TIMEOUT_S
        )
        chosen = Backend(name, server, store, atomic=True)
    try:
        yield chosen
    finally:
        server.start()  # whatever the test did, the session server runs again


async def _eventually(call: Callable[[], Awaitable[T]], within_s: float = 30.0) -> T:
    """Retry a retryable failure, as the runner retries a bundle: gRPC channels back off
    their reconnects after an outage, so the first calls after a restart may still fail."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            return await call()
        except StoreUnavailableError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def _stored_keys(store: MemoryStore) -> list[str]:
    return [r.key for r in await store.search(ENTITY, "row/", 100)]


def test_outage_is_retryable_and_the_same_client_recovers_after_restart(
    backend: Backend,
) -> None:
    server = backend.server

    async def scenario() -> tuple[list[bool], list[str]]:
        async with backend.store as store:
            await backend.reprovision()
            warm = MemoryRecord("warm", b"", 1, 1)
            assert await _eventually(lambda: store.upsert(ENTITY, warm)) is True
            server.stop()
            try:
                with pytest.raises(StoreUnavailableError):
                    await asyncio.wait_for(store.upsert_many(ENTITY, BATCH), OUTAGE_GUARD_S)
            except TimeoutError:
                pytest.fail("an outage must fail at the store's deadline, not ride out retries")
            await asyncio.to_thread(server.start)
            await _eventually(backend.reprovision)
            applied = await _eventually(lambda: store.upsert_many(ENTITY, BATCH))  # same client
            return applied, await _stored_keys(store)
            if backend.table is not None:
                await backend.table.close()

    applied, keys = asyncio.run(scenario())

    assert applied == [True] * len(BATCH)
    assert keys == [r.key for r in BATCH]


def test_flush_to_a_frozen_server_fails_retryably_and_never_lands_half(
    backend: Backend,
) -> None:
    """Atomic backends hold all or none of the flush after the freeze; every retry converges."""
    server = backend.server

    async def scenario() -> tuple[list[str], list[bool], list[str]]:
        async with backend.store as store:
            await backend.reprovision()
            warm = MemoryRecord("warm", b"", 1, 1)
            assert await _eventually(lambda: store.upsert(ENTITY, warm)) is True
            with server.paused(), pytest.raises(StoreUnavailableError):
                await store.upsert_many(ENTITY, BATCH)
            await asyncio.sleep(0.5)  # let a buffered request run, if it arrived
            after_fault = await _eventually(lambda: _stored_keys(store))
            applied = await _eventually(lambda: store.upsert_many(ENTITY, BATCH))
            return after_fault, applied, await _stored_keys(store)
            if backend.table is not None:
                await backend.table.close()

    after_fault, applied, keys = asyncio.run(scenario())

    if backend.atomic:
        assert after_fault in ([], [r.key for r in BATCH]), f"half a flush landed: {after_fault}"
    assert applied == [True] * len(BATCH)  # the same seq applies again
    assert keys == [r.key for r in BATCH]
