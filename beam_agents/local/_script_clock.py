"""The processing-time clock of a local run, as its deferred polls read it.

A local run's processing time is the DirectRunner's test clock, which only
the script moves (`beam_agents.local.Script.processing_time`). A poll that
defers (`beam_agents.runtime._paths.deferred_polls`) to the script's next move
waits a whole step, and a key with many events queued behind its calls
would wait one step per call. So between two moves of the script the clock
also creeps, by a microsecond per millisecond of wall time, at most 999:
a deferred poll sets itself a few microseconds ahead and fires a few
milliseconds later, while the script's next input enters in between.

The creep stays below the next whole millisecond, and every timer the
runtime sets (deadlines, TTL, polls of a fresh park) falls on a whole
millisecond, so none fires earlier than the script alone would fire it.
A poll defers only as long as the clocks cannot pass a time at which the
parked activation's key could have a timer due: the script's next move
must stay before the `until_ms` the poll names (its activation's event
time plus the shortest TTL or approval timeout its completion could set).
Past that, and once the script has made its last move (nothing would fire
the poll again before the run ends), polls wait on their calls. So a key's
timers fire between its events exactly where they fire with every call in
place. That comparison needs the processing-time clock to stand where the
watermark stands after each move, which `stepped_script` guarantees; over
any other script no poll defers.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Sequence
from typing import Any, Final

from apache_beam.runners.direct.clock import TestClock
from apache_beam.utils.timestamp import Timestamp

__all__ = ["POLL_EVERY_US", "ScriptClock"]

_MAX_CREEP_US: Final = 999
POLL_EVERY_US: Final = 20
"""How far ahead a deferred poll sets itself: about this many ms of wall time."""


class ScriptClock:
    """A running pipeline's test clock, creeping between the script's moves."""

    def __init__(self, moves_ms: Sequence[int]) -> None:
        """`moves_ms`: where each move of the script leaves the clock; none: no poll defers."""
        self._moves_us = [ms * 1000 for ms in moves_ms]
        self._lock = threading.Lock()
        self._clock: TestClock | None = None
        self._script_time: Any = None
        self._moved_at = time.monotonic()

    def attach(self, running: Any) -> None:
        """Take over the runner's test clock; none found leaves every poll waiting, as before."""
        context = getattr(running, "_evaluation_context", None)
        clock = getattr(getattr(context, "_watermark_manager", None), "_clock", None)
        if not isinstance(clock, TestClock):
            return
        script_time: Any = clock.time
        advance: Any = clock.advance_time

        def advance_time(advance_by: Any) -> None:
            with self._lock:
                advance(advance_by)
                self._moved_at = time.monotonic()

        def creeping_time() -> float:
            with self._lock:
                return float(script_time()) + self._creep_us() / 1_000_000

        clock.advance_time = advance_time  # type: ignore[method-assign]
        clock.time = creeping_time  # type: ignore[method-assign]
        with self._lock:
            self._script_time = script_time
            self._clock = clock

    def _creep_us(self) -> int:
        return min(int((time.monotonic() - self._moved_at) * 1000), _MAX_CREEP_US)

    def poll_again_at(self, until_ms: int) -> Timestamp | None:
        """A little ahead of the clock; None if the script's next move reaches `until_ms`
        or it has made its last."""
        with self._lock:
            if self._clock is None:
                return None
            script_us = round(float(self._script_time()) * 1_000_000)
            upcoming = bisect.bisect_right(self._moves_us, script_us)
            if upcoming == len(self._moves_us) or self._moves_us[upcoming] >= until_ms * 1000:
                return None
            return Timestamp(micros=script_us + self._creep_us() + POLL_EVERY_US)
