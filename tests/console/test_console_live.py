"""End to end: a live triage run, its console, and a person answering in Chromium."""

from __future__ import annotations

import json
import os
import re
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
ANSWER_KEY = "live-run-answer-signing-key-for-the-test-0123456789abcdef"
"""The live run's key, set in its environment so this test's console signs with it too."""
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
        env={**os.environ, "PYTHONPATH": str(REPO), "TRIAGE_ANSWER_SIGNING_KEY": ANSWER_KEY},
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
    served = serve(
        source=out, answers=out / "answers.jsonl", answer_signing_key=ANSWER_KEY.encode()
    )
    page.goto(f"{served.url}/approvals")
    stale = page.context.new_page()
    stale.goto(f"{served.url}/approvals")
    # A second approver starts on svc-1 in another tab: a page being typed into does not
    # reload (the console reloads idle pages every few seconds), so it stays stale.
    stale.locator(f"#approval-{ids['svc-1']}").locator("input[name=approver]").fill("Grace")
    page.screenshot(path=str(tmp_path / "live-approvals.png"), full_page=True)

    _answer(page, ids["svc-1"], "approve", "checkout is down")
    page.wait_for_url(f"{served.url}/approvals?answered=*")
    _answer(page, ids["svc-2"], "deny", "maintenance window")
    page.wait_for_url(f"{served.url}/approvals?answered=*")
    _answer(stale, ids["svc-1"], "deny", "second opinion")

    assert "already answered" in stale.locator("#error").inner_text()

    # The alerts' decisions: the page's follow-up adds a row of its own once it comes due.
    def decided() -> list[dict[str, Any]]:
        outputs = _records(out / "outputs.jsonl")
        return [o for o in outputs if o["decision"] not in ("escalated", "resolved")]

    decisions = _wait_for(
        "both decisions",
        lambda: (
            {o["alert_id"]: o["decision"] for o in decided() if o["service"] in ("svc-1", "svc-2")}
            if len([o for o in decided() if o["class"] == "P1"]) == 2
            else None
        ),
    )
    assert decisions == {"svc-1-0001": "paged", "svc-2-0001": "denied"}
    pages = [
        i["args"]["alert_id"] for i in _records(out / "intents.jsonl") if i["tool"] == "page_oncall"
    ]
    assert pages == ["svc-1-0001"]
    _assert_signed(out)
    process.send_signal(signal.SIGTERM)  # the feed ends, the pipeline drains and summarizes
    assert process.wait(timeout=120) == 0
    assert json.loads((out / "summary.json").read_text())["approved"] == 1


def _assert_signed(out: Path) -> None:
    """Every answer line carries the signature the run verified, and each resumed its approval."""
    from beam_agents.answer_signing import answer_signature

    answers = _records(out / "answers.jsonl")
    assert answers
    for answer in answers:
        assert answer["signature"] == answer_signature(
            ANSWER_KEY.encode(),
            intent_id=answer["intent_id"],
            entity_key=answer["service"].encode(),
            answer=answer["answer"],
            approver=answer["approver"],
            expires_at_ms=answer["expires_at_ms"],
        )
    resumed = {r["detail"] for r in _records(out / "lifecycle.jsonl") if r["kind"] == "resumed"}
    assert {f"{a['intent_id']} by {a['approver']}" for a in answers} <= resumed
    reasons = {e["reason"] for e in _records(out / "errors.jsonl")}
    assert not reasons & {"unsigned_answer", "bad_answer_signature", "expired_answer"}


def _start_live(
    tmp_path: Path, port: int, *extra: str, alerts: Path | None = None
) -> subprocess.Popen[bytes]:
    """`make console`'s entry point (`python -m app.triage live --console`), at its real speed."""
    command = [sys.executable, "-m", "app.triage", "live", "--console", "--port", str(port)]
    if alerts is not None:
        command += ["--input", str(alerts)]
    return subprocess.Popen(
        [*command, "--out", str(tmp_path / "live"), *extra],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "live.log").open("wb"),
    )


def _outcome(page: Any, url: str, intent_id: str) -> str:
    page.goto(f"{url}/approvals")
    cell = page.locator(f"#settled tr[data-intent='{intent_id}'] .outcome")
    return str(cell.inner_text()) if cell.count() else ""


def test_the_live_console_counts_deadlines_in_the_run_clock_and_shows_each_outcome(
    tmp_path: Path, page: Any
) -> None:
    """Approve after 60 s, watch one time out at its deadline, and be refused on a wiped one."""
    from beam_agents.testing.services import free_port

    window_s = 75  # the shortest window that lets a person answer after 60 s
    alerts = tmp_path / "alerts.jsonl"
    write_lines(
        alerts,
        [
            {**ALERTS[0], "event_time_ms": T0, "severity_hint": "critical"},
            {**ALERTS[1], "event_time_ms": T0 + 5_000, "severity_hint": "critical"},
            # Arrives after the second one's deadline; the run ends before its own.
            {
                "alert_id": "svc-4-0001",
                "message": "payments: service unreachable",
                "service": "svc-4",
                "event_time_ms": T0 + (window_s + 5) * 60_000,
                "severity_hint": "critical",
            },
        ],
    )
    port = free_port()
    out = tmp_path / "live"
    url = f"http://127.0.0.1:{port}"
    process = _start_live(
        tmp_path, port, "--approval-window-s", str(window_s), "--drain-s", "8", alerts=alerts
    )
    try:
        ids = _wait_for("two approvals", lambda: len(_approval_ids(out / "intents.jsonl")) == 2)
        asked_at = time.monotonic()
        ids = _approval_ids(out / "intents.jsonl")
        page.goto(f"{url}/approvals")
        assert page.locator(".approval").count() == 2
        deadline = page.locator(f"#approval-{ids['svc-2']} .deadline").inner_text()
        assert deadline.startswith("in 1 min"), deadline  # the reader's time, not 75 min
        page.screenshot(path=str(tmp_path / "live-pending.png"), full_page=True)

        time.sleep(max(0.0, 60 - (time.monotonic() - asked_at)))
        _answer(page, ids["svc-1"], "approve", "checkout is down")
        page.wait_for_url(f"{url}/approvals?answered=*")
        assert "approve: checkout is down" in page.locator("#confirmed").inner_text()
        assert _wait_for("the page", lambda: _outcome(page, url, ids["svc-1"]) == "paged")
        pages = [i for i in _records(out / "intents.jsonl") if i["tool"] == "page_oncall"]
        assert [i["args"]["alert_id"] for i in pages] == ["svc-1-0001"]
        ids_svc1 = ids["svc-1"]

        assert _wait_for(
            "the timeout",
            lambda: _outcome(page, url, ids["svc-2"]).startswith("timed out"),
        )
        assert page.locator(f"#approval-{ids['svc-2']}").count() == 0
        page.screenshot(path=str(tmp_path / "live-settled.png"), full_page=True)

        ids = _wait_for(
            "the third approval", lambda: _approval_ids(out / "intents.jsonl").get("svc-4")
        )
        stale = page.context.new_page()
        stale.goto(f"{url}/approvals")
        card = stale.locator(f"#approval-{ids}")
        card.locator("input[name=approver]").fill("Ada on call")  # the page waits for her
        wiped = _wait_for(
            "the wipe",
            lambda: [
                e for e in _records(out / "errors.jsonl") if e["reason"] == "ttl_wiped_suspension"
            ],
        )
        assert [json.loads(e["payload"])["alert_id"] for e in wiped] == ["svc-4-0001"]
        card.locator("button[value=approve]").click()

        refusal = stale.locator("#error").inner_text()
        assert "no longer pending (wiped)" in refusal
        assert "orphaned_answer" in refusal
        assert [a["intent_id"] for a in _records(out / "answers.jsonl")] == [
            _approval_ids(out / "intents.jsonl")["svc-1"]
        ]
        assert all(a["signature"] for a in _records(out / "answers.jsonl"))  # `make console` signs
        resumed = [r for r in _records(out / "lifecycle.jsonl") if r["kind"] == "resumed"]
        assert [r["detail"] for r in resumed] == [f"{ids_svc1} by Ada on call"]
        assert _outcome(stale, url, ids) == "wiped (TTL)"
        stale.screenshot(path=str(tmp_path / "live-wiped.png"), full_page=True)
        errors = {e["reason"] for e in _records(out / "errors.jsonl")}
        assert "orphaned_answer" not in errors
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_ctrl_c_stops_a_live_run_with_a_backlog_by_cutting_its_drain(tmp_path: Path) -> None:
    """Ctrl-C stops the run within seconds because the run cuts itself short: it stops its
    feed and cuts the drain after STOP_DRAIN_S, whatever backlog is left. The test checks
    the run's own account of that, not how long this machine took."""
    import httpx

    from beam_agents.testing.services import free_port

    port = free_port()
    out = tmp_path / "live"
    # Twelve hours of alerts in thirty seconds: more than two shared cores keep up with.
    process = _start_live(tmp_path, port, "--speedup", "1440")
    try:

        def approvals_page() -> int | None:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/approvals").status_code
            except httpx.TransportError:
                return None

        assert _wait_for("the console", approvals_page, timeout_s=60) == 200
        _wait_for("a backlog", lambda: b"behind:" in (tmp_path / "live.log").read_bytes())
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=60)  # a guard against a hang, far past the 5 s cut
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    log = (tmp_path / "live.log").read_text()
    assert code == 0, log[-2000:]
    assert f"http://127.0.0.1:{port}/approvals" in log
    assert "stopping: no new alerts; the pipeline drains for at most 5 s" in log
    # Printed only when the cut ended the run: the drain did not run to its end.
    stopped = re.search(r"stopped after a 5 s drain: ([\d,]+) of ([\d,]+) alerts were fed", log)
    assert stopped, log[-2000:]
    fed, alerts = (int(figure.replace(",", "")) for figure in stopped.groups())
    assert 0 < fed < alerts  # the feed stopped at Ctrl-C, hours of alerts before its end
    assert str(out / "summary.json") in log
    assert "dead letters:" in log
    assert approvals_page() is None  # the console stopped with the run
    assert json.loads((out / "summary.json").read_text())["events"] > 0


def test_a_busy_console_port_fails_in_one_line_before_anything_starts(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "app.triage",
                "live",
                "--console",
                "--port",
                str(port),
                "--out",
                str(tmp_path / "live"),
            ],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"python -m app.triage: error: port {port} on 127.0.0.1 is in use (Address already in "
        f"use); stop what serves it or pick another: PORT={port + 1} make console "
        f"(or --port {port + 1})"
    ]
    assert not (tmp_path / "live").exists()
