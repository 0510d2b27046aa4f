"""A LangGraph ReAct graph under RunAgent on the streaming DirectRunner, against loopback.

The model is an OpenAI-compatible server on 127.0.0.1 answering from a
script (`lg_graph.script`); the requests it logs are the model calls made.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from tests.adapters.conftest import require_langgraph

require_langgraph()

from beam_agents import AgentConfig, FlushToLongterm  # noqa: E402
from beam_agents.adapters.langgraph import CHECKPOINT_KEY, graph_agent, tool_handlers  # noqa: E402
from beam_agents.console.activity import RunActivity  # noqa: E402
from beam_agents.console.answers import AnswersFile  # noqa: E402
from beam_agents.memory.expire import read_expired_memory  # noqa: E402
from beam_agents.memory.facade import Memory  # noqa: E402
from beam_agents.memory.longterm import LongtermMemory  # noqa: E402
from beam_agents.memory.stores import open_store  # noqa: E402
from beam_agents.model import provider_from_spec  # noqa: E402
from beam_agents.testing.chaos import fail_after_tool_calls, fail_commit_once  # noqa: E402
from beam_agents.testing.streaming import Script, StreamRun, run_script  # noqa: E402
from beam_agents.tools import open_ledger  # noqa: E402
from tests.adapters import lg_graph  # noqa: E402

pytestmark = pytest.mark.pipeline

KEY_ENV = "BEAM_AGENTS_TEST_LG_KEY"
PATH = "/v1/chat/completions"
agent = graph_agent(lg_graph.graph, read_only_tools=["lookup_runbook"])


def _serve(server: HTTPServer) -> None:
    def answer(request: Request) -> Response:
        body = json.loads(request.get_data(as_text=True))
        message = lg_graph.script(body["messages"])
        completion = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "triage-served",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
        }
        return Response(json.dumps(completion), content_type="application/json")

    server.expect_request(PATH).respond_with_handler(answer)


def _ledger(path: Path) -> str:
    uri = f"sqlite+aiosqlite:///{path}"

    async def provision() -> None:
        async with open_ledger(uri) as ledger:
            await ledger.provision()

    asyncio.run(provision())
    return uri


def _config(server: HTTPServer, tmp_path: Path, **overrides: Any) -> AgentConfig:
    spec = (
        f"openai:triage?base_url={server.url_for('/v1')}&api_key_env={KEY_ENV}"
        "&timeout_s=5&max_retries=0"
    )
    settings: dict[str, Any] = {
        "provider_factory": provider_from_spec(spec),
        "activation_timeout_s": 30.0,
        "tools": tool_handlers([lg_graph.page_oncall]),
        "tool_ledger": _ledger(tmp_path / "ledger.db"),
    }
    settings.update(overrides)
    return AgentConfig(**settings)


def _sent(server: HTTPServer) -> list[list[dict[str, Any]]]:
    """The messages of every request the server received, in order."""
    return [json.loads(request.get_data(as_text=True))["messages"] for request, _ in server.log]


@pytest.fixture(autouse=True)
def _key_and_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-langgraph")
    lg_graph.pages.clear()


def test_a_keys_second_event_sees_the_first_events_conversation(
    httpserver: HTTPServer, tmp_path: Path
) -> None:
    _serve(httpserver)
    script = Script().events(("db-1", b"disk at 80%", 1_000)).watermark(1_500)
    script.events(("db-1", b"disk at 90%", 2_000), ("web-1", b"cpu idle", 2_000))

    run = run_script(agent, _config(httpserver, tmp_path), script)

    assert run.errors == []
    assert sorted(run.outputs) == [
        (b"db-1", b"noted 1: disk at 80%"),
        (b"db-1", b"noted 2: disk at 90%"),
        (b"web-1", b"noted 1: cpu idle"),
    ]
    second = next(m for m in _sent(httpserver) if m[-1]["content"] == "disk at 90%")
    assert [(m["role"], m["content"]) for m in second[1:]] == [
        ("user", "disk at 80%"),
        ("assistant", "noted 1: disk at 80%"),
        ("user", "disk at 90%"),
    ]


def _approval_run(
    server: HTTPServer, tmp_path: Path, answer: tuple[str, str] | None, **overrides: Any
) -> StreamRun:
    script = Script().events(("checkout", b"checkout: payments API unreachable", 1_000))
    if answer is not None:
        script.watermark(2_000).answers(("checkout", answer[0], answer[1].encode(), 3_000))
    return run_script(agent, _config(server, tmp_path, **overrides), script)


def test_an_interrupt_suspends_and_the_consoles_answer_resumes_the_graph(
    httpserver: HTTPServer, tmp_path: Path
) -> None:
    _serve(httpserver)
    asked = _approval_run(httpserver, tmp_path, None)
    (approval,) = [i for i in asked.intents if i.awaits_answer]
    assert json.loads(approval.prompt) == {
        "calls": [{"reason": "unreachable", "service": "checkout"}],
        "question": "page the on-call engineer?",
    }
    assert asked.outputs == []
    assert lg_graph.pages == []

    # The console shows the approval from the run's intents and writes the answer line.
    records = tmp_path / "run"
    records.mkdir()
    line = {
        "intent_id": approval.intent_id,
        "awaits_answer": True,
        "tool": "approval",
        "entity": "checkout",
        "prompt": json.loads(approval.prompt),
        "seq": approval.seq,
    }
    (records / "intents.jsonl").write_text(json.dumps(line) + "\n")
    activity = RunActivity(records, approval_timeout_ms=60_000)
    activity.refresh()
    written = AnswersFile(records / "answers.jsonl", activity).submit(
        approval.intent_id, "approve", "runbook says so", "ada"
    )
    sent_before = len(httpserver.log)

    # The same event again (a new pipeline keeps no state), and the answer on the answers input.
    resumed = _approval_run(httpserver, tmp_path, (written["intent_id"], written["answer"]))

    assert resumed.errors == []
    assert [i.intent_id for i in resumed.intents if i.awaits_answer] == [approval.intent_id]
    assert resumed.outputs == [(b"checkout", b"done: paged checkout (page 1)")]
    assert lg_graph.pages == [{"service": "checkout", "reason": "unreachable"}]
    # The resumed run replayed the calls before the interrupt and asked only the last.
    assert len(httpserver.log) - sent_before == 2 + 1


def test_under_a_signing_key_the_consoles_signed_line_resumes_the_graph(
    httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deployed path: the console signs its line, the pipeline verifies it whole."""
    key = "langgraph-answer-signing-key-0123456789abcdef"
    monkeypatch.setenv("BEAM_AGENTS_TEST_LG_SIGNING", key)
    signed = {"answer_signing_key": "env:BEAM_AGENTS_TEST_LG_SIGNING"}
    _serve(httpserver)
    asked = _approval_run(httpserver, tmp_path, None, **signed)
    (approval,) = [i for i in asked.intents if i.awaits_answer]
    records = tmp_path / "run"
    records.mkdir()
    line = {"intent_id": approval.intent_id, "awaits_answer": True, "entity": "checkout"}
    (records / "intents.jsonl").write_text(json.dumps(line) + "\n")
    activity = RunActivity(records, approval_timeout_ms=60_000)
    activity.refresh()
    AnswersFile(records / "answers.jsonl", activity, key.encode()).submit(
        approval.intent_id, "approve", "", "ada"
    )
    (written,) = (records / "answers.jsonl").read_text().splitlines()

    resumed = _approval_run(httpserver, tmp_path, (approval.intent_id, written), **signed)

    assert resumed.errors == []
    assert resumed.outputs == [(b"checkout", b"done: paged checkout (page 1)")]
    assert lg_graph.pages == [{"service": "checkout", "reason": "unreachable"}]


def test_a_denial_resumes_the_graph_without_paging(httpserver: HTTPServer, tmp_path: Path) -> None:
    _serve(httpserver)
    (approval,) = [i for i in _approval_run(httpserver, tmp_path, None).intents if i.awaits_answer]

    run = _approval_run(httpserver, tmp_path, (approval.intent_id, "deny: a known outage"))

    assert run.outputs == [(b"checkout", b"done: not paged: deny: a known outage")]
    assert lg_graph.pages == []


@pytest.mark.parametrize("inflight", [1, 256])
def test_a_retried_bundle_asks_the_model_nothing_more_and_pages_once(
    httpserver: HTTPServer, tmp_path: Path, inflight: int
) -> None:
    _serve(httpserver)
    (approval,) = [i for i in _approval_run(httpserver, tmp_path, None).intents if i.awaits_answer]
    answer = (approval.intent_id, "approve")
    (tmp_path / "clean").mkdir()
    clean = _approval_run(httpserver, tmp_path / "clean", answer, max_inflight_calls=inflight)
    clean_calls = len(httpserver.log)
    lg_graph.pages.clear()
    (tmp_path / "faulty").mkdir()

    # The suspension's commit fails once, then the resume's, after it paged.
    with fail_commit_once(b"checkout", 1) as fault, fail_after_tool_calls(times=1) as paged:
        faulty = _approval_run(httpserver, tmp_path / "faulty", answer, max_inflight_calls=inflight)

    assert fault.fired == [(b"checkout", 1)]
    assert paged.fired == [(b"checkout", 1)]
    assert faulty.fingerprint() == clean.fingerprint()
    assert faulty.outputs == [(b"checkout", b"done: paged checkout (page 1)")]
    assert len(lg_graph.pages) == 1
    # The faulty run asked what the clean one asked after its first pipeline, no more.
    assert len(httpserver.log) - clean_calls == 3


def _expired_checkpoint(uri: str, entity_key: bytes = b"db-1") -> bytes | None:
    async def read() -> bytes | None:
        store = open_store(uri)
        try:
            longterm = LongtermMemory(store, entity_key=entity_key, seq=99, now_ms=0, timeout_s=5.0)
            blob = await read_expired_memory(longterm)
            return None if blob is None else Memory(blob, now_ms=0).get(CHECKPOINT_KEY)
        finally:
            await store.close()

    return asyncio.run(read())


def test_a_new_pipeline_continues_the_conversation_from_the_longterm_flush(
    httpserver: HTTPServer, tmp_path: Path, redis_store_uri: str
) -> None:
    _serve(httpserver)
    longterm = redis_store_uri
    config = _config(
        httpserver, tmp_path, longterm_memory=longterm, ttl_ms=10_000, on_expire=FlushToLongterm()
    )
    first = Script().events(("db-1", b"disk at 80%", 1_000)).watermark(60_000)

    before = run_script(agent, config, first)
    flushed = _expired_checkpoint(longterm)
    after = run_script(agent, config, Script().events(("db-1", b"disk at 90%", 100_000)))

    assert before.outputs == [(b"db-1", b"noted 1: disk at 80%")]
    assert flushed is not None
    assert after.errors == []
    assert after.outputs == [(b"db-1", b"noted 2: disk at 90%")]


def test_retries_and_parking_commit_byte_identical_checkpoints(
    httpserver: HTTPServer, tmp_path: Path, redis_url: str
) -> None:
    """The checkpoint the TTL flushes is the same whether the calls parked, ran in place or
    were retried: no LangGraph id, timestamp or random message id reaches the committed bytes."""
    _serve(httpserver)
    (approval,) = [i for i in _approval_run(httpserver, tmp_path, None).intents if i.awaits_answer]
    flushed: dict[str, bytes | None] = {}
    for variant, inflight, fail in [
        ("inline", 1, False),
        ("parked", 256, False),
        ("retried", 256, True),
    ]:
        (tmp_path / variant).mkdir()
        lg_graph.pages.clear()
        longterm = f"{redis_url}?namespace=lg{variant}{tmp_path.name[-8:]}"
        config = _config(
            httpserver,
            tmp_path / variant,
            max_inflight_calls=inflight,
            longterm_memory=longterm,
            ttl_ms=10_000,
            on_expire=FlushToLongterm(),
        )
        script = (
            Script()
            .events(("checkout", b"checkout: payments API unreachable", 1_000))
            .watermark(2_000)
            .answers(("checkout", approval.intent_id, b"approve", 3_000))
            .watermark(60_000)
        )
        with fail_commit_once(b"checkout", 1, times=1 if fail else 0) as fault:
            run = run_script(agent, config, script)
        assert run.outputs == [(b"checkout", b"done: paged checkout (page 1)")], variant
        assert len(fault.fired) == int(fail)
        flushed[variant] = _expired_checkpoint(longterm, b"checkout")

    assert flushed["inline"] is not None
    assert flushed["parked"] == flushed["inline"]
    assert flushed["retried"] == flushed["inline"]


def test_a_node_that_raises_fails_the_activation_with_its_exception_chained(
    httpserver: HTTPServer, tmp_path: Path
) -> None:
    failing = graph_agent(lg_graph.failing_builder)

    run = run_script(failing, _config(httpserver, tmp_path), Script().events(("k", b"?", 1_000)))

    assert run.outputs == []
    (error,) = run.errors
    assert error.reason == "activation_error"
    assert error.payload == b"?"
    assert error.detail.splitlines()[0] == (
        "GraphRunError: the graph raised ValueError: cannot triage '?'"
    )


def test_parallel_tool_calls_of_one_answer_each_run_once_in_the_order_listed(
    httpserver: HTTPServer, tmp_path: Path
) -> None:
    _serve(httpserver)
    event = ("ops", b"page both checkout search", 1_000)
    asked = run_script(agent, _config(httpserver, tmp_path), Script().events(event))
    (approval,) = [i for i in asked.intents if i.awaits_answer]
    script = Script().events(event).watermark(2_000)
    script.answers(("ops", approval.intent_id, b"approve", 3_000))

    lg_graph.slow["checkout"] = 0.3  # listed first: run alongside, it would page last
    try:
        with fail_after_tool_calls(times=1) as fault:
            run = run_script(agent, _config(httpserver, tmp_path), script)
    finally:
        lg_graph.slow.clear()

    assert fault.fired == [(b"ops", 1)]
    assert run.errors == []
    assert lg_graph.pages == [
        {"service": "checkout", "reason": "both"},
        {"service": "search", "reason": "both"},
    ]
    assert run.outputs == [(b"ops", b"done: paged search (page 2)")]
