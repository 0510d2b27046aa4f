"""A commit once sent is finished, not abandoned, when its caller is cancelled.

Cancelling an `await` does not recall a request already on the wire: a
SQL COMMIT handed to the driver's thread, a Redis script, a Firestore commit
RPC complete on the server whatever the client does next. Cancelled there,
`upsert_many` used to raise while its rows landed, so a timed-out flush
reported "nothing written" over rows that were written. Every atomic backend
awaits its commit step through `finish_in_flight`: the step runs to its end,
its outcome (result or error) is what `upsert_many` reports, and the
cancellation is withdrawn. Cancelled before that step, a backend writes
nothing and raises `CancelledError` as usual.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["finish_in_flight"]

T = TypeVar("T")


async def finish_in_flight(step: Awaitable[T]) -> T:
    """Await `step` to its end even if this task is cancelled meanwhile."""
    inner = asyncio.ensure_future(step)
    withdrawn = 0
    while True:
        try:
            result = await asyncio.shield(inner)
        except asyncio.CancelledError:
            if inner.cancelled():  # the step itself was cancelled, not just this waiter
                raise
            withdrawn += 1
            if inner.done():  # it finished as this task was cancelled: its outcome stands
                result = inner.result()
                break
            continue
        break
    task = asyncio.current_task()
    if task is not None:
        for _ in range(withdrawn):
            task.uncancel()
    return result
