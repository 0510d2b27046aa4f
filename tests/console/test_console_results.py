"""An entity's typed results in Chromium: one row per field, name and value, newest first."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.console.conftest import Served, write_lines

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _decision(event_id: str, label: str, **more: Any) -> dict[str, Any]:
    """A typed decision as a baked project's pipeline writes it on the outputs."""
    return {"entity": "acct-3", "event_id": event_id, "label": label, **more}


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    write_lines(
        run / "outputs.jsonl",
        [
            _decision("ev-1", "reply", approved=None),
            {"entity": "acct-4", "event_id": "ev-2", "label": "ignore"},
            _decision(
                "ev-3",
                "act",
                approved=True,
                priority=1,
                recall={"changed": True, "from": {"label": "reply"}},
                tags=["payments", "p1"],
            ),
        ],
    )
    return run


def _rows(table: Any) -> list[str]:
    return [row.replace("\t", ": ") for row in table.locator("tr").all_inner_texts()]


def test_an_entitys_typed_results_show_as_name_value_rows_newest_first(
    serve: Callable[..., Served], page: Any, run_dir: Path, tmp_path: Path
) -> None:
    served = serve(source=run_dir)

    page.goto(f"{served.url}/entities")
    page.get_by_role("link", name="acct-3").click()
    page.wait_for_url(f"{served.url}/entities/acct-3")

    assert page.get_by_role("heading", name="Results (2)").count() == 1
    newest, oldest = page.locator("#results table.result").all()
    # In the order the line holds them (the fixture writes its keys sorted).
    assert _rows(newest) == [
        "approved: true",
        "entity: acct-3",
        "event_id: ev-3",
        "label: act",
        "priority: 1",
        "recall.changed: true",
        "recall.from.label: reply",
        'tags: ["payments", "p1"]',
    ]
    assert _rows(oldest) == ["approved: null", "entity: acct-3", "event_id: ev-1", "label: reply"]
    assert newest.locator("code.value").all_inner_texts() == ['["payments", "p1"]']
    page.screenshot(path=str(tmp_path / "entity-results.png"), full_page=True)


def test_an_entity_with_results_but_no_lifecycle_records_is_listed(
    serve: Callable[..., Served], page: Any, run_dir: Path
) -> None:
    """A baked project's pipeline writes no lifecycle records: its entities are still reachable."""
    served = serve(source=run_dir)

    page.goto(f"{served.url}/entities")

    assert page.get_by_role("link").filter(has_text="acct").all_inner_texts() == [
        "acct-3",
        "acct-4",
    ]


def test_an_entity_without_results_says_so(
    serve: Callable[..., Served], page: Any, run_dir: Path
) -> None:
    served = serve(source=run_dir)

    page.goto(f"{served.url}/entities/acct-9")

    assert page.locator("#results").inner_text() == "No result yet."
