"""Parked calls end as calls in place do: timeouts, abandoned calls and budgets."""

from __future__ import annotations

import uuid

import pytest
from apache_beam.metrics.metric import MetricsFilter

from beam_agents import AgentConfig, TokenBudget
from beam_agents.runtime._calls.call_loop import call_loop
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime import agents

pytestmark = pytest.mark.pipeline

RUNTIME = "beam_agents.runtime"
_RUNAWAY = "ignored cancellation for a further second: abandoned"


def _slow_events(keys: int) -> Script:
    events = [(f"k{i}", b"slow", 1_000 + i) for i in range(keys)]
    return Script().events(*events).watermark(2_000).processing_time(1_000)


def _inflight_gauge(run: StreamRun) -> int | None:
    found = run.metrics.query(
        MetricsFilter().with_namespace(RUNTIME).with_name("model_calls_inflight")
    )
    gauges = [g.committed for g in found["gauges"] if g.committed is not None]
    return max(gauges, key=lambda g: g.timestamp).value if gauges else None


@pytest.mark.parametrize("inflight", [1, 256])
def test_a_model_call_that_ignores_cancellation_is_abandoned_parked_or_in_place(
    inflight: int,
) -> None:
    """Each stubborn call ends its activation as a runaway does in place, in bounded time,
    and an abandoned parked call gives its in-flight slot back."""
    config = AgentConfig(
        provider_factory=agents.stubborn_provider,
        activation_timeout_s=1,
        max_inflight_calls=inflight,
    )

    run = run_script(agents.ask_model, config, _slow_events(3), clock_ms=agents.clock_just_ahead)

    assert run.outputs == []
    assert run.reasons() == ["activation_timeout"] * 3
    assert all(_RUNAWAY in e.detail for e in run.errors)
    if inflight > 1:
        assert run.counter(RUNTIME, "parks") == 2  # the first call waits in place
        assert _inflight_gauge(run) == 0


def test_stubborn_model_calls_end_byte_identically_with_1_and_256_calls_in_flight() -> None:
    def run(inflight: int) -> StreamRun:
        config = AgentConfig(
            provider_factory=agents.stubborn_provider,
            activation_timeout_s=1,
            max_inflight_calls=inflight,
        )
        script = _slow_events(2).events(("k0", b"next", 3_000))
        return run_script(agents.ask_model, config, script, clock_ms=agents.clock_just_ahead)

    serial, parked = run(1), run(256)

    assert parked.fingerprint() == serial.fingerprint()
    assert parked.counter(RUNTIME, "parks") >= 1


def test_a_parked_call_that_answers_after_its_cancellation_still_timed_out() -> None:
    """In place, nothing that comes after the deadline is used: parked, neither."""

    def run(inflight: int) -> StreamRun:
        config = AgentConfig(
            provider_factory=agents.late_provider,
            activation_timeout_s=0.2,
            max_inflight_calls=inflight,
        )
        return run_script(
            agents.ask_model, config, _slow_events(3), clock_ms=agents.clock_just_ahead
        )

    serial, parked = run(1), run(256)

    assert serial.reasons() == ["activation_timeout"] * 3
    assert parked.fingerprint() == serial.fingerprint()
    assert parked.counter(RUNTIME, "parks") == 2


def _stubborn_tools(inflight: int) -> StreamRun:
    config = AgentConfig(
        tools={"open_ticket": agents.stubborn_ticket},
        tool_ledger=f"memory://stubborn-{uuid.uuid4().hex}",
        activation_timeout_s=1,
        max_inflight_calls=inflight,
    )
    return run_script(
        agents.ticket_or_ask,
        config,
        Script()
        .events(*[(f"k{i}", b"tool %d" % i, 1_000 + i) for i in range(3)])
        .watermark(2_000)
        .processing_time(1_000),
        clock_ms=agents.clock_just_ahead,
    )


def test_stubborn_tool_calls_end_byte_identically_with_1_and_256_calls_in_flight() -> None:
    """The first tool call waits on the call loop in place; once its abandonment shows the
    tools are slow, the others park: each ends as the runaway it is in place."""
    serial, parked = _stubborn_tools(1), _stubborn_tools(256)

    assert serial.reasons() == ["activation_timeout"] * 3
    assert all(_RUNAWAY in e.detail for e in serial.errors)
    assert parked.fingerprint() == serial.fingerprint()
    assert parked.counter(RUNTIME, "parks") >= 1
    assert call_loop.inflight == 0


# -- budgets: a call admitted once stays admitted ------------------------------------------


def _budget_run(inflight: int) -> StreamRun:
    config = AgentConfig(
        provider_factory=agents.fast_then_slow_provider,
        token_budget=TokenBudget(per_key=50, window_ms=60_000),
        max_inflight_calls=inflight,
    )
    script = Script().events(("w", b"warm up", 1_000), ("k", b"e1", 1_001), ("k", b"e2", 1_002))
    script.watermark(2_000).processing_time(1_000)
    return run_script(agents.ask_twice_at_once, config, script, clock_ms=agents.clock_just_ahead)


def test_calls_started_together_within_the_budget_are_admitted_parked_as_in_place() -> None:
    """Both calls of a task group are checked before either answers, so both run; the
    re-run that takes the first (60 tokens) must not refuse the second, still running."""
    serial, parked = _budget_run(1), _budget_run(256)

    assert sorted(serial.outputs) == [(b"k", b"fast+slow"), (b"w", b"fast+slow")]
    # The key spent 70 of its 50 tokens: both calls of its next event are refused.
    assert serial.reasons() == ["activation_error"]
    assert [e.payload for e in serial.errors] == [b"e2"]
    assert parked.fingerprint() == serial.fingerprint()
    assert parked.counter(RUNTIME, "parks") > 0
