"""Epoch milliseconds as datetimes: Beam's bounds clamp, ordinary times convert as before."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MAX_TIMESTAMP, MIN_TIMESTAMP, Timestamp
from hypothesis import given
from hypothesis import strategies as st

from beam_agents._instants import (
    EARLIEST_MS,
    LATEST_MS,
    representable_ms,
    unix_seconds,
    utc_datetime,
    utc_text,
)

YEAR_ONE = datetime(1, 1, 1, tzinfo=UTC)
LAST_MS_OF_9999 = datetime(9999, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC)
INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
# |seconds| < 2**33 (1697 to 2242): where `fromtimestamp(ms / 1000)` is exact to the millisecond.
ORDINARY_MS = st.integers(min_value=-(2**33) * 1000 + 1, max_value=2**33 * 1000 - 1)


def _ms(stamp: Timestamp) -> int:
    return int(stamp.micros // 1000)


def test_beams_minimum_timestamp_is_the_first_instant_of_year_one() -> None:
    ms = _ms(MIN_TIMESTAMP)

    assert utc_datetime(ms) == YEAR_ONE
    assert utc_datetime(ms).isoformat() == "0001-01-01T00:00:00+00:00"
    assert utc_text(ms, timespec="seconds") == "0001-01-01T00:00:00"
    assert unix_seconds(ms) == EARLIEST_MS / 1000
    assert datetime.fromtimestamp(unix_seconds(ms), UTC) == YEAR_ONE


@pytest.mark.parametrize(
    "stamp", [MAX_TIMESTAMP, GlobalWindow().max_timestamp()], ids=["max", "global-window-end"]
)
def test_beams_latest_timestamps_are_the_last_millisecond_of_9999(stamp: Timestamp) -> None:
    ms = _ms(stamp)

    assert utc_datetime(ms) == LAST_MS_OF_9999
    assert utc_text(ms, sep=" ", timespec="minutes") == "9999-12-31 23:59"
    assert unix_seconds(ms) == LATEST_MS / 1000
    assert datetime.fromtimestamp(unix_seconds(ms), UTC).year == 9999


def test_the_range_is_exactly_what_a_datetime_holds() -> None:
    assert utc_datetime(EARLIEST_MS) == YEAR_ONE
    assert utc_datetime(LATEST_MS) == LAST_MS_OF_9999
    assert representable_ms(EARLIEST_MS - 1) == EARLIEST_MS
    assert representable_ms(LATEST_MS + 1) == LATEST_MS


@given(ORDINARY_MS)
def test_an_ordinary_time_converts_exactly_as_fromtimestamp_did(ms: int) -> None:
    assert utc_datetime(ms) == datetime.fromtimestamp(ms / 1000, UTC)
    assert unix_seconds(ms) == ms / 1000
    assert utc_text(ms, timespec="seconds") == datetime.fromtimestamp(ms / 1000, UTC).strftime(
        "%Y-%m-%dT%H:%M:%S"
    )


@given(INT64, INT64)
def test_every_int64_converts_in_order_and_inside_the_range(a: int, b: int) -> None:
    early, late = sorted((a, b))

    assert YEAR_ONE <= utc_datetime(early) <= utc_datetime(late) <= LAST_MS_OF_9999
