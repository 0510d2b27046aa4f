"""The facade's entries from and to the bytes in state: a blob decoded, the whole blob, a delta.

The whole blob is spliced from each entry's wire bytes (`Entry.chunk`),
byte-identical to protobuf's deterministic encoding of `to_blob()`, so a
commit re-encodes only the entries changed since the last whole write. A
delta says what one activation changed (`beam_agents.memory.delta`): the
entries it wrote or stamped, which are the newest in LRU order once the
order settles, and the keys it deleted.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from typing import Final

from beam_agents.coders import STATE_SCHEMA_VERSION
from beam_agents.errors import StateDecodeError
from beam_agents.memory._entry import Entry, encode_chunk, entry_bytes, newest
from beam_agents.memory.delta import encode_delta
from beam_agents.memory.ring import RING, varint
from beam_agents.proto.beam_agents_pb2 import MemoryBlob, MemoryChange

__all__ = ["HEADER", "cut_chunks", "decode_entries", "delta_of", "fill_chunks", "splice"]

HEADER: Final = b"\x08\x01"
"""`MemoryBlob.state_schema_version = 1`, the blob's first field."""


def decode_entries(blob: MemoryBlob) -> tuple[dict[str, Entry], int]:
    """A blob's entries in its order, ranked by it, and their size; `StateDecodeError` if bad."""
    version = blob.state_schema_version
    if version != STATE_SCHEMA_VERSION and (version != 0 or len(blob.entries)):
        raise StateDecodeError(
            f"MemoryBlob state_schema_version {version} is not readable by this "
            f"version (reads {STATE_SCHEMA_VERSION})"
        )
    entries: dict[str, Entry] = {}
    size = 0
    for rank, entry in enumerate(blob.entries):
        value = entry.value
        key = entry.key
        if not value or value[0] > RING:
            raise StateDecodeError(f"memory entry {key!r} has no valid kind byte")
        if key in entries:
            raise StateDecodeError(f"memory entry {key!r} appears twice in the blob")
        entries[key] = Entry(value[0], value, None, len(value), entry.last_access_ms, None, rank)
        size += len(value)
    return entries, size


def fill_chunks(entries: dict[str, Entry]) -> None:
    """Give every entry its wire bytes.

    A scan, once per whole write: cheaper than keeping, at every event, the
    set of entries changed since the last one.
    """
    for key, entry in entries.items():
        if entry.chunk is None:
            entry.chunk = encode_chunk(key, entry_bytes(entry), entry.stamp)


def splice(entries: dict[str, Entry], size: int) -> bytes:
    """The blob of entries that all hold their wire bytes (`fill_chunks`), in their order."""
    body = b"".join([entry.chunk for entry in entries.values()])  # type: ignore[misc]
    return b"".join((HEADER, body, b"\x18" + varint(size) if size else b""))


def cut_chunks(raw: bytes, entries: Iterable[Entry]) -> None:
    """Cut each entry's wire bytes out of `raw`, their blob as protobuf encoded it.

    The first commit after a decode needs every entry's wire bytes;
    protobuf's encoder writes them all far faster than one Python call per
    entry, and a scan of the length prefixes finds the boundaries.
    """
    pos = len(HEADER)
    for entry in entries:
        start = pos
        pos += 1  # the entries tag
        length = shift = 0
        while True:
            byte = raw[pos]
            pos += 1
            length |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
        pos += length
        entry.chunk = raw[start:pos]


def delta_of(
    entries: dict[str, Entry],
    opened: dict[str, Entry | None],
    removed: Iterable[str],
    size: int,
) -> bytes | None:
    """What an activation changed, as a `MemoryDelta` to fold onto the memory it opened.

    `opened` holds the entry each changed key had when the activation
    opened (None: none). None when the changed entries are not the newest
    ones (every write moves its entry to the LRU end, so they are; None is
    the safe answer to a path that would not).
    """
    count = sum(1 for key in opened if key in entries)
    tail = list(islice(reversed(entries), count))
    tail.reverse()
    if any(key not in opened for key in tail):
        return None
    changes: list[MemoryChange] = []
    for key in tail:
        entry = entries[key]
        before = opened.get(key)
        change = MemoryChange(key=key, last_access_ms=entry.stamp)
        held = before.encoded if before is not None else None
        if held is not None and entry.encoded is held:
            change.touched = True
        elif entry.kind == RING and before is not None and entry.origin is before:
            items = entry.items
            assert items is not None  # an edited ring holds its items
            change.ring.cut = entry.act_cut
            change.ring.items.extend(newest(items, entry.act_added))
        else:
            change.value = entry_bytes(entry)
        changes.append(change)
    deleted = [key for key in removed if key not in entries and opened.get(key) is not None]
    return encode_delta(changes, deleted, size)
