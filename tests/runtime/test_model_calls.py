"""ctx.call_model: provider errors, FakeLLM scripting and the replay cache bounds."""

from __future__ import annotations

import asyncio

import pytest

from beam_agents import AgentConfig, LlmRequest, LlmResponse
from beam_agents.model import FakeLLM, FakeLLMError, Rule
from beam_agents.model.replay import ReplayCache, ReplayLimits, call_key
from beam_agents.testing.streaming import Script, run_script
from tests.runtime import agents


@pytest.mark.pipeline
def test_a_provider_failure_is_a_model_error_and_commits_nothing() -> None:
    provider = FakeLLM(name="model-fails-once", fail_first=1, default=b"fine")
    provider.reset()
    script = (
        Script().events(("k", b"first", 1_000)).watermark(2_000).events(("k", b"second", 3_000))
    )

    run = run_script(agents.ask_model, AgentConfig(provider_factory=provider), script)

    assert run.reasons() == ["model_error"]
    assert "scripted failure" in run.errors[0].detail
    assert run.outputs == [(b"k", b"fine")]
    assert run.counter("beam_agents.runtime", "errors_model_error") == 1


@pytest.mark.pipeline
def test_calling_a_model_without_a_provider_names_the_config_field() -> None:
    run = run_script(agents.ask_model, AgentConfig(), Script().events(("k", b"q", 1_000)))

    assert run.reasons() == ["model_error"]
    assert "AgentConfig.provider_factory" in run.errors[0].detail


def test_fake_llm_answers_by_rule_counts_calls_and_simulates_latency() -> None:
    provider = FakeLLM(
        name="fake-unit",
        rules=(Rule(pattern="disk", response=b"page oncall"),),
        default=b"ignore #{n}",
        latency_s=0.01,
    )
    provider.reset()

    async def ask(text: str) -> LlmResponse:
        return await provider.complete(LlmRequest(model_id="m", messages=[text]))

    first = asyncio.run(ask("disk full"))
    second = asyncio.run(ask("cpu idle"))

    assert first.response == b"page oncall"
    assert second.response == b"ignore #2"
    assert provider.call_count() == 2
    assert [r.messages for r in provider.calls()] == [["disk full"], ["cpu idle"]]


def test_fake_llm_logs_when_its_calls_start_and_end_so_overlap_needs_no_clock() -> None:
    provider = FakeLLM(name="fake-steps", latency_s=0.01, fail_pattern="boom")
    provider.reset()
    request = LlmRequest(model_id="m", messages=["x"])

    async def three_at_once() -> None:
        await asyncio.gather(*(provider.complete(request) for _ in range(3)))

    asyncio.run(provider.complete(request))
    asyncio.run(three_at_once())
    with pytest.raises(FakeLLMError):  # a failed call ends too
        asyncio.run(provider.complete(LlmRequest(model_id="m", messages=["boom"])))

    steps = provider.call_steps()
    assert steps[:2] == [("start", 1), ("end", 1)]
    assert steps[2:5] == [("start", 2), ("start", 3), ("start", 4)]
    assert sorted(steps[5:8]) == [("end", 2), ("end", 3), ("end", 4)]
    assert steps[8:] == [("start", 5), ("end", 5)]
    assert provider.peak_in_flight() == 3


def test_fake_llm_one_call_at_a_time_peaks_at_one() -> None:
    provider = FakeLLM(name="fake-serial-steps")
    provider.reset()
    for text in ("a", "b"):
        asyncio.run(provider.complete(LlmRequest(model_id="m", messages=[text])))

    assert provider.peak_in_flight() == 1
    provider.reset()
    assert provider.call_steps() == []
    assert provider.peak_in_flight() == 0


def test_requests_that_cannot_be_hashed_canonically_are_rejected() -> None:
    from beam_agents.model.messages import canonical_request_bytes

    with pytest.raises(TypeError, match="JSON"):
        canonical_request_bytes(LlmRequest(model_id="m", messages=[object()]))
    a = canonical_request_bytes(LlmRequest("m", [{"b": 1, "a": 2}]))
    b = canonical_request_bytes(LlmRequest("m", [{"a": 2, "b": 1}]))
    assert a == b


def test_call_keys_differ_by_request_entity_seq_and_index() -> None:
    base = call_key(b"req", b"k", 1, 0)

    assert len({base, call_key(b"req2", b"k", 1, 0), call_key(b"req", b"k2", 1, 0)}) == 3
    assert len({base, call_key(b"req", b"k", 2, 0), call_key(b"req", b"k", 1, 1)}) == 3
    # Length prefixes: moving a byte between fields changes the key.
    assert call_key(b"ab", b"c", 1, 0) != call_key(b"a", b"bc", 1, 0)


def test_replay_cache_keeps_only_a_live_suspensions_calls_within_bounds() -> None:
    cache = ReplayCache(None)
    for i in range(10):
        cache.record(f"k{i}", 7, LlmResponse(b"x" * 100), now_ms=1_000)
    cache.record("old-seq", 6, LlmResponse(b"y"), now_ms=1_000)

    assert list(cache.for_commit(None, 1_000, ReplayLimits()).calls) == []
    kept = cache.for_commit(7, 1_000, ReplayLimits(max_entries=4))
    assert [c.call_key for c in kept.calls] == ["k6", "k7", "k8", "k9"]
    small = cache.for_commit(7, 1_000, ReplayLimits(max_bytes=250))
    assert [c.call_key for c in small.calls] == ["k8", "k9"]
    aged = cache.for_commit(7, 1_000 + 10, ReplayLimits(max_age_ms=5))
    assert list(aged.calls) == []
