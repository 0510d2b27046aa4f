"""A working-memory delta: what one commit changed, and folding it back.

A full key's working memory is up to 1 MiB and an activation usually changes
a few entries of it. Rewriting the whole blob at every commit made a full key
cost several times an empty one, and wrote the whole blob to state each time:
on Dataflow's Streaming Engine every one of those bytes is a state write. A
commit instead appends a `MemoryDelta` to the key's MEMORY_LOG bag: the
entries it changed, in their new LRU place, and the keys it removed. A ring
that was appended to travels as its cut and its new items, an entry that was
only read as its new stamp.

Every change the facade makes moves the entry to the LRU end, so the changed
entries are a suffix of the new order and the unchanged ones keep theirs. A
fold therefore removes the deleted and changed keys from the memory it holds
and appends the changed ones in order; folding the log onto MEMORY gives,
entry for entry and stamp for stamp, what rewriting the blob would have
written (tests hold the two equal byte for byte).

A log that no longer matches its base (a ring cut past its end, a touched
entry that is not there, a total that disagrees) is a `StateDecodeError`,
never a silently different memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from beam_agents.coders import STATE_SCHEMA_VERSION, decode_state, encode_deterministic
from beam_agents.errors import StateDecodeError
from beam_agents.memory._entry import RING_TAG
from beam_agents.memory.ring import RING, SCALAR, encode_ring
from beam_agents.proto.beam_agents_pb2 import MemoryBlob, MemoryChange, MemoryDelta, RingTail

__all__ = [
    "LOG_MAX_DELTAS",
    "Fold",
    "apply_delta",
    "decode_delta",
    "encode_delta",
    "fold_blob",
    "fold_value",
]

LOG_MAX_DELTAS: Final = 512
"""Deltas the log holds before a commit writes a new MEMORY instead.

A commit appends its delta while the log stays no larger than MEMORY, so a
fold rewrites at most what the deltas since the last one wrote: with the
delta itself, about twice the changed bytes per event. Deltas that change
almost nothing (an entry read, a stamp) would grow the log to thousands of
values, each read back on every decode; past this count the next commit
folds (at ~900 KiB, one full write every 512 events: under 2 KiB an event).
"""

Fold = dict[str, tuple[bytes, int]]
"""key -> (value, last_access_ms), in LRU order: the memory a fold works on."""


def encode_delta(
    changes: Iterable[MemoryChange], deleted: Iterable[str], total_value_bytes: int
) -> bytes:
    """The deterministic bytes of one delta."""
    delta = MemoryDelta(state_schema_version=STATE_SCHEMA_VERSION)
    delta.changes.extend(changes)
    delta.deleted.extend(deleted)
    delta.total_value_bytes = total_value_bytes
    return encode_deterministic(delta)


def decode_delta(raw: bytes) -> MemoryDelta:
    """One MEMORY_LOG value; `StateDecodeError` for bytes that are not a readable delta."""
    delta = decode_state(raw, MemoryDelta, "MEMORY_LOG")
    if delta is None:
        raise StateDecodeError("MEMORY_LOG holds an empty value")
    return delta


def fold_value(change: MemoryChange, before: bytes | None) -> bytes:
    """The value `change` leaves, given the value the memory held before it (None: absent)."""
    which = change.WhichOneof("change")
    key = change.key
    if which == "value":
        value = change.value
        if not value or value[0] > RING:
            raise StateDecodeError(f"MEMORY_LOG entry {key!r} has no valid kind byte")
        return value
    if before is None:
        raise StateDecodeError(f"MEMORY_LOG changes {key!r}, which the memory does not hold")
    if which == "touched":
        return before
    if which == "ring":
        tail: RingTail = change.ring
        if before[0] != RING or not 1 <= tail.cut <= len(before):
            raise StateDecodeError(f"MEMORY_LOG cuts ring {key!r} past what it holds")
        return RING_TAG + before[tail.cut :] + encode_ring(tail.items)[1:]
    raise StateDecodeError(f"MEMORY_LOG entry {key!r} says nothing about its value")


def apply_delta(memory: Fold, delta: MemoryDelta, total: int) -> int:
    """Fold one delta onto `memory` (holding `total` value bytes) in place; the new total.

    `StateDecodeError` if the delta does not fit the memory it is folded onto.
    """
    for key in delta.deleted:
        held = memory.pop(key, None)
        if held is None:
            raise StateDecodeError(f"MEMORY_LOG deletes {key!r}, which the memory does not hold")
        total -= len(held[0])
    for change in delta.changes:
        held = memory.pop(change.key, None)
        before = None
        if held is not None:
            before = held[0]
            total -= len(before)
        value = fold_value(change, before)
        total += len(value)
        memory[change.key] = (value, change.last_access_ms)
    if total != delta.total_value_bytes:
        raise StateDecodeError(
            f"MEMORY_LOG folds to {total} value bytes where the delta says "
            f"{delta.total_value_bytes}"
        )
    return total


def fold_blob(base: MemoryBlob | None, log: Iterable[bytes]) -> MemoryBlob | None:
    """The committed memory as one blob: MEMORY with its log folded on (None: empty).

    For readers outside an activation (the TTL's flush, the records' sizes);
    an activation folds into its facade instead, keeping entries decoded.
    """
    deltas = [decode_delta(raw) for raw in log]
    if not deltas:
        return base
    memory: Fold = {}
    total = 0
    if base is not None:
        for entry in base.entries:
            value = entry.value
            if not value or value[0] not in (SCALAR, RING):
                raise StateDecodeError(f"memory entry {entry.key!r} has no valid kind byte")
            memory[entry.key] = (value, entry.last_access_ms)
            total += len(value)
    for delta in deltas:
        total = apply_delta(memory, delta, total)
    if not memory:
        return None
    blob = MemoryBlob(state_schema_version=STATE_SCHEMA_VERSION)
    add = blob.entries.add
    for key, (value, stamp) in memory.items():
        add(key=key, value=value, last_access_ms=stamp)
    blob.total_value_bytes = deltas[-1].total_value_bytes
    return blob
