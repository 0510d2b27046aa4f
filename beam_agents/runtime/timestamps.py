"""Millisecond times to Beam timestamps, clamped to what a timer may hold.

A timer in the global window may not be set past the window's end; an
agent's event time plus a long TTL can get there, so every timer goes
through here.
"""

from __future__ import annotations

from typing import Final

from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP, Timestamp

__all__ = ["millis", "timer_timestamp"]

_MAX_MICROS: Final = GlobalWindow().max_timestamp().micros
_MIN_MICROS: Final = MIN_TIMESTAMP.micros


def timer_timestamp(ms: int) -> Timestamp:
    """A timer timestamp for `ms` (event or processing time), clamped to the global window."""
    return Timestamp(micros=min(max(ms * 1000, _MIN_MICROS), _MAX_MICROS))


def millis(timestamp: Timestamp) -> int:
    """Whole milliseconds of a Beam timestamp (floor)."""
    return int(timestamp.micros // 1000)
