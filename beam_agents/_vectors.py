"""Cosine ranking of stored vectors: the one scorer under recall and every store.

Per-entity recall (`beam_agents.memory.recall`) and recall across entities
(a store's `nearest`) rank with this one function, so a record's score is
the same whichever path found it, on every backend and every replay.

Only vectors of the query's own embedder (same `model_id` and width) are
comparable: vectors of two models live in different spaces, and a cosine
between them means nothing. Scores are computed in float64 from the stored
float32 values, and equal scores keep the order the caller gave, so the
caller's order is the tie-break and the ranking is total.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

__all__ = ["Vector", "rank_by_cosine", "same_space"]


class Vector(Protocol):
    """What scoring reads of an embedding (a store's `Embedding` is one): nothing above it."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    @property
    def vector(self) -> bytes: ...


def same_space(query: Vector, embedding: Vector) -> bool:
    """Whether `embedding` comes from the query's embedder (same model, same width)."""
    return embedding.model_id == query.model_id and embedding.dimensions == query.dimensions


def rank_by_cosine(
    query: Vector, vectors: Sequence[Vector], k: int, min_score: float | None = None
) -> list[tuple[int, float]]:
    """The `k` best of `vectors` as (index, cosine), best first, equal scores in input order.

    Every vector must be in the query's space (`same_space`); below
    `min_score`, none is returned.
    """
    if not vectors:
        return []
    matrix = np.frombuffer(b"".join([vector.vector for vector in vectors]), dtype="<f4")
    scores = _cosines(
        matrix.reshape(len(vectors), query.dimensions).astype(np.float64),
        np.frombuffer(query.vector, dtype="<f4").astype(np.float64),
    )
    # A stable sort on the negated score keeps input order among equal scores.
    order = np.argsort(-scores, kind="stable")
    if min_score is not None:
        order = order[scores[order] >= min_score]
    return [(index, float(scores[index])) for index in order[:k].tolist()]


def _cosines(
    matrix: npt.NDArray[np.float64], query: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Cosine of every row with the query; 0.0 where either vector is zero.

    A float32 times a float32 is exact in float64, and each row's products
    are summed by numpy's elementwise reduction (a fixed pairwise order in
    plain C), not by a BLAS matrix product, whose summation order varies
    with the CPU and the thread count: so a score does not change with the
    worker it is computed on.
    """
    query_norm = float(np.sqrt(np.sum(query * query)))
    dots = np.sum(matrix * query, axis=1)
    norms = np.sqrt(np.sum(matrix * matrix, axis=1))
    if query_norm == 0.0:
        return np.zeros(len(matrix))
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = np.where(norms == 0.0, 0.0, dots / (norms * query_norm))
    return np.clip(scores, -1.0, 1.0)
