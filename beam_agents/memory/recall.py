"""Exact recall: scoring an entity's records against a query by cosine similarity.

Every backend returns the same envelope bytes, so the vectors scored here
are bit-identical wherever the rows live, and the scoring is one function in
one place (`beam_agents._vectors`, which recall across entities uses too):
the same records and query give the same scores, in the same order, on every
backend, on every replay, parked or not. Ties are broken by key, so the
order is total.

Only records embedded by the query's own embedder (same `model_id` and
width) are compared; others are skipped and counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from beam_agents._vectors import rank_by_cosine, same_space
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
    # `type() is`, not isinstance: a bool, or a numpy scalar, is not a score.
    if min_score is None:
        return None
    if (type(min_score) is int or type(min_score) is float) and -1.0 <= min_score <= 1.0:
        return float(min_score)
    raise ValueError(f"min_score must be None or a number in [-1, 1], got {min_score!r}")


def score_records(
    query: Embedding,
    records: Iterable[MemoryRecord],
    k: int,
    min_score: float | None = None,
) -> Scored:
    """The `k` records most similar to `query`, best first, ties by key ascending."""
    comparable: list[tuple[MemoryRecord, Embedding]] = []
    other = 0
    for record in records:
        embedding = record.embedding
        if embedding is None:
            continue
        if not same_space(query, embedding):
            other += 1
            continue
        comparable.append((record, embedding))
    comparable.sort(key=lambda pair: pair[0].key)
    ranked = rank_by_cosine(query, [embedding for _, embedding in comparable], k, min_score)
    recalled = [Recalled(comparable[index][0], score) for index, score in ranked]
    return Scored(recalled, len(comparable), other)
