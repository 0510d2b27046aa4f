"""Loop budgets: a runaway agent loop ends at `max_model_calls` / `max_tool_calls`."""

from __future__ import annotations

from collections import Counter

import pytest

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest
from beam_agents.errors import ConfigurationError
from beam_agents.model import FakeLLM
from beam_agents.testing.streaming import Script, StreamRun, run_script
from beam_agents.tools.calls import ToolCall
from tests.runtime.agents import clock_just_ahead

EVENTS = (("k", b"e1", 1_000), ("other", b"o1", 1_500))
TOOL_CALLS: Counter[str] = Counter()


async def ask_until_told_to_stop(ctx: ActivationContext) -> Complete:
    """A runaway loop: asks again and again, each question new, until the model says "stop"."""
    turn = 0
    while True:
        turn += 1
        answer = await ctx.call_model(
            LlmRequest(model_id="fake-1", messages=[{"role": "user", "content": f"turn {turn}"}])
        )
        if answer.response == b"stop":
            return Complete(f"{turn} turns".encode())
        ctx.memory.set("last", answer.response)


async def ticket_until_told_to_stop(ctx: ActivationContext) -> Complete:
    """A runaway loop of tool calls, each with new arguments."""
    turn = 0
    while True:
        turn += 1
        await ctx.call_tool("open_ticket", {"turn": turn})


async def counted_ticket(call: ToolCall) -> bytes:
    """Module level (pickled by reference); counts executions per call id in this process."""
    TOOL_CALLS[call.intent_id] += 1
    return b"T-1"


def _model_run(name: str, *, limit: int, latency_s: float = 0.0, inflight: int = 1) -> StreamRun:
    provider = FakeLLM(name=name, default=b"again", latency_s=latency_s)
    provider.reset()
    config = AgentConfig(
        provider_factory=provider, max_model_calls=limit, max_inflight_calls=inflight
    )
    return run_script(
        ask_until_told_to_stop,
        config,
        Script().events(*EVENTS).watermark(2_000).processing_time(1_000),
        clock_ms=clock_just_ahead,
    )


@pytest.mark.pipeline
def test_a_runaway_model_loop_ends_as_budget_exceeded_naming_max_model_calls() -> None:
    run = _model_run("loop-model", limit=3)

    assert run.reasons() == ["budget_exceeded", "budget_exceeded"]
    assert all("max_model_calls=3 reached" in error.detail for error in run.errors)
    assert "model call 4 of this activation refused" in run.errors[0].detail
    assert sorted(error.payload for error in run.errors) == [b"e1", b"o1"]
    assert run.outputs == []
    # The refused call never reached the provider: three per event, no more.
    assert FakeLLM(name="loop-model").call_count() == 6


@pytest.mark.pipeline
def test_a_parked_runaway_loop_stops_at_the_same_call_as_in_place() -> None:
    in_place = _model_run("loop-serial", limit=4)
    parked = _model_run("loop-parked", limit=4, latency_s=0.05, inflight=256)

    assert parked.counter("beam_agents.runtime", "parks") > 0, "nothing parked"
    assert [(e.reason, e.payload, e.detail) for e in parked.errors] == [
        (e.reason, e.payload, e.detail) for e in in_place.errors
    ]
    assert FakeLLM(name="loop-parked").call_count() == FakeLLM(name="loop-serial").call_count()


@pytest.mark.pipeline
def test_a_runaway_tool_loop_ends_as_budget_exceeded_after_max_tool_calls_ran_once_each() -> None:
    TOOL_CALLS.clear()
    config = AgentConfig(
        tools={"open_ticket": counted_ticket}, tool_ledger="memory://loop", max_tool_calls=2
    )
    run = run_script(ticket_until_told_to_stop, config, Script().events(("k", b"e1", 1_000)))

    assert run.reasons() == ["budget_exceeded"]
    assert "max_tool_calls=2 reached: tool call 3 of this activation refused" in (
        run.errors[0].detail
    )
    assert sorted(TOOL_CALLS.values()) == [1, 1]


def test_loop_budgets_must_be_positive_ints() -> None:
    for field, value in (
        ("max_model_calls", 0),
        ("max_tool_calls", -1),
        ("max_model_calls", 2.0),
        ("max_tool_calls", True),
    ):
        with pytest.raises(ConfigurationError, match=f"AgentConfig.{field}"):
            AgentConfig(**{field: value})  # type: ignore[arg-type]
