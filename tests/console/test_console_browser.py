"""The console in Chromium: answering approvals, escaping agent text, refusing the unauthorised."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from beam_agents.cli import main
from tests.console.conftest import TOKEN, Served, approval, write_lines

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

PAGES = ("/", "/approvals", "/entities", "/entities/svc-1", "/dead-letters")
HOSTILE = '<script>window.__xss = 1; alert("xss")</script><img src=x onerror="alert(2)">'
ATTRIBUTE = '" onerror="alert(3)" data-x="'


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    write_lines(
        run / "intents.jsonl",
        [
            approval("svc-1", "svc-1-0001", "checkout: service unreachable", "intent-approve"),
            approval("svc-2", "svc-2-0001", "orders: outage", "intent-deny"),
        ],
    )
    write_lines(
        run / "lifecycle.jsonl",
        [
            {
                "service": "svc-1",
                "kind": k,
                "event_time_ms": t,
                "seq": 1,
                "memory_bytes": b,
                "detail": "",
            }
            for k, t, b in (
                ("activated", 1000, 0),
                ("suspended", 1000, 120),
                ("completed", 9000, 900),
            )
        ],
    )
    return run


def _answers(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _answer_in_browser(page: Any, served: Served, intent: str, decision: str, reason: str) -> None:
    page.goto(f"{served.url}/approvals")
    card = page.locator(f"#approval-{intent}")
    card.locator("input[name=approver]").fill("Ada on call")
    card.locator("input[name=reason]").fill(reason)
    card.locator(f"button[value={decision}]").click()
    page.wait_for_url(f"{served.url}/approvals?answered=*")


def test_approving_in_the_browser_appends_one_answer_with_the_approver(
    serve: Callable[..., Served], page: Any, run_dir: Path, tmp_path: Path
) -> None:
    sink = tmp_path / "answers.jsonl"
    served = serve(source=run_dir, answers=sink)

    _answer_in_browser(page, served, "intent-approve", "approve", "customer impact")

    [answer] = _answers(sink)
    assert answer["intent_id"] == "intent-approve"
    assert answer["service"] == "svc-1"
    assert answer["answer"] == "approve: customer impact"
    assert answer["approver"] == "Ada on call"
    row = page.locator("#settled tr[data-intent=intent-approve]")
    assert row.locator(".outcome").inner_text() == "answered, awaiting the pipeline"
    assert page.locator("#approval-intent-approve").count() == 0
    assert "approve: customer impact" in page.locator("#confirmed").inner_text()
    page.screenshot(path=str(tmp_path / "approvals-after-approve.png"), full_page=True)


def test_denying_in_the_browser_appends_a_deny_answer_with_its_reason(
    serve: Callable[..., Served], page: Any, run_dir: Path, tmp_path: Path
) -> None:
    sink = tmp_path / "answers.jsonl"
    served = serve(source=run_dir, answers=sink)

    _answer_in_browser(page, served, "intent-deny", "deny", "known flaky probe")

    [answer] = _answers(sink)
    assert (answer["intent_id"], answer["answer"]) == ("intent-deny", "deny: known flaky probe")
    assert page.locator("#approval-intent-approve").count() == 1  # the other one still waits


def test_a_second_answer_to_the_same_intent_is_refused(
    serve: Callable[..., Served], page: Any, run_dir: Path, tmp_path: Path
) -> None:
    sink = tmp_path / "answers.jsonl"
    served = serve(source=run_dir, answers=sink)
    stale = page.context.new_page()
    stale.goto(f"{served.url}/approvals")  # still shows the approval as pending

    _answer_in_browser(page, served, "intent-approve", "approve", "")
    card = stale.locator("#approval-intent-approve")
    card.locator("input[name=approver]").fill("Bob")
    card.locator("button[value=deny]").click()

    assert "already answered" in stale.locator("#error").inner_text()
    assert [a["approver"] for a in _answers(sink)] == ["Ada on call"]


def test_a_script_in_agent_text_never_runs(
    serve: Callable[..., Served], page: Any, run_dir: Path, tmp_path: Path
) -> None:
    write_lines(run_dir / "intents.jsonl", [approval("svc-1", ATTRIBUTE, HOSTILE, "intent-xss")])
    write_lines(
        run_dir / "errors.jsonl",
        [
            {
                "service": "svc-1",
                "reason": HOSTILE,
                "detail": ATTRIBUTE,
                "payload": HOSTILE,
                "event_time_ms": 1,
            }
        ],
    )
    write_lines(
        run_dir / "lifecycle.jsonl",
        [
            {
                "service": "svc-1",
                "kind": HOSTILE,
                "event_time_ms": 9500,
                "seq": 2,
                "memory_bytes": 10,
                "detail": ATTRIBUTE,
            }
        ],
    )
    write_lines(
        run_dir / "outputs.jsonl", [{"service": "svc-1", "class": HOSTILE, "decision": "x"}]
    )
    served = serve(source=run_dir, answers=tmp_path / "answers.jsonl")

    for path in PAGES:
        page.goto(served.url + path)
        page.wait_for_timeout(200)
        assert page.evaluate("window.__xss") is None, path
        assert page.locator("img").count() == 0, path
        assert page.locator("[onerror]").count() == 0, path
        assert page.locator("script:not([src='/static/console.js'])").count() == 0, path
        page.screenshot(path=str(tmp_path / f"xss{path.replace('/', '-')}.png"), full_page=True)
    page.goto(f"{served.url}/approvals")
    assert HOSTILE in page.locator("#approval-intent-xss .prompt-message").inner_text()
    assert page.dialogs == []


def test_without_the_token_every_page_and_post_is_refused(
    serve: Callable[..., Served], run_dir: Path, tmp_path: Path
) -> None:
    from beam_agents.console.security import Secret

    sink = tmp_path / "answers.jsonl"
    served = serve(source=run_dir, answers=sink, token=Secret(TOKEN))

    with httpx.Client(base_url=served.url) as client:
        for path in PAGES:
            assert client.get(path).status_code == 401, path
            assert client.get(path, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        # One wrong guess: more would close the check (tests/console/test_console_guessing.py).
        assert client.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 401
        refused = client.post("/approvals/intent-approve", data={"decision": "approve"})
        assert refused.status_code == 401
        assert client.post("/dead-letters/resubmit", data={"index": "0"}).status_code == 401
    assert _answers(sink) == []


def test_the_login_form_sets_an_httponly_cookie_that_opens_the_pages(
    serve: Callable[..., Served], page: Any, run_dir: Path, tmp_path: Path
) -> None:
    from beam_agents.console.security import Secret

    served = serve(source=run_dir, answers=tmp_path / "answers.jsonl", token=Secret(TOKEN))

    page.goto(f"{served.url}/approvals")
    assert page.url == f"{served.url}/login"
    page.fill("input[name=token]", TOKEN)
    page.click("main button[type=submit]")
    page.wait_for_url(f"{served.url}/")
    page.goto(f"{served.url}/approvals")

    assert page.locator("#approval-intent-approve").count() == 1
    [session] = [c for c in page.context.cookies() if c["name"] == "beam_agents_session"]
    assert session["httpOnly"] is True
    assert TOKEN not in session["value"]


def test_a_post_without_a_valid_csrf_token_is_refused(
    serve: Callable[..., Served], page: Any, run_dir: Path, tmp_path: Path
) -> None:
    sink = tmp_path / "answers.jsonl"
    served = serve(source=run_dir, answers=sink)
    page.goto(f"{served.url}/approvals")
    form = {"decision": "approve", "approver": "Mallory", "reason": ""}

    missing = page.request.post(f"{served.url}/approvals/intent-approve", form=form)
    forged = page.request.post(
        f"{served.url}/approvals/intent-approve", form={**form, "csrf": "0" * 64}
    )

    assert (missing.status, forged.status) == (403, 403)
    assert _answers(sink) == []


def test_an_answer_to_an_unknown_intent_is_refused(
    serve: Callable[..., Served], page: Any, run_dir: Path, tmp_path: Path
) -> None:
    sink = tmp_path / "answers.jsonl"
    served = serve(source=run_dir, answers=sink)
    page.goto(f"{served.url}/approvals")
    page.evaluate(
        "document.querySelector('#approval-intent-approve form').action = '/approvals/nope'"
    )
    page.locator("#approval-intent-approve input[name=approver]").fill("Ada")
    page.locator("#approval-intent-approve button[value=approve]").click()

    assert "no approval with this intent id" in page.locator("#error").inner_text()
    assert _answers(sink) == []


def test_a_non_loopback_host_without_a_token_is_refused(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["console", str(run_dir), "--host", "0.0.0.0", "--no-token"]) == 2
    assert "needs --token" in capsys.readouterr().err


def test_every_page_renders_and_is_kept_as_a_screenshot(
    serve: Callable[..., Served], page: Any, run_dir: Path, tmp_path: Path
) -> None:
    served = serve(source=run_dir, answers=tmp_path / "answers.jsonl")

    for path in PAGES:
        response = page.goto(served.url + path)
        assert response.status == 200, path
        assert response.headers["content-security-policy"].startswith("default-src 'none'")
        page.screenshot(path=str(tmp_path / f"page{path.replace('/', '-')}.png"), full_page=True)
    assert len(list(tmp_path.glob("page*.png"))) == len(PAGES)


def test_resubmitting_a_dead_letter_appends_its_payload_to_the_input(
    serve: Callable[..., Served], page: Any, run_dir: Path, tmp_path: Path
) -> None:
    payload = '{"alert_id":"svc-1-0009","message":"disk usage 97%","service":"svc-1"}'
    write_lines(
        run_dir / "errors.jsonl",
        [{"service": "svc-1", "reason": "agent_error", "detail": "boom", "payload": payload}],
    )
    target = tmp_path / "resubmit.jsonl"
    served = serve(source=run_dir, resubmit=target)

    page.goto(f"{served.url}/dead-letters")
    page.locator("#dead-letters button").click()

    assert "re-submitted to resubmit.jsonl" in page.locator(".notice").inner_text()
    assert target.read_text() == payload + "\n"


def test_the_entity_page_lists_its_long_term_rows_read_only(
    serve: Callable[..., Served], page: Any, run_dir: Path, tmp_path: Path
) -> None:
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from beam_agents.memory.stores import MemoryRecord, open_store

    uri = f"sqlite+aiosqlite:///{tmp_path / 'longterm.sqlite'}"

    async def fill() -> None:
        async with open_store(uri) as store:
            await store.provision()
            await store.upsert(b"svc-1", MemoryRecord("profile", b'{"alerts": 3}', 4, 1000))
            await store.upsert(b"svc-2", MemoryRecord("profile", b'{"alerts": 9}', 2, 1000))

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's event loop
        pool.submit(asyncio.run, fill()).result()
    served = serve(source=run_dir, longterm_uri=uri)

    page.goto(f"{served.url}/entities/svc-1")

    assert page.locator("#rows tbody tr").all_inner_texts() == [
        'profile\t4\t1970-01-01 00:00:01 UTC\t{"alerts": 3}'
    ]
    assert page.locator("#lifecycle tbody tr").count() == 3
    assert page.locator("polyline").count() == 1


def test_the_runs_report_is_served_with_its_styles_and_no_script(
    serve: Callable[..., Served], page: Any, tmp_path: Path
) -> None:
    from app.triage.report import render_report

    run = tmp_path / "run"
    run.mkdir()
    summary = json.loads((Path(__file__).parent / "fixtures" / "summary.json").read_text())
    (run / "report.html").write_text(render_report(summary, []))
    served = serve(source=run)

    page.goto(served.url)
    page.click("#report-link")

    assert page.url == f"{served.url}/report"
    policy = page.request.get(f"{served.url}/report").headers["content-security-policy"]
    assert policy.startswith("default-src 'none'; style-src 'unsafe-inline'")
    assert page.locator("figure.chart").count() > 0
