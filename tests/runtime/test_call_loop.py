"""The process-wide call loop: where parked calls run, and what its table keeps."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from beam_agents import AgentConfig, LlmRequest
from beam_agents.model import FakeLLM
from beam_agents.runtime._calls import call_loop as _calls
from beam_agents.runtime._calls.call_loop import CallLoop
from beam_agents.runtime._calls.driver import RunawayError
from beam_agents.testing.streaming import Script, run_script
from tests.runtime import agents

REQUEST = LlmRequest(model_id="fake-1", messages=["hello"])
REQUEST_TIMEOUT_S = 5.0


def _model(factory: Callable[[], FakeLLM]) -> Callable[[CallLoop], Awaitable[object]]:
    """The work of a parked model call: ask the RunAgent's provider on the loop."""
    return lambda loop: loop.provider("t", factory).complete(REQUEST)


def _answered(loop: CallLoop, key: str, provider: FakeLLM) -> None:
    assert loop.submit("t", key, _model(provider), REQUEST_TIMEOUT_S)
    loop.wait("t", key, 5.0)


def test_calls_run_on_one_background_thread_with_a_provider_built_there() -> None:
    built_on: list[str] = []

    def factory() -> FakeLLM:
        built_on.append(threading.current_thread().name)
        return FakeLLM(name="loop-thread", latency_s=0.01)

    loop = CallLoop()
    for key in ("a", "b", "c"):
        assert loop.submit("t", key, _model(factory), REQUEST_TIMEOUT_S)
    for key in ("a", "b", "c"):
        loop.wait("t", key, 5.0)
        finished = loop.take("t", key)
        assert finished is not None
        assert finished.result().response == b"ok"

    assert built_on == ["beam-agents-calls"]  # once per RunAgent token, on the loop's thread
    assert loop.inflight == 0


_submitter: contextvars.ContextVar[str] = contextvars.ContextVar("submitter", default="none")


def test_calls_submitted_while_the_loop_is_busy_start_on_one_wake_up_in_order() -> None:
    """A burst of parks wakes the loop once; each call still runs in its submitter's context."""
    loop = CallLoop()
    entered, gate = threading.Event(), threading.Event()

    async def hold(_: CallLoop) -> object:
        entered.set()
        gate.wait(5.0)  # keeps the loop's thread busy, as the interpreter lock would
        return None

    assert loop.submit("t", "busy", hold, REQUEST_TIMEOUT_S)
    assert entered.wait(5.0)
    started: list[tuple[str, str]] = []

    def record(key: str) -> Callable[[CallLoop], Awaitable[object]]:
        async def work(_: CallLoop) -> object:
            started.append((key, _submitter.get()))
            return key

        return work

    wakes = 0
    events_loop = loop._started()
    wake = events_loop.call_soon_threadsafe

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal wakes
        wakes += 1
        return wake(*args, **kwargs)

    events_loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
    keys = [f"k{i}" for i in range(5)]
    for key in keys:
        lent = _submitter.set(f"thread of {key}")
        assert loop.submit("t", key, record(key), REQUEST_TIMEOUT_S)
        _submitter.reset(lent)
    gate.set()
    for key in keys:
        loop.wait("t", key, 5.0)
        finished = loop.take("t", key)
        assert finished is not None
        assert finished.result() == key

    assert wakes == 1
    assert started == [(key, f"thread of {key}") for key in keys]
    assert loop.inflight == 0


def test_a_known_call_is_not_started_twice() -> None:
    provider = FakeLLM(name="loop-once", latency_s=0.05)
    provider.reset()
    loop = CallLoop()

    assert loop.submit("t", "k", _model(provider), REQUEST_TIMEOUT_S)
    assert not loop.submit("t", "k", _model(provider), REQUEST_TIMEOUT_S)
    loop.wait("t", "k", 5.0)
    assert provider.call_count() == 1


def test_an_answer_nobody_takes_is_dropped_once_it_is_old(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = CallLoop()
    provider = FakeLLM(name="loop-sweep")
    _answered(loop, "moved-away", provider)
    assert loop.find("t", "moved-away") is not None

    monkeypatch.setattr(_calls, "_UNCLAIMED_S", 0.0)
    _answered(loop, "next", provider)

    assert loop.find("t", "moved-away") is None
    assert loop.find("t", "next") is not None


@pytest.mark.pipeline
@pytest.mark.parametrize("inflight", [1, 256])
def test_a_call_past_the_activation_timeout_fails_even_under_a_broad_except(inflight: int) -> None:
    provider = FakeLLM(name=f"loop-timeout-{inflight}", latency_s=2.0)
    provider.reset()
    config = AgentConfig(
        provider_factory=provider, activation_timeout_s=0.2, max_inflight_calls=inflight
    )
    events = [(f"k{i}", b"slow", 1_000 + i) for i in range(4)]
    script = Script().events(*events).watermark(2_000).processing_time(1_000)

    run = run_script(
        agents.ask_inside_a_broad_except, config, script, clock_ms=agents.clock_just_ahead
    )

    assert run.outputs == []
    assert run.reasons() == ["activation_timeout"] * 4
    assert all("did not finish within 0.2 s" in e.detail for e in run.errors)


def test_a_call_that_ignores_cancellation_is_abandoned_and_frees_its_slot() -> None:
    loop = CallLoop()

    assert loop.submit("t", "stubborn", lambda _: agents.ignore_cancellation(), 0.1)
    assert loop.inflight == 1
    loop.wait("t", "stubborn", 5.0)

    finished = loop.take("t", "stubborn")
    assert finished is not None
    assert isinstance(finished.exception(), RunawayError)
    assert loop.inflight == 0
