"""End to end: a live triage run, its console, and a person answering in Chromium."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.console.conftest import Served, write_lines

pytestmark = [pytest.mark.pipeline, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

REPO = Path(__file__).resolve().parents[2]
T0 = 1_796_025_686_000
ALERTS = [
    {"alert_id": "svc-1-0001", "message": "checkout: service unreachable", "service": "svc-1"},
    {"alert_id": "svc-2-0001", "message": "orders: outage in eu-west", "service": "svc-2"},
    {"alert_id": "svc-3-0001", "message": "search: disk usage at 91%", "service": "svc-3"},
]


def _records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _wait_for(what: str, found: Callable[[], Any], timeout_s: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


@pytest.fixture
def live_run(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    alerts = tmp_path / "alerts.jsonl"
    write_lines(
        alerts,
        [
            {**a, "event_time_ms": T0 + 5_000 * i, "severity_hint": "critical"}
            for i, a in enumerate(ALERTS)
        ],
    )
    out = tmp_path / "live"
    command = [sys.executable, "-m", "app.triage", "live", "--input", str(alerts)]
    process = subprocess.Popen(
        [*command, "--out", str(out), "--drain-s", "600"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "live.log").open("wb"),
    )
    try:
        yield out, process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _approval_ids(intents: Path) -> dict[str, str]:
    return {i["service"]: i["intent_id"] for i in _records(intents) if i.get("awaits_answer")}


def _answer(page: Any, intent_id: str, decision: str, reason: str) -> None:
    card = page.locator(f"#approval-{intent_id}")
    card.locator("input[name=approver]").fill("Ada on call")
    card.locator("input[name=reason]").fill(reason)
    card.locator(f"button[value={decision}]").click()


def test_an_approved_p1_pages_and_a_denied_one_does_not(
    live_run: tuple[Path, subprocess.Popen[bytes]],
    serve: Callable[..., Served],
    page: Any,
    tmp_path: Path,
) -> None:
    out, process = live_run
    ids = _wait_for("two pending approvals", lambda: len(_approval_ids(out / "intents.jsonl")) == 2)
    ids = _approval_ids(out / "intents.jsonl")
    served = serve(source=out, answers=out / "answers.jsonl")
    page.goto(f"{served.url}/approvals")
    stale = page.context.new_page()
    stale.goto(f"{served.url}/approvals")
    page.screenshot(path=str(tmp_path / "live-approvals.png"), full_page=True)

    _answer(page, ids["svc-1"], "approve", "checkout is down")
    page.wait_for_url(f"{served.url}/approvals?answered=*")
    _answer(page, ids["svc-2"], "deny", "maintenance window")
    page.wait_for_url(f"{served.url}/approvals?answered=*")
    _answer(stale, ids["svc-1"], "deny", "second opinion")

    assert "already answered" in stale.locator("#error").inner_text()
    decisions = _wait_for(
        "both decisions",
        lambda: (
            {
                o["alert_id"]: o["decision"]
                for o in _records(out / "outputs.jsonl")
                if o["service"] in ("svc-1", "svc-2")
            }
            if len([o for o in _records(out / "outputs.jsonl") if o["class"] == "P1"]) == 2
            else None
        ),
    )
    assert decisions == {"svc-1-0001": "paged", "svc-2-0001": "denied"}
    pages = [
        i["args"]["alert_id"] for i in _records(out / "intents.jsonl") if i["tool"] == "page_oncall"
    ]
    assert pages == ["svc-1-0001"]
    process.send_signal(signal.SIGTERM)  # the feed ends, the pipeline drains and summarizes
    assert process.wait(timeout=120) == 0
    assert json.loads((out / "summary.json").read_text())["approved"] == 1


def test_the_live_run_serves_the_console_and_one_signal_stops_both(tmp_path: Path) -> None:
    import httpx

    from beam_agents.testing.services import free_port

    port = free_port()
    out = tmp_path / "live"
    command = [sys.executable, "-m", "app.triage", "live", "--console", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--out", str(out), "--hours", "0.5", "--services", "svc-042"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:

        def approvals_page() -> int | None:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/approvals").status_code
            except httpx.TransportError:
                return None

        assert _wait_for("the console", approvals_page, timeout_s=60) == 200
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert process.returncode == 0, stderr.decode()[-2000:]
    assert f"http://127.0.0.1:{port}/approvals" in stderr.decode()
    assert approvals_page() is None  # the console stopped with the run
    assert (out / "summary.json").is_file()
