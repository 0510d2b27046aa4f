"""The byte encoding of working-memory entry values.

Scalars and rings share `MemoryEntry.value` so the proto schema never has to
change for a new kind of entry: the first byte says which kind follows. A
ring is its items in order, each prefixed by its length as a varint. Sizes
are accounted in these encoded bytes, so ring overhead counts against the
caps like any payload does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Final

from beam_agents.errors import StateDecodeError

__all__ = [
    "RING",
    "SCALAR",
    "decode_ring",
    "encode_ring",
    "item_cost",
    "varint",
    "varint_size",
]

SCALAR: Final = 0
RING: Final = 1

_EMPTY_RING: Final = bytes((RING,))


def varint_size(n: int) -> int:
    """Bytes a non-negative integer takes as a base-128 varint."""
    size = 1
    while n >= 0x80:
        n >>= 7
        size += 1
    return size


def item_cost(item: bytes) -> int:
    """Encoded bytes one ring item adds: its length prefix plus its payload."""
    n = len(item)
    return n + (1 if n < 0x80 else varint_size(n))


_ONE_BYTE: Final = tuple(bytes((n,)) for n in range(0x80))


def varint(n: int) -> bytes:
    """A non-negative integer as a base-128 varint (protobuf's wire encoding)."""
    if n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_ring(items: Iterable[bytes]) -> bytes:
    """Encode ring items, oldest first, as an entry value."""
    parts = [_EMPTY_RING]
    for item in items:
        parts.append(varint(len(item)))
        parts.append(item)
    return b"".join(parts)


def decode_ring(key: str, value: bytes) -> deque[bytes]:
    """Decode an entry value written by `encode_ring`.

    Raises `StateDecodeError` naming the key on truncated or trailing bytes:
    a ring that decodes "mostly" would silently drop history.
    """
    items: deque[bytes] = deque()
    pos, end = 1, len(value)
    while pos < end:
        n = shift = 0
        while True:
            if pos >= end:
                raise StateDecodeError(f"ring {key!r}: truncated length prefix at byte {pos}")
            byte = value[pos]
            pos += 1
            n |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
            if shift > 63:
                raise StateDecodeError(f"ring {key!r}: length prefix too long at byte {pos}")
        if pos + n > end:
            raise StateDecodeError(f"ring {key!r}: item of {n} bytes overruns the value")
        items.append(value[pos : pos + n])
        pos += n
    return items
