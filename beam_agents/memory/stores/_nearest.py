"""Ranking a recall across entities: the exact cosine, however the candidates were found.

A native index (pgvector's HNSW, Firestore's vector search, sqlite-vec)
only chooses which records are candidates; their scores are then computed
from the vectors in the records' own envelopes, by the same function that
scores a single entity's recall (`beam_agents._vectors`). So a score never
depends on the index's float arithmetic, and every backend reports the same
score for the same record and query. Records of another embedder (model or
width) are never candidates, whatever the index returned.
"""

from __future__ import annotations

from collections.abc import Iterable

from beam_agents._vectors import rank_by_cosine, same_space
from beam_agents.memory.stores.base import Embedding, MemoryRecord, Neighbour

__all__ = ["rank_neighbours"]


def rank_neighbours(
    query: Embedding, found: Iterable[tuple[bytes, MemoryRecord]], k: int, prefix: str
) -> list[Neighbour]:
    """The `k` best of `found` under `prefix`, by exact cosine; ties by (entity, key)."""
    unique: dict[tuple[bytes, str], tuple[bytes, MemoryRecord, Embedding]] = {}
    for entity_key, record in found:
        embedding = record.embedding
        if embedding is None or not record.key.startswith(prefix):
            continue
        if same_space(query, embedding):
            unique[entity_key, record.key] = (entity_key, record, embedding)
    hits = sorted(unique.values(), key=lambda hit: (hit[0], hit[1].key.encode("utf-8")))
    ranked = rank_by_cosine(query, [embedding for _, _, embedding in hits], k)
    return [Neighbour(hits[index][0], hits[index][1], score) for index, score in ranked]
