"""Working memory: the facade an agent sees over its key's `MemoryBlob`.

A `Memory` is built once per activation from the committed blob and hands
back a new blob at the end. It only stages: no Beam state I/O, no wall clock
(`now_ms` is passed in), no store access except through the explicit
`longterm` handle. That is what lets a failed activation leave no trace: the
runtime discards the facade (giving back, as it was, what it borrowed).

Why the shape is what it is:

- Entries live in a dict in LRU order (insertion order), so stamping an
  entry as most recently used is O(1) (pop and re-insert), never a list
  shuffle. The moves wait until the order is needed (a blob, a delta, the
  commit): until then a write replaces its entry where it stands, a delete
  leaves a tombstone, a read only records its key, and `keys()` answers
  from that record. So until its commit an activation changes a few slots
  of the dict, never its order.
- `size_bytes` is maintained per mutation from per-entry encoded sizes, so
  the caps are checked in O(1) without rescanning the blob.
- Ring items are decoded lazily into a deque on first use and re-encoded
  only when the blob is written, so an append costs O(1) amortized
  regardless of how large the ring or the blob is.
- A commit re-encodes only the entries changed since the last whole
  write, or writes just this activation's delta (`beam_agents.memory._wire`):
  its cost grows with entries changed, not entries held.
- Opened from the snapshot a `ResidentMemory` keeps between activations, a
  facade borrows the snapshot's dict and changes it in place; the commit
  hands it on, and an activation that does not commit puts it back
  (`beam_agents.memory._put_back`). Entries themselves are never changed
  in place: a facade copies any it did not create before changing it,
  keeping the one it opened with (`_opened`) for its delta and its put-back.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING, Final

from beam_agents._beam_metrics import counter
from beam_agents.coders import STATE_SCHEMA_VERSION
from beam_agents.memory._entry import (
    GONE,
    SCALAR_TAG,
    Entry,
    Snapshot,
    drop_oldest,
    entry_bytes,
    require_bytes,
    require_key,
)
from beam_agents.memory._put_back import put_back, undo_rings
from beam_agents.memory._wire import cut_chunks, decode_entries, delta_of, fill_chunks, splice
from beam_agents.memory.compaction import Compactor
from beam_agents.memory.errors import LongtermNotConfigured, MemoryOverflow
from beam_agents.memory.ring import RING, SCALAR, decode_ring, item_cost
from beam_agents.proto.beam_agents_pb2 import MemoryBlob

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


_log = logging.getLogger(__name__)
_soft_cap_warnings = counter("beam_agents.memory", "soft_cap_warnings")


class Memory:
    """A key's working memory for one activation: scalars and bounded rings.

    Reads see staged writes; nothing reaches Beam state until the runtime
    commits `to_blob()` with the rest of the activation.
    """

    __slots__ = (
        "_above_soft",
        "_all_stale",
        "_compacting",
        "_compactor",
        "_dirty",
        "_entries",
        "_gone",
        "_longterm",
        "_moved",
        "_next_rank",
        "_now_ms",
        "_opened",
        "_removed",
        "_reordered",
        "_shared",
        "_size",
        "_token",
        "_warned",
        "loan",
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
        self._token = object()
        self._all_stale = False
        self._next_rank = 0
        # The entry each key written, deleted or stamped held when the facade
        # opened (None: it had none; entries are never changed in place,
        # writes copy one first), and the keys deleted: what `_delta` says of
        # this activation, and what puts a borrowed dict back (`_restore`).
        self._opened: dict[str, Entry | None] = {}
        self._removed: dict[str, None] = {}
        # Keys read or written, in the order of their last use: each goes to
        # the LRU end (a read's entry stamped first) only when the order is
        # needed, at commit (`_settle`). Until then a write replaces its entry
        # where it stands and a delete leaves a tombstone (`_gone` of them),
        # so a park puts back what it borrowed by replacing a few entries.
        self._moved: dict[str, None] = {}
        self._gone = 0
        self._reordered = False
        # Rings whose deque this facade's copy shares with the committed entry
        # (`_own`), with the items it dropped from them: what `_restore` undoes.
        self._shared: dict[str, tuple[Entry, list[bytes]]] = {}
        self.loan: object | None = None
        """The `ResidentMemory` snapshot whose dict this facade borrowed (see `_borrow`)."""
        self._size = 0
        self._dirty = False
        self._compacting = False
        self._warned = False
        self._above_soft = False
        if blob is not None:
            self._load(blob)

    def _load(self, blob: MemoryBlob) -> None:
        self._entries, self._size = decode_entries(blob)
        self._next_rank = len(self._entries)
        self._all_stale = True

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
        if entry is None or entry is GONE:
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
        if entry is None or entry is GONE:
            return ()
        if entry.kind != RING:
            raise TypeError(f"memory key {key!r} holds a scalar; use get() to read it")
        return tuple(self._items(key, entry))

    def keys(self) -> tuple[str, ...]:
        """Keys in LRU order (least recently used first), without stamping anything."""
        moved = self._moved
        if not moved and not self._gone:
            return tuple(self._entries)
        kept = (key for key, entry in self._entries.items() if entry is not GONE)
        return (*(key for key in kept if key not in moved), *moved)

    def entry_size(self, key: str) -> int:
        """Encoded value size of an existing entry; raises KeyError if absent."""
        entry = self._entries[key]
        if entry is GONE:
            raise KeyError(key)
        return entry.size

    def __contains__(self, key: object) -> bool:
        entry = self._entries.get(key)  # type: ignore[call-overload]
        return entry is not None and entry is not GONE

    def __len__(self) -> int:
        return len(self._entries) - self._gone

    def __repr__(self) -> str:
        return f"Memory(entries={len(self)}, size_bytes={self._size}, dirty={self._dirty})"

    # -- writes ----------------------------------------------------------------

    def set(self, key: str, value: bytes) -> None:
        """Stage a scalar under `key`; it may replace a ring."""
        key = require_key(key)
        value = require_bytes(value, "value")
        new_size = 1 + len(value)
        compacted = False
        entries = self._entries
        while True:
            old = entries.get(key)
            if old is GONE:
                old = None
            prospective = self._size + new_size - (old.size if old is not None else 0)
            if prospective <= HARD_CAP_BYTES or self._compacting:
                break
            compacted = self._compact_or_overflow(key, prospective, compacted)
        if old is not None:
            self._size -= old.size
        self._place(
            key,
            old,
            Entry(SCALAR, SCALAR_TAG + value, None, new_size, self._now_ms, self._token, 0),
        )
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
            if entry is None or entry is GONE:
                entry = None
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
        if entry is None or items is None:
            items = deque()
            entry = Entry(RING, None, items, 0, self._now_ms, self._token, 0)
            self._place(key, None, entry)
        else:
            owned = self._own(key, entry)
            self._place(key, entry, owned)
            entry = owned
            items = entry.items
            assert items is not None  # decoded above, shared or copied by _own
            if entry.encoded is not None:
                entry.prev, entry.cut, entry.added = entry.encoded, 1, 0
                entry.encoded = None
            shared = self._shared.get(key)
            found = shared[1] if shared is not None and shared[0] is entry else None
            drop_oldest(entry, items, drop, found)
            entry.stamp = self._now_ms
            entry.chunk = None
        items.append(item)
        entry.added += 1
        entry.act_added += 1
        entry.size += delta
        self._size += delta
        self._dirty = True
        self._after_write()

    def delete(self, key: str) -> None:
        """Remove `key`; deleting an absent key is a no-op."""
        entries = self._entries
        entry = entries.get(key)
        if entry is None or entry is GONE:
            return
        opened = self._opened
        if key not in opened:
            opened[key] = entry
        if opened[key] is None:  # added by this activation: nothing to put back
            del entries[key]
        else:
            entries[key] = GONE
            self._gone += 1
        self._moved.pop(key, None)
        self._removed[key] = None
        self._size -= entry.size
        self._dirty = True
        if self._size < SOFT_CAP_BYTES:
            self._above_soft = False

    def to_blob(self) -> MemoryBlob:
        """The staged memory as a blob, entries least recently used first."""
        self._settle()
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
        self._encode_chunks()  # settles the order
        return splice(self._entries, self._size)

    def _encode_chunks(self) -> None:
        """Give every entry its wire bytes, without joining them into a blob."""
        self._settle()
        if self._all_stale:
            self._encode_all()
            return
        fill_chunks(self._entries)

    def _delta(self) -> bytes | None:
        """What this activation changed, as a `MemoryDelta` to fold onto the memory it opened.

        None when the changed entries are not the newest ones (every write
        moves its entry to the LRU end, so they are; None is the safe answer
        to a path that would not).
        """
        self._settle()
        return delta_of(self._entries, self._opened, self._removed, self._size)

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
        cut_chunks(raw, self._entries.values())
        self._all_stale = False
        return raw

    def _own(self, key: str, entry: Entry) -> Entry:
        """`entry`, or a copy of it in the same place if another facade owns it.

        A decoded ring's copy shares its deque: copying hundreds of items
        for a one-item append was a third of a full ring's extra cost. What an
        activation does to a shared deque (appends, and the found items it
        drops) is undone by `_restore`, and nothing reads the committed
        entry's items after a commit replaced it.
        """
        if entry.owner is self._token:
            return entry
        items = entry.items
        clone = Entry(
            entry.kind,
            entry.encoded,
            items,
            entry.size,
            entry.stamp,
            self._token,
            entry.rank,
        )
        clone.prev, clone.cut, clone.added = entry.prev, entry.cut, entry.added
        clone.origin = entry
        if items is not None:
            self._shared[key] = (clone, [])
        self._entries[key] = clone
        return clone

    def _place(self, key: str, old: Entry | None, entry: Entry) -> None:
        """Put `entry` under `key` where the key stands (at the end if new); it moves at commit."""
        entries, opened = self._entries, self._opened
        if key not in opened:
            opened[key] = old
        if self._gone and entries.get(key) is GONE:
            self._gone -= 1
        entries[key] = entry
        moved = self._moved
        moved.pop(key, None)
        moved[key] = None

    def _touch(self, key: str, entry: Entry) -> None:
        """Make `key` most recently used; its entry is stamped when the order settles."""
        moved = self._moved
        if moved:
            if next(reversed(moved)) == key:
                return
        elif entry.stamp == self._now_ms and next(reversed(self._entries)) == key:
            # Re-stamping the newest entry at the same time changes nothing;
            # keeping `dirty` False then spares a state write.
            return
        moved.pop(key, None)
        moved[key] = None
        self._dirty = True

    def _settle(self) -> None:
        """Move the keys used to the LRU end, in the order of their last use; drop tombstones.

        Done when the order is needed (a blob, a delta, the commit), so the
        dict then holds the order every use moving its entry at once would
        give. An entry only read is stamped here, on a copy.
        """
        moved = self._moved
        if not moved and not self._gone:
            return
        self._reordered = True
        entries, opened, token = self._entries, self._opened, self._token
        if self._gone:
            for key in self._removed:
                if entries.get(key) is GONE:
                    del entries[key]
            self._gone = 0
        self._moved = {}
        now = self._now_ms
        rank = self._next_rank
        for key in moved:
            entry = entries.pop(key)
            if entry.owner is not token:  # read, not written: stamp a copy
                if key not in opened:
                    opened[key] = entry
                entry = self._own(key, entry)
                entry.stamp = now
                entry.chunk = None
            entry.rank = rank
            rank += 1
            entries[key] = entry
        self._next_rank = rank

    # -- the resident snapshot (see beam_agents.memory.resident) ----------------

    @classmethod
    def _borrow(
        cls,
        snapshot: Snapshot,
        *,
        now_ms: int,
        compactor: Compactor | None,
        longterm: LongtermMemory | None,
    ) -> Memory:
        """A facade over a committed snapshot's own dict, which it changes in place.

        Copying the dict at every open (and freeing the one a commit
        replaced) was most of what a full key cost more than an empty one:
        at ~3,600 entries, a third of an activation. So the facade borrows
        it: the caller must hold the snapshot exclusively (`ResidentMemory`
        takes it out of its cache) until the commit makes the dict the next
        snapshot, or `_restore` puts it back as it was. Entries are still
        copied before they change, so what `_opened` keeps is the entry as
        committed.
        """
        memory = cls(None, now_ms=now_ms, compactor=compactor, longterm=longterm)
        memory._entries, memory._size, memory._next_rank = snapshot
        return memory

    def _restore(self) -> None:
        """Put a borrowed dict back as it was opened: the activation parked or failed.

        Rings' shared deques lose what was appended and get back what was
        dropped. Entries this facade added are removed and the ones it
        changed or deleted put back where they stand, which is where they
        stood: nothing moves before the order settles. Only a facade whose
        order settled before it parked (a caller asked for its blob) has its
        order rebuilt from the entries' ranks, one sort.
        """
        undo_rings(self._shared.values())
        self._shared = {}
        put_back(self._entries, self._opened, reordered=self._reordered)

    def _snapshot(self) -> Snapshot:
        """Hand the entries over as an immutable snapshot.

        A commit that writes a delta leaves the changed entries' wire bytes
        to the next whole write, which finds them by a scan (`_wire.fill_chunks`).
        The dict itself is handed over, not copied: the facade may still be
        read (its size, its keys) but must not be changed afterwards. Its
        new owner token makes it clone any entry before changing it, but a
        key added or removed would reach the snapshot.
        """
        if self._all_stale:
            self._encode_all()
        self._settle()
        entries = self._entries
        for key in self._opened:
            # `origin` served this activation's delta; kept, each commit's copy
            # would hold the one before it, and every ring copy with it.
            entry = entries.get(key)
            if entry is not None:
                entry.origin = None
        self._token = object()
        self.loan = None
        return entries, self._size, self._next_rank

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
