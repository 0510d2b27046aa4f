"""The demo command as a user runs it, on a reduced dataset, and the report it writes."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageStat

from app.triage.data import DATA_DIR, FLAPPING_SERVICE, RECURRING_OUTAGE_SERVICE, read_labels
from app.triage.decision import FOLLOW_UP_OUTCOMES
from app.triage.report import CHART_IDS
from beam_agents.memory.stores import open_store
from beam_agents.testing.pytest_plugin import service_unavailable
from tests.app.triage_replays import SCENARIOS, slice_of
from tests.eval.test_report_browser import _open, browser

__all__ = ["browser"]  # the Chromium fixture, shared with the eval report's own tests

pytestmark = pytest.mark.pipeline

ROOT = Path(__file__).parents[2]
DEMO_SERVICES = (*SCENARIOS, FLAPPING_SERVICE, RECURRING_OUTAGE_SERVICE)
"""The scripted scenarios, and the two services whose history recall changes decisions of."""
DEMO_HOURS = 6.5
FILES = (
    "outputs.jsonl",
    "intents.jsonl",
    "errors.jsonl",
    "lifecycle.jsonl",
    "deliveries.jsonl",
    "summary.json",
)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`python -m app.triage demo --out TMP` on the scripted services; returns (out, stdout)."""
    out = tmp_path_factory.mktemp("demo") / "triage"
    done = subprocess.run(
        [
            sys.executable, "-m", "app.triage", "demo", "--out", str(out),
            "--services", ",".join(DEMO_SERVICES), "--hours", str(DEMO_HOURS),
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done.stdout


def test_the_demo_writes_every_file_with_the_counts_its_data_guarantees(
    demo: tuple[Path, str],
) -> None:
    out, stdout = demo
    summary = json.loads((out / "summary.json").read_text())

    for name in (*FILES, "report.html", "longterm.sqlite"):
        assert (out / name).stat().st_size > 0, name
    for key in (
        "events", "activations", "model_calls", "cache_hits", "ttl_expiries", "expire_flushes",
        "longterm_rows", "suspensions", "approved", "denied", "timed_out",
    ):  # fmt: skip
        assert summary[key] > 0, key
    assert summary["events"] == len(slice_of(DEMO_SERVICES, DEMO_HOURS)[0])
    assert summary["intents_by_tool"].keys() >= {"approval", "page_oncall", "escalate"}
    assert summary["errors_by_reason"]["suspension_timeout"] == summary["timed_out"]
    assert set(summary["outcomes"]) == {"P1", "P2", "P3", "noise"}
    assert summary["longterm_rows_by_prefix"].keys() == {"case/", "history/", "profile"}
    lines = stdout.splitlines()
    assert "inspect sqlite+aiosqlite:///" in lines[-4]
    assert (
        lines[-1]
        == f"dead letters: {summary['errors']} (suspension_timeout {summary['timed_out']})"
    )


def test_the_demo_reports_recalls_and_the_decisions_they_changed(
    demo: tuple[Path, str],
) -> None:
    out, stdout = demo
    summary = json.loads((out / "summary.json").read_text())
    report = (out / "report.html").read_text()
    labelled = {x.alert_id: x for x in read_labels(DATA_DIR / "labels.jsonl")}

    assert summary["alerts_with_history"] > 0
    assert summary["recalled_incidents"] >= summary["alerts_with_history"]
    assert summary["decisions_changed_by_recall"] == len(labelled)
    assert summary["escalated_by_recall"] + summary["downgraded_by_recall"] == len(labelled)
    examples = summary["recall_examples"]
    assert {e["alert_id"] for e in examples} == set(labelled)
    for example in examples:
        assert example["class"] == labelled[example["alert_id"]].expected_class
        assert example["recalled"], example
        assert example["alert_id"] in report  # listed in the report's examples table
    assert 'id="recall-examples"' in report
    assert f"Decisions changed by recall ({len(labelled)} in all" in report
    changed_line = next(line for line in stdout.splitlines() if "changed by recall" in line)
    assert changed_line.split()[-1] == str(len(labelled))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_answer_of_the_slice_resumes_the_approval_it_names(demo: tuple[Path, str]) -> None:
    """The bundled answers count the rechecks that ran before their alert, as the runtime does."""
    out, _ = demo
    summary = json.loads((out / "summary.json").read_text())
    _, answers = slice_of(DEMO_SERVICES, DEMO_HOURS)

    assert summary["resumptions"] == len(answers) > 0
    assert "orphaned_answer" not in summary["errors_by_reason"]
    assert summary["follow_ups_fired"] > 0  # rechecks did run, and shift the seqs after them


def test_the_summary_counts_follow_ups_scheduled_fired_cancelled_and_their_escalations(
    demo: tuple[Path, str],
) -> None:
    out, stdout = demo
    summary = json.loads((out / "summary.json").read_text())
    kinds = Counter(r["kind"] for r in _lines(out / "lifecycle.jsonl"))
    outputs = _lines(out / "outputs.jsonl")
    escalated = [o for o in outputs if o["decision"] == "escalated"]
    by_agent = [i for i in _lines(out / "intents.jsonl") if i["tool"] == "escalate" and i["seq"]]

    assert summary["follow_ups_scheduled"] == kinds["wake_scheduled"] > 0
    assert summary["follow_ups_cancelled"] == kinds["wake_cancelled"] > 0
    assert summary["follow_ups_fired"] == kinds["wake_fired"] > 0
    assert summary["escalated_by_follow_up"] == len(escalated) == len(by_agent) > 0
    assert {(i["args"]["alert_id"], i["seq"]) for i in by_agent} == {
        (o["alert_id"], o["seq"]) for o in escalated
    }
    assert summary["intents_by_tool"]["escalate"] == summary["timed_out"] + len(escalated)
    alerts = [o for o in outputs if o["decision"] not in FOLLOW_UP_OUTCOMES]
    assert sum(summary["outcomes"].values()) == len(alerts)  # a follow-up is no alert
    columns = [re.split(r"\s{2,}", line.strip()) for line in stdout.splitlines()]
    printed = {cells[0]: cells[-1] for cells in columns if len(cells) == 2}
    assert (
        printed["follow-ups scheduled (pages, tickets)"] == f"{summary['follow_ups_scheduled']:,}"
    )
    assert printed["cancelled (a later alert settled it)"] == f"{summary['follow_ups_cancelled']:,}"
    assert printed["fired (rechecked when due)"] == f"{summary['follow_ups_fired']:,}"
    assert printed["escalated (still open)"] == f"{summary['escalated_by_follow_up']:,}"


def test_each_page_ticket_and_escalation_is_delivered_once_despite_failed_bundles(
    demo: tuple[Path, str],
) -> None:
    out, _ = demo
    summary = json.loads((out / "summary.json").read_text())
    deliveries = [json.loads(line) for line in (out / "deliveries.jsonl").read_text().splitlines()]
    by_tool = summary["intents_by_tool"]
    must_deliver = sum(by_tool.get(t, 0) for t in ("page_oncall", "open_ticket", "escalate"))

    # The injected failures, each retried; plus, when a tool call took long enough to park
    # (the machine's load decides), the re-run's replay of it: never a second delivery.
    assert summary["tool_retries"] >= 3
    assert summary["duplicate_deliveries"] == 0
    assert summary["deliveries"] == len(deliveries) == must_deliver
    assert len({d["idempotency_key"] for d in deliveries}) == must_deliver
    assert Counter(d["tool"] for d in deliveries) == {
        t: by_tool[t] for t in ("page_oncall", "open_ticket", "escalate") if t in by_tool
    }
    assert "delivered twice" in (out / "report.html").read_text()


def test_the_ticket_id_the_tracker_answered_is_saved_in_the_case(demo: tuple[Path, str]) -> None:
    out, _ = demo
    answered = {
        d["alert_id"]: d["answered"]
        for d in map(json.loads, (out / "deliveries.jsonl").read_text().splitlines())
        if d["tool"] == "open_ticket"
    }
    assert answered

    async def cases() -> dict[str, Any]:
        async with open_store(f"sqlite+aiosqlite:///{out / 'longterm.sqlite'}") as store:
            return {
                record.key.removeprefix("case/"): json.loads(record.value)
                async for _, record in store.scan()
                if record.key.startswith("case/")
            }

    found = asyncio.run(cases())
    saved = {alert: found[alert].get("delivered") for alert in answered}
    assert saved == answered
    assert all(t.startswith("TKT-") for t in saved.values())


def test_beam_agents_inspect_lists_the_rows_the_demo_stored(demo: tuple[Path, str]) -> None:
    out, _ = demo
    uri = f"sqlite+aiosqlite:///{out / 'longterm.sqlite'}"

    done = subprocess.run(
        [sys.executable, "-c", "import sys; from beam_agents.cli import main; sys.exit(main())",
         "inspect", uri, "--entity", "svc-000"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert "case/svc-000-0001" in done.stdout
    assert "profile" in done.stdout
    assert "working_memory" in done.stdout


class _Charts(HTMLParser):
    """Collects each chart figure's SVG title and text, and any external reference."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[str, list[str]] = {}
        self.external: list[str] = []
        self._figure: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "figure" and values.get("class") == "chart":
            self._figure = values.get("id") or ""
            self.figures[self._figure] = []
        for name in ("src", "href"):
            if values.get(name):
                self.external.append(f"{tag} {name}={values[name]}")
        if tag == "script":
            self.external.append("script")

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self._figure = None

    def handle_data(self, data: str) -> None:
        if self._figure is not None and data.strip():
            self.figures[self._figure].append(data.strip())


def test_the_report_has_every_chart_with_a_title_and_labelled_axes(demo: tuple[Path, str]) -> None:
    out, _ = demo
    charts = _Charts()
    charts.feed((out / "report.html").read_text())

    assert list(charts.figures) == list(CHART_IDS)
    assert charts.external == []  # self-contained: opens offline
    for chart_id, texts in charts.figures.items():
        joined = " ".join(texts)
        assert texts[0], chart_id  # the SVG <title>
        assert "(" in joined, f"{chart_id} has no axis unit"
    memory = " ".join(charts.figures["chart-memory"])
    assert "memory (KiB)" in memory
    assert "event time (hours since the first alert)" in memory


def test_the_report_renders_in_headless_chromium_without_console_errors(
    demo: tuple[Path, str], tmp_path: Path
) -> None:
    if shutil.which("chromium") is None:
        service_unavailable("needs chromium (apt-get install -y chromium)")
    out, _ = demo
    page = (out / "report.html").resolve().as_uri()
    shot = tmp_path / "report.png"
    common = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
              f"--user-data-dir={tmp_path / 'profile'}"]  # fmt: skip

    rendered = subprocess.run(
        ["chromium", *common, "--window-size=1280,2400", f"--screenshot={shot}", page],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    logged = subprocess.run(
        ["chromium", *common, "--enable-logging=stderr", "--v=0", "--dump-dom", page],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip

    assert rendered.returncode == 0, rendered.stderr[-2000:]
    with Image.open(shot) as image:
        gray = image.convert("L")
        assert gray.size == (1280, 2400)
        assert ImageStat.Stat(gray).stddev[0] > 10, "the screenshot is blank"
        assert len(gray.getcolors(maxcolors=1 << 16) or range(1 << 16)) > 50
    assert "chart-memory" in logged.stdout  # the page loaded and rendered its DOM
    console = [line for line in logged.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console


# Last in the module: Playwright keeps its event loop on this thread until the module ends,
# and the tests above read the store with asyncio.run.
def test_the_report_draws_the_follow_ups_and_their_escalations_in_chromium(
    demo: tuple[Path, str], browser: Any
) -> None:
    out, _ = demo
    summary = json.loads((out / "summary.json").read_text())

    context, page, blocked = _open(browser, (out / "report.html").resolve().as_uri())
    try:
        bars = page.locator("#chart-follow-ups rect > title").all_text_contents()
        card = page.locator('.kpi[title="summary.json: escalated_by_follow_up"] b').inner_text()
        assert bars == [
            f"scheduled: {summary['follow_ups_scheduled']:,}",
            f"cancelled: a later alert settled it: {summary['follow_ups_cancelled']:,}",
            f"fired: rechecked when due: {summary['follow_ups_fired']:,}",
            f"escalated: still open: {summary['escalated_by_follow_up']:,}",
        ]
        assert card == f"{summary['escalated_by_follow_up']:,}"
        assert (
            page.locator("#chart-follow-ups figcaption")
            .inner_text()
            .startswith("Each page or ticket schedules a recheck")
        )
        assert blocked == []
        assert page.errors == []
    finally:
        context.close()
