"""Writing staged rows to the long-term store: all or nothing, never abandoned mid-commit.

A flush has a deadline (`AgentConfig.longterm_timeout_s`), but a deadline
cannot recall a commit already sent: cancelling the `await` while a SQL
COMMIT or a Redis script is in flight leaves the rows written and the
activation reported as failed, the one outcome the runtime promises never
happens. So a flush past its deadline is cancelled and then *waited for*:

- cancelled before its commit was sent, the backend wrote nothing and the
  flush failed (`TimeoutError`): the activation is dead-lettered;
- its commit was in flight, the backend finishes it and reports the outcome
  (`beam_agents.memory.stores` awaits commit steps to their end): a success
  is a success, only late, and the activation commits;
- no outcome within a further `longterm_timeout_s` (a store that stopped
  answering mid-commit): `FlushOutcomeUnknown` fails the bundle. Its retry
  re-runs the activation, re-stages byte-identical rows at the same seq and
  flushes them again, so whatever the lost commit did, the retry converges.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from beam_agents.memory.stores.base import MemoryRecord, MemoryStore
from beam_agents.memory.stores.errors import StoreUnavailableError

__all__ = ["FlushOutcomeUnknown", "flush"]


class FlushOutcomeUnknown(StoreUnavailableError):
    """A flush's commit was sent and never answered: the bundle fails and is retried."""


async def flush(
    store: MemoryStore, entity_key: bytes, records: Sequence[MemoryRecord], timeout_s: float
) -> None:
    """`store.upsert_many(entity_key, records)` under the rule of the module docstring."""
    task = asyncio.ensure_future(store.upsert_many(entity_key, records))
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    if not done:
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
        if not done:
            raise FlushOutcomeUnknown(
                f"the store did not answer a flush of {len(records)} row(s) within "
                f"{2 * timeout_s:g} s and its commit may be in flight; the bundle is retried "
                "so that the retry's identical rows settle it"
            )
        if task.cancelled():
            raise TimeoutError(
                f"did not finish within {timeout_s:g} s (cancelled before its commit: "
                "nothing was written)"
            )
    task.result()
