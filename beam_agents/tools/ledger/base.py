"""The tool ledger contract: claim an intent with a lease, record its result once.

An intent may be seen by several executions: a retried bundle, a worker that
took over a key, `ExecuteIntents` downstream of the activation that emitted
it. The ledger makes them agree. `claim` answers one of three things, decided
by the backend's own conditional write so that racing claimers cannot both
win: `Claimed` (you execute, then `record`), `Recorded` (someone did; here is
the result) or `Busy` (someone holds a live lease; ask again later).

A lease bounds how long a claimer that died keeps others out; the price is
the honest guarantee: one execution per intent id while leases hold. A holder
that outlives its lease may find its claim taken over; its `record` is then
refused (it returns False), so the new holder's result is the one that
stands. Targets that honour the idempotency key make even that case
effectively-once.

Clocks. The lease clock is the ledger's own concern: a ledger is I/O, like a
store, and is never consulted for anything an activation commits. Redis
expires leases on the server's clock; the other backends compare against the
claiming process's clock (`clock=`, milliseconds since the epoch), so hosts
that share a ledger need clocks within a small fraction of the lease.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Self

from beam_agents.memory.stores.errors import StoreError
from beam_agents.tools.calls import check_intent_id
from beam_agents.tools.errors import ToolResultTooLargeError

__all__ = [
    "DEFAULT_LEASE_MS",
    "MAX_LEASE_MS",
    "MAX_RESULT_BYTES",
    "Busy",
    "ClaimOutcome",
    "Claimed",
    "Clock",
    "Recorded",
    "ToolLedger",
    "wall_clock_ms",
]

MAX_RESULT_BYTES: Final = 512 * 1024
"""Largest result a ledger holds: well inside a Firestore document and a Bigtable
cell, and what a tool should hand an agent anyway (a reference, not a dump)."""

DEFAULT_LEASE_MS: Final = 60_000
MAX_LEASE_MS: Final = 24 * 3_600_000

Clock = Callable[[], int]
"""Milliseconds since the epoch, for lease expiry only."""


def wall_clock_ms() -> int:
    """The process's wall clock in milliseconds: the default lease clock."""
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class Claimed:
    """This caller holds the lease: execute, then `record` (or `release` on failure)."""

    intent_id: str
    token: str
    """Identifies this claim among every claim of the id; `record` checks it."""


@dataclass(frozen=True, slots=True)
class Recorded:
    """The intent was executed and its result recorded: return it, do not execute."""

    intent_id: str
    result: bytes


@dataclass(frozen=True, slots=True)
class Busy:
    """Another caller holds a live lease; ask again after `retry_after_ms`."""

    intent_id: str
    retry_after_ms: int


ClaimOutcome = Claimed | Recorded | Busy


def _check_lease(lease_ms: object) -> int:
    if type(lease_ms) is not int or not 1 <= lease_ms <= MAX_LEASE_MS:
        raise ValueError(f"lease_ms must be an int in [1, {MAX_LEASE_MS}], got {lease_ms!r}")
    return lease_ms


class ToolLedger(ABC):
    """Claims and results of tool intents, keyed by intent id.

    Contract (proved for every backend by `beam_agents.testing.ledger_conformance`):

    - Of any number of concurrent `claim`s of one id, exactly one returns
      `Claimed`; the others return `Busy` until that lease expires or is
      released, and `Recorded` once a result is recorded.
    - A recorded result is final: every later `claim` returns it, byte for byte.
    - `record` succeeds only for the claim that currently holds the id; a
      holder whose lease was taken over cannot overwrite the new holder.
    - A result over `MAX_RESULT_BYTES` is refused and its claim released.

    Public methods validate their arguments, then call the backend's
    `_claim`, `_record` and `_release`; a backend implements only those, its
    lifecycle, and `provision`.
    """

    def __init__(self, *, clock: Clock = wall_clock_ms) -> None:
        self._clock = clock

    def now_ms(self) -> int:
        """The lease clock."""
        return self._clock()

    async def claim(self, intent_id: str, *, lease_ms: int = DEFAULT_LEASE_MS) -> ClaimOutcome:
        """Take the lease on `intent_id`, or learn its result, or that someone holds it."""
        check_intent_id(intent_id)
        return await self._claim(intent_id, secrets.token_hex(16), _check_lease(lease_ms))

    async def record(self, claim: Claimed, result: bytes) -> bool:
        """Record `result` under the claim; False when the claim no longer holds the id.

        A result over `MAX_RESULT_BYTES` raises `ToolResultTooLargeError` and
        releases the claim, as a failed call does.
        """
        if not isinstance(claim, Claimed):
            raise TypeError(f"record needs the Claimed that claim returned, got {claim!r:.80}")
        if type(result) is not bytes:
            raise TypeError(f"a tool result must be bytes, got {type(result).__name__}")
        if len(result) > MAX_RESULT_BYTES:
            # Refused for good: holding the id until the lease ends would only
            # keep every retry waiting on a result that can never be recorded.
            with contextlib.suppress(StoreError):
                await self._release(claim)
            raise ToolResultTooLargeError(
                f"the result of {claim.intent_id} is {len(result):,} bytes, over the "
                f"{MAX_RESULT_BYTES:,}-byte limit"
            )
        return await self._record(claim, result)

    async def release(self, claim: Claimed) -> None:
        """Give up a claim without a result (the call failed) so another may retry at once."""
        if not isinstance(claim, Claimed):
            raise TypeError(f"release needs the Claimed that claim returned, got {claim!r:.80}")
        await self._release(claim)

    @abstractmethod
    async def _claim(self, intent_id: str, token: str, lease_ms: int) -> ClaimOutcome:
        """One conditional write: take the id unless recorded or under a live lease."""

    @abstractmethod
    async def _record(self, claim: Claimed, result: bytes) -> bool:
        """One conditional write: store the result iff the id is still `claim.token`'s."""

    @abstractmethod
    async def _release(self, claim: Claimed) -> None:
        """Drop the claim iff the id is still `claim.token`'s and has no result."""

    async def provision(self) -> None:
        """Create the table, family or collection the ledger needs; idempotent.

        Never called by the runtime: `beam-agents provision URI` runs it.
        """
        return

    async def check_provisioned(self) -> None:
        """Raise `StoreNotProvisionedError` when what `provision` creates is missing."""
        return

    async def close(self) -> None:
        """Release connections; the ledger is unusable afterwards.

        Optional, like `provision`: the default holds nothing to release, so
        a ledger without connections need not override it.
        """
        return

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Close the ledger however the block ended: `async with open_ledger(uri) as ledger:`."""
        await self.close()
