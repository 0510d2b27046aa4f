"""Decoded working memory kept between activations of a hot key.

Decoding a key's blob into a facade and encoding it back cost per entry,
not per byte: at ~3,600 entries that was most of an activation. A
`ResidentMemory` keeps, per (transform, key), the facade entries of the
blob last committed for that key in this process, next to the exact bytes
written. The next activation of the key reads the MEMORY cell as always and
reuses the snapshot only if the cell holds those very bytes (identity, else
a byte comparison: a memcmp, far cheaper than a decode):

- a retried bundle reads the state from before the failed attempt, which is
  not what the attempt wrote, so it decodes afresh;
- a key that moved to another worker and back reads whatever was committed
  there; unless it is byte-for-byte what was written here, it decodes;
- equal bytes decode to equal entries, so a hit is indistinguishable from a
  decode (the facade is deterministic in its input bytes).

One cache serves the whole process (`shared_resident()`), not one per DoFn
instance: runners run several instances of a DoFn on several threads (the
DirectRunner does, so does Dataflow), and a key's activations may land on
any of them. Beam never runs two activations of one key at once, and the
snapshot's entries are shared copy-on-write with the facade built from it
(see `Memory`), so an activation that fails leaves the snapshot as it was.
The cache is bounded by total blob bytes and evicts least recently used
keys; nothing here is persisted or pickled.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from beam_agents.coders import decode_state
from beam_agents.memory.compaction import Compactor
from beam_agents.memory.facade import Memory
from beam_agents.proto.beam_agents_pb2 import MemoryBlob

if TYPE_CHECKING:
    from beam_agents.memory.longterm import LongtermMemory

__all__ = ["DEFAULT_RESIDENT_BYTES", "ResidentMemory", "shared_resident"]

DEFAULT_RESIDENT_BYTES: Final = 64 * 1_048_576
"""Blob bytes the process keeps decoded (about 64 keys at the hard cap)."""


@dataclass(frozen=True, slots=True)
class _Snapshot:
    raw: bytes
    state: Any  # Memory._snapshot(): entries, their wire bytes, the size


_Key = tuple[str, bytes]


class ResidentMemory:
    """A cache of decoded working memory, validated by the committed bytes."""

    __slots__ = ("_budget", "_held", "_lock", "_snapshots", "hits", "misses")

    def __init__(self, max_bytes: int = DEFAULT_RESIDENT_BYTES) -> None:
        if type(max_bytes) is not int or max_bytes < 0:
            raise ValueError(f"max_bytes must be a non-negative int, got {max_bytes!r}")
        self._budget = max_bytes
        self._held = 0
        self._lock = threading.Lock()
        self._snapshots: OrderedDict[_Key, _Snapshot] = OrderedDict()
        # Opens of a non-empty cell that reused a snapshot, and that decoded afresh.
        self.hits = 0
        self.misses = 0

    def open(
        self,
        scope: str,
        entity_key: bytes,
        raw: bytes | None,
        *,
        now_ms: int,
        compactor: Compactor | None = None,
        longterm: LongtermMemory | None = None,
    ) -> Memory:
        """The facade over the MEMORY cell's bytes `raw` (None or empty: no memory).

        `scope` names the transform (its token), so two transforms that see
        the same entity key keep apart. Raises `StateDecodeError` for bytes
        that are not a readable blob.
        """
        if not raw:  # an empty cell: nothing to reuse, nothing to decode
            return Memory(None, now_ms=now_ms, compactor=compactor, longterm=longterm)
        key = (scope, entity_key)
        with self._lock:
            snapshot = self._snapshots.get(key)
            if snapshot is not None and (raw is snapshot.raw or raw == snapshot.raw):
                self.hits += 1
                self._snapshots.move_to_end(key)
            else:
                snapshot = None
                self.misses += 1
        if snapshot is not None:
            return Memory._from_snapshot(
                snapshot.state,
                now_ms=now_ms,
                compactor=compactor,
                longterm=longterm,
            )
        return Memory(
            decode_state(raw, MemoryBlob, "MEMORY"),
            now_ms=now_ms,
            compactor=compactor,
            longterm=longterm,
        )

    def commit(self, scope: str, entity_key: bytes, memory: Memory) -> bytes:
        """The bytes to write for `memory`; remembers them with the decoded entries.

        Call only with the facade of the activation being committed; it must
        not be used afterwards (it gives its entries away). If the bundle
        then fails, the cell keeps its old bytes and the snapshot is never
        matched.
        """
        raw = memory.to_bytes()
        state = memory._snapshot()
        key = (scope, entity_key)
        with self._lock:
            self._drop(key)
            if len(raw) <= self._budget:
                self._snapshots[key] = _Snapshot(raw, state)
                self._held += len(raw)
                while self._held > self._budget:
                    _, evicted = self._snapshots.popitem(last=False)
                    self._held -= len(evicted.raw)
        return raw

    def forget(self, scope: str, entity_key: bytes) -> None:
        """Drop the key's snapshot (its memory was cleared or wiped)."""
        with self._lock:
            self._drop((scope, entity_key))

    def _drop(self, key: _Key) -> None:
        snapshot = self._snapshots.pop(key, None)
        if snapshot is not None:
            self._held -= len(snapshot.raw)

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
