"""`ctx.call_tool` on the streaming DirectRunner: each call reaches its target once."""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from beam_agents import AgentConfig
from beam_agents.errors import ConfigurationError
from beam_agents.local import LocalRun, Script, run_locally
from beam_agents.model import FakeLLM
from beam_agents.runtime.intents import intent_id
from beam_agents.runtime.transform import RunAgent
from beam_agents.testing.chaos import fail_after_tool_calls, fail_commit_once
from beam_agents.testing.streaming import Script as StreamScript
from beam_agents.testing.streaming import run_script
from beam_agents.tools import ToolCall
from beam_agents.tools.calls import ToolHandler
from beam_agents.tools.webhook import HttpWebhook
from tests.runtime.agents import clock_just_ahead
from tests.tools import agents

pytestmark = pytest.mark.pipeline


class Receiver:
    """A loopback target that counts deliveries per Idempotency-Key and answers a ticket id."""

    def __init__(self, server: HTTPServer) -> None:
        self.deliveries: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._url = server.url_for("/tickets")
        server.expect_request("/tickets", method="POST").respond_with_handler(self._answer)

    def _answer(self, request: Request) -> Response:
        with self._lock:
            self.deliveries[request.headers["Idempotency-Key"]] += 1
            number = len(self.deliveries)
        return Response(json.dumps({"ticket": f"T-{number}"}), status=201)

    def webhook(self) -> HttpWebhook:
        return HttpWebhook(self._url)


def _script(events: int) -> Script:
    script = Script()
    for i in range(events):
        t = 1_000 * (i + 1)
        script.events((f"case-{i % 3}", f"event {i}".encode(), t)).watermark(t + 1)
    return script


def _run(
    script: Script,
    tools: dict[str, ToolHandler],
    ledger: str,
    agent: Any = agents.ticket_by_call,
    **options: Any,
) -> LocalRun:
    config = AgentConfig(tools=tools, tool_ledger=ledger, **options)

    agent_fn = agent

    def build(events: Any, answers: Any) -> dict[str, Any]:
        agent = events | "RunAgent" >> RunAgent(agent_fn, config, answers=answers)
        return {"outputs": agent.outputs, "errors": agent.errors, "intents": agent.intents}

    return run_locally(script, build)


def _tool_ids(keys_and_seqs: list[tuple[bytes, int]]) -> set[str]:
    return {intent_id(key, seq, -1) for key, seq in keys_and_seqs}


def test_each_call_is_delivered_once_though_commits_fail_after_the_tool_ran(
    httpserver: HTTPServer, ledger_uri: str
) -> None:
    receiver = Receiver(httpserver)
    with fail_commit_once(b"case-1", 2, times=2) as fault:
        run = _run(_script(9), {"open_ticket": receiver.webhook()}, ledger_uri)
    assert fault.fired == [(b"case-1", 2)] * 2, "the chaos never happened"
    expected = _tool_ids([(f"case-{k}".encode(), s) for k in range(3) for s in (1, 2, 3)])
    assert receiver.deliveries == Counter(dict.fromkeys(expected, 1))
    answers = sorted(json.loads(output)["ticket"] for _key, output in run.outputs["outputs"])
    assert answers == sorted(f"T-{n}" for n in range(1, 10))
    assert run.outputs["errors"] == []


def test_failed_commits_after_tool_calls_replay_the_calls_and_count_them(
    httpserver: HTTPServer, ledger_uri: str
) -> None:
    receiver = Receiver(httpserver)
    with fail_after_tool_calls(times=3) as fault:
        run = _run(_script(9), {"open_ticket": receiver.webhook()}, ledger_uri)
    assert len(set(fault.fired)) == 3, "the chaos never happened"
    assert sorted(receiver.deliveries.values()) == [1] * 9
    assert run.counters().get("beam_agents.runtime/tool_calls", 0) == 9
    assert run.counters().get("beam_agents.runtime/tool_calls_replayed", 0) == 3
    assert len(run.outputs["outputs"]) == 9


def test_running_the_same_events_again_delivers_nothing_and_returns_recorded_results(
    httpserver: HTTPServer, ledger_uri: str
) -> None:
    receiver = Receiver(httpserver)
    first = _run(_script(6), {"open_ticket": receiver.webhook()}, ledger_uri)
    delivered = dict(receiver.deliveries)
    again = _run(_script(6), {"open_ticket": receiver.webhook()}, ledger_uri)
    assert sum(delivered.values()) == 6
    assert receiver.deliveries == delivered
    assert sorted(again.outputs["outputs"]) == sorted(first.outputs["outputs"])
    assert again.counters().get("beam_agents.runtime/tool_calls_replayed", 0) == 6
    assert again.counters().get("beam_agents.runtime/tool_calls", 0) == 0


def test_a_resumed_activation_replays_its_tool_call_instead_of_delivering_it_again(
    httpserver: HTTPServer, ledger_uri: str
) -> None:
    receiver = Receiver(httpserver)
    approval = intent_id(b"case-0", 1, 0)
    script = Script().events(("case-0", b"event 0", 1_000)).watermark(1_001)
    script.answers(("case-0", approval, b"yes", 2_000)).watermark(2_001)
    run = _run(script, {"open_ticket": receiver.webhook()}, ledger_uri, agents.ticket_then_approval)
    assert run.outputs["errors"] == []
    [(_key, output)] = run.outputs["outputs"]
    assert output == b'{"ticket": "T-1"} yes'
    assert receiver.deliveries == {intent_id(b"case-0", 1, -1): 1}
    assert [i.intent_id for i in run.outputs["intents"]] == [approval]
    assert run.counters().get("beam_agents.runtime/tool_calls_replayed", 0) == 1


CALLS: Counter[str] = Counter()


async def counted_ticket(call: ToolCall) -> bytes:
    """Module level (pickled by reference); counts executions per id in this process."""
    CALLS[call.intent_id] += 1
    return f"T-{call.intent_id[:4]}".encode()


def test_a_parked_activation_replays_its_earlier_tool_call_on_the_re_run() -> None:
    CALLS.clear()
    provider = FakeLLM(name="tool-park", latency_s=0.2, default=b"ok")
    provider.reset()
    config = AgentConfig(
        provider_factory=provider, tools={"open_ticket": counted_ticket}, tool_ledger="memory://p"
    )
    events = [(f"k{i}", f"e{i}".encode(), 1_000 + i) for i in range(12)]
    script = StreamScript().events(*events).watermark(1_100).processing_time(1_000)
    run = run_script(agents.tool_then_model, config, script, clock_ms=clock_just_ahead)

    assert len(run.outputs) == 12
    assert run.counter("beam_agents.runtime", "parks") > 0, "nothing parked"
    assert sorted(CALLS.values()) == [1] * 12
    assert run.counter("beam_agents.runtime", "tool_calls_replayed") >= run.counter(
        "beam_agents.runtime", "parks"
    )


def test_a_tool_call_that_waits_parks_and_runs_on_the_call_loop(ledger_uri: str) -> None:
    agents.tool_threads.clear()
    run = _run(_script(9), {"open_ticket": agents.slow_ticket}, ledger_uri)

    # The first call is awaited in place (it shows how long calls take); later ones park.
    assert agents.tool_threads == ["beam-agents-calls"] * 9, "each call executed once, there"
    assert run.counters().get("beam_agents.runtime/parks", 0) >= 1
    assert run.counters().get("beam_agents.runtime/tool_calls", 0) == 9
    expected = _tool_ids([(f"case-{k}".encode(), s) for k in range(3) for s in (1, 2, 3)])
    answered = {output.decode().removeprefix("ticket ") for _key, output in run.outputs["outputs"]}
    assert answered == expected
    assert run.outputs["errors"] == []


def test_a_tool_call_that_answers_at_once_is_awaited_on_the_call_loop_not_parked(
    request: pytest.FixtureRequest,
) -> None:
    """The ledger is in memory: a SQLite ledger's commit waits on the disk, which on
    a loaded machine makes the call slow enough to be worth parking, as it should."""
    agents.tool_threads.clear()
    ledger = f"memory://quick-tools-{request.node.name}"
    run = _run(_script(9), {"open_ticket": agents.quick_ticket}, ledger)

    assert agents.tool_threads == ["beam-agents-calls"] * 9
    assert run.counters().get("beam_agents.runtime/parks", 0) == 0
    assert len(run.outputs["outputs"]) == 9


def test_parked_tool_calls_run_once_though_commits_fail_after_them(ledger_uri: str) -> None:
    agents.tool_threads.clear()
    with fail_after_tool_calls(times=3) as fault:
        run = _run(_script(9), {"open_ticket": agents.slow_ticket}, ledger_uri)
    assert len(set(fault.fired)) == 3, "the chaos never happened"
    assert agents.tool_threads == ["beam-agents-calls"] * 9
    assert run.counters().get("beam_agents.runtime/parks", 0) >= 1
    assert run.counters().get("beam_agents.runtime/tool_calls_replayed", 0) == 3
    assert len(run.outputs["outputs"]) == 9


def test_tool_call_ids_never_collide_with_intent_ids(
    httpserver: HTTPServer, ledger_uri: str
) -> None:
    receiver = Receiver(httpserver)
    run = _run(_script(3), {"open_ticket": receiver.webhook()}, ledger_uri)
    emitted = {i.intent_id for i in run.outputs["intents"]}
    assert len(emitted) == 3
    assert len(receiver.deliveries) == 3
    assert emitted.isdisjoint(receiver.deliveries)
    assert {i.index for i in run.outputs["intents"]} == {0}


def test_a_failing_tool_dead_letters_as_tool_error_and_its_retry_delivers(
    httpserver: HTTPServer, ledger_uri: str
) -> None:
    httpserver.expect_oneshot_request("/tickets").respond_with_data(
        "down: token=hunter2", status=500
    )
    receiver = Receiver(httpserver)
    webhook = HttpWebhook(httpserver.url_for("/tickets"), max_attempts=1)
    failed = _run(_script(1), {"open_ticket": webhook}, ledger_uri)
    [error] = failed.outputs["errors"]
    assert (error.reason, error.entity_key) == ("tool_error", b"case-0")
    assert "HTTP 500" in error.detail
    assert "hunter2" not in error.detail
    assert failed.outputs["outputs"] == []
    assert failed.outputs["intents"] == []
    # The failed call released its claim: replaying the event delivers at once.
    retried = _run(_script(1), {"open_ticket": receiver.webhook()}, ledger_uri)
    assert retried.outputs["errors"] == []
    assert list(receiver.deliveries.values()) == [1]


def test_an_unknown_tool_dead_letters_as_tool_error(ledger_uri: str) -> None:
    async def other(call: ToolCall) -> bytes:
        return b"never"

    run = _run(_script(1), {"something_else": other}, ledger_uri)
    [error] = run.outputs["errors"]
    assert error.reason == "tool_error"
    assert "no handler for tool 'open_ticket'" in error.detail


def test_tools_without_a_ledger_are_refused_saying_why() -> None:
    async def page(call: ToolCall) -> bytes:
        return b"paged"

    with pytest.raises(ConfigurationError, match=r"AgentConfig\.tools: need a ledger.*retr"):
        AgentConfig(tools={"page": page})
    with pytest.raises(ConfigurationError, match=r"AgentConfig\.tool_ledger: an in-memory SQLite"):
        AgentConfig(tools={"page": page}, tool_ledger="sqlite+aiosqlite://")
    with pytest.raises(ConfigurationError, match=r"AgentConfig\.tools\['page'\]"):
        AgentConfig(tools={"page": 3}, tool_ledger="memory://t")  # type: ignore[dict-item]
    assert AgentConfig(tools={"page": page}, tool_ledger="memory://t").tools.keys() == {"page"}
    assert "page" in repr(AgentConfig(tools={"page": page}, longterm_memory="memory://t"))


def test_a_config_with_tools_stays_hashable() -> None:
    async def page(call: ToolCall) -> bytes:
        return b"paged"

    config = AgentConfig(tools={"page": page}, tool_ledger="memory://t")
    assert hash(config) == hash(AgentConfig(tools={"page": page}, tool_ledger="memory://t"))


def test_an_oversized_result_dead_letters_as_tool_error_and_frees_the_call_for_its_retry(
    httpserver: HTTPServer, ledger_uri: str
) -> None:
    """The refused record releases the claim: the replay delivers instead of timing out."""
    config = {"activation_timeout_s": 2.0}
    failed = _run(_script(1), {"open_ticket": agents.oversized_ticket}, ledger_uri, **config)
    [error] = failed.outputs["errors"]
    assert error.reason == "tool_error"
    size_named = error.detail.replace(",", "")
    assert f"{len(agents.OVERSIZED)} bytes" in size_named
    assert "524288-byte limit" in size_named
    assert failed.outputs["outputs"] == []
    receiver = Receiver(httpserver)
    retried = _run(_script(1), {"open_ticket": receiver.webhook()}, ledger_uri, **config)
    assert retried.outputs["errors"] == []
    assert list(receiver.deliveries.values()) == [1]
    assert [output for _key, output in retried.outputs["outputs"]] == [b'{"ticket": "T-1"}']


def test_a_late_lease_holder_returns_the_result_the_ledger_keeps(ledger_uri: str) -> None:
    """Another holder took the call over and recorded first: the agent sees that result."""
    agents.takeover_ledger.append(ledger_uri)
    run = _run(_script(1), {"open_ticket": agents.taken_over_ticket}, ledger_uri)
    assert run.outputs["errors"] == []
    assert [output for _key, output in run.outputs["outputs"]] == [b"the other holder's ticket"]


def test_deeply_nested_tool_args_dead_letter_as_tool_error(ledger_uri: str) -> None:
    """Args no JSON reader can take fail the activation, not the bundle."""
    tools: dict[str, ToolHandler] = {"open_ticket": agents.quick_ticket}
    run = _run(_script(2), tools, ledger_uri, agent=agents.deeply_nested_call)
    assert [(e.reason, e.entity_key) for e in run.outputs["errors"]] == [
        ("tool_error", b"case-0"),
        ("tool_error", b"case-1"),
    ]
    assert all("open_ticket" in e.detail and "nested" in e.detail for e in run.outputs["errors"])
    assert run.outputs["outputs"] == []
