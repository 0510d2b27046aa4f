"""`IntentExecutor`, the logic `ExecuteIntents` runs, without a runner."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Generator

import pytest

from beam_agents.memory.stores.errors import StoreError, StoreUnavailableError
from beam_agents.proto.beam_agents_pb2 import ToolIntent
from beam_agents.runtime.intents import make_intent
from beam_agents.tools import InMemoryToolLedger, ToolCall, ToolResult, open_ledger
from beam_agents.tools.calls import as_handler
from beam_agents.tools.executor import IntentExecutor, ToolFailure


def _intent(tool: str = "open_ticket", args: bytes = b'{"title":"db"}') -> ToolIntent:
    return make_intent(
        entity_key=b"case-1", seq=1, index=0, tool=tool, args_json=args, event_time_ms=1
    )


def test_executors_racing_on_one_intent_call_the_tool_once() -> None:
    calls: list[str] = []

    async def open_ticket(call: ToolCall) -> bytes:
        calls.append(call.intent_id)
        await asyncio.sleep(0.05)
        return b"T-1"

    async def main() -> list[ToolResult | ToolFailure]:
        namespace = uuid.uuid4().hex
        executors = [
            IntentExecutor(
                {"open_ticket": as_handler(open_ticket)},
                InMemoryToolLedger.shared(namespace),
                lease_ms=10_000,
            )
            for _ in range(4)
        ]
        intent = _intent()
        return await asyncio.gather(*(e.execute(intent) for e in executors))

    outcomes = asyncio.run(main())
    assert len(calls) == 1
    assert all(isinstance(o, ToolResult) and o.result == b"T-1" for o in outcomes)
    statuses = sorted(o.status for o in outcomes if isinstance(o, ToolResult))
    assert statuses == ["executed", "recorded", "recorded", "recorded"]


def test_a_failing_handler_is_called_max_attempts_times_then_dead_lettered() -> None:
    attempts: list[int] = []

    async def flaky(call: ToolCall) -> bytes:
        attempts.append(1)
        raise ConnectionError("password=hunter2 refused")

    async def main() -> ToolResult | ToolFailure:
        executor = IntentExecutor(
            {"open_ticket": as_handler(flaky)},
            InMemoryToolLedger(),
            lease_ms=10_000,
            max_attempts=3,
            backoff_s=0.001,
        )
        return await executor.execute(_intent())

    outcome = asyncio.run(main())
    assert isinstance(outcome, ToolFailure)
    assert (outcome.reason, outcome.attempts, len(attempts)) == ("tool_error", 3, 3)
    assert "hunter2" not in outcome.detail
    assert ToolIntent.FromString(outcome.payload) == _intent()


def test_a_failure_then_a_success_is_one_result_with_two_attempts() -> None:
    answers = iter([RuntimeError("once"), b"T-9"])

    async def once_flaky(call: ToolCall) -> bytes:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    executor = IntentExecutor(
        {"open_ticket": as_handler(once_flaky)},
        InMemoryToolLedger(),
        lease_ms=10_000,
        max_attempts=2,
        backoff_s=0.001,
    )
    outcome = asyncio.run(executor.execute(_intent()))
    assert isinstance(outcome, ToolResult)
    assert (outcome.status, outcome.result, outcome.attempts) == ("executed", b"T-9", 2)


@pytest.mark.parametrize(
    ("intent", "reason"),
    [
        (_intent(tool="nope"), "unknown_tool"),
        (_intent(args=b"[1, 2]"), "invalid_intent"),
        (_intent(args=b"{not json"), "invalid_intent"),
    ],
)
def test_intents_that_cannot_run_are_dead_lettered_without_a_call(
    intent: ToolIntent, reason: str
) -> None:
    async def never(call: ToolCall) -> bytes:
        raise AssertionError("called")

    executor = IntentExecutor(
        {"open_ticket": as_handler(never)}, InMemoryToolLedger(), lease_ms=10_000
    )
    outcome = asyncio.run(executor.execute(intent))
    assert isinstance(outcome, ToolFailure)
    assert (outcome.reason, outcome.attempts) == (reason, 0)


def test_a_handler_that_returns_text_is_a_tool_error() -> None:
    async def text(call: ToolCall) -> bytes:
        return "T-1"  # type: ignore[return-value]

    executor = IntentExecutor({"open_ticket": as_handler(text)}, InMemoryToolLedger(), lease_ms=1)
    outcome = asyncio.run(executor.execute(_intent()))
    assert isinstance(outcome, ToolFailure)
    assert "returns bytes, got str" in outcome.detail


def test_an_unreachable_ledger_is_raised_not_dead_lettered() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def never(call: ToolCall) -> bytes:
        raise AssertionError("called")

    async def main() -> ToolResult | ToolFailure:
        ledger = open_ledger(f"postgresql+asyncpg://app@127.0.0.1:{port}/x")
        executor = IntentExecutor({"open_ticket": as_handler(never)}, ledger, lease_ms=1000)
        try:
            return await executor.execute(_intent())
        finally:
            await executor.aclose()

    with pytest.raises(StoreUnavailableError):
        asyncio.run(main())


def test_call_once_raises_after_its_attempts_and_leaves_the_id_claimable() -> None:
    """What an activation's own tool call relies on: the failure is typed, the claim freed."""
    from beam_agents.tools import Claimed, ToolCallError
    from beam_agents.tools.once import call_once

    async def down(call: ToolCall) -> bytes:
        raise TimeoutError("no answer")

    async def main() -> object:
        ledger = InMemoryToolLedger()
        call = ToolCall(str(uuid.uuid4()), "open_ticket", b"case-1", {})
        with pytest.raises(ToolCallError) as failure:
            await call_once(
                ledger, as_handler(down), call, lease_ms=60_000, max_attempts=2, backoff_s=0.001
            )
        assert failure.value.attempts == 2
        assert "TimeoutError: no answer" in str(failure.value)
        return await ledger.claim(call.intent_id)

    assert isinstance(asyncio.run(main()), Claimed)


def test_a_handler_that_fails_to_close_leaves_no_other_handler_or_the_ledger_open() -> None:
    closed: list[str] = []

    class Handler:
        def __init__(self, name: str, fails: bool) -> None:
            self.name, self.fails = name, fails

        async def __call__(self, call: ToolCall) -> bytes:
            return b""

        async def aclose(self) -> None:
            closed.append(self.name)
            if self.fails:
                raise RuntimeError(f"{self.name} would not close")

    ledger = InMemoryToolLedger()
    handlers = {"page": Handler("page", fails=True), "ticket": Handler("ticket", fails=False)}
    executor = IntentExecutor(handlers, ledger, lease_ms=1_000)

    with pytest.raises(RuntimeError, match="page would not close"):
        asyncio.run(executor.aclose())

    assert closed == ["page", "ticket"]
    with pytest.raises(StoreError, match="closed"):
        asyncio.run(ledger.claim(_intent().intent_id))


class _Pending:
    """Awaits forever: a handler stopped here is a call the runtime gave up on."""

    def __await__(self) -> Generator[None, None, None]:
        yield


@pytest.mark.parametrize("ledger_open", [True, False])
def test_a_call_closed_mid_handler_touches_no_ledger_and_its_lease_runs_out(
    ledger_open: bool,
) -> None:
    """An abandoned call is closed later by the garbage collector, when nothing may be
    awaited and its ledger may be closed: it leaves the claim to lapse with its lease."""
    from beam_agents.tools import Busy
    from beam_agents.tools.once import call_once

    async def hangs(call: ToolCall) -> bytes:
        await _Pending()
        return b"never"

    ledger = InMemoryToolLedger()
    call = ToolCall(str(uuid.uuid4()), "open_ticket", b"case-1", {})
    abandoned = call_once(ledger, as_handler(hangs), call, lease_ms=60_000)
    abandoned.send(None)  # claimed, and stopped inside the handler
    if not ledger_open:
        asyncio.run(ledger.close())

    abandoned.close()

    if ledger_open:
        assert isinstance(asyncio.run(ledger.claim(call.intent_id)), Busy)
