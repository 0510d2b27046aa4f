"""`on_expire`: where a key's working memory goes when the TTL reclaims it.

By default TTL garbage collection simply wipes an idle key's working memory.
`AgentConfig(on_expire=FlushToLongterm())` demotes it to the long-term tier
first: the timer callback upserts the committed `MemoryBlob` once, at the
committed seq, under a bounded timeout, and wipes only after the upsert
succeeded. A failed flush fails the timer bundle so the runner retries it
against state that was deliberately not wiped: during a long store outage
the key stays wedged, which is the meaning of configuring on_expire (this
memory must not be lost).

With `text=ENTRY`, the head row also carries the embedding of that
working-memory entry (a scalar's bytes, or a ring's items one per line, as
UTF-8), so what expired becomes recallable by meaning.

A blob larger than one row may hold is written as several rows: the
most recently used entries under `key` itself, the older ones, oldest
first, under `key/part-0000`, `key/part-0001`, ... Each row is a valid
`MemoryBlob` at the same seq; `read_expired_memory` puts them back
together (rows of an earlier expiry, at a lower seq, are ignored).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from beam_agents.errors import ConfigurationError
from beam_agents.memory.stores.base import (
    MAX_KEY_BYTES,
    MAX_SEARCH_LIMIT,
    MAX_VALUE_BYTES,
    MemoryRecord,
    check_record_key,
)
from beam_agents.proto.beam_agents_pb2 import MemoryBlob, MemoryEntry

__all__ = ["FlushToLongterm", "expire_records", "expiring_text", "read_expired_memory"]

PART_BYTES: Final = 1_048_576
"""Largest encoded part of a blob split across rows (rows hold up to `MAX_VALUE_BYTES`)."""
_SCHEMA_VERSION: Final = 1
_PART_SUFFIX: Final = "/part-"
_PART_KEY_ROOM: Final = len(_PART_SUFFIX) + 4


@dataclass(frozen=True, slots=True)
class FlushToLongterm:
    """Upsert expiring working memory under `key` (default `working_memory`).

    The row's value is the deterministic bytes of the committed `MemoryBlob`,
    its seq the key's committed seq and its `updated_at_ms` the timer's
    firing time (clamped to 0 before the epoch, as every record's is): a
    pure function of committed state, so a retried timer
    bundle writes byte-identical bytes that the seq guard collapses onto one
    row. A key with empty working memory is wiped with no store call.

    `text` names the working-memory entry whose content is embedded with the
    row (needs `AgentConfig.embedder`); a key without that entry, or with it
    empty, is flushed without a vector.
    """

    key: str = "working_memory"
    text: str | None = None

    def __post_init__(self) -> None:
        try:
            check_record_key(self.key)
        except ValueError as exc:
            raise ConfigurationError("FlushToLongterm.key", str(exc)) from None
        if len(self.key.encode("utf-8")) > MAX_KEY_BYTES - _PART_KEY_ROOM:
            raise ConfigurationError(
                "FlushToLongterm.key",
                f"must be at most {MAX_KEY_BYTES - _PART_KEY_ROOM} UTF-8 bytes, leaving room "
                f"for the {_PART_SUFFIX}NNNN suffix of a memory written as several rows",
            )
        if self.text is not None:
            try:
                check_record_key(self.text)
            except ValueError as exc:
                raise ConfigurationError("FlushToLongterm.text", str(exc)) from None


def expiring_text(blob: MemoryBlob, entry_key: str, max_bytes: int) -> str | None:
    """The text `FlushToLongterm(text=entry_key)` embeds for `blob`, or None.

    A scalar entry's value, or a ring's items one per line, decoded as UTF-8
    (undecodable bytes replaced) and cut at `max_bytes` on a character
    boundary: a pure function of committed state, as the row itself is.
    """
    # Imported here: `FlushToLongterm` is configuration, read where Beam is not loaded.
    from beam_agents.memory.ring import RING, decode_ring

    for entry in blob.entries:
        if entry.key != entry_key:
            continue
        value = entry.value
        if not value:
            return None
        raw = b"\n".join(decode_ring(entry_key, value)) if value[0] == RING else value[1:]
        text = raw.decode("utf-8", "replace")
        encoded = text.encode("utf-8")
        if len(encoded) > max_bytes:
            text = encoded[:max_bytes].decode("utf-8", "ignore")
        return text if text.strip() else None
    return None


def _part_key(key: str, index: int) -> str:
    return f"{key}{_PART_SUFFIX}{index:04d}"


def expire_records(
    key: str, blob: MemoryBlob, *, seq: int, updated_at_ms: int
) -> list[MemoryRecord]:
    """The rows `FlushToLongterm(key)` writes for `blob`: one, or as many as its size needs.

    A pure function of its arguments, so a retried timer writes the same rows.
    """
    whole = blob.SerializeToString(deterministic=True)
    if len(whole) <= MAX_VALUE_BYTES:
        return [MemoryRecord(key=key, value=whole, seq=seq, updated_at_ms=updated_at_ms)]
    parts = _split(blob.entries)
    keys = [_part_key(key, i) for i in range(len(parts) - 1)] + [key]
    return [
        MemoryRecord(
            key=k,
            value=part.SerializeToString(deterministic=True),
            seq=seq,
            updated_at_ms=updated_at_ms,
        )
        for k, part in zip(keys, parts, strict=True)
    ]


def _split(entries: Sequence[MemoryEntry]) -> list[MemoryBlob]:
    """`entries`, in order, cut into blobs of at most `PART_BYTES` encoded bytes each.

    An entry larger than a part on its own (a key of hundreds of kilobytes)
    makes a part of its own, which the store then refuses as too large.
    """
    parts: list[MemoryBlob] = []
    current: list[MemoryEntry] = []
    size = 0
    for entry in entries:
        framed = entry.ByteSize() + 8  # tag and length prefix, generously
        if current and size + framed > PART_BYTES:
            parts.append(_blob(current))
            current, size = [], 0
        current.append(entry)
        size += framed
    parts.append(_blob(current))
    return parts


def _blob(entries: list[MemoryEntry]) -> MemoryBlob:
    return MemoryBlob(
        state_schema_version=_SCHEMA_VERSION,
        entries=entries,
        total_value_bytes=sum(len(entry.value) for entry in entries),
    )


class _Reader(Protocol):
    async def load(self, key: str) -> MemoryRecord | None: ...

    async def search(self, prefix: str, limit: int = ...) -> list[MemoryRecord]: ...


async def read_expired_memory(longterm: _Reader, key: str = "working_memory") -> MemoryBlob | None:
    """The working memory `FlushToLongterm(key)` last wrote, whole; None if there is none.

    `longterm` is `ctx.memory.longterm` (an agent rehydrating after a wipe)
    or anything with its `load(key)` / `search(prefix, limit)`.
    """
    head = await longterm.load(key)
    if head is None:
        return None
    # Imported here: `FlushToLongterm` is configuration, read where Beam is not loaded.
    from beam_agents.coders import decode_state

    blob = decode_state(head.value, MemoryBlob, key) or MemoryBlob(
        state_schema_version=_SCHEMA_VERSION
    )
    parts = [
        record
        for record in await longterm.search(key + _PART_SUFFIX, MAX_SEARCH_LIMIT)
        if record.seq == head.seq
    ]
    if not parts:
        return blob
    whole = MemoryBlob(state_schema_version=_SCHEMA_VERSION)
    for record in [*parts, head]:
        part = blob if record is head else decode_state(record.value, MemoryBlob, record.key)
        if part is None:
            continue
        whole.entries.extend(part.entries)
        whole.total_value_bytes += part.total_value_bytes
    return whole
