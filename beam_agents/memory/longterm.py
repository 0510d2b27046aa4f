"""The long-term handle an activation sees as `ctx.memory.longterm`.

It is the only path from an agent to a store, and it keeps the one
in-pipeline external write replay-safe:

- `save` performs no I/O. It stages a record stamped with the activation's
  frozen seq and now_ms; the runtime flushes the staged records after the
  agent (and the summarizer) returned successfully and before the bundle's
  state commits. A failed or timed-out activation flushes nothing.
- `load` and `search` read the store inline, then overlay the activation's
  own staged saves, so the agent sees its writes in program order.
- `save(text=...)` stages a text to embed with the record; `recall(query)`
  embeds the query (and any texts staged so far, in the same call) through
  the activation's model-call path, then scores the entity's records under a
  prefix exactly (`beam_agents.memory.recall`), staged saves overlaid. The
  texts still pending when the agent returns are embedded in one more call
  before the flush.

A record's `updated_at_ms` is the activation's event time, clamped to 0
when it lies before the Unix epoch (`record_time_ms`): `beam.Create` and
other bounded sources stamp Beam's minimum timestamp, about -2.9e5 years,
which no store column holds.

Reads are point-in-time, not snapshots; the replay discipline is the
caller's: a long-term write must be computed from replay-stable inputs (the
event, working memory, replay-cached model output) and never conditioned on
a same-activation long-term read of the same key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import replace
from typing import Any, Final, TypeVar

from beam_agents._beam_metrics import counter
from beam_agents.errors import BeamAgentsError, describe_briefly
from beam_agents.memory.recall import (
    Recalled,
    RecallTooLargeError,
    check_k,
    check_min_score,
    check_text,
    score_records,
)
from beam_agents.memory.stores.base import (
    MAX_RECALL_CANDIDATES,
    Embedding,
    MemoryRecord,
    MemoryStore,
    Neighbour,
    check_key,
    check_limit,
    check_record,
    check_record_key,
)

__all__ = [
    "DEFAULT_RECALL_K",
    "DEFAULT_SEARCH_LIMIT",
    "CrossEntityRecall",
    "CrossEntityRecallNotConfigured",
    "EmbedTexts",
    "EmbedderNotConfigured",
    "LongtermMemory",
    "LongtermReadError",
    "record_time_ms",
]

DEFAULT_SEARCH_LIMIT: Final = 100
DEFAULT_RECALL_K: Final = 5
T = TypeVar("T")

_recalls = counter("beam_agents.memory", "recalls")
_compared = counter("beam_agents.memory", "recall_records_compared")
_other_embedder = counter("beam_agents.memory", "recall_records_other_embedder")
"""Records a recall skipped because another embedder (or width) made their vectors."""

EmbedTexts = Callable[[Sequence[str]], Awaitable[list[Embedding]]]
"""How the handle embeds: the activation's model-call path (replay-cached, parked, counted)."""


def record_time_ms(event_time_ms: int) -> int:
    """The `updated_at_ms` a record written at `event_time_ms` carries: never before the epoch.

    Records store `updated_at_ms` in [0, 2**63). Event times before the epoch
    (Beam's minimum timestamp from `beam.Create`, or a source's own negative
    times) are clamped to 0, a pure function of the event time, so a
    replayed activation still writes byte-identical rows.
    """
    return max(event_time_ms, 0)


class LongtermReadError(BeamAgentsError):
    """A long-term read failed; uncaught, it fails the activation as `longterm_read_failed`."""


class EmbedderNotConfigured(BeamAgentsError, RuntimeError):
    """`save(text=)` or `recall` was used on a pipeline without an embedder."""

    def __init__(self) -> None:
        super().__init__(
            "no embedder is configured: set AgentConfig.embedder (e.g. "
            "embedder_from_spec('openai:text-embedding-3-small')) to save with text= or recall"
        )


class CrossEntityRecallNotConfigured(BeamAgentsError, RuntimeError):
    """`across_entities` was used without `AgentConfig.cross_entity_recall`."""

    def __init__(self) -> None:
        super().__init__(
            "recall across entities is off: set AgentConfig.cross_entity_recall=True (on a "
            "store with a native vector index) to use ctx.memory.longterm.across_entities"
        )


class CrossEntityRecall:
    """Recall over every entity's records, through the store's native vector index.

    A separate handle on purpose: it reads other entities' rows, which the
    rest of the tier never does. It sees committed rows only (not this
    activation's staged saves), and where the index is approximate
    (pgvector's HNSW) so is the answer.
    """

    __slots__ = ("_handle",)

    def __init__(self, handle: LongtermMemory) -> None:
        self._handle = handle

    async def recall(
        self,
        query: str,
        k: int = DEFAULT_RECALL_K,
        *,
        prefix: str = "",
        min_score: float | None = None,
    ) -> list[Neighbour]:
        """The `k` records under `prefix`, of any entity, nearest `query`, best first."""
        handle = self._handle
        query_embedding, floor = await handle._embed_query(query, k, prefix, min_score)
        found = await handle._read(
            handle._store.nearest(query_embedding, k, prefix), f"recall across entities {prefix!r}"
        )
        _recalls.inc()
        return [hit for hit in found if floor is None or hit.score >= floor][:k]


class LongtermMemory:
    """One activation's view of its entity's long-term rows."""

    __slots__ = (
        "_cross_entity",
        "_embed",
        "_entity_key",
        "_now_ms",
        "_seq",
        "_staged",
        "_store",
        "_texts",
        "_timeout_s",
    )

    def __init__(
        self,
        store: MemoryStore,
        *,
        entity_key: bytes,
        seq: int,
        now_ms: int,
        timeout_s: float,
        embed: EmbedTexts | None = None,
        cross_entity: bool = False,
    ) -> None:
        self._store = store
        self._entity_key = entity_key
        self._seq = seq
        self._now_ms = now_ms
        self._timeout_s = timeout_s
        self._staged: dict[str, MemoryRecord] = {}
        self._texts: dict[str, str] = {}
        self._embed = embed
        self._cross_entity = cross_entity

    @property
    def across_entities(self) -> CrossEntityRecall:
        """Recall over every entity's records (`AgentConfig.cross_entity_recall`)."""
        if not self._cross_entity:
            raise CrossEntityRecallNotConfigured()
        return CrossEntityRecall(self)

    def bind_embedder(self, embed: EmbedTexts) -> None:
        """Embed through `embed`: the activation's context, built after this handle."""
        self._embed = embed

    def save(self, key: str, value: bytes, *, text: str | None = None) -> None:
        """Stage an upsert of `key`; flushed only if the activation succeeds.

        With `text`, the record is flushed with the text's embedding, which
        makes it recallable; the text itself is not stored (put it in
        `value` if the agent needs it back).
        """
        record = MemoryRecord(
            key=key, value=value, seq=self._seq, updated_at_ms=record_time_ms(self._now_ms)
        )
        if text is not None:
            check_text(text, "save(text=)")
            if self._embed is None:
                raise EmbedderNotConfigured()
        self._staged[key] = check_record(record)
        if text is None:
            self._texts.pop(key, None)
        else:
            self._texts[key] = text

    async def recall(
        self,
        query: str,
        k: int = DEFAULT_RECALL_K,
        *,
        prefix: str = "",
        min_score: float | None = None,
    ) -> list[Recalled]:
        """The `k` records under `prefix` most similar to `query`, best first (ties by key).

        Scores are exact cosines over every candidate: the entity's records
        under `prefix` that carry a vector of this pipeline's embedder, with
        this activation's staged saves overlaid. More than
        `MAX_RECALL_CANDIDATES` candidates is refused (`RecallTooLargeError`).
        """
        query_embedding, floor = await self._embed_query(query, k, prefix, min_score)
        found = await self._read(
            self._store.candidates(self._entity_key, prefix, MAX_RECALL_CANDIDATES + 1),
            f"recall {prefix!r}",
        )
        merged = {record.key: record for record in found}
        if len(found) > MAX_RECALL_CANDIDATES:
            raise RecallTooLargeError(prefix)
        for key, record in self._staged.items():
            if key.startswith(prefix):
                merged[key] = record
        if len(merged) > MAX_RECALL_CANDIDATES:
            raise RecallTooLargeError(prefix)
        scored = score_records(query_embedding, merged.values(), k, floor)
        _recalls.inc()
        _compared.inc(scored.compared)
        if scored.other_embedder:
            _other_embedder.inc(scored.other_embedder)
        return scored.recalled

    async def _embed_query(
        self, query: str, k: int, prefix: str, min_score: float | None
    ) -> tuple[Embedding, float | None]:
        """A recall's arguments checked, and its query embedded (with any staged texts)."""
        check_text(query, "recall query")
        check_k(k)
        check_key(prefix)
        floor = check_min_score(min_score)
        if self._embed is None:
            raise EmbedderNotConfigured()
        return await self._embed_with_staged(query), floor

    async def embed_staged(self) -> None:
        """Embed the texts still pending, in one call: the runtime's step before the flush."""
        if self._texts:
            await self._embed_with_staged(None)

    async def _embed_with_staged(self, query: str | None) -> Embedding:
        """Embed `query` and every pending staged text in one call; the query's embedding."""
        assert self._embed is not None
        keys = sorted(self._texts)
        wanted = [self._texts[key] for key in keys]
        if query is not None:
            wanted.append(query)
        # Each distinct text once: an agent often recalls with the text it just saved.
        texts = list(dict.fromkeys(wanted))
        by_text = dict(zip(texts, await self._embed(texts), strict=True))
        for key in keys:
            self._staged[key] = replace(self._staged[key], embedding=by_text[self._texts[key]])
        self._texts.clear()
        return by_text[wanted[-1]]

    async def load(self, key: str) -> MemoryRecord | None:
        """The record under `key`: this activation's staged save, else the store's."""
        check_record_key(key)
        staged = self._staged.get(key)
        if staged is not None:
            return staged
        return await self._read(self._store.load(self._entity_key, key), f"load {key!r}")

    async def search(self, prefix: str, limit: int = DEFAULT_SEARCH_LIMIT) -> list[MemoryRecord]:
        """Up to `limit` records whose key starts with `prefix`, ascending, staged saves first."""
        check_key(prefix)
        check_limit(limit)
        found = await self._read(
            self._store.search(self._entity_key, prefix, limit), f"search {prefix!r}"
        )
        merged = {record.key: record for record in found}
        for key, record in self._staged.items():
            if key.startswith(prefix):
                merged[key] = record
        # Python orders str by code point, which is UTF-8 byte order: the stores' order.
        return [merged[key] for key in sorted(merged)][:limit]

    def staged(self) -> list[MemoryRecord]:
        """The records to flush, in key order (deterministic across replays)."""
        if self._texts:
            raise RuntimeError(
                f"{len(self._texts)} staged text(s) were never embedded: "
                "embed_staged() runs before the flush"
            )
        return [self._staged[key] for key in sorted(self._staged)]

    async def _read(self, call: Coroutine[Any, Any, T], what: str) -> T:
        try:
            return await asyncio.wait_for(call, self._timeout_s)
        except Exception as exc:
            raise LongtermReadError(f"long-term {what} failed: {describe_briefly(exc)}") from exc

    def __repr__(self) -> str:
        return f"LongtermMemory(seq={self._seq}, staged={len(self._staged)})"
