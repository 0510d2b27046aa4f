"""Polls that let a local run's input in while their calls are still running.

On the streaming DirectRunner under a `TestStream` (`beam_agents.local`)
one thread runs every bundle, and the stream lets its next scripted step in
only when nothing is running and no timer fired. A poll that waits on its
call there holds that thread: the calls of one step overlap, and the next
step's events enter only once they have all answered.

While a local run says where its processing-time clock stands (`deferring`),
a poll whose call is still running waits for nothing: it sets itself again
a little ahead of that clock, and the script's next steps enter before it
fires, as long as the clocks cannot pass a time at which one of the key's
own timers could be due meanwhile (its TTL, an approval deadline). Past
that, or once the clock has made its last move (nothing would fire the poll
again), it waits on the call as before. What the key's activations compute
then depends only on the key's own order, which the park's buffer keeps,
and on where its timers fire between its events, which does not move; so
results are the same either way. A deployed runner never installs a clock:
its polls wait as they always did.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Protocol

from apache_beam.utils.timestamp import Timestamp

__all__ = ["ProcessingClock", "deferring", "poll_again_at"]


class ProcessingClock(Protocol):
    """Where a local run's processing time stands, as its script moves it."""

    def poll_again_at(self, until_ms: int) -> Timestamp | None:
        """A time the clock has not reached and will, before the clocks can reach
        `until_ms`; None: not so (the poll waits on its call)."""


_lock = threading.Lock()
_clocks: list[ProcessingClock] = []


@contextlib.contextmanager
def deferring(clock: ProcessingClock) -> Iterator[None]:
    """While active, polls in this process defer to `clock` (see the module).

    With two local runs at once in one process a poll cannot tell whose
    clock is its own, so none defers: they wait, as without a clock.
    """
    with _lock:
        _clocks.append(clock)
    try:
        yield
    finally:
        with _lock:
            _clocks.remove(clock)


def poll_again_at(until_ms: int) -> Timestamp | None:
    """When a poll whose call is running should fire again; None: wait on the call now.

    `until_ms`: the earliest time (event or processing) at which a timer its
    activation's completion sets could be due; the clocks must not reach it
    while the poll defers, or the key's timers would fire out of their place.
    """
    with _lock:
        if len(_clocks) != 1:
            return None
        clock = _clocks[0]
    return clock.poll_again_at(until_ms)
