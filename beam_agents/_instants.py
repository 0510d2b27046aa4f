"""Epoch milliseconds as instants a `datetime`, and the clocks built on it, can hold.

Beam's event times reach far past a `datetime`'s years 1 to 9999:
`beam.Create` and other bounded sources stamp Beam's minimum timestamp
(about 290,000 years before year 1), and an element or timer at the end of
the global window carries a time about 290,000 years on. Every place that
shows an event time or a record's time, or hands one to another library's
clock (a LangGraph checkpoint, ADK's platform clock, the console, the
`recall` command), converts through here, so such a time becomes the
nearest instant a `datetime` holds instead of an exception that
dead-letters the event or stops a page. Eval refuses a log's times past
`LATEST_MS`, where its replay would run into the end of Beam's stream.

The rule is a pure function of the milliseconds, so a retried activation
writes the same bytes; a time inside the range converts exactly as
`datetime.fromtimestamp(ms / 1000, UTC)` did for any time of the last
three centuries and the next two. Long-term records keep their own,
narrower rule (`beam_agents.memory.longterm.record_time_ms`: nothing before
the epoch), which this one shows unchanged.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final, Literal

__all__ = [
    "EARLIEST_MS",
    "LATEST_MS",
    "representable_ms",
    "unix_seconds",
    "utc_datetime",
    "utc_text",
]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MS: Final = timedelta(milliseconds=1)
EARLIEST_MS: Final = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // _MS
"""0001-01-01T00:00:00.000Z: what any earlier time shows as."""
LATEST_MS: Final = (datetime(9999, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC) - _EPOCH) // _MS
"""9999-12-31T23:59:59.999Z: what any later time shows as."""


def representable_ms(ms: int) -> int:
    """`ms`, or the nearer end of the range a `datetime` holds when it lies outside."""
    return min(max(ms, EARLIEST_MS), LATEST_MS)


def utc_datetime(ms: int) -> datetime:
    """The UTC instant `ms` after the epoch, clamped; exact to the millisecond.

    Integer arithmetic rather than `fromtimestamp`: no float rounding, and no
    platform limit on times before the epoch.
    """
    return _EPOCH + timedelta(milliseconds=representable_ms(ms))


def unix_seconds(ms: int) -> float:
    """Seconds since the epoch, clamped, for clocks that count in float seconds (ADK's)."""
    return representable_ms(ms) / 1000.0


def utc_text(ms: int, *, sep: str = "T", timespec: Literal["minutes", "seconds"]) -> str:
    """`ms` as ISO 8601 date and time in UTC without the zone, e.g. '2026-11-30T08:01:00'.

    `strftime('%Y')` writes year 1 as '1' on glibc; `isoformat` always pads
    the year to four digits, so a clamped time still reads as a date.
    """
    return utc_datetime(ms).replace(tzinfo=None).isoformat(sep=sep, timespec=timespec)
