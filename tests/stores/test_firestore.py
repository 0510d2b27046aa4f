"""Firestore backend traps: a prefix upper bound correct past U+FFFF, document ids that
hold any key, chunking past the 1 MiB document limit, and provisioning on the emulator."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

import pytest
from google.cloud.firestore_v1 import AsyncClient
from hypothesis import given
from hypothesis import strategies as st

from beam_agents.memory.stores import InvalidRecordError, MemoryRecord, open_store
from beam_agents.memory.stores.base import MAX_VALUE_BYTES, prefix_upper_bound
from beam_agents.memory.stores.envelope import encode_record
from beam_agents.memory.stores.firestore import (
    FirestoreMemoryStore,
    document_id,
)

T = TypeVar("T")
ENTITY = b"entity-1"
characters = st.characters(exclude_categories=["Cs"])


def run(awaitable: Awaitable[T]) -> T:
    async def main() -> T:
        return await awaitable

    return asyncio.run(main())


def rec(key: str, seq: int = 1, value: bytes = b"v") -> MemoryRecord:
    return MemoryRecord(key=key, value=value, seq=seq, updated_at_ms=seq)


@given(st.text(characters, min_size=1, max_size=6), st.text(characters, max_size=6))
def test_successor_bounds_every_extension_of_the_prefix(prefix: str, suffix: str) -> None:
    upper = prefix_upper_bound(prefix)
    if upper is None:
        assert set(prefix) == {"\U0010ffff"}
    else:
        assert (prefix + suffix).encode() < upper.encode()


@given(st.text(characters, min_size=1, max_size=6), st.text(characters, max_size=6))
def test_successor_admits_no_key_without_the_prefix(prefix: str, other: str) -> None:
    upper = prefix_upper_bound(prefix)
    if upper is not None and other.encode() >= prefix.encode() and not other.startswith(prefix):
        assert other.encode() >= upper.encode()


def test_a_uffff_sentinel_would_miss_astral_keys_but_the_successor_does_not() -> None:
    assert ("a\U0001f600").encode() > ("a\uffff").encode()
    assert prefix_upper_bound("a") == "b"
    assert prefix_upper_bound("a\ud7ff") == "a\ue000"
    assert prefix_upper_bound("a\U0010ffff") == "b"


def test_search_finds_astral_keys_past_uffff(firestore_store_uri: str) -> None:
    keys = ["a", "a\uffff", "a\U0001f600", "a\U00010000", "a\U0010ffff", "b", "`"]
    store = open_store(firestore_store_uri)

    async def scenario() -> list[str]:
        try:
            await store.upsert_many(ENTITY, [rec(k) for k in keys])
            return [r.key for r in await store.search(ENTITY, "a", 100)]
        finally:
            await store.close()

    assert run(scenario()) == ["a", "a\uffff", "a\U00010000", "a\U0001f600", "a\U0010ffff"]


def test_document_ids_hold_slashes_dots_and_reserved_names(firestore_store_uri: str) -> None:
    keys = ["/", "a/b", "/a/", ".", "..", "__x__", "__name__", "a" * 1024, "#", "?", "%2F"]
    store = open_store(firestore_store_uri)

    async def scenario() -> list[MemoryRecord | None]:
        try:
            records = [rec(k, value=k.encode()) for k in keys]
            assert await store.upsert_many(ENTITY, records) == [True] * len(keys)
            return [await store.load(ENTITY, k) for k in keys]
        finally:
            await store.close()

    assert run(scenario()) == [rec(k, value=k.encode()) for k in keys]
    assert len({document_id(ENTITY, k) for k in keys}) == len(keys)


def test_length_prefix_keeps_entity_and_key_boundaries_apart() -> None:
    assert document_id(b"a", "bc") != document_id(b"ab", "c")
    assert document_id(b"", "a") != document_id(b"a", "")


def test_a_document_whose_fields_disagree_with_its_id_is_never_returned(
    firestore_store_uri: str,
) -> None:
    """Reads check the stored entity and key, so no id clash can hand over another's row."""
    store = open_store(firestore_store_uri)
    assert isinstance(store, FirestoreMemoryStore)

    async def scenario() -> tuple[MemoryRecord | None, list[MemoryRecord]]:
        client = AsyncClient(project=store.project)
        try:
            forged = {"entity": b"other", "key": "k", "seq": 1, "rec": encode_record(rec("k"))}
            doc = client.collection(store.collection_id).document(document_id(ENTITY, "k"))
            await doc.set(forged)
            return await store.load(ENTITY, "k"), await store.search(ENTITY, "", 10)
        finally:
            await store.close()

    assert run(scenario()) == (None, [])


def test_values_past_the_1_mib_document_limit_are_chunked_and_rewritten_cleanly(
    firestore_store_uri: str,
) -> None:
    """The largest contract value does not fit one document; chunks hold it, and a rewrite
    (larger, then inline) leaves no stale chunk behind."""
    big = rec("blob", 1, bytes(range(256)) * (MAX_VALUE_BYTES // 256))
    bigger = rec("blob", 2, b"\x01" * MAX_VALUE_BYTES)
    small = rec("blob", 3, b"small")
    store = open_store(firestore_store_uri)
    assert isinstance(store, FirestoreMemoryStore)

    async def scenario() -> tuple[list[MemoryRecord | None], int]:
        client = AsyncClient(project=store.project)
        try:
            seen = []
            for record in (big, bigger, small):
                await store.upsert(ENTITY, record)
                seen.append(await store.load(ENTITY, "blob"))
            main = client.collection(store.collection_id).document(document_id(ENTITY, "blob"))
            chunks = [c async for c in main.collection("chunks").stream()]
            return seen, len(chunks)
        finally:
            await store.close()

    seen, leftover_chunks = run(scenario())

    assert seen == [big, bigger, small]
    assert leftover_chunks == 0


def test_a_flush_over_one_commit_is_refused_before_anything_is_sent(
    firestore_store_uri: str,
) -> None:
    records = [rec(f"blob{i}", 1, b"x" * 1_000_000) for i in range(10)]
    store = open_store(firestore_store_uri)

    async def scenario() -> list[MemoryRecord]:
        try:
            with pytest.raises(InvalidRecordError, match="10 MiB"):
                await store.upsert_many(ENTITY, records)
            return await store.search(ENTITY, "", 100)
        finally:
            await store.close()

    assert run(scenario()) == []


def test_provision_is_a_no_op_on_the_emulator(firestore_store_uri: str) -> None:
    """The emulator has no index admin API and enforces no index: nothing to create."""
    store = open_store(firestore_store_uri)

    async def scenario() -> list[MemoryRecord]:
        try:
            await store.provision()
            await store.provision()
            await store.upsert(ENTITY, rec("k"))
            return await store.search(ENTITY, "k", 1)
        finally:
            await store.close()

    assert run(scenario()) == [rec("k")]


def test_twenty_concurrent_upserts_converge_on_seq_20_in_every_one_of_20_runs(
    firestore_store_uri: str,
) -> None:
    """Contention on the emulator is the normal case here, not an outage: every run converges."""
    from beam_agents.testing.store_conformance import ConformanceTarget, race_concurrent_upserts

    async def opener() -> FirestoreMemoryStore:
        store = open_store(firestore_store_uri)
        assert isinstance(store, FirestoreMemoryStore)
        return store

    target = ConformanceTarget(open_store=opener)

    async def races() -> None:
        for attempt in range(20):
            await race_concurrent_upserts(target, b"race-entity", f"record-{attempt}")

    run(races())


def test_a_lost_race_past_the_deadline_is_reported_as_contention_not_an_outage(
    firestore_store_uri: str,
) -> None:
    """A commit that loses its race with no time left raises StoreContentionError.

    The loser caches the version it wrote; the winner then rewrites the row,
    so the loser's next commit fails its precondition, deterministically. Its
    timeout leaves no retry budget (timeout minus the 1 s rollback grace), so
    that first lost race is final: the error must say contention, and still
    be a StoreUnavailableError to every retry policy.
    """
    from beam_agents.memory.stores import StoreUnavailableError
    from beam_agents.memory.stores.errors import StoreContentionError

    project, collection = firestore_store_uri.removeprefix("firestore://").split("/")[:2]
    loser = FirestoreMemoryStore(project=project, collection=collection, timeout_s=1.0)
    winner = open_store(firestore_store_uri)

    async def scenario() -> None:
        try:
            await loser.upsert(ENTITY, rec("hot", seq=1))
            await winner.upsert(ENTITY, rec("hot", seq=2))
            with pytest.raises(StoreContentionError, match="contention, not an outage") as err:
                await loser.upsert(ENTITY, rec("hot", seq=3))
            assert isinstance(err.value, StoreUnavailableError)
            assert (await winner.load(ENTITY, "hot")) == rec("hot", seq=2)
        finally:
            await loser.close()
            await winner.close()

    run(scenario())
