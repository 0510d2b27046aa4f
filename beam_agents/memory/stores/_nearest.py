"""Ranking a recall across entities: the exact cosine, however the candidates were found.

A native index (pgvector's HNSW, Firestore's vector search, sqlite-vec)
only chooses which records are candidates; their scores are then computed
here, from the vectors in the records' own envelopes, by the same function
that scores a single entity's recall. So a score never depends on the
index's float arithmetic, and every backend reports the same score for the
same record and query. Records of another embedder (model or width) are
never candidates, whatever the index returned.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from beam_agents.memory.recall import _cosines
from beam_agents.memory.stores.base import Embedding, MemoryRecord, Neighbour

__all__ = ["rank_neighbours", "same_space"]


def same_space(query: Embedding, record: MemoryRecord) -> bool:
    """Whether `record` carries a vector of the query's embedder (same model, same width)."""
    embedding = record.embedding
    return (
        embedding is not None
        and embedding.model_id == query.model_id
        and embedding.dimensions == query.dimensions
    )


def rank_neighbours(
    query: Embedding, found: Iterable[tuple[bytes, MemoryRecord]], k: int, prefix: str
) -> list[Neighbour]:
    """The `k` best of `found` under `prefix`, by exact cosine; ties by (entity, key)."""
    pairs = sorted(
        {
            (entity_key, record.key): (entity_key, record)
            for entity_key, record in found
            if record.key.startswith(prefix) and same_space(query, record)
        }.values(),
        key=lambda pair: (pair[0], pair[1].key.encode("utf-8")),
    )
    if not pairs:
        return []
    matrix = np.frombuffer(
        b"".join([record.embedding.vector for _, record in pairs]),  # type: ignore[union-attr]
        dtype="<f4",
    ).reshape(len(pairs), query.dimensions)
    scores = _cosines(matrix.astype(np.float64), np.frombuffer(query.vector, dtype="<f4"))
    order = np.argsort(-scores, kind="stable")[:k].tolist()
    return [Neighbour(pairs[i][0], pairs[i][1], float(scores[i])) for i in order]
