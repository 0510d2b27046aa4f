"""report.html as a person reads it: in Chromium, offline, with and without JavaScript."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from beam_agents.eval.report import render_report
from beam_agents.testing.pytest_plugin import service_unavailable

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CHROMIUM = Path("/usr/bin/chromium")
HOSTILE = '<script>window.__xss = 1</script><img src="http://example.com/x.png">'


def _metric(mean: float, low: float, high: float, n: int) -> dict[str, Any]:
    return {"mean": mean, "low": low, "high": high, "n": n}


def _output(alert: str, label: str, reason: str) -> dict[str, Any]:
    return {"alert_id": alert, "class": label, "reason": reason}


SUMMARY: dict[str, Any] = {
    "events": 412,
    "baseline": "no-recall",
    "decision_fields": ["class"],
    "candidates": [
        {
            "name": "no-recall",
            "metrics": {"class": _metric(0.9927, 0.9830, 1.0, 412)},
            "tokens": {"input": 123456, "output": 7890},
            "cost_usd": 0.0123,
            "model_time_ms": 4321.5,
            "model_calls": 430,
            "recorded": 430,
            "dead_letters": {},
            "confusion": {
                "field": "class",
                "labels": ["P1", "P2", "P3", "noise"],
                "matrix": [[7, 0, 0, 0], [1, 100, 0, 0], [2, 0, 130, 0], [0, 0, 0, 172]],
            },
        },
        {
            "name": "recall",
            "metrics": {"class": _metric(1.0, 1.0, 1.0, 412)},
            "tokens": {"input": 150000, "output": 8100},
            "cost_usd": 0.0151,
            "model_time_ms": 5012.25,
            "model_calls": 445,
            "recorded": 445,
            "dead_letters": {"model_error": 2},
            "confusion": {
                "field": "class",
                "labels": ["P1", "P2", "P3", "noise"],
                "matrix": [[8, 0, 0, 0], [0, 101, 0, 0], [0, 0, 132, 0], [0, 0, 0, 172]],
            },
        },
    ],
    "comparisons": [
        {
            "baseline": "no-recall",
            "candidate": "recall",
            "deltas": {"class": {"delta": 0.0073, "low": 0.0024, "high": 0.0146}},
            "decisions_changed": 3,
            "disagreements": [
                {
                    "event_id": "ev-hostile",
                    "key": "svc-666",
                    "differs": ["dead_letter", "output"],
                    "decision_changed": True,
                    "outputs": {"no-recall": HOSTILE, "recall": None},
                    "scores": {"no-recall": {"class": None}, "recall": {"class": None}},
                    "dead_letters": {"no-recall": None, "recall": "model_error"},
                },
                {
                    "event_id": "ev-flap-1",
                    "key": "svc-004",
                    "differs": ["output.class", "output.reason"],
                    "decision_changed": True,
                    "outputs": {
                        "no-recall": _output("svc-004-0004", "P1", "matched 'error rate'"),
                        "recall": _output("svc-004-0004", "P3", "known flap: case/svc-004-0002"),
                    },
                    "scores": {"no-recall": {"class": 0.0}, "recall": {"class": 1.0}},
                    "dead_letters": {"no-recall": None, "recall": None},
                },
                {
                    "event_id": "ev-lag-1",
                    "key": "svc-005",
                    "differs": ["intents", "output.class", "output.reason"],
                    "decision_changed": True,
                    "outputs": {
                        "no-recall": _output("svc-005-0006", "P2", "matched 'replication lag'"),
                        "recall": _output("svc-005-0006", "P1", "replication lag caused it"),
                    },
                    "scores": {"no-recall": {"class": 0.0}, "recall": {"class": 1.0}},
                    "dead_letters": {"no-recall": None, "recall": None},
                },
            ],
        }
    ],
    "gates": [
        {"expr": "class>=0.95", "value": 1.0, "passed": True},
        {"expr": "dead_letters<=0", "value": 2, "passed": False},
    ],
    "passed": False,
}

RESULTS: list[dict[str, Any]] = [
    {
        "candidate": "recall",
        "event_id": "ev-lag-1",
        "key": "svc-005",
        "intents": [{"tool": "page_oncall", "args": {}}],
    },
    {
        "candidate": "no-recall",
        "event_id": "ev-lag-1",
        "key": "svc-005",
        "intents": [{"tool": "open_ticket", "args": {}}],
    },
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, through Playwright (never a browser download)."""
    if not CHROMIUM.exists():
        service_unavailable(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        yield browser
        browser.close()


@pytest.fixture
def report(tmp_path: Path) -> str:
    path = tmp_path / "report.html"
    path.write_text(render_report(SUMMARY, RESULTS), encoding="utf-8")
    return path.resolve().as_uri()


def _open(browser: Any, url: str, *, javascript: bool = True) -> tuple[Any, Any, list[str]]:
    """The page at `url`, with every request that is not file:// blocked and recorded."""
    context = browser.new_context(java_script_enabled=javascript)
    blocked: list[str] = []

    def route(route: Any) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    context.route("**/*", route)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url)
    page.wait_for_load_state("load")
    page.errors, page.blocked = errors, blocked
    return context, page, blocked


def test_the_report_shows_the_summarys_numbers(browser: Any, report: str) -> None:
    context, page, _ = _open(browser, report)
    try:
        cell = page.locator('#metrics td[data-candidate="no-recall"][data-metric="class"]')
        assert cell.inner_text().split() == ["0.993", "[0.983,", "1.000]", "n=412"]
        delta = page.locator('#comparison td[data-candidate="recall"][data-delta="class"]')
        assert "+0.007" in delta.inner_text()
        assert "[0.002, 0.015]" in delta.inner_text()
        assert "better" in (delta.get_attribute("class") or "")
        assert page.locator("#events").inner_text() == "412"
        usage = page.locator('#usage td[data-candidate="recall"][data-usage="input_tokens"]')
        assert usage.inner_text() == "150,000"
        cost = page.locator('#usage td[data-candidate="recall"][data-usage="cost_usd"]')
        assert cost.inner_text() == "0.0151"
        time = page.locator('#usage td[data-candidate="no-recall"][data-usage="model_time_ms"]')
        assert time.inner_text() == "4,321.5"
        dead = page.locator('#dead-letters td[data-candidate="recall"][data-reason="model_error"]')
        assert dead.inner_text() == "2"
        gates = page.locator("#gates tbody tr")
        assert [r.inner_text().split("\t")[-1].strip() for r in gates.all()] == ["pass", "FAIL"]
        assert "FAIL" in page.locator("h1").inner_text()
        confusion = page.locator('table.confusion[data-candidate="no-recall"] tbody tr')
        assert confusion.nth(2).inner_text().split() == ["P3", "2", "0", "130", "0"]
        assert page.errors == []
    finally:
        context.close()


def test_a_disagreement_shows_each_candidates_output_reason_and_intents(
    browser: Any, report: str
) -> None:
    context, page, _ = _open(browser, report)
    try:
        row = page.locator('tr.disagreement[data-event="ev-lag-1"]')
        before = row.locator('td[data-candidate="no-recall"]').inner_text()
        after = row.locator('td[data-candidate="recall"]').inner_text()
        assert "P2" in before
        assert "matched 'replication lag'" in before
        assert "open_ticket" in before
        assert "P1" in after
        assert "replication lag caused it" in after
        assert "page_oncall" in after
        changed = row.locator("tr.field-diff th").all_inner_texts()
        assert changed == ["class", "reason", "class", "reason"]  # alert_id is the same
    finally:
        context.close()


def test_the_filter_keeps_only_the_matching_disagreements(browser: Any, report: str) -> None:
    context, page, _ = _open(browser, report)
    try:
        rows = page.locator("tr.disagreement")
        # Those whose scores differ first: the hostile row (None on both sides) came first.
        assert [r.get_attribute("data-event") for r in rows.all()] == [
            "ev-flap-1",
            "ev-lag-1",
            "ev-hostile",
        ]
        page.fill("#filter", "svc-004")
        assert [r.get_attribute("data-event") for r in rows.all() if r.is_visible()] == [
            "ev-flap-1"
        ]
        assert page.locator("#filter-count").inner_text() == "1 of 3 shown"
        page.fill("#filter", "P1 lag")
        assert [r.get_attribute("data-event") for r in rows.all() if r.is_visible()] == ["ev-lag-1"]
        page.fill("#filter", "")
        assert sum(r.is_visible() for r in rows.all()) == 3
        page.check("#filter-scored")  # the hostile row scored None on both sides: hidden
        assert [r.get_attribute("data-event") for r in rows.all() if r.is_visible()] == [
            "ev-flap-1",
            "ev-lag-1",
        ]
        assert page.locator("#filter-count").inner_text() == "2 of 3 shown"
    finally:
        context.close()


def test_the_report_makes_no_external_request(browser: Any, report: str) -> None:
    """Agent text is escaped: an <img> with a remote src inside an output fetches nothing."""
    context, page, blocked = _open(browser, report)
    try:
        page.wait_for_load_state("networkidle")
        assert blocked == []
        assert page.evaluate("window.__xss") is None
        assert HOSTILE in page.locator('tr[data-event="ev-hostile"]').inner_text()
    finally:
        context.close()


def test_the_report_reads_with_javascript_off(browser: Any, report: str) -> None:
    """Without JS every table and disagreement shows, and the dead filter box does not."""
    context, page, blocked = _open(browser, report, javascript=False)
    try:
        for table in ("#gates", "#metrics", "#comparison", "#usage", "#dead-letters"):
            assert page.locator(table).is_visible(), table
        rows = page.locator("tr.disagreement")
        assert sum(r.is_visible() for r in rows.all()) == 3
        assert not page.locator("#filter").is_visible()
        cell = page.locator('#metrics td[data-candidate="recall"][data-metric="class"]')
        assert cell.locator(".mean").inner_text() == "1.000"
        assert blocked == []
    finally:
        context.close()


REWORDED: dict[str, Any] = {
    "event_id": "ev-reworded",
    "key": "svc-007",
    "differs": ["output.reason", "output.recalled"],
    "decision_changed": False,
    "outputs": {
        "no-recall": _output("svc-007-0001", "P2", "matched 'disk'"),
        "recall": {**_output("svc-007-0001", "P2", "matched 'disk', seen before"), "recalled": 1},
    },
    "scores": {"no-recall": {"class": 1.0}, "recall": {"class": 1.0}},
    "dead_letters": {"no-recall": None, "recall": None},
}
"""An event both candidates decided alike (P2) in other words: a difference, not a change."""


def test_the_header_counts_changed_decisions_apart_from_outputs_that_differ_elsewhere(
    browser: Any, tmp_path: Path
) -> None:
    summary = copy.deepcopy(SUMMARY)
    summary["comparisons"][0]["disagreements"].append(REWORDED)
    path = tmp_path / "report.html"
    path.write_text(render_report(summary, RESULTS), encoding="utf-8")

    context, page, _ = _open(browser, path.resolve().as_uri())
    try:
        lede = " ".join(page.locator(".lede").inner_text().split())
        assert "3 decisions changed (a different class, intents or dead letter)" in lede
        assert "1 other event differs only in reason, recalled" in lede
        assert "disagreements" not in lede
        counts = page.locator('#comparison td[data-candidate="recall"][data-count]')
        assert counts.all_inner_texts() == ["3", "4"]
        reworded = page.locator('tr.disagreement[data-event="ev-reworded"]')
        assert "same decision: reason, recalled differ" in reworded.inner_text()
        lag = page.locator('tr.disagreement[data-event="ev-lag-1"]')
        assert "decision changed: intents, class, reason differ" in lag.inner_text()
        rows = page.locator("tr.disagreement")
        page.check("#filter-decisions")
        assert [r.get_attribute("data-event") for r in rows.all() if r.is_visible()] == [
            "ev-flap-1",
            "ev-lag-1",
            "ev-hostile",
        ]
        assert page.locator("#filter-count").inner_text() == "3 of 4 shown"
        assert page.errors == []
    finally:
        context.close()
