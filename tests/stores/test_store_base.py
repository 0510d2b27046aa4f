"""`MemoryStore` checks every argument itself: a backend's hooks only ever see valid input."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from beam_agents.memory.stores import (
    Embedding,
    InvalidRecordError,
    MemoryRecord,
    MemoryStore,
    Neighbour,
)
from beam_agents.testing._store_contract import BAD_LIMITS, INVALID_CALLS


class _HooksOnly(MemoryStore):
    """A backend with the core hooks only, recording every hook call."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def _load(self, entity_key: bytes, key: str) -> MemoryRecord | None:
        self.calls.append("load")
        return None

    async def _search(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        self.calls.append(f"search {limit}")
        return []

    async def _upsert_many(self, entity_key: bytes, records: list[MemoryRecord]) -> list[bool]:
        self.calls.append("upsert")
        return [True] * len(records)

    async def scan(self) -> AsyncIterator[tuple[bytes, MemoryRecord]]:
        self.calls.append("scan")
        return
        yield


class _Indexed(_HooksOnly):
    """The same, with a cross-entity index."""

    cross_entity_index = "recorded"

    async def _nearest(self, query: Embedding, k: int, prefix: str) -> list[Neighbour]:
        self.calls.append("nearest")
        return []


def _search_with(limit: Any) -> Callable[[MemoryStore], Awaitable[object]]:
    return lambda store: store.search(b"e", "", limit)


_QUERY = Embedding.of("model", [1.0, 0.0])
_NOT_AN_EMBEDDING: Any = [1.0, 0.0]
_BAD_CALLS: dict[str, Callable[[MemoryStore], Awaitable[object]]] = {
    **INVALID_CALLS,
    **{f"limit-{bad!r}": _search_with(bad) for bad in BAD_LIMITS},
    "empty-record-key": lambda s: s.load(b"e", ""),
    "candidates-limit-0": lambda s: s.candidates(b"e", "", 0),
    "nearest-k-0": lambda s: s.nearest(_QUERY, 0, ""),
    "nearest-not-an-embedding": lambda s: s.nearest(_NOT_AN_EMBEDDING, 1, ""),
}


@pytest.mark.parametrize("call", _BAD_CALLS.values(), ids=_BAD_CALLS.keys())
def test_invalid_arguments_never_reach_a_hook(
    call: Callable[[MemoryStore], Awaitable[object]],
) -> None:
    store = _Indexed()

    async def main() -> None:
        await call(store)

    with pytest.raises(InvalidRecordError):
        asyncio.run(main())
    assert store.calls == []


def test_an_empty_batch_is_answered_without_a_hook() -> None:
    store = _HooksOnly()

    assert asyncio.run(store.upsert_many(b"e", [])) == []
    assert store.calls == []


def test_candidates_default_to_a_search_capped_at_the_search_limit() -> None:
    store = _HooksOnly()

    asyncio.run(store.candidates(b"e", "p", 10_001))

    assert store.calls == ["search 1000"]


def test_a_store_without_an_index_refuses_nearest() -> None:
    store = _HooksOnly()

    with pytest.raises(NotImplementedError, match="no native vector index"):
        asyncio.run(store.nearest(_QUERY, 1, ""))
    assert store.calls == []
