"""AdaptiveWindow: how many calls to one provider may be in flight, learned as TCP learns it.

A rate limit says how fast calls may start; it cannot see a provider that
is slowing down or refusing for reasons of its own (a shared quota another
job is also spending, an overloaded deployment). The window reacts to what
the provider does: additive increase, multiplicative decrease (AIMD).

- Each success adds one to the window per window's worth of successes
  (about +1 per round trip), up to `upper` (`AgentConfig.max_inflight_calls`).
- A 429 halves it, at most once per latency period: the 429s of calls that
  were already in flight when the first came back describe the same moment.
- When recent latency (a short moving average) rises past
  `LATENCY_BOUND` times the long-run baseline (itself at least 50 ms), the provider is queueing our
  calls: the window shrinks by a quarter, again at most once per period.

The window is shared by the Beam threads' activation loops and the call
loop. A waiter is woken on its own loop with `call_soon_threadsafe`, and a
freed slot is handed to the waiter directly so no other caller can take it
in between.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Final

from beam_agents._beam_metrics import gauge
from beam_agents.model._calls import NAMESPACE

__all__ = ["LATENCY_BOUND", "AdaptiveWindow", "WindowSlot"]

LATENCY_BOUND: Final = 2.0
"""Recent latency past this many times the baseline shrinks the window."""
_SHORT_WEIGHT: Final = 0.3
_LONG_WEIGHT: Final = 0.02
_LATENCY_FLOOR_S: Final = 0.05
"""A baseline below this is read as this: millisecond answers vary by multiples without
meaning anything, and a model call that slow is no call a provider queues."""
_WARM_UP: Final = 20
"""Successes before the latency baseline is trusted."""
_DEFAULT_PERIOD_S: Final = 1.0

_gauge = gauge(NAMESPACE, "inflight_window")


class _Waiter:
    __slots__ = ("future", "granted", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future: asyncio.Future[None] = loop.create_future()
        self.granted = False


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class AdaptiveWindow:
    """The AIMD in-flight window of one provider in one process: 1 <= size <= upper."""

    def __init__(self, upper: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if isinstance(upper, bool) or not isinstance(upper, int) or upper < 1:
            raise ValueError(f"AdaptiveWindow upper must be an int >= 1, got {upper!r}")
        self.upper = upper
        self._size = upper
        self._inflight = 0
        self._successes = 0
        self._short: float | None = None
        self._long: float | None = None
        self._samples = 0
        self._last_decrease = float("-inf")
        self._clock = clock
        self._lock = threading.Lock()
        self._waiters: deque[_Waiter] = deque()

    @property
    def size(self) -> int:
        """Calls allowed in flight now."""
        return self._size

    @property
    def inflight(self) -> int:
        """Calls holding a slot now."""
        return self._inflight

    def slot(self) -> WindowSlot:
        """A place to take in the window, given back once however often it is released."""
        return WindowSlot(self)

    async def acquire(self) -> None:
        """Wait for a slot; pair with `release()`."""
        with self._lock:
            if self._inflight < self._size and not self._waiters:
                self._inflight += 1
                return
            waiter = _Waiter(asyncio.get_running_loop())
            self._waiters.append(waiter)
        try:
            await waiter.future
        except BaseException:
            with self._lock:
                if waiter.granted:
                    granted = True
                else:
                    granted = False
                    self._waiters.remove(waiter)
            if granted:
                self.release()
            raise

    def release(self) -> None:
        """Give a slot back, handing it to the next waiter if the window has room."""
        with self._lock:
            self._inflight -= 1
            self._grant()

    def _grant(self) -> None:
        while self._waiters and self._inflight < self._size:
            waiter = self._waiters.popleft()
            waiter.granted = True
            self._inflight += 1
            try:
                waiter.loop.call_soon_threadsafe(_wake, waiter.future)
            except RuntimeError:  # its loop is closed: nobody awaits that slot
                self._inflight -= 1

    def on_success(self, latency_s: float) -> None:
        """A call answered in `latency_s`: grow by one per window's worth of successes."""
        with self._lock:
            self._samples += 1
            self._short = _ewma(self._short, latency_s, _SHORT_WEIGHT)
            self._long = _ewma(self._long, latency_s, _LONG_WEIGHT)
            if (
                self._samples >= _WARM_UP
                and self._short > LATENCY_BOUND * max(self._long, _LATENCY_FLOOR_S)
                and self._may_decrease()
            ):
                self._resize(max(1, (self._size * 3) // 4))
                return
            self._successes += 1
            if self._successes >= self._size and self._size < self.upper:
                self._successes = 0
                self._resize(self._size + 1)
            else:
                # Each bundle reports its own gauge: keep it current even when unchanged.
                if self._successes >= self._size:
                    self._successes = 0
                _gauge.set(self._size)

    def on_throttled(self) -> None:
        """The provider refused for rate: halve, unless this period already decreased."""
        with self._lock:
            if self._may_decrease():
                self._resize(max(1, self._size // 2))

    def _may_decrease(self) -> bool:
        now = self._clock()
        period = self._long if self._long is not None else _DEFAULT_PERIOD_S
        if now - self._last_decrease < period:
            return False
        self._last_decrease = now
        self._successes = 0
        return True

    def _resize(self, size: int) -> None:
        self._size = size
        _gauge.set(size)
        self._grant()


def _ewma(previous: float | None, sample: float, weight: float) -> float:
    return sample if previous is None else previous + weight * (sample - previous)


class WindowSlot:
    """One call's place in the window; releasing it twice gives it back once.

    A call the call loop abandons (it ignored every cancellation) is released
    by the loop, and again, harmlessly, if it ever finishes.
    """

    __slots__ = ("_held", "_window")

    def __init__(self, window: AdaptiveWindow) -> None:
        self._window = window
        self._held = False

    async def acquired(self) -> None:
        await self._window.acquire()
        self._held = True

    def __call__(self) -> None:
        if self._held:
            self._held = False
            self._window.release()
