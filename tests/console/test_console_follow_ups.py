"""An entity's follow-ups in the console, read from the records a real pipeline emitted.

The run (`tests.console.follow_up_run`) schedules, cancels, replaces and
runs wakes; its lifecycle records are written as the triage application
writes them, part of them first (the run part-way), the rest later, and
the pages are read in Chromium as a person reads them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from beam_agents import LifecycleEvent
from beam_agents.console import activity as activity_module
from beam_agents.console.activity import RunActivity
from tests.console.conftest import Served
from tests.console.follow_up_run import T0, after, follow_up_records, through, write_lifecycle
from tests.console.test_console_pages import RAW_EPOCH_MS

pytestmark = [pytest.mark.pipeline, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture(scope="module")
def records() -> list[LifecycleEvent]:
    return follow_up_records()


def _rows(page: Any, table: str) -> list[list[str]]:
    cells = page.locator(f"#{table} tbody tr").evaluate_all(
        "rows => rows.map(r => Array.from(r.cells, c => c.innerText))"
    )
    return [list(row) for row in cells]


def _figure(page: Any, name: str) -> str:
    kpi = page.locator("#figures .kpi").filter(has=page.get_by_text(name, exact=True))
    return str(kpi.locator("b").inner_text())


def test_an_entitys_page_lists_its_pending_follow_ups_with_due_time_and_clock(
    records: list[LifecycleEvent], serve: Callable[..., Served], page: Any, tmp_path: Path
) -> None:
    write_lifecycle(tmp_path, through(records, 2))  # after the cancel and the replacement
    served = serve(source=tmp_path)

    page.goto(f"{served.url}/entities/svc-1")

    assert page.get_by_role("heading", name="Follow-ups pending (3)").is_visible()
    first, later = "2026-11-30 08:01:26 UTC", "2026-11-30 08:11:26 UTC"
    assert _rows(page, "follow-ups") == [
        ["page-again", "2026-11-30 08:16:26 UTC", "processing time", first, "1"],
        ["recheck", "2026-11-30 08:31:26 UTC", "event time", first, "1"],
        ["close", "2026-12-02 08:11:26 UTC", "event time", later, "2"],
    ]
    history = _rows(page, "follow-up-history")
    assert [(row[2], row[3]) for row in history] == [
        ("scheduled", "close"),
        ("scheduled", "escalate"),
        ("scheduled", "page-again"),
        ("scheduled", "recheck"),
        ("cancelled", "escalate"),
        ("scheduled", "close"),
    ]
    assert history[4][4:] == ["", ""]  # a cancel names only the wake
    page.screenshot(path=str(tmp_path / "entity-follow-ups.png"), full_page=True)


def test_the_timeline_shows_a_wakes_due_time_as_a_date_never_raw_milliseconds(
    records: list[LifecycleEvent], serve: Callable[..., Served], page: Any, tmp_path: Path
) -> None:
    write_lifecycle(tmp_path, through(records, 2))
    served = serve(source=tmp_path)

    page.goto(f"{served.url}/entities/svc-1")

    assert RAW_EPOCH_MS.search(page.locator("main").inner_text()) is None
    details = [row[4] for row in _rows(page, "lifecycle") if row[2].startswith("wake_")]
    assert details[-2:] == ["escalate", "close, due 2026-12-02 08:11:26 UTC (event time)"]


def test_a_follow_up_leaves_the_pending_list_once_its_record_says_it_ran(
    records: list[LifecycleEvent], serve: Callable[..., Served], page: Any, tmp_path: Path
) -> None:
    write_lifecycle(tmp_path, through(records, 3))  # recheck ran at seq 3
    served = serve(source=tmp_path)
    page.goto(f"{served.url}/entities/svc-1")
    assert [row[0] for row in _rows(page, "follow-ups")] == ["page-again", "close"]

    write_lifecycle(tmp_path, after(records, 3))  # the run went on: every wake has run
    page.reload()

    assert page.locator("#follow-ups").count() == 0
    assert page.locator("#no-follow-ups").is_visible()
    fired = [row[3] for row in _rows(page, "follow-up-history") if row[2] == "fired"]
    assert fired == ["recheck", "page-again", "close"]


def test_the_overview_counts_follow_ups_pending_scheduled_fired_and_cancelled(
    records: list[LifecycleEvent], serve: Callable[..., Served], page: Any, tmp_path: Path
) -> None:
    write_lifecycle(tmp_path, through(records, 2))
    served = serve(source=tmp_path)
    page.goto(served.url)
    part_way = {n: _figure(page, f"follow-ups {n}") for n in ("pending", "scheduled", "fired")}

    write_lifecycle(tmp_path, after(records, 2))
    page.reload()

    assert part_way == {"pending": "4", "scheduled": "6", "fired": "0"}  # svc-2's one too
    assert _figure(page, "follow-ups pending") == "0"
    assert _figure(page, "follow-ups scheduled") == "6"
    assert _figure(page, "follow-ups fired") == "4"
    assert _figure(page, "follow-ups cancelled") == "1"


def test_a_follow_up_scheduled_before_the_record_window_still_shows_pending(
    records: list[LifecycleEvent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A close-after-two-days wake outlives the window of records the console holds."""
    monkeypatch.setattr(activity_module, "RECORD_WINDOW", 5)
    activity = RunActivity(tmp_path, approval_timeout_ms=1000)
    write_lifecycle(tmp_path, through(records, 2))
    activity.refresh()
    quiet = [r for r in records if r.kind in ("activated", "completed")]
    write_lifecycle(
        tmp_path, [LifecycleEvent(b"svc-9", r.kind, r.event_time_ms, 1, 0) for r in quiet]
    )
    activity.refresh()

    assert activity.lifecycle_of("svc-1") == []
    assert [w.name for w in activity.pending_wakes_of("svc-1")] == [
        "page-again",
        "recheck",
        "close",
    ]


def test_a_rewritten_lifecycle_file_forgets_the_last_runs_follow_ups(
    records: list[LifecycleEvent], tmp_path: Path
) -> None:
    activity = RunActivity(tmp_path, approval_timeout_ms=1000)
    write_lifecycle(tmp_path, through(records, 2))
    activity.refresh()
    (tmp_path / "lifecycle.jsonl").write_bytes(b"")
    write_lifecycle(
        tmp_path, through(records, 1)[:2]
    )  # a new run: its first activation, no wake yet

    activity.refresh()

    assert activity.pending_wakes_of("svc-1") == []
    assert activity.figures()["figures"]["follow-ups scheduled"] == 0


def test_an_unreadable_wake_record_is_skipped_and_the_rest_still_read(
    records: list[LifecycleEvent], tmp_path: Path
) -> None:
    broken = LifecycleEvent(b"svc-1", "wake_scheduled", T0, 1, 0, "not json")
    write_lifecycle(tmp_path, [broken, *through(records, 2)])
    activity = RunActivity(tmp_path, approval_timeout_ms=1000)

    activity.refresh()

    assert [w.name for w in activity.pending_wakes_of("svc-1")] == [
        "page-again",
        "recheck",
        "close",
    ]
    assert len(activity.wake_history_of("svc-1")) == 6
    assert activity._follow_ups.skipped == 1
