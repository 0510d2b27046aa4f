"""Millisecond times to Beam timestamps, clamped to what a timer may hold.

A timer in the global window may not be set past the window's end; an
agent's event time plus a long TTL can get there, so every timer goes
through here.
"""

from __future__ import annotations

from typing import Final

from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP, Timestamp

__all__ = ["MAX_TIMER_MS", "millis", "timer_timestamp"]

_MAX_MICROS: Final = GlobalWindow().max_timestamp().micros
_MIN_MICROS: Final = MIN_TIMESTAMP.micros
_MICROS_PER_SECOND: Final = 1_000_000
MAX_TIMER_MS: Final = _MAX_MICROS // 1000
"""The latest millisecond a timer can be set to (the end of the global window)."""


def _assembled(micros: int) -> Timestamp:
    """The Timestamp `Timestamp(micros=micros)` builds, without its argument checks.

    Every activation sets a timer, and the constructor's type and range
    checks on arguments we produce ourselves cost four times the rest.
    It fills Beam's own fields, so it is used only if `_ASSEMBLES_EXACTLY`
    confirmed on import that they are still what the constructor fills.
    """
    stamp: Timestamp = object.__new__(Timestamp)
    stamp._precision = Timestamp.MICROS_PRECISION
    stamp._seconds, stamp._subseconds = divmod(micros, _MICROS_PER_SECOND)
    return stamp


def _assembles_exactly() -> bool:
    probes = (0, 1, -1, 999_999, 1_000_000, -1_000_001, 1_700_000_000_123_456)
    try:
        return all(
            vars(_assembled(micros)) == vars(Timestamp(micros=micros))
            and _assembled(micros) == Timestamp(micros=micros)
            and _assembled(micros).micros == micros
            for micros in (*probes, _MIN_MICROS, _MAX_MICROS)
        )
    except Exception:  # a Beam whose Timestamp no longer has these fields
        return False


_ASSEMBLES_EXACTLY: Final = _assembles_exactly()


def timer_timestamp(ms: int) -> Timestamp:
    """A timer timestamp for `ms` (event or processing time), clamped to the global window."""
    micros = ms * 1000
    if micros > _MAX_MICROS:
        micros = _MAX_MICROS
    elif micros < _MIN_MICROS:
        micros = _MIN_MICROS
    if _ASSEMBLES_EXACTLY:
        return _assembled(micros)
    return Timestamp(micros=micros)


def millis(timestamp: Timestamp) -> int:
    """Whole milliseconds of a Beam timestamp (floor)."""
    return int(timestamp.micros // 1000)
