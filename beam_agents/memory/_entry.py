"""One working-memory entry in its staged form, and its wire encoding.

The facade (`beam_agents.memory.facade`) keeps entries in LRU order and
splices their wire bytes at commit; this module owns what an entry is and
how it encodes, byte-identical to protobuf's deterministic encoding of a
`MemoryBlob` entry, so the facade reads as the memory's rules alone.
"""

from __future__ import annotations

from collections import deque
from itertools import islice
from typing import Final

from beam_agents.memory.ring import RING, SCALAR, encode_ring, item_cost, varint

__all__ = [
    "GONE",
    "RING_TAG",
    "SCALAR_TAG",
    "Entry",
    "Snapshot",
    "drop_oldest",
    "encode_chunk",
    "entry_bytes",
    "newest",
    "require_bytes",
    "require_key",
]

SCALAR_TAG: Final = bytes((SCALAR,))
RING_TAG: Final = bytes((RING,))


class Entry:
    """One entry's staged form.

    `encoded` is None while a ring is being edited, and may stay None across
    commits that write deltas (it is encoded when the memory is next written
    whole). `owner` is the token of the facade allowed to change the entry in
    place. While a ring that had an encoding is edited, `prev` keeps that
    encoding, `cut` the offset of its first surviving item and `added` how
    many items were appended since, so re-encoding copies the survivors'
    bytes in one slice instead of re-encoding every item. `origin` is the
    entry a facade copied this one from, and `act_cut` / `act_added` say the
    same as `cut` / `added` since that copy: a ring's change in one
    activation, which its delta carries (`beam_agents.memory.delta`).
    `chunk` is the entry's wire bytes in a blob (`encode_chunk`), None until
    the memory is next written whole: kept on the entry rather than in a
    dict beside the entries, which every activation would have to copy.
    `rank` grows with each move to the LRU end, so sorting entries by it
    gives their order: how a facade whose order settled before a park puts
    the dict it borrowed back in order.
    """

    __slots__ = (
        "act_added",
        "act_cut",
        "added",
        "chunk",
        "cut",
        "encoded",
        "items",
        "kind",
        "origin",
        "owner",
        "prev",
        "rank",
        "size",
        "stamp",
    )

    def __init__(
        self,
        kind: int,
        encoded: bytes | None,
        items: deque[bytes] | None,
        size: int,
        stamp: int,
        owner: object,
        rank: int,
    ) -> None:
        self.kind = kind
        self.encoded = encoded
        self.items = items
        self.size = size
        self.stamp = stamp
        self.owner = owner
        self.rank = rank
        self.prev: bytes | None = None
        self.cut = 0
        self.added = 0
        self.origin: Entry | None = None
        self.act_cut = 1
        self.act_added = 0
        self.chunk: bytes | None = None


Snapshot = tuple[dict[str, Entry], int, int]
"""The entries, their size and the next rank: what `ResidentMemory` keeps."""

GONE: Final = Entry(SCALAR, None, None, 0, 0, None, -1)
"""Where a deleted entry stood until the facade's order settles (`Memory._settle`)."""


def drop_oldest(entry: Entry, items: deque[bytes], drop: int, found: list[bytes] | None) -> None:
    """Drop a ring's `drop` oldest items, keeping its splice and its delta bookkeeping.

    The oldest item is from `prev` unless only appended ones are left; likewise
    from the ring as this activation found it (`act_cut`, `act_added`), and
    those go to `found` when the deque is shared with the committed entry.
    """
    for _ in range(drop):
        from_prev = len(items) > entry.added
        from_start = len(items) > entry.act_added
        dropped = items.popleft()
        if from_prev:
            entry.cut += item_cost(dropped)
        else:
            entry.added -= 1
        if from_start:
            entry.act_cut += item_cost(dropped)
            if found is not None:
                found.append(dropped)
        else:
            entry.act_added -= 1


def encode_chunk(key: str, value: bytes, stamp: int) -> bytes:
    """The `entries` field (tag 2) of one entry, byte-identical to protobuf's encoding.

    proto3 omits default values: an empty key and a zero stamp are not
    written. A negative stamp is an int64 varint of ten bytes.
    """
    key_bytes = key.encode("utf-8")
    parts: list[bytes] = []
    if key_bytes:
        parts += (b"\x0a", varint(len(key_bytes)), key_bytes)
    parts += (b"\x12", varint(len(value)), value)
    if stamp:
        parts += (b"\x18", varint(stamp & 0xFFFF_FFFF_FFFF_FFFF))
    body = b"".join(parts)
    return b"\x12" + varint(len(body)) + body


def require_key(key: object) -> str:
    if type(key) is not str:
        raise TypeError(f"memory keys are str, got {type(key).__name__}")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"memory key {key!r} is not valid UTF-8: {exc.reason}") from None
    return key


def require_bytes(value: object, what: str) -> bytes:
    if type(value) is bytes:
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"{what} must be bytes, got {type(value).__name__}")


def newest(items: deque[bytes], count: int) -> list[bytes]:
    """A ring's `count` newest items, oldest first.

    Taken from the right end: slicing from the left would walk every older
    item, and a full ring at the cap holds hundreds, where an activation
    appends one.
    """
    if count <= 0:
        return []
    tail = list(islice(reversed(items), count))
    tail.reverse()
    return tail


def entry_bytes(entry: Entry) -> bytes:
    """The entry's value bytes, encoding (and memoizing) an edited ring first."""
    encoded = entry.encoded
    if encoded is None:
        items = entry.items
        assert items is not None
        prev = entry.prev
        if prev is None:
            encoded = encode_ring(items)
        else:
            encoded = RING_TAG + prev[entry.cut :] + encode_ring(newest(items, entry.added))[1:]
            entry.prev = None
        # The encoding is the value the entry already stands for, so memoizing
        # it is safe even on an entry a snapshot shares.
        entry.encoded = encoded
    return encoded
