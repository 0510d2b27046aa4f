"""Exact recall: scoring an entity's records against a query by cosine similarity.

Every backend returns the same envelope bytes, so the vectors scored here
are bit-identical wherever the rows live, and the scoring is one function in
one place: the same records and query give the same scores, in the same
order, on every backend, on every replay, parked or not. Scores are computed
in float64 from the stored float32 values; ties are broken by key, so the
order is total.

Only records embedded by the query's own embedder (same `model_id` and
width) are compared: vectors of two models live in different spaces, and a
cosine between them means nothing. Others are skipped and counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import numpy as np

from beam_agents.errors import BeamAgentsError
from beam_agents.memory.stores.base import MAX_RECALL_CANDIDATES, Embedding, MemoryRecord

__all__ = [
    "MAX_RECALL_K",
    "MAX_TEXT_BYTES",
    "RecallTooLargeError",
    "Recalled",
    "Scored",
    "check_k",
    "check_min_score",
    "check_text",
    "score_records",
]

MAX_RECALL_K: Final = 100
"""Most records one recall returns."""

MAX_TEXT_BYTES: Final = 32_768
"""Longest text, in UTF-8 bytes, that `save(text=)` or `recall` embeds: hosted
embedders cap their input at a few thousand tokens, and a longer text would
fail at the provider after the agent already ran."""


@dataclass(frozen=True, slots=True)
class Recalled:
    """One recalled record and its cosine similarity to the query, in [-1, 1]."""

    record: MemoryRecord
    score: float

    @property
    def key(self) -> str:
        return self.record.key


@dataclass(frozen=True, slots=True)
class Scored:
    """What one scoring pass found: the ranked records, and how many were left out."""

    recalled: list[Recalled]
    compared: int
    other_embedder: int
    """Records carrying a vector of another embedder (or width): never compared."""


class RecallTooLargeError(BeamAgentsError, ValueError):
    """A recall would score more than `MAX_RECALL_CANDIDATES` records: refused, not cut."""

    def __init__(self, prefix: str) -> None:
        super().__init__(
            f"recall under prefix {prefix!r} has more than {MAX_RECALL_CANDIDATES} candidate "
            "records for this entity; recall scores every candidate exactly, so it refuses "
            "rather than cut: narrow the prefix"
        )
        self.prefix = prefix


def check_text(text: object, what: str) -> str:
    """A text to embed: a non-empty str of at most `MAX_TEXT_BYTES` UTF-8 bytes."""
    if type(text) is not str or not text.strip():
        raise ValueError(f"{what} must be a non-empty str, got {text!r:.80}")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValueError(f"{what} is not valid UTF-8: {exc.reason}") from None
    if size > MAX_TEXT_BYTES:
        raise ValueError(f"{what} is {size} UTF-8 bytes, over the {MAX_TEXT_BYTES}-byte limit")
    return text


def check_k(k: object) -> int:
    if type(k) is not int or not 1 <= k <= MAX_RECALL_K:
        raise ValueError(f"k must be an int in [1, {MAX_RECALL_K}], got {k!r}")
    return k


def check_min_score(min_score: object) -> float | None:
    if min_score is None:
        return None
    if type(min_score) not in (int, float) or not -1.0 <= float(min_score) <= 1.0:  # type: ignore[arg-type]
        raise ValueError(f"min_score must be None or a number in [-1, 1], got {min_score!r}")
    return float(min_score)  # type: ignore[arg-type]


def score_records(
    query: Embedding,
    records: Iterable[MemoryRecord],
    k: int,
    min_score: float | None = None,
) -> Scored:
    """The `k` records most similar to `query`, best first, ties by key ascending."""
    comparable: list[MemoryRecord] = []
    other = 0
    for record in records:
        embedding = record.embedding
        if embedding is None:
            continue
        if embedding.model_id != query.model_id or embedding.dimensions != query.dimensions:
            other += 1
            continue
        comparable.append(record)
    if not comparable:
        return Scored([], 0, other)
    comparable.sort(key=lambda record: record.key)
    matrix = np.frombuffer(
        b"".join([record.embedding.vector for record in comparable]),  # type: ignore[union-attr]
        dtype="<f4",
    ).reshape(len(comparable), query.dimensions)
    scores = _cosines(matrix.astype(np.float64), np.frombuffer(query.vector, dtype="<f4"))
    # A stable sort on the negated score keeps key order among equal scores.
    order = np.argsort(-scores, kind="stable")
    if min_score is not None:
        order = order[scores[order] >= min_score]
    ranked = [Recalled(comparable[i], float(scores[i])) for i in order[:k].tolist()]
    return Scored(ranked, len(comparable), other)


def _cosines(matrix: np.ndarray, query32: np.ndarray) -> np.ndarray:
    """Cosine of every row with the query; 0.0 where either vector is zero.

    A float32 times a float32 is exact in float64, and each row's products
    are summed by numpy's elementwise reduction (a fixed pairwise order in
    plain C), not by a BLAS matrix product, whose summation order varies
    with the CPU and the thread count: so a score does not change with the
    worker it is computed on.
    """
    query = query32.astype(np.float64)
    query_norm = float(np.sqrt(np.sum(query * query)))
    dots = np.sum(matrix * query, axis=1)
    norms = np.sqrt(np.sum(matrix * matrix, axis=1))
    if query_norm == 0.0:
        return np.zeros(len(matrix))
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = np.where(norms == 0.0, 0.0, dots / (norms * query_norm))
    return np.clip(scores, -1.0, 1.0)
