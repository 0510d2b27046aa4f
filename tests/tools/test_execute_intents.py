"""`ExecuteIntents` on the streaming DirectRunner: each intent reaches its target once."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from beam_agents import AgentConfig
from beam_agents.local import LocalRun, Script, run_locally
from beam_agents.proto.beam_agents_pb2 import ToolIntent
from beam_agents.runtime.intents import make_intent
from beam_agents.runtime.transform import RunAgent
from beam_agents.testing.chaos import fail_after_tool_once
from beam_agents.tools import ToolCall, ToolResult, open_ledger
from beam_agents.tools.execute import ExecuteIntents
from beam_agents.tools.executor import ToolFailure
from beam_agents.tools.ledger.base import Claimed, Recorded
from beam_agents.tools.mcp_tools import McpTools
from beam_agents.tools.webhook import HttpWebhook
from tests.tools import agents

pytestmark = pytest.mark.pipeline


class Receiver:
    """A loopback target that counts deliveries per Idempotency-Key."""

    def __init__(self, server: HTTPServer) -> None:
        self.server = server
        self.deliveries: Counter[str] = Counter()
        self._lock = threading.Lock()
        server.expect_request("/tickets", method="POST").respond_with_handler(self._answer)

    def _answer(self, request: Request) -> Response:
        with self._lock:
            self.deliveries[request.headers["Idempotency-Key"]] += 1
            number = len(self.deliveries)
        title = json.loads(request.get_data())["args"]["title"]
        return Response(json.dumps({"ticket": f"T-{number}", "title": title}), status=201)

    def url(self) -> str:
        return self.server.url_for("/tickets")


async def page_oncall(call: ToolCall) -> bytes:
    """A plain async function handler."""
    return f"paged for {call.args['reason']}".encode()


def _script(events: int) -> Script:
    script = Script()
    for i in range(events):
        kind = "urgent" if i % 3 == 0 else "routine"
        t = 1_000 * (i + 1)
        script.events((f"case-{i % 4}", f"{kind} {i}".encode(), t)).watermark(t + 1)
    return script


def _run(script: Script, handlers: Mapping[str, Any], ledger: str) -> LocalRun:
    def build(events: Any, answers: Any) -> dict[str, Any]:
        agent = events | "RunAgent" >> RunAgent(agents.file_ticket, AgentConfig())
        executed = agent.intents | "Execute" >> ExecuteIntents(handlers, ledger, max_concurrency=4)
        return {"intents": agent.intents, "results": executed.results, "errors": executed.errors}

    return run_locally(script, build)


def test_each_intent_is_delivered_once_though_bundles_fail_after_the_tool_ran(
    httpserver: HTTPServer, ledger_uri: str
) -> None:
    receiver = Receiver(httpserver)
    handlers = {"open_ticket": HttpWebhook(receiver.url()), "page_oncall": page_oncall}
    with fail_after_tool_once(b"case-2", 1, times=2) as fault:
        run = _run(_script(12), handlers, ledger_uri)
    assert fault.fired == [(b"case-2", 1)] * 2, "the chaos never happened"
    tickets = [i.intent_id for i in run.outputs["intents"] if i.tool == "open_ticket"]
    assert len(tickets) == 12
    assert receiver.deliveries == Counter(dict.fromkeys(tickets, 1))
    results: list[ToolResult] = run.outputs["results"]
    assert sorted(r.intent_id for r in results) == sorted(
        i.intent_id for i in run.outputs["intents"]
    )
    hit = {i.intent_id for i in run.outputs["intents"] if (i.entity_key, i.seq) == (b"case-2", 1)}
    # The retried bundle found what the failed one recorded, and called nothing.
    assert {(r.status, r.attempts) for r in results if r.intent_id in hit} == {("recorded", 0)}
    assert {(r.status, r.attempts) for r in results if r.intent_id not in hit} <= {
        ("executed", 1),
        ("recorded", 0),
    }
    tickets_answered = {r.result for r in results if r.tool == "open_ticket"}
    assert len(tickets_answered) == 12
    assert run.outputs["errors"] == []


def test_running_the_same_events_again_delivers_nothing_and_returns_recorded_results(
    httpserver: HTTPServer, ledger_uri: str
) -> None:
    receiver = Receiver(httpserver)
    handlers = {"open_ticket": HttpWebhook(receiver.url()), "page_oncall": page_oncall}
    first = _run(_script(6), handlers, ledger_uri)
    delivered = dict(receiver.deliveries)
    again = _run(_script(6), handlers, ledger_uri)
    assert receiver.deliveries == delivered
    assert sum(delivered.values()) == 6

    def by_id(run: LocalRun) -> dict[str, bytes]:
        return {r.intent_id: r.result for r in run.outputs["results"]}

    assert by_id(again) == by_id(first)
    assert {r.status for r in again.outputs["results"]} == {"recorded"}
    assert {r.attempts for r in again.outputs["results"]} == {0}


def test_unknown_tools_and_failing_handlers_become_dead_letters(
    httpserver: HTTPServer, ledger_uri: str
) -> None:
    httpserver.expect_request("/tickets").respond_with_data("no", status=500)
    handlers = {
        "open_ticket": HttpWebhook(httpserver.url_for("/tickets"), max_attempts=2, backoff_s=0.01)
    }
    run = _run(_script(3), handlers, ledger_uri)
    failures: list[ToolFailure] = run.outputs["errors"]
    reasons = Counter(f.reason for f in failures)
    assert reasons == {"tool_error": 3, "unknown_tool": 1}
    failed = next(f for f in failures if f.reason == "tool_error")
    assert "HTTP 500" in failed.detail
    assert failed.attempts == 1
    assert run.outputs["results"] == []
    assert len(httpserver.log) == 6


def test_bad_configuration_is_refused_when_the_transform_is_built() -> None:
    with pytest.raises(ValueError, match="max_concurrency"):
        ExecuteIntents({}, "memory://x", max_concurrency=0)
    with pytest.raises(ValueError, match=r"ExecuteIntents\.ledger: unknown scheme"):
        ExecuteIntents({}, "nosuch://x")
    with pytest.raises(ValueError, match=r"ExecuteIntents\.ledger: an in-memory SQLite"):
        ExecuteIntents({}, "sqlite+aiosqlite://")
    with pytest.raises(TypeError, match="tool handler"):
        ExecuteIntents({"x": 3}, "memory://x")


def test_intents_run_on_a_real_mcp_server_through_the_pipeline(
    tmp_path: Path, ledger_uri: str
) -> None:
    log = tmp_path / "tickets.jsonl"
    server = Path(__file__).parent / "servers" / "tickets_mcp.py"
    tickets = McpTools([sys.executable, str(server)], env={"TICKETS_LOG": str(log)})
    handlers = {"open_ticket": tickets.handler("open_ticket"), "page_oncall": page_oncall}
    run = _run(_script(4), handlers, ledger_uri)
    answers = sorted(r.result for r in run.outputs["results"] if r.tool == "open_ticket")
    assert answers == [b"T-1", b"T-2", b"T-3", b"T-4"]
    assert len(log.read_text().splitlines()) == 4
    assert run.outputs["errors"] == []


def _intent(key: bytes, *, args_json: bytes = b"{}", tool: str = "open_ticket") -> ToolIntent:
    return make_intent(
        entity_key=key, seq=1, index=0, tool=tool, args_json=args_json, event_time_ms=1_000
    )


def _execute(
    intents: list[ToolIntent], handlers: Mapping[str, Any], ledger: str, **options: Any
) -> LocalRun:
    """Run the intents (one bundle) through `ExecuteIntents` on the streaming DirectRunner."""
    script = Script().raw(*((intent, 1_000) for intent in intents)).watermark(2_000)

    def build(events: Any, answers: Any) -> dict[str, Any]:
        executed = events | "Execute" >> ExecuteIntents(handlers, ledger, **options)
        return {"results": executed.results, "errors": executed.errors}

    return run_locally(script, build)


def _claim_now(ledger: str, intent_id: str) -> object:
    async def claim() -> object:
        async with open_ledger(ledger) as opened:
            return await opened.claim(intent_id, lease_ms=60_000)

    return asyncio.run(claim())


def test_an_oversized_result_is_a_tool_error_naming_its_size_and_releases_the_claim(
    ledger_uri: str,
) -> None:
    intent = _intent(b"case-big")
    run = _execute([intent], {"open_ticket": agents.oversized_ticket}, ledger_uri)
    [failure] = run.outputs["errors"]
    assert (failure.reason, failure.intent_id) == ("tool_error", intent.intent_id)
    size_named = failure.detail.replace(",", "")
    assert f"{len(agents.OVERSIZED)} bytes" in size_named
    assert "524288-byte limit" in size_named
    assert run.outputs["results"] == []
    # Nothing was recorded and nobody holds the id: a retry may run at once.
    assert isinstance(_claim_now(ledger_uri, intent.intent_id), Claimed)


def test_copies_of_an_intent_outliving_their_leases_all_report_the_kept_result(
    ledger_uri: str,
) -> None:
    """Two copies race with a 300 ms lease and a 1.2 s handler: both report what the ledger kept."""
    agents.slow_runs.clear()
    intent = _intent(b"case-slow")
    handlers = {"open_ticket": agents.slow_numbered_ticket}
    run = _execute([intent, intent], handlers, ledger_uri, lease_ms=300)
    assert len(agents.slow_runs) == 2, "the second copy never took the lapsed lease over"
    kept = _claim_now(ledger_uri, intent.intent_id)
    assert isinstance(kept, Recorded)
    results: list[ToolResult] = run.outputs["results"]
    assert [r.result for r in results] == [kept.result, kept.result]
    assert run.outputs["errors"] == []


def test_a_webhook_result_is_read_whole_up_to_the_limit_and_refused_beyond_it(
    httpserver: HTTPServer, ledger_uri: str
) -> None:
    small, large = bytes(range(256)) * 1200, b"y" * (600 * 1024)  # 300 KiB, 600 KiB
    httpserver.expect_request("/small").respond_with_data(small)
    httpserver.expect_request("/large").respond_with_data(large)
    fits, too_big = _intent(b"case-small", tool="small"), _intent(b"case-large", tool="large")
    handlers = {
        "small": HttpWebhook(httpserver.url_for("/small")),
        "large": HttpWebhook(httpserver.url_for("/large")),
    }
    run = _execute([fits, too_big], handlers, ledger_uri)
    [result] = run.outputs["results"]
    assert (result.intent_id, len(result.result)) == (fits.intent_id, len(small))
    assert result.result == small
    [failure] = run.outputs["errors"]
    assert (failure.reason, failure.intent_id) == ("tool_error", too_big.intent_id)
    assert "524,288-byte limit" in failure.detail
    # The cut body never reached the ledger: the id is free, not recorded.
    assert isinstance(_claim_now(ledger_uri, too_big.intent_id), Claimed)


def test_an_intent_whose_args_cannot_be_parsed_is_an_invalid_intent_dead_letter(
    ledger_uri: str,
) -> None:
    """Nesting past any JSON reader's depth dead-letters the intent; the others still run."""
    deep = _intent(b"case-deep", args_json=b'{"a":' * 100_000 + b"1" + b"}" * 100_000)
    broken = _intent(b"case-broken", args_json=b'{"a": \xff}')
    fine = _intent(b"case-fine", args_json=b'{"reason": "disk"}', tool="page_oncall")
    handlers = {"open_ticket": agents.quick_ticket, "page_oncall": page_oncall}
    run = _execute([deep, broken, fine], handlers, ledger_uri)
    failures: list[ToolFailure] = run.outputs["errors"]
    assert sorted((f.intent_id, f.reason) for f in failures) == sorted(
        [(deep.intent_id, "invalid_intent"), (broken.intent_id, "invalid_intent")]
    )
    by_id = {f.intent_id: f for f in failures}
    assert ToolIntent.FromString(by_id[deep.intent_id].payload) == deep
    assert "nested too deeply" in by_id[deep.intent_id].detail
    assert [r.result for r in run.outputs["results"]] == [b"paged for disk"]
