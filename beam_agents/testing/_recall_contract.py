"""Recall's share of the store contract: candidates, embeddings and recall across entities.

Scores are checked against a cosine computed here with numpy, not against
`score_records`, so a bug shared by the scorer and a backend cannot hide.
Run through `StoreConformance` like every other capability class.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
import pytest

from beam_agents.memory.longterm import LongtermMemory
from beam_agents.memory.recall import RecallTooLargeError, score_records
from beam_agents.memory.stores.base import (
    MAX_RECALL_CANDIDATES,
    MAX_SEARCH_LIMIT,
    Embedding,
    MemoryRecord,
    MemoryStore,
)
from beam_agents.memory.stores.envelope import encode_record
from beam_agents.memory.stores.errors import InvalidRecordError, StoreNotProvisionedError
from beam_agents.testing._store_contract import ConformanceTarget, contract

__all__ = ["RecallContract", "reference_scores"]

Body = Callable[..., Awaitable[None]]

MODEL = "conformance-embedder"
DIMS = 16
WRITE_BATCH = 400
"""Rows per `upsert_many` when filling a store: under Firestore's writes per commit."""


def vectors(count: int, dims: int = DIMS, seed: int = 7) -> np.ndarray:
    """`count` fixed float32 vectors (a seeded generator: the same on every run)."""
    return np.random.default_rng(seed).standard_normal((count, dims)).astype("<f4")


def embedding(row: np.ndarray, model: str = MODEL) -> Embedding:
    return Embedding(model, len(row), row.astype("<f4").tobytes())


def reference_scores(query: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Cosine of each row with the query, in float64: the test's own reference."""
    q, m = query.astype(np.float64), matrix.astype(np.float64)
    scores: np.ndarray = (m @ q) / (np.linalg.norm(m, axis=1) * np.linalg.norm(q))
    return scores


def embedded(key: str, row: np.ndarray, seq: int = 1, model: str = MODEL) -> MemoryRecord:
    return MemoryRecord(key, f"v:{key}".encode(), seq, 1000, embedding(row, model))


class _FixedEmbed:
    """A deterministic embed function: text "q:<i>" is row i of a fixed table."""

    def __init__(self, table: np.ndarray) -> None:
        self.table = table

    async def __call__(self, texts: Sequence[str]) -> list[Embedding]:
        return [embedding(self.table[int(text.split(":")[1])]) for text in texts]


def handle(store: MemoryStore, entity: bytes, table: np.ndarray, seq: int = 99) -> LongtermMemory:
    return LongtermMemory(
        store, entity_key=entity, seq=seq, now_ms=5000, timeout_s=60.0, embed=_FixedEmbed(table)
    )


async def fill(store: MemoryStore, entity: bytes, records: Sequence[MemoryRecord]) -> None:
    for start in range(0, len(records), WRITE_BATCH):
        await store.upsert_many(entity, records[start : start + WRITE_BATCH])


def _slow(scale: int) -> Callable[[Body], Body]:
    """Give one contract `scale` times the target's timeout."""

    def mark(body: Body) -> Body:
        body.timeout_scale = scale  # type: ignore[attr-defined]
        return body

    return mark


class RecallContract:
    """Recall: candidates, embeddings that round trip, exact scores and recall across entities."""

    @contract
    async def test_recall_ranks_like_a_numpy_cosine(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """recall's top k and scores (within 1e-6) equal a float64 numpy cosine over the rows."""
        table = vectors(81)
        keys = [f"doc/{i:03d}" for i in range(80)]
        await fill(store, b"e", [embedded(k, table[i]) for i, k in enumerate(keys)])
        scores = reference_scores(table[80], table[:80])
        order = sorted(range(80), key=lambda i: (-scores[i], keys[i]))[:10]
        recalled = await handle(store, b"e", table).recall("q:80", k=10, prefix="doc/")
        assert [r.key for r in recalled] == [keys[i] for i in order]
        for hit, i in zip(recalled, order, strict=True):
            assert abs(hit.score - scores[i]) < 1e-6

    @contract
    async def test_a_staged_save_with_an_embedding_replaces_the_stored_one(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """recall scores this activation's staged vector for a key, not the stored one."""
        table = vectors(3)
        await store.upsert_many(b"e", [embedded("a", table[0]), embedded("b", -table[2])])
        memory = handle(store, b"e", table)
        memory.save("b", b"new", text="q:2")
        recalled = await memory.recall("q:2", k=2)
        assert recalled[0].key == "b"
        assert recalled[0].record.value == b"new"
        assert abs(recalled[0].score - 1.0) < 1e-6

    @pytest.mark.parametrize("char", ["%", "_", "*"])
    @contract
    async def test_recall_prefix_is_literal(
        self, store: MemoryStore, target: ConformanceTarget, char: str
    ) -> None:
        """A recall prefix holding a wildcard matches only keys holding that character."""
        table = vectors(4)
        keys = [f"a{char}1", "ab1", "aX1"]
        await store.upsert_many(b"e", [embedded(k, table[i]) for i, k in enumerate(keys)])
        recalled = await handle(store, b"e", table).recall("q:3", k=5, prefix=f"a{char}")
        assert [r.key for r in recalled] == [f"a{char}1"]
        found = await store.candidates(b"e", f"a{char}", MAX_RECALL_CANDIDATES + 1)
        assert [r.key for r in found] == [f"a{char}1"]

    @contract
    async def test_records_of_another_embedder_are_never_compared(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """Rows embedded by another model, or at another width, are skipped and counted."""
        table = vectors(3)
        other_width = MemoryRecord("w", b"", 1, 1, embedding(vectors(1, dims=8)[0]))
        rows = [
            embedded("mine", table[0]),
            embedded("theirs", table[1], model="other"),
            other_width,
        ]
        await store.upsert_many(b"e", [*rows, MemoryRecord("plain", b"", 1, 1)])
        memory = handle(store, b"e", table)
        recalled = await memory.recall("q:1", k=5)
        assert [r.key for r in recalled] == ["mine"]
        scored = score_records(embedding(table[1]), await store.candidates(b"e", "", 10), 5)
        assert (scored.compared, scored.other_embedder) == (1, 2)

    @contract
    @_slow(8)  # 10,000 rows written and read three times: seconds on an emulator
    async def test_candidates_reads_up_to_the_recall_bound(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """candidates reads all 10,000 rows in key order; a 10,001st makes recall refuse."""
        row = vectors(1)[0]
        keys = [f"k/{i:05d}" for i in range(MAX_RECALL_CANDIDATES)]
        await fill(store, b"e", [embedded(k, row) for k in keys])
        found = await store.candidates(b"e", "k/", MAX_RECALL_CANDIDATES + 1)
        assert [r.key for r in found] == keys
        table = np.stack([row])
        recalled = await handle(store, b"e", table).recall("q:0", k=3, prefix="k/")
        assert [r.key for r in recalled] == keys[:3]
        await store.upsert(b"e", embedded("k/99999", row))
        with pytest.raises(RecallTooLargeError):
            await handle(store, b"e", table).recall("q:0", k=3, prefix="k/")
        assert len(await store.candidates(b"e", "k/", 5)) == 5

    @pytest.mark.parametrize("limit", [0, MAX_RECALL_CANDIDATES + 2, True, 2.0])
    @contract
    async def test_candidates_limit_outside_bounds_is_rejected(
        self, store: MemoryStore, target: ConformanceTarget, limit: Any
    ) -> None:
        """A candidates limit that is not an int in [1, MAX_RECALL_CANDIDATES + 1] is refused."""
        with pytest.raises(InvalidRecordError):
            await store.candidates(b"e", "", limit)

    @pytest.mark.parametrize(
        "pair", [(b"a", b"ab"), (b"a", b"a\x00"), (b"", b"\x00"), (b"a\x00b", b"a")], ids=repr
    )
    @contract
    async def test_no_entity_recalls_another_entitys_rows(
        self, store: MemoryStore, target: ConformanceTarget, pair: tuple[bytes, bytes]
    ) -> None:
        """Entities whose keys prefix each other or hold NUL recall only their own rows."""
        table = vectors(3)
        await asyncio.gather(
            *(store.upsert(e, embedded(f"k{i}", table[i])) for i, e in enumerate(pair))
        )
        for i, entity in enumerate(pair):
            recalled = await handle(store, entity, table).recall("q:2", k=5)
            assert [r.key for r in recalled] == [f"k{i}"]
            assert [r.key for r in await store.candidates(entity, "", 10)] == [f"k{i}"]

    @contract
    async def test_embeddings_round_trip_byte_for_byte(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """load, search, candidates and scan return the exact vector bytes that were written."""
        awkward = np.array([0.1, -0.0, 1e-38, 3.4e38, -7.25, 1 / 3], dtype="<f4")
        records = [embedded("x", awkward), embedded("y", vectors(1, dims=1536)[0])]
        await store.upsert_many(b"e", records)
        for record in records:
            assert await store.load(b"e", record.key) == record
        assert await store.search(b"e", "", MAX_SEARCH_LIMIT) == records
        assert await store.candidates(b"e", "", 10) == records
        scanned = sorted([r async for _, r in store.scan()], key=lambda r: r.key)
        assert [encode_record(r) for r in scanned] == [encode_record(r) for r in records]
        if target.read_raw is not None:
            assert await target.read_raw(store, b"e", "x") == encode_record(records[0])

    @contract
    async def test_rewriting_without_an_embedding_drops_the_vector(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """A record rewritten without an embedding is no longer recalled, nor across entities."""
        table = vectors(2)
        await store.upsert(b"e", embedded("k", table[0]))
        await store.upsert(b"e", MemoryRecord("k", b"plain", 2, 2))
        assert await handle(store, b"e", table).recall("q:0", k=3) == []
        if store.cross_entity_index is not None and not target.vector_index_missing:
            assert await store.nearest(embedding(table[0]), 5, "") == []

    @contract
    async def test_nearest_finds_the_exact_neighbours_across_entities(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """nearest's recall@10 against an exact numpy scan is >= 0.9 on 500 vectors, with exact
        scores; a backend without a vector index refuses it instead."""
        table = vectors(501, dims=32, seed=11)
        records = [
            (f"ent-{i % 50}".encode(), embedded(f"doc/{i:03d}", table[i])) for i in range(500)
        ]
        by_entity: dict[bytes, list[MemoryRecord]] = {}
        for entity, record in records:
            by_entity.setdefault(entity, []).append(record)
        await asyncio.gather(*(fill(store, e, rs) for e, rs in by_entity.items()))
        await store.upsert(b"other", embedded("doc/x", table[0], model="other"))
        query = embedding(table[500])
        if store.cross_entity_index is None:
            with pytest.raises(NotImplementedError):
                await store.nearest(query, 10, "")
            return
        await store.provision()  # builds the index of an embedder whose first rows just landed
        if target.vector_index_missing:
            with pytest.raises(StoreNotProvisionedError, match="pgvector"):
                await store.nearest(query, 10, "")
            return
        scores = reference_scores(table[500], table[:500])
        exact = sorted(range(500), key=lambda i: -scores[i])[:10]
        found = await store.nearest(query, 10, "doc/")
        hits = {(n.entity_key, n.record.key) for n in found}
        overlap = sum((records[i][0], records[i][1].key) in hits for i in exact)
        assert overlap >= (10 if target.exact_nearest else 9), f"recall@10 is {overlap / 10}"
        for neighbour in found:
            i = int(neighbour.record.key[4:])
            assert neighbour.entity_key == records[i][0]
            assert abs(neighbour.score - scores[i]) < 1e-6
        assert [n.score for n in found] == sorted((n.score for n in found), reverse=True)
        assert await store.nearest(query, 3, "nothing/") == []
