"""Named failure points the chaos helpers arm in tests.

Production code asks `should_fail(name, key)` at a few commit-critical
places; with nothing armed that is one dict lookup. `beam_agents.testing.chaos`
arms them, process-wide, because on the DirectRunner the DoFn instances are
deserialized copies the test never holds.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from beam_agents.errors import BeamAgentsError
from beam_agents.memory.stores.base import MemoryRecord, MemoryStore
from beam_agents.memory.stores.errors import StoreUnavailableError

__all__ = [
    "AFTER_TOOL",
    "COMMIT",
    "PARK",
    "POLL",
    "STORE_READ",
    "STORE_WRITE",
    "Failpoint",
    "InjectedFailure",
    "InjectedFailureError",
    "arm",
    "disarm",
    "fires",
    "should_fail",
    "with_store_failpoints",
]

COMMIT = "commit"
"""After an activation's effects are staged, before the bundle commits them."""
AFTER_TOOL = "after_tool"
"""As COMMIT, only for activations that called a tool (`ctx.call_tool`)."""
PARK = "park"
"""After a park is staged (its call started on the call loop), before the bundle commits it."""
POLL = "poll"
"""Before a poll waits on its call: the call is forgotten, as after a worker move."""
STORE_WRITE = "store_write"
"""A long-term store write (a flush or an on_expire upsert), before it reaches the store."""
STORE_READ = "store_read"
"""A long-term store read (load or search), before it reaches the store."""


class InjectedFailureError(BeamAgentsError, RuntimeError):
    """Raised by an armed failpoint: the runner sees a failed bundle and retries it."""


InjectedFailure = InjectedFailureError
"""The old name of `InjectedFailureError`, kept importable."""


@dataclass
class Failpoint:
    """Fail `times` times for keys matching `match`; counts what fired."""

    match: Callable[[bytes, int], bool]
    times: int = 1
    fired: list[tuple[bytes, int]] = field(default_factory=list)


_lock = threading.Lock()
_armed: dict[str, Failpoint] = {}


def arm(name: str, failpoint: Failpoint) -> None:
    """Arm `name`; replaces what was armed there."""
    with _lock:
        _armed[name] = failpoint


def disarm(name: str) -> None:
    """Disarm `name` (no-op when unarmed)."""
    with _lock:
        _armed.pop(name, None)


def _fires(name: str, entity_key: bytes, seq: int) -> bool:
    if not _armed:
        return False
    with _lock:
        point = _armed.get(name)
        if point is None or len(point.fired) >= point.times or not point.match(entity_key, seq):
            return False
        point.fired.append((entity_key, seq))
        return True


def fires(name: str, entity_key: bytes, seq: int) -> bool:
    """Whether `name` is armed for this activation and has fires left (counting this one)."""
    return bool(_armed) and _fires(name, entity_key, seq)


def should_fail(name: str, entity_key: bytes, seq: int) -> None:
    """Raise `InjectedFailureError` if `name` is armed for this activation and has fires left."""
    if _armed and _fires(name, entity_key, seq):
        raise InjectedFailureError(f"failpoint {name!r} fired for {entity_key!r} at seq {seq}")


class _FailpointStore(MemoryStore):
    """Delegates to a real store, failing calls the way an unreachable store would."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def _maybe_fail(self, name: str, entity_key: bytes, seq: int) -> None:
        if _fires(name, entity_key, seq):
            raise StoreUnavailableError(f"injected {name} failure for {entity_key!r}")

    async def _load(self, entity_key: bytes, key: str) -> MemoryRecord | None:
        self._maybe_fail(STORE_READ, entity_key, -1)
        return await self._store.load(entity_key, key)

    async def _search(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        self._maybe_fail(STORE_READ, entity_key, -1)
        return await self._store.search(entity_key, prefix, limit)

    async def _upsert_many(self, entity_key: bytes, records: Sequence[MemoryRecord]) -> list[bool]:
        self._maybe_fail(STORE_WRITE, entity_key, records[0].seq if records else -1)
        return await self._store.upsert_many(entity_key, records)

    def scan(self) -> AsyncIterator[tuple[bytes, MemoryRecord]]:
        return self._store.scan()

    async def close(self) -> None:
        await self._store.close()


def with_store_failpoints(store: MemoryStore) -> MemoryStore:
    """`store`, wrapped so armed store failpoints fire; as-is when none is armed."""
    with _lock:
        armed = STORE_READ in _armed or STORE_WRITE in _armed
    return _FailpointStore(store) if armed else store
