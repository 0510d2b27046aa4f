"""The in-process reference store: shared `memory://` namespaces and the operations log."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator

import pytest

from beam_agents.memory.stores import InMemoryMemoryStore, MemoryRecord, StoreError, open_store

RECORD = MemoryRecord("k", b"v", 1, 10)


@pytest.fixture
def namespace() -> Iterator[str]:
    name = f"ns-{uuid.uuid4().hex}"
    yield name
    InMemoryMemoryStore.drop_namespace(name)


def _open(uri: str) -> InMemoryMemoryStore:
    store = open_store(uri)
    assert isinstance(store, InMemoryMemoryStore)
    return store


def test_every_open_of_one_uri_shares_its_rows(namespace: str) -> None:
    """What a DoFn flushes through its own store, a test reopening the URI can read."""
    writer, reader = _open(f"memory://{namespace}"), _open(f"memory://{namespace}")

    asyncio.run(writer.upsert(b"e", RECORD))

    assert asyncio.run(reader.load(b"e", "k")) == RECORD
    assert asyncio.run(_open(f"memory://{namespace}-other").load(b"e", "k")) is None


def test_bare_memory_uri_is_the_empty_namespace() -> None:
    store = _open("memory://")
    try:
        assert store.namespace == ""
        asyncio.run(store.upsert(b"e", RECORD))
        assert asyncio.run(InMemoryMemoryStore.shared("").load(b"e", "k")) == RECORD
    finally:
        InMemoryMemoryStore.drop_namespace("")


def test_a_directly_constructed_store_is_private() -> None:
    private = InMemoryMemoryStore()
    asyncio.run(private.upsert(b"e", RECORD))

    assert private.namespace is None
    assert asyncio.run(InMemoryMemoryStore().load(b"e", "k")) is None


def test_operations_log_records_each_call_per_record(namespace: str) -> None:
    store = _open(f"memory://{namespace}")

    async def calls() -> None:
        await store.upsert_many(b"e", [RECORD, MemoryRecord("j", b"", 1, 1)])
        await store.load(b"e", "k")
        await store.search(b"e", "pre", 5)
        _ = [row async for row in store.scan()]

    asyncio.run(calls())

    assert _open(f"memory://{namespace}").operations == [
        ("upsert", b"e", "k"),
        ("upsert", b"e", "j"),
        ("load", b"e", "k"),
        ("search", b"e", "pre"),
        ("scan", b"", ""),
    ]
    store.clear_operations()
    assert store.operations == []
    assert asyncio.run(store.load(b"e", "k")) == RECORD


def test_rejected_input_records_no_operation(namespace: str) -> None:
    store = _open(f"memory://{namespace}")

    with pytest.raises(StoreError):
        asyncio.run(store.load(b"e", "x" * 2000))

    assert store.operations == []


def test_dropping_a_namespace_forgets_its_rows(namespace: str) -> None:
    asyncio.run(_open(f"memory://{namespace}").upsert(b"e", RECORD))

    InMemoryMemoryStore.drop_namespace(namespace)

    assert asyncio.run(_open(f"memory://{namespace}").load(b"e", "k")) is None


def test_guard_holds_across_threads_with_their_own_event_loops(namespace: str) -> None:
    """DirectRunner threads each drive their own loop; the highest seq must still win."""

    def writer(seqs: range) -> None:
        store = _open(f"memory://{namespace}")
        for seq in seqs:
            asyncio.run(store.upsert(b"e", MemoryRecord("k", str(seq).encode(), seq, seq)))

    threads = [threading.Thread(target=writer, args=(range(i, 400, 4),)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    loaded = asyncio.run(_open(f"memory://{namespace}").load(b"e", "k"))
    assert loaded is not None
    assert loaded.seq == 399


def test_closed_store_refuses_further_calls() -> None:
    store = InMemoryMemoryStore()
    asyncio.run(store.close())

    with pytest.raises(StoreError, match="closed"):
        asyncio.run(store.load(b"e", "k"))


def test_a_store_used_as_an_async_context_manager_is_closed_however_the_block_ends() -> None:
    async def fail_inside(store: InMemoryMemoryStore) -> None:
        async with store as entered:
            assert entered is store
            raise KeyError("inside")

    finished, failed = InMemoryMemoryStore(), InMemoryMemoryStore()

    async def finish_inside() -> None:
        async with finished:
            await finished.provision()

    asyncio.run(finish_inside())
    with pytest.raises(KeyError, match="inside"):
        asyncio.run(fail_inside(failed))

    for store in (finished, failed):
        with pytest.raises(StoreError, match="closed"):
            asyncio.run(store.load(b"e", "k"))
