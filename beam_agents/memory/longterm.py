"""The long-term handle an activation sees as `ctx.memory.longterm`.

It is the only path from an agent to a store, and it keeps the one
in-pipeline external write replay-safe:

- `save` performs no I/O. It stages a record stamped with the activation's
  frozen seq and now_ms; the runtime flushes the staged records after the
  agent (and the summarizer) returned successfully and before the bundle's
  state commits. A failed or timed-out activation flushes nothing.
- `load` and `search` read the store inline, then overlay the activation's
  own staged saves, so the agent sees its writes in program order.

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
from collections.abc import Coroutine
from typing import Any, Final, TypeVar

from beam_agents.errors import BeamAgentsError, describe_briefly
from beam_agents.memory.stores.base import (
    MemoryRecord,
    MemoryStore,
    check_key,
    check_limit,
    check_record,
    check_record_key,
)

__all__ = ["DEFAULT_SEARCH_LIMIT", "LongtermMemory", "LongtermReadError", "record_time_ms"]

DEFAULT_SEARCH_LIMIT: Final = 100
T = TypeVar("T")


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


class LongtermMemory:
    """One activation's view of its entity's long-term rows."""

    __slots__ = ("_entity_key", "_now_ms", "_seq", "_staged", "_store", "_timeout_s")

    def __init__(
        self,
        store: MemoryStore,
        *,
        entity_key: bytes,
        seq: int,
        now_ms: int,
        timeout_s: float,
    ) -> None:
        self._store = store
        self._entity_key = entity_key
        self._seq = seq
        self._now_ms = now_ms
        self._timeout_s = timeout_s
        self._staged: dict[str, MemoryRecord] = {}

    def save(self, key: str, value: bytes) -> None:
        """Stage an upsert of `key`; flushed only if the activation succeeds."""
        record = MemoryRecord(
            key=key, value=value, seq=self._seq, updated_at_ms=record_time_ms(self._now_ms)
        )
        self._staged[key] = check_record(record)

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
        return [self._staged[key] for key in sorted(self._staged)]

    async def _read(self, call: Coroutine[Any, Any, T], what: str) -> T:
        try:
            return await asyncio.wait_for(call, self._timeout_s)
        except Exception as exc:
            raise LongtermReadError(f"long-term {what} failed: {describe_briefly(exc)}") from exc

    def __repr__(self) -> str:
        return f"LongtermMemory(seq={self._seq}, staged={len(self._staged)})"
