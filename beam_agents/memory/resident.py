"""Decoded working memory kept between activations of a hot key, and how it is written.

A key's working memory is stored in three cells: MEMORY (a whole blob, the
base), MEMORY_LOG (the deltas commits appended since, `beam_agents.memory.
delta`) and MEMORY_HEAD (a few bytes saying what the other two hold, with a
digest chained over their content). `commit` decides what a commit writes:
its delta, appended to the log while the log stays no larger than the base
and under `LOG_MAX_DELTAS` values; otherwise a new base, the log cleared.
So a commit writes about what it changed, and a fold rewrites at most what
the deltas since the last one wrote: on average under twice the changed
bytes per event, at any memory size.

Decoding a key's memory into a facade and encoding it back costs per entry,
not per byte: at ~3,600 entries that was most of an activation. A
`ResidentMemory` keeps, per (transform, key), the facade entries of the
memory last committed for that key in this process, next to the head that
commit wrote. The next activation of the key reads MEMORY_HEAD and reuses
the snapshot only if the cell holds that very head; then it reads neither
MEMORY nor the log, so a hot key's activation costs the same at 1 KiB and
at 900 KiB:

- a retried bundle reads the head from before the failed attempt, which is
  not what the attempt wrote, so it decodes afresh;
- a key that moved to another worker and back reads whatever head was
  committed there; the digest covers every byte of base and log, so only
  the same memory has the same head, and anything else decodes;
- equal memory decodes to equal entries, so a hit is indistinguishable from
  a decode (the facade is deterministic in its input bytes).

A key without a head was written before the log existed (MEMORY alone, as
every earlier release wrote it): it is read as it is and carried forward
whole, with a head, at its first commit.

A memory written whole (under `LOG_FROM_BYTES`, most keys) is validated
without reading MEMORY at all: each commit records the memory's digest in
SEQ (`SeqState.memory_digest`, carried by a park while SEQ waits), which the
activation reads anyway, and `open(digest=...)` reuses the snapshot
committed under that digest. This matters on the portable harness, where a
read caches the cell and every later write of a cached cell is sized (about
0.3 ms); a cell never read is written without one. The digest is of the
bytes, not the seq, so a commit of the same seq elsewhere that wrote other
bytes (a retried bundle on another worker whose model answered differently)
is not mistaken for this process's.

One cache serves the whole process (`shared_resident()`), not one per DoFn
instance: runners run several instances of a DoFn on several threads (the
DirectRunner does, so does Dataflow), and a key's activations may land on
any of them. Beam never runs two activations of one key at once. A hit
takes the snapshot out of the cache and lends its dict to the facade,
which changes it in place (copying it cost a third of a full key's
activation): the commit keeps the result as the next snapshot, and an
activation that parks, suspends, fails or writes nothing gives it back
(`give_back`), put back as it was. Whatever path misses giving it back
costs a decode at the key's next activation, never a wrong memory: the
snapshot is not in the cache while it is lent.
The cache is bounded by the committed bytes it stands for and evicts least
recently used keys; nothing here is persisted or pickled.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from beam_agents.coders import decode_state, encode_deterministic
from beam_agents.errors import StateDecodeError
from beam_agents.memory.compaction import Compactor
from beam_agents.memory.delta import LOG_MAX_DELTAS, fold_blob
from beam_agents.memory.facade import Memory
from beam_agents.proto.beam_agents_pb2 import MemoryBlob, MemoryHead

if TYPE_CHECKING:
    from beam_agents.memory.longterm import LongtermMemory

__all__ = [
    "DEFAULT_RESIDENT_BYTES",
    "EMPTY_DIGEST",
    "LOG_FROM_BYTES",
    "LogState",
    "MemoryWrite",
    "ResidentMemory",
    "Stored",
    "decode_head",
    "fold_stored",
    "shared_resident",
    "whole_digest",
]

DEFAULT_RESIDENT_BYTES: Final = 64 * 1_048_576
"""Committed bytes the process keeps decoded (about 64 keys at the hard cap)."""

LOG_FROM_BYTES: Final = 16 * 1024
"""MEMORY bytes from which a key's memory is written as deltas.

Below it a commit rewrites MEMORY whole, one write as before the log
existed, and no MEMORY_HEAD is read or written: a delta would save little
and the head would cost a read and a write per event (on the portable
harness, a cache sizing each).
"""

_DIGEST_BYTES: Final = 16

_Key = tuple[str, bytes]

LogState = tuple[int, int]
"""How many values and bytes MEMORY's cell holds (a log on the portable harness)."""


def whole_digest(base: bytes | None) -> bytes:
    """`SeqState.memory_digest` of a memory written whole: BLAKE2b-128 of MEMORY's bytes."""
    return hashlib.blake2b(base or b"", digest_size=_DIGEST_BYTES).digest()


EMPTY_DIGEST: Final = whole_digest(None)
"""The digest of no working memory: the key has none (it never committed any, or was wiped)."""


def _valid(snapshot: _Snapshot, stored: Stored) -> bool:
    """Whether the cells hold exactly what the snapshot was committed as."""
    if stored.head is not None:
        return stored.head is snapshot.head or stored.head == snapshot.head
    if snapshot.head is not None:
        return False
    raw = snapshot.raw
    return stored.base is raw or stored.base == raw


class _Readable(Protocol):
    def read(self) -> bytes | None: ...


class _Bag(Protocol):
    def read(self) -> Iterable[bytes]: ...


@dataclass(frozen=True, slots=True)
class _Snapshot:
    raw: bytes | None
    """MEMORY's bytes, which validate a snapshot of a memory written whole (`head` None)."""
    head: bytes | None
    """The MEMORY_HEAD bytes that validate a snapshot of a memory written as deltas."""
    held: int
    """The committed bytes (base and log) it stands for, for the cache's budget."""
    state: Any  # Memory._snapshot(): the entries, their size, the next rank
    digest: bytes | None = None
    """`whole_digest(raw)` for a memory written whole, which validates it without a read."""
    log: LogState | None = None
    """MEMORY's cell after the commit, where the runtime counts it (`commit(log_after=...)`)."""


class Stored(NamedTuple):
    """What an open read of the key's memory cells, which its commit builds on."""

    base: bytes | None
    """MEMORY as read."""
    head: bytes | None
    """MEMORY_HEAD as read; None for a memory written whole (it is not read then)."""
    digest: bytes | None = None
    """The memory's `whole_digest`, when it is written whole (or empty)."""
    log: LogState | None = None
    """MEMORY's cell as the snapshot's commit left it, when the open did not read the cell."""


_NOTHING_STORED: Final = Stored(None, None)


class MemoryWrite(NamedTuple):
    """What a commit writes to the three cells."""

    value: bytes
    appended: bool
    """True: append `value` to MEMORY_LOG. False: write it to MEMORY."""
    clear_log: bool
    """MEMORY_LOG held deltas that the new MEMORY replaces."""
    head: bytes | None
    """The new MEMORY_HEAD, or None: clear it if the open read one (the memory is written whole)."""
    digest: bytes | None
    """The new memory's `whole_digest` when it is written whole; None for a delta or a head."""


def decode_head(raw: bytes | None) -> MemoryHead | None:
    """MEMORY_HEAD's message, None when empty; `StateDecodeError` when it does not read."""
    if not raw:
        return None
    try:
        head = MemoryHead.FromString(raw)
    except Exception as exc:  # protobuf's DecodeError, or anything its C parser raises
        raise StateDecodeError(f"MEMORY_HEAD cell does not decode: {exc}") from None
    if len(head.digest) != _DIGEST_BYTES:
        raise StateDecodeError(f"MEMORY_HEAD cell holds a {len(head.digest)}-byte digest")
    return head


def fold_stored(base: bytes | None, head: MemoryHead | None, log: _Bag) -> MemoryBlob | None:
    """The committed memory as one blob: MEMORY, with MEMORY_LOG folded on when the head
    says it holds deltas (read only then). `StateDecodeError` for cells that do not read."""
    blob = decode_state(base, MemoryBlob, "MEMORY")
    if head is not None and head.log_values:
        blob = fold_blob(blob, log.read())
    return blob


def _chain(digest: bytes, data: bytes) -> bytes:
    hasher = hashlib.blake2b(digest_size=_DIGEST_BYTES)
    hasher.update(digest)
    hasher.update(data)
    return hasher.digest()


class ResidentMemory:
    """A cache of decoded working memory, valid for the exact cells it was committed as."""

    __slots__ = ("_budget", "_held", "_lock", "_log_from", "_snapshots", "hits", "misses")

    def __init__(
        self, max_bytes: int = DEFAULT_RESIDENT_BYTES, log_from_bytes: int = LOG_FROM_BYTES
    ) -> None:
        if type(max_bytes) is not int or max_bytes < 0:
            raise ValueError(f"max_bytes must be a non-negative int, got {max_bytes!r}")
        if type(log_from_bytes) is not int or log_from_bytes < 0:
            raise ValueError(f"log_from_bytes must be a non-negative int, got {log_from_bytes!r}")
        self._budget = max_bytes
        self._log_from = log_from_bytes
        self._held = 0
        self._lock = threading.Lock()
        self._snapshots: OrderedDict[_Key, _Snapshot] = OrderedDict()
        # Opens of stored memory that reused a snapshot, and that decoded afresh.
        self.hits = 0
        self.misses = 0

    def open(
        self,
        scope: str,
        entity_key: bytes,
        memory: _Readable,
        head: _Readable,
        log: _Bag,
        *,
        now_ms: int,
        compactor: Compactor | None = None,
        longterm: LongtermMemory | None = None,
        digest: bytes | None = None,
    ) -> tuple[Memory, Stored]:
        """The facade over the committed memory, and what was read for its commit.

        `digest` is the memory's `whole_digest` as SEQ (or a park) recorded
        it, when it did: the empty digest opens an empty memory, and a
        snapshot committed under that digest is reused, neither reading
        MEMORY. Otherwise MEMORY (`memory`) is read first. A base under
        `LOG_FROM_BYTES` is the whole memory and validates a snapshot by its
        bytes; a larger one is written as deltas, and MEMORY_HEAD (`head`)
        validates it, MEMORY_LOG (`log`) read only when no snapshot holds
        that head. `scope` names the transform (its token), so two
        transforms that see the same entity key keep apart. Raises
        `StateDecodeError` for cells that do not read, or a log that does
        not fold onto its base.
        """
        if digest == EMPTY_DIGEST:
            empty = Memory(None, now_ms=now_ms, compactor=compactor, longterm=longterm)
            return empty, Stored(None, None, EMPTY_DIGEST)
        key = (scope, entity_key)
        snapshot = self._take(key, digest) if digest else None
        if snapshot is not None:
            stored = Stored(snapshot.raw, None, digest, snapshot.log)
        else:
            base = memory.read()
            if not base:  # empty cells: nothing to reuse, nothing to decode
                empty = Memory(None, now_ms=now_ms, compactor=compactor, longterm=longterm)
                return empty, Stored(None, None, EMPTY_DIGEST)
            snapshot, stored = self._match(key, base, head)
        if snapshot is not None:
            reused = Memory._borrow(
                snapshot.state, now_ms=now_ms, compactor=compactor, longterm=longterm
            )
            reused.loan = snapshot
            return reused, stored
        blob = fold_stored(stored.base, decode_head(stored.head), log)
        return Memory(blob, now_ms=now_ms, compactor=compactor, longterm=longterm), stored

    def _take(self, key: _Key, digest: bytes) -> _Snapshot | None:
        """The snapshot committed under `digest`, lent to the caller; None if there is none."""
        with self._lock:
            snapshot = self._snapshots.get(key)
            if snapshot is None or snapshot.digest != digest:
                return None
            self._lend(key, snapshot)
        return snapshot

    def _match(self, key: _Key, base: bytes, head: _Readable) -> tuple[_Snapshot | None, Stored]:
        """The snapshot these cells validate, lent (None: decode them), and what was read."""
        raw_head = head.read() if len(base) >= self._log_from else None
        stored = Stored(base, raw_head or None)
        with self._lock:
            snapshot = self._snapshots.get(key)
            if snapshot is not None and _valid(snapshot, stored):
                self._lend(key, snapshot)
            else:
                snapshot = None
                self.misses += 1
        if stored.head is None:  # written whole: its digest is SEQ's for the commit
            known = snapshot.digest if snapshot is not None else None
            stored = stored._replace(digest=known or whole_digest(base))
        return snapshot, stored

    def _lend(self, key: _Key, snapshot: _Snapshot) -> None:
        """Take a matched snapshot out of the cache for its facade (call under the lock)."""
        self.hits += 1
        del self._snapshots[key]  # lent to the facade until commit or give_back
        self._held -= snapshot.held

    def commit(
        self,
        scope: str,
        entity_key: bytes,
        memory: Memory,
        stored: Stored = _NOTHING_STORED,
        *,
        log_after: Callable[[int], LogState | None] | None = None,
    ) -> MemoryWrite:
        """What to write for `memory`, opened over what `stored` says was read.

        `log_after(n)` says what MEMORY's cell holds once a write of n bytes
        settles, where the runtime counts it: kept with a memory written
        whole, the next open by digest tells the cell, whose write then need
        not read it to count it (on the portable harness a read caches the
        cell, and every later write of it is sized).

        Remembers the result with the decoded entries. Call only with the
        facade of the activation being committed; it must not be changed
        afterwards (it gives its entries away, a borrowed dict included).
        If the bundle then fails, the cells keep their old bytes and the
        snapshot is never matched.
        """
        described = decode_head(stored.head)
        if (
            described is not None
            and described.log_values < LOG_MAX_DELTAS
            and memory.size_bytes >= self._log_from  # shrunk below it: written whole again
        ):
            delta = memory._delta()
            if delta is not None and described.log_bytes + len(delta) <= described.base_bytes:
                after = MemoryHead(
                    digest=_chain(described.digest, delta),
                    base_bytes=described.base_bytes,
                    log_values=described.log_values + 1,
                    log_bytes=described.log_bytes + len(delta),
                    total_value_bytes=memory.size_bytes,
                )
                raw_head = encode_deterministic(after)
                held = after.base_bytes + after.log_bytes
                snapshot = _Snapshot(stored.base, raw_head, held, memory._snapshot())
                self._keep(scope, entity_key, snapshot)
                return MemoryWrite(
                    delta, appended=True, clear_log=False, head=raw_head, digest=None
                )
        base = memory.to_bytes()
        logged = described is not None and described.log_values > 0
        if len(base) < self._log_from:
            digest = whole_digest(base)
            log = log_after(len(base)) if log_after is not None else None
            snapshot = _Snapshot(base, None, len(base), memory._snapshot(), digest, log)
            self._keep(scope, entity_key, snapshot)
            return MemoryWrite(base, appended=False, clear_log=logged, head=None, digest=digest)
        after = MemoryHead(
            digest=_chain(b"", base), base_bytes=len(base), total_value_bytes=memory.size_bytes
        )
        raw_head = encode_deterministic(after)
        self._keep(scope, entity_key, _Snapshot(base, raw_head, len(base), memory._snapshot()))
        return MemoryWrite(base, appended=False, clear_log=logged, head=raw_head, digest=None)

    def give_back(self, scope: str, entity_key: bytes, memory: Memory) -> None:
        """The snapshot `memory` borrowed, back in the cache as it was committed.

        For an activation that ends without committing its memory (a park,
        a suspension, a failure, or nothing changed); a no-op for a facade
        that borrowed nothing or was committed.
        """
        loan = memory.loan
        if not isinstance(loan, _Snapshot):
            return
        memory.loan = None
        memory._restore()
        self._keep(scope, entity_key, loan)

    def _keep(self, scope: str, entity_key: bytes, snapshot: _Snapshot) -> None:
        key = (scope, entity_key)
        with self._lock:
            self._drop(key)
            if snapshot.held <= self._budget:
                self._snapshots[key] = snapshot
                self._held += snapshot.held
                while self._held > self._budget:
                    _, evicted = self._snapshots.popitem(last=False)
                    self._held -= evicted.held

    def forget(self, scope: str, entity_key: bytes) -> None:
        """Drop the key's snapshot (its memory was cleared or wiped)."""
        with self._lock:
            self._drop((scope, entity_key))

    def _drop(self, key: _Key) -> None:
        snapshot = self._snapshots.pop(key, None)
        if snapshot is not None:
            self._held -= snapshot.held

    def __len__(self) -> int:
        return len(self._snapshots)

    def __repr__(self) -> str:
        return (
            f"ResidentMemory(keys={len(self._snapshots)}, bytes={self._held}, "
            f"hits={self.hits}, misses={self.misses})"
        )


_shared = ResidentMemory()


def shared_resident() -> ResidentMemory:
    """The process-wide cache every RunAgent DoFn instance uses."""
    return _shared
