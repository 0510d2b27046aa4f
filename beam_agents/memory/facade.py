"""Working memory: the facade an agent sees over its key's `MemoryBlob`.

A `Memory` is built once per activation from the committed blob and hands
back a new blob at the end. It only stages: no Beam state I/O, no wall clock
(`now_ms` is passed in), no store access except through the explicit
`longterm` handle. That is what lets a failed activation leave no trace: the
runtime simply discards the facade.

Why the shape is what it is:

- Entries live in a dict in LRU order (insertion order), so stamping an
  entry as most recently used is O(1) (pop and re-insert), never a list
  shuffle, and copying the whole index is one C-level dict copy.
- `size_bytes` is maintained per mutation from per-entry encoded sizes, so
  the caps are checked in O(1) without rescanning the blob.
- Ring items are decoded lazily into a deque on first use and re-encoded
  only when the blob is written, so an append costs O(1) amortized
  regardless of how large the ring or the blob is.
- Each entry's wire bytes (its encoded `entries` field of the blob) are
  kept in a second dict in the same LRU order, so `to_bytes()` re-encodes
  only the entries this activation changed and splices the rest with one
  C-level join over contiguous values (no per-entry Python, no pointer
  chase through entry objects): the cost of a commit grows with
  entries changed, not entries held. The bytes are exactly those of
  `to_blob()` serialized deterministically (tests prove it byte for byte).
- A commit usually writes less than that: `_delta()` says what changed
  (the changed entries are always the newest, so it is a suffix of the LRU
  order), and the runtime appends it to the key's MEMORY_LOG instead of
  rewriting MEMORY (`beam_agents.memory.delta`, `beam_agents.memory.resident`).
- Entries are shared copy-on-write with the committed snapshot a
  `ResidentMemory` cache keeps between activations: a facade owns the
  entries it created and clones any other before changing it, so a failed
  activation can never alter the snapshot it started from.
"""

from __future__ import annotations

import logging
from collections import deque
from itertools import islice
from typing import TYPE_CHECKING, Final

from beam_agents._beam_metrics import counter
from beam_agents.errors import BeamAgentsError, StateDecodeError
from beam_agents.memory._entry import (
    SCALAR_TAG,
    Entry,
    Snapshot,
    encode_chunk,
    entry_bytes,
    require_bytes,
    require_key,
)
from beam_agents.memory.compaction import Compactor
from beam_agents.memory.delta import encode_delta
from beam_agents.memory.ring import RING, SCALAR, decode_ring, item_cost, varint
from beam_agents.proto.beam_agents_pb2 import MemoryBlob, MemoryChange

if TYPE_CHECKING:
    from beam_agents.memory.longterm import LongtermMemory

__all__ = [
    "DEFAULT_MAX_ITEMS",
    "HARD_CAP_BYTES",
    "SOFT_CAP_BYTES",
    "STATE_SCHEMA_VERSION",
    "LongtermNotConfigured",
    "Memory",
    "MemoryOverflow",
]

HARD_CAP_BYTES: Final = 1_048_576
"""Largest staged working memory, in encoded value bytes, a key may commit."""

SOFT_CAP_BYTES: Final = 786_432
"""75% of the hard cap: crossing it warns once and invokes compaction."""

DEFAULT_MAX_ITEMS: Final = 64
"""Default ring bound: unbounded history is how stateful agents become outages."""

STATE_SCHEMA_VERSION: Final = 1

_log = logging.getLogger(__name__)
_soft_cap_warnings = counter("beam_agents.memory", "soft_cap_warnings")
_HEADER: Final = b"\x08\x01"  # MemoryBlob.state_schema_version = 1


class MemoryOverflow(BeamAgentsError):
    """A write would push working memory past the hard cap, even after compaction.

    The write was not applied. Compaction that ran before the refusal stays
    staged: it was a legitimate eviction in its own right.
    """

    def __init__(self, key: str, attempted_bytes: int, cap_bytes: int) -> None:
        super().__init__(
            f"writing {key!r} would make working memory {attempted_bytes} bytes, "
            f"over the {cap_bytes}-byte cap"
        )
        self.key = key
        self.attempted_bytes = attempted_bytes
        self.cap_bytes = cap_bytes


class LongtermNotConfigured(BeamAgentsError, RuntimeError):
    """`memory.longterm` was used on a pipeline without a long-term store."""

    def __init__(self) -> None:
        super().__init__(
            "long-term memory is not configured: set AgentConfig.longterm_memory "
            "to a store URI (e.g. 'redis://host:6379/0') to use ctx.memory.longterm"
        )


def _drop_oldest(entry: Entry, items: deque[bytes], drop: int) -> None:
    """Drop a ring's `drop` oldest items, keeping its splice and its delta bookkeeping.

    The oldest item is from `prev` unless only appended ones are left; likewise
    from the ring as this activation found it (`act_cut`, `act_added`).
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
        else:
            entry.act_added -= 1


class Memory:
    """A key's working memory for one activation: scalars and bounded rings.

    Reads see staged writes; nothing reaches Beam state until the runtime
    commits `to_blob()` with the rest of the activation.
    """

    __slots__ = (
        "_above_soft",
        "_all_stale",
        "_base",
        "_changed",
        "_compacting",
        "_compactor",
        "_dirty",
        "_entries",
        "_longterm",
        "_now_ms",
        "_removed",
        "_size",
        "_token",
        "_warned",
    )

    def __init__(
        self,
        blob: MemoryBlob | None = None,
        *,
        now_ms: int,
        compactor: Compactor | None = None,
        longterm: LongtermMemory | None = None,
    ) -> None:
        if type(now_ms) is not int:
            raise TypeError(f"now_ms must be an int of milliseconds, got {type(now_ms).__name__}")
        self._now_ms = now_ms
        self._compactor = compactor
        self._longterm = longterm
        self._entries: dict[str, Entry] = {}
        # Wire bytes per entry, same keys in the same order; None: re-encode.
        self._token = object()
        self._all_stale = False
        # The entries as opened (never changed in place: writes copy an entry
        # first), the keys written or read since and the keys deleted: what
        # `_delta` says of this activation.
        self._base: dict[str, Entry] = {}
        self._changed: set[str] = set()
        self._removed: dict[str, None] = {}
        self._size = 0
        self._dirty = False
        self._compacting = False
        self._warned = False
        self._above_soft = False
        if blob is not None:
            self._load(blob)

    def _load(self, blob: MemoryBlob) -> None:
        version = blob.state_schema_version
        if version != STATE_SCHEMA_VERSION and (version != 0 or len(blob.entries)):
            raise StateDecodeError(
                f"MemoryBlob state_schema_version {version} is not readable by this "
                f"version (reads {STATE_SCHEMA_VERSION})"
            )
        entries = self._entries
        size = 0
        for entry in blob.entries:
            value = entry.value
            key = entry.key
            if not value or value[0] > RING:
                raise StateDecodeError(f"memory entry {key!r} has no valid kind byte")
            if key in entries:
                raise StateDecodeError(f"memory entry {key!r} appears twice in the blob")
            entries[key] = Entry(value[0], value, None, len(value), entry.last_access_ms, None)
            size += len(value)
        self._size = size
        self._all_stale = True
        self._base = entries.copy()

    # -- reads -----------------------------------------------------------------

    @property
    def now_ms(self) -> int:
        """The activation's frozen clock; every LRU stamp uses it."""
        return self._now_ms

    @property
    def size_bytes(self) -> int:
        """Exact encoded size of all staged entry values."""
        return self._size

    @property
    def dirty(self) -> bool:
        """Whether the staged blob differs from the one loaded (so needs a write)."""
        return self._dirty

    @property
    def soft_cap_reached(self) -> bool:
        """Whether a write of this activation reached the soft cap (it warns once).

        Read by the runtime for its `soft_cap` lifecycle record.
        """
        return self._warned

    @property
    def longterm(self) -> LongtermMemory:
        """The activation's long-term handle; the only path to a store."""
        if self._longterm is None:
            raise LongtermNotConfigured
        return self._longterm

    @property
    def longterm_or_none(self) -> LongtermMemory | None:
        """The long-term handle, or None without a store (for the runtime, which must not raise)."""
        return self._longterm

    def get(self, key: str) -> bytes | None:
        """The scalar under `key`, or None; a hit makes it most recently used."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.kind != SCALAR:
            raise TypeError(f"memory key {key!r} holds a ring; use ring() to read it")
        self._touch(key, entry)
        encoded = entry.encoded
        assert encoded is not None  # scalars are always encoded
        return encoded[1:]

    def ring(self, key: str) -> tuple[bytes, ...]:
        """The ring under `key`, oldest item first; empty if absent. Does not stamp."""
        entry = self._entries.get(key)
        if entry is None:
            return ()
        if entry.kind != RING:
            raise TypeError(f"memory key {key!r} holds a scalar; use get() to read it")
        return tuple(self._items(key, entry))

    def keys(self) -> tuple[str, ...]:
        """Keys in LRU order (least recently used first), without stamping anything."""
        return tuple(self._entries)

    def entry_size(self, key: str) -> int:
        """Encoded value size of an existing entry; raises KeyError if absent."""
        return self._entries[key].size

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Memory(entries={len(self._entries)}, size_bytes={self._size}, dirty={self._dirty})"

    # -- writes ----------------------------------------------------------------

    def set(self, key: str, value: bytes) -> None:
        """Stage a scalar under `key`; it may replace a ring."""
        key = require_key(key)
        value = require_bytes(value, "value")
        new_size = 1 + len(value)
        compacted = False
        while True:
            old = self._entries.get(key)
            prospective = self._size + new_size - (old.size if old is not None else 0)
            if prospective <= HARD_CAP_BYTES or self._compacting:
                break
            compacted = self._compact_or_overflow(key, prospective, compacted)
        if old is not None:
            self._size -= old.size
            del self._entries[key]
        self._entries[key] = Entry(
            SCALAR, SCALAR_TAG + value, None, new_size, self._now_ms, self._token
        )
        self._changed.add(key)
        self._size += new_size
        self._dirty = True
        self._after_write()

    def append(self, key: str, item: bytes, max_items: int = DEFAULT_MAX_ITEMS) -> None:
        """Append `item` to the ring under `key`, dropping the oldest beyond `max_items`."""
        key = require_key(key)
        item = require_bytes(item, "item")
        if type(max_items) is not int or max_items < 1:
            raise ValueError(f"max_items must be a positive int, got {max_items!r}")
        cost = item_cost(item)
        compacted = False
        while True:
            entry = self._entries.get(key)
            if entry is None:
                items: deque[bytes] | None = None
                drop = 0
                delta = 1 + cost
            else:
                if entry.kind != RING:
                    raise TypeError(f"memory key {key!r} holds a scalar; cannot append to it")
                items = self._items(key, entry)
                drop = max(0, len(items) + 1 - max_items)
                delta = cost - sum(item_cost(items[i]) for i in range(drop))
            prospective = self._size + delta
            if prospective <= HARD_CAP_BYTES or self._compacting:
                break
            compacted = self._compact_or_overflow(key, prospective, compacted)
        entries = self._entries
        if entry is None or items is None:
            items = deque()
            entry = Entry(RING, None, items, 0, self._now_ms, self._token)
            entries[key] = entry
        else:
            entry = self._own(key, entry)
            items = entry.items
            assert items is not None  # decoded above, copied by _own
            if entry.encoded is not None:
                entry.prev, entry.cut, entry.added = entry.encoded, 1, 0
                entry.encoded = None
            _drop_oldest(entry, items, drop)
            entry.stamp = self._now_ms
            entry.chunk = None
            entries[key] = entries.pop(key)
        self._changed.add(key)
        items.append(item)
        entry.added += 1
        entry.act_added += 1
        entry.size += delta
        self._size += delta
        self._dirty = True
        self._after_write()

    def delete(self, key: str) -> None:
        """Remove `key`; deleting an absent key is a no-op."""
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        self._removed[key] = None
        self._size -= entry.size
        self._dirty = True
        if self._size < SOFT_CAP_BYTES:
            self._above_soft = False

    def to_blob(self) -> MemoryBlob:
        """The staged memory as a blob, entries least recently used first."""
        blob = MemoryBlob(state_schema_version=STATE_SCHEMA_VERSION, total_value_bytes=self._size)
        add = blob.entries.add
        for key, entry in self._entries.items():
            add(key=key, value=entry_bytes(entry), last_access_ms=entry.stamp)
        return blob

    def to_bytes(self) -> bytes:
        """`to_blob()` serialized deterministically, re-encoding only changed entries.

        Unchanged entries contribute the wire bytes they were loaded with
        (or encoded with at an earlier commit), spliced in LRU order; the
        result is byte-identical to `encode_deterministic(self.to_blob())`.
        """
        if self._all_stale:
            return self._encode_all()
        self._encode_chunks()
        size = self._size
        body = b"".join([entry.chunk for entry in self._entries.values()])  # type: ignore[misc]
        return b"".join((_HEADER, body, b"\x18" + varint(size) if size else b""))

    def _encode_chunks(self) -> None:
        """Give every entry its wire bytes, without joining them into a blob."""
        if self._all_stale:
            self._encode_all()
            return
        # A scan, once per whole write: cheaper than keeping, at every event,
        # the set of entries changed since the last one.
        for key, entry in self._entries.items():
            if entry.chunk is None:
                entry.chunk = encode_chunk(key, entry_bytes(entry), entry.stamp)

    def _delta(self) -> bytes | None:
        """What this activation changed, as a `MemoryDelta` to fold onto the memory it opened.

        None when the changed entries are not the newest ones (every write
        moves its entry to the LRU end, so they are; None is the safe answer
        to a path that would not).
        """
        entries, base, changed = self._entries, self._base, self._changed
        count = sum(1 for key in changed if key in entries)
        tail = list(islice(reversed(entries), count))
        tail.reverse()
        if any(key not in changed for key in tail):
            return None
        changes: list[MemoryChange] = []
        for key in tail:
            entry = entries[key]
            before = base.get(key)
            change = MemoryChange(key=key, last_access_ms=entry.stamp)
            held = before.encoded if before is not None else None
            if held is not None and entry.encoded is held:
                change.touched = True
            elif entry.kind == RING and before is not None and entry.origin is before:
                items = entry.items
                assert items is not None  # an edited ring holds its items
                change.ring.cut = entry.act_cut
                change.ring.items.extend(islice(items, len(items) - entry.act_added, None))
            else:
                change.value = entry_bytes(entry)
            changes.append(change)
        deleted = [key for key in self._removed if key not in entries and key in base]
        return encode_delta(changes, deleted, self._size)

    # -- internals -------------------------------------------------------------

    def _items(self, key: str, entry: Entry) -> deque[bytes]:
        items = entry.items
        if items is None:
            assert entry.encoded is not None
            items = entry.items = decode_ring(key, entry.encoded)
        return items

    def _encode_all(self) -> bytes:
        """Encode a freshly decoded facade whole, in C, and cut each entry's bytes out of it.

        The first commit after a decode needs every entry's wire bytes;
        protobuf's encoder writes them all far faster than one Python call
        per entry, and a scan of the length prefixes finds the boundaries.
        """
        raw = self.to_blob().SerializeToString(deterministic=True)
        pos = len(_HEADER)
        for entry in self._entries.values():
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
        self._all_stale = False
        return raw

    def _own(self, key: str, entry: Entry) -> Entry:
        """`entry`, or a private copy of it in the same place if another facade owns it."""
        if entry.owner is self._token:
            return entry
        items = entry.items
        clone = Entry(
            entry.kind,
            entry.encoded,
            None if items is None else deque(items),
            entry.size,
            entry.stamp,
            self._token,
        )
        clone.prev, clone.cut, clone.added = entry.prev, entry.cut, entry.added
        clone.origin = entry
        self._entries[key] = clone
        return clone

    def _touch(self, key: str, entry: Entry) -> None:
        # Re-stamping an entry that is already the newest, at the same time,
        # changes nothing; keeping `dirty` False then spares a state write.
        entries = self._entries
        if entry.stamp == self._now_ms and next(reversed(entries)) == key:
            return
        entry = self._own(key, entry)
        entry.stamp = self._now_ms
        entry.chunk = None
        entries[key] = entries.pop(key)
        self._changed.add(key)
        self._dirty = True

    # -- the resident snapshot (see beam_agents.memory.resident) ----------------

    @classmethod
    def _from_snapshot(
        cls,
        snapshot: Snapshot,
        *,
        now_ms: int,
        compactor: Compactor | None,
        longterm: LongtermMemory | None,
    ) -> Memory:
        """A facade over a committed snapshot, sharing its entries copy-on-write."""
        memory = cls(None, now_ms=now_ms, compactor=compactor, longterm=longterm)
        entries, memory._size = snapshot
        memory._base = entries  # the snapshot's, which nothing changes
        memory._entries = entries.copy()
        return memory

    def _snapshot(self) -> Snapshot:
        """Hand the entries over as an immutable snapshot.

        A commit that writes a delta leaves the changed entries' wire bytes
        (`Entry.chunk`) to the next commit that writes the memory whole:
        encoding a 900 KiB ring at every append was two copies of it per
        event. Which entries those are is not tracked: a set of them grows
        with every delta until the next whole write, and copying it at each
        open and commit cost more, at a few hundred changed keys, than the
        rest of the memory's work; the whole write finds them by a scan. The
        dict itself is handed over, not copied (at ~3,600 entries a copy is
        a tenth of an activation): the facade may still be read (its size,
        its keys) but must not be changed afterwards. Its new owner token
        makes it clone any entry before changing it, but a key added or
        removed would reach the snapshot.
        """
        if self._all_stale:
            self._encode_all()
        self._token = object()
        return self._entries, self._size

    def _compact_or_overflow(self, key: str, prospective: int, compacted: bool) -> bool:
        """Run compaction once for an over-cap write, else refuse the write."""
        if compacted or self._compactor is None:
            raise MemoryOverflow(key, prospective, HARD_CAP_BYTES)
        self._run_compactor()
        return True

    def _run_compactor(self) -> None:
        compactor = self._compactor
        if compactor is None:
            return
        self._compacting = True
        try:
            compactor.compact(self)
        finally:
            self._compacting = False

    def _after_write(self) -> None:
        if self._compacting:
            return
        if self._size < SOFT_CAP_BYTES:
            self._above_soft = False
            return
        if self._above_soft:
            return
        # Edge-triggered: compaction runs when a write lands at or above the
        # soft cap coming from below, not on every write while above it, so a
        # compactor that cannot free anything costs one pass, not one per op.
        self._above_soft = True
        if not self._warned:
            self._warned = True
            _soft_cap_warnings.inc()
            _log.warning(
                "working memory reached %d bytes, at or above the %d-byte soft cap "
                "(hard cap %d); compacting",
                self._size,
                SOFT_CAP_BYTES,
                HARD_CAP_BYTES,
            )
        self._run_compactor()
        self._above_soft = self._size >= SOFT_CAP_BYTES
