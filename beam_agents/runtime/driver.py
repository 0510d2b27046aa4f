"""Driving agent coroutines on the Beam thread.

One event loop per DoFn instance, created in `setup()` and closed in
`teardown()`, driven in place with `run_until_complete`. Not a loop on a
separate bridge thread: a cross-thread hand-off costs ~135 µs p50 per call
on the reference machine, more than the whole activation overhead budget,
against ~30 µs in place; and Beam silently drops metric updates made off
the Beam thread. Async clients (stores, providers) are created on this loop
and only ever used from it.

An agent that blocks the loop with synchronous code cannot be timed out by
this (or any in-process) design: the timeout fires only when the coroutine
yields.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopDriver"]

T = TypeVar("T")


class LoopDriver:
    """Owns one event loop and runs coroutines to completion on the calling thread."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = asyncio.new_event_loop()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop clients must be created on."""
        if self._loop is None:
            raise RuntimeError("the activation loop is closed")
        return self._loop

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run `coro` to completion; raise TimeoutError after `timeout_s`.

        The timeout is a cancel scheduled on the loop rather than
        `asyncio.wait_for`, which wraps the coroutine in a second task and
        costs three more loop iterations per activation on the hot path.
        """
        loop = self.loop
        task = loop.create_task(coro)
        if timeout_s is None:
            return loop.run_until_complete(task)
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            task.cancel()

        handle = loop.call_later(timeout_s, expire)
        try:
            return loop.run_until_complete(task)
        except asyncio.CancelledError:
            if expired:
                raise TimeoutError(f"did not finish within {timeout_s} s") from None
            raise
        finally:
            handle.cancel()

    def close(self) -> None:
        """Cancel what is left, finish async generators and close the loop."""
        loop, self._loop = self._loop, None
        if loop is None or loop.is_closed():
            return
        try:
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
