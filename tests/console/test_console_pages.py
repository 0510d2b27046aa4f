"""Each console page as a person reads it, in Chromium, with a screenshot of each to look at.

The screenshots land in the test's temporary directory (`screens/`), where
a reviewer opens them; the assertions pin what the page must not get wrong.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from beam_agents.console.clock import RunClock, write_clock
from tests.console.conftest import TOKEN, Served, approval, write_lines

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

T0 = 1_796_025_686_000
WINDOW_MS = 7_200_000  # two hours of run time: two minutes of the reader's at 60x
RAW_EPOCH_MS = re.compile(r"\b1[6-9]\d{11}\b")


def _approval(service: str, n: int, message: str, at: int) -> dict[str, Any]:
    record = approval(service, f"{service}-000{n}", message, f"intent-{service}")
    return {**record, "event_time_ms": at, "args": {"timeout_ms": WINDOW_MS}}


def _alert(service: str, n: int, at: int) -> str:
    return json.dumps({"alert_id": f"{service}-000{n}", "service": service, "event_time_ms": at})


@pytest.fixture
def live_dir(tmp_path: Path) -> Path:
    """A live run part-way: one approval pending, one paged, one timed out, one wiped."""
    run = tmp_path / "live"
    run.mkdir()
    now = T0 + 3 * 3_600_000
    write_lines(
        run / "intents.jsonl",
        [
            _approval("svc-1", 1, "checkout: service unreachable", T0),
            _approval("svc-2", 1, "orders: outage in eu-west", T0 + 60_000),
            _approval("svc-4", 1, "payments: service unreachable", T0 + 120_000),
            _approval("svc-7", 1, "search: service unreachable", now - 600_000),
            {"intent_id": "p-1", "service": "svc-1", "tool": "page_oncall", "seq": 1,
             "index": 0, "args": {"alert_id": "svc-1-0001"}, "event_time_ms": T0},
            {"intent_id": "e-1", "service": "svc-2", "tool": "escalate", "seq": 1,
             "index": 0, "args": {"alert_id": "svc-2-0001"}, "event_time_ms": T0 + WINDOW_MS},
        ],
    )  # fmt: skip
    write_lines(
        run / "answers.jsonl",
        [{"intent_id": "intent-svc-1", "answer": "approve: checkout is down",
          "approver": "Ada on call", "service": "svc-1", "reason": "checkout is down",
          "event_time_ms": 0}],
    )  # fmt: skip
    write_lines(
        run / "outputs.jsonl",
        [{"service": "svc-1", "alert_id": "svc-1-0001", "class": "P1", "decision": "paged"}],
    )
    write_lines(
        run / "errors.jsonl",
        [
            {"service": "svc-2", "reason": "suspension_timeout", "detail": "no answer",
             "event_time_ms": T0 + 60_000 + WINDOW_MS, "payload": _alert("svc-2", 1, T0 + 60_000)},
            {"service": "svc-4", "reason": "ttl_wiped_suspension", "detail": "wiped",
             "event_time_ms": T0 + 9_000_000, "payload": _alert("svc-4", 1, T0 + 120_000)},
        ],
    )  # fmt: skip
    # Emission order, not event-time order: an alert buffered behind the approval
    # (at T0 + 20 min) is recorded after the resumed run (T0 + 30 min).
    samples = [
        ("activated", T0, 0), ("suspended", T0, 2_400), ("resumed", T0 + 1_800_000, 5_800),
        ("buffered", T0 + 1_200_000, 5_800), ("completed", T0 + 2_400_000, 9_100),
        ("ttl_expired", T0 + 4_200_000, 0),
    ]  # fmt: skip
    write_lines(
        run / "lifecycle.jsonl",
        [
            {"service": "svc-1", "kind": k, "event_time_ms": t, "seq": 1, "memory_bytes": b,
             "detail": ""}
            for k, t, b in samples
        ],
    )  # fmt: skip
    write_clock(
        run,
        RunClock(
            speedup=60.0,
            run_ms=now,
            wall_ms=int(time.time() * 1000),
            approval_timeout_ms=WINDOW_MS,
            lag_ms=540_000,
            alerts_sent=842,
            alerts_total=3362,
            first_ms=T0,
            last_ms=T0 + 12 * 3_600_000,
        ),
    )
    return run


def _shot(page: Any, tmp_path: Path, name: str) -> None:
    screens = tmp_path / "screens"
    screens.mkdir(exist_ok=True)
    page.screenshot(path=str(screens / f"{name}.png"), full_page=True)


def test_every_page_shows_times_as_dates_never_raw_epoch_milliseconds(
    serve: Callable[..., Served], page: Any, live_dir: Path, tmp_path: Path
) -> None:
    served = serve(source=live_dir, answers=live_dir / "answers.jsonl")
    for name, path in (
        ("overview", "/"),
        ("approvals", "/approvals"),
        ("entities", "/entities"),
        ("entity", "/entities/svc-1"),
        ("dead-letters", "/dead-letters"),
    ):
        page.goto(f"{served.url}{path}")
        _shot(page, tmp_path, name)
        # A payload (in <code>) is shown verbatim, as the pipeline received it.
        text = page.locator("main").inner_text()
        for verbatim in page.locator("main code").all_inner_texts():
            text = text.replace(verbatim, "")
        assert RAW_EPOCH_MS.search(text) is None, (path, RAW_EPOCH_MS.search(text))


def test_the_overview_shows_progress_and_how_far_the_run_is_behind(
    serve: Callable[..., Served], page: Any, live_dir: Path
) -> None:
    served = serve(source=live_dir)
    page.goto(f"{served.url}/")

    progress = page.locator("#progress").inner_text()
    assert "842 of 3,362 alerts fed (25%)" in progress
    assert "3.0 h of 12.0 h" in progress
    assert "Behind: the pipeline is 9.0 min of run time (9 s of yours)" in progress


def test_the_approvals_page_lists_each_outcome_and_counts_the_deadline_in_the_readers_time(
    serve: Callable[..., Served], page: Any, live_dir: Path
) -> None:
    served = serve(source=live_dir, answers=live_dir / "answers.jsonl")
    page.goto(f"{served.url}/approvals")

    outcomes = {
        row.get_attribute("data-intent"): row.locator(".outcome").inner_text()
        for row in page.locator("#settled tbody tr").all()
    }
    assert outcomes == {
        "intent-svc-1": "paged",
        "intent-svc-2": "timed out, escalated",
        "intent-svc-4": "wiped (TTL)",
    }
    # Ten minutes of run time into a two-hour window: 110 minutes left, 1 min 50 s of yours.
    deadline = page.locator("#approval-intent-svc-7 .deadline").inner_text()
    assert re.match(r"in 1 min [45]\d s", deadline), deadline
    assert "of run time" in deadline


def test_the_memory_chart_runs_forward_in_event_time_with_labelled_axes(
    serve: Callable[..., Served], page: Any, live_dir: Path
) -> None:
    served = serve(source=live_dir)
    page.goto(f"{served.url}/entities/svc-1")

    points = page.locator("svg polyline").get_attribute("points") or ""
    xs = [float(pair.split(",")[0]) for pair in points.split()]
    assert len(xs) == 6
    assert xs == sorted(xs)
    ticks = page.locator("svg .tick").all_text_contents()
    assert "event time (UTC)" in ticks
    assert any(label.endswith("KiB") for label in ticks)
    assert "08:01" in ticks  # the first sample's time of day, UTC
    assert "bytes, left axis" in page.locator("figcaption").inner_text()


def test_the_login_page_shows_no_navigation_to_a_visitor(
    serve: Callable[..., Served], page: Any, live_dir: Path, tmp_path: Path
) -> None:
    from beam_agents.console.security import Secret

    served = serve(source=live_dir, token=Secret(TOKEN))
    page.goto(f"{served.url}/approvals")

    assert page.url.endswith("/login") or "/login" in page.url
    _shot(page, tmp_path, "login")
    assert page.locator("header nav").count() == 0
    assert page.get_by_text("Log out").count() == 0
    page.locator("input[name=token]").fill(TOKEN)
    page.locator("main button[type=submit]").click()
    page.wait_for_url(f"{served.url}/")
    assert page.locator("header nav").count() == 1
    assert page.get_by_text("Log out").count() == 1


def test_beams_timestamp_bounds_show_as_the_nearest_dates_in_the_table_and_the_chart(
    serve: Callable[..., Served], page: Any, tmp_path: Path
) -> None:
    """`beam.Create` stamps Beam's minimum timestamp and the TTL fires at the global window's
    end: neither is a year a `datetime` holds, so they show as 0001-01-01 and 9999-12-31."""
    run = tmp_path / "bounds"
    run.mkdir()
    minimum, window_end = -9_223_372_036_854_775, 9_223_371_950_454_775
    samples = [
        ("activated", minimum, 0),
        ("completed", minimum, 2_400),
        ("ttl_expired", window_end, 0),
    ]
    write_lines(
        run / "lifecycle.jsonl",
        [
            {"entity": "db-3", "kind": k, "event_time_ms": t, "seq": 1, "memory_bytes": b}
            for k, t, b in samples
        ],
    )
    served = serve(source=run)
    page.goto(f"{served.url}/entities/db-3")

    times = page.locator("#lifecycle tbody tr td:first-child").all_inner_texts()
    assert times == ["0001-01-01 00:00:00 UTC"] * 2 + ["9999-12-31 23:59:59 UTC"]
    caption = page.locator("figcaption").inner_text()
    # The axis spans the dates it shows, not Beam's 580,000 years.
    assert "0001-01-01 00:00:00 UTC to 9999-12-31 23:59:59 UTC (5258964960.0 minutes)" in caption
    ticks = page.locator("svg .tick").all_text_contents()
    x_ticks = ticks[-6:-1]  # after the bytes axis's five, before the axis's name
    assert (x_ticks[0], x_ticks[-1], ticks[-1]) == ("00:00", "23:59", "event time (UTC)")
    assert all(re.fullmatch(r"\d\d:\d\d", label) for label in x_ticks), x_ticks
