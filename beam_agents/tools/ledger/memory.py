"""The in-process reference ledger: the contract with nothing in the way.

`memory://NAME` opens the process-wide ledger NAME (beside the store of the
same name), so a DirectRunner test and the DoFns it runs share one; a
ledger built directly (`InMemoryToolLedger()`) is private. A thread lock
guards each namespace and no critical section awaits, which is what makes
every claim and record atomic here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import ClassVar, Self

from beam_agents.memory.stores.errors import StoreError
from beam_agents.tools.ledger.base import (
    Busy,
    Claimed,
    ClaimOutcome,
    Clock,
    Recorded,
    ToolLedger,
    wall_clock_ms,
)

__all__ = ["InMemoryToolLedger"]


@dataclass
class _Entry:
    token: str
    lease_until_ms: int
    result: bytes | None = None


@dataclass
class _Space:
    lock: threading.Lock = field(default_factory=threading.Lock)
    entries: dict[str, _Entry] = field(default_factory=dict)


class InMemoryToolLedger(ToolLedger):
    """The reference `ToolLedger`: a process-wide namespace per `memory://NAME` URI."""

    _spaces: ClassVar[dict[str, _Space]] = {}
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, *, clock: Clock = wall_clock_ms) -> None:
        super().__init__(clock=clock)
        self._space = _Space()
        self._closed = False

    @classmethod
    def shared(cls, namespace: str, *, clock: Clock = wall_clock_ms) -> Self:
        """The ledger over the process-wide `namespace`, created empty on first use."""
        ledger = cls(clock=clock)
        with cls._registry_lock:
            ledger._space = cls._spaces.setdefault(namespace, _Space())
        return ledger

    @classmethod
    def drop_namespace(cls, namespace: str) -> None:
        """Forget a process-wide namespace (tests clean up with it)."""
        with cls._registry_lock:
            cls._spaces.pop(namespace, None)

    def __repr__(self) -> str:
        return "InMemoryToolLedger()"

    async def _claim(self, intent_id: str, token: str, lease_ms: int) -> ClaimOutcome:
        self._check_open()
        now = self.now_ms()
        with self._space.lock:
            entry = self._space.entries.get(intent_id)
            if entry is not None and entry.result is not None:
                return Recorded(intent_id, entry.result)
            if entry is not None and entry.lease_until_ms > now:
                return Busy(intent_id, entry.lease_until_ms - now)
            self._space.entries[intent_id] = _Entry(token, now + lease_ms)
        return Claimed(intent_id, token)

    async def _record(self, claim: Claimed, result: bytes) -> bool:
        self._check_open()
        with self._space.lock:
            entry = self._space.entries.get(claim.intent_id)
            if entry is None or entry.token != claim.token or entry.result is not None:
                return False
            entry.result = result
        return True

    async def _release(self, claim: Claimed) -> None:
        self._check_open()
        with self._space.lock:
            entry = self._space.entries.get(claim.intent_id)
            if entry is not None and entry.token == claim.token and entry.result is None:
                del self._space.entries[claim.intent_id]

    async def close(self) -> None:
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the in-memory tool ledger is closed")
