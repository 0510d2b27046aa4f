"""Flow control in a pipeline: a quota is held without dropping work, and never changes an answer.

Every run goes through RunAgent on the streaming DirectRunner to an
OpenAI-compatible server on loopback that holds a per-minute quota
(`beam_agents.testing.rate_limited_server`). Assertions are on what the
server and the pipeline counted, never on how long anything took.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest, RateLimit
from beam_agents.model import OpenAICompatibleProvider, provider_from_spec
from beam_agents.testing.pytest_plugin import serve
from beam_agents.testing.rate_limited_server import RateLimitedServer
from beam_agents.testing.services.redis import RedisServer
from beam_agents.testing.streaming import Script, StreamRun, run_script
from tests.runtime.agents import clock_just_ahead

KEY_ENV = "BEAM_AGENTS_TEST_FLOW_KEY"


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loopback server takes any bearer key; the provider needs one to send."""
    monkeypatch.setenv(KEY_ENV, "flow-test-key")


@dataclass(frozen=True)
class ChatAt:
    """A picklable provider factory: the OpenAI-compatible provider on the loopback server."""

    base_url: str
    max_retries: int = 3

    def __call__(self) -> OpenAICompatibleProvider:
        return OpenAICompatibleProvider(
            "flow-test", base_url=self.base_url, api_key_env=KEY_ENV, max_retries=self.max_retries
        )


@dataclass(frozen=True)
class ServedChatAt(ChatAt):
    """The same factory, saying what it knows: each of its calls is a round trip."""

    calls_wait: ClassVar[bool] = True


async def one_call(ctx: ActivationContext) -> Complete:
    answer = await ctx.call_model(
        LlmRequest(
            model_id="flow-test",
            messages=[{"role": "user", "content": ctx.event.decode()}],
            sampling_params={"max_output_tokens": 16},
        )
    )
    return Complete(answer.response)


def _run(config: AgentConfig, events: int, keys: int) -> StreamRun:
    script = Script().events(
        *[(f"key-{i % keys}", f"event {i}".encode(), 1_000 + i) for i in range(events)]
    )
    script.watermark(1_000 + events).processing_time(1_000)
    return run_script(one_call, config, script, clock_ms=clock_just_ahead)


@pytest.mark.pipeline
def test_a_provider_capped_per_minute_answers_every_event_without_a_dead_letter() -> None:
    with RateLimitedServer(rpm=1_200, latency_s=0.02) as server:
        limited = _run(
            AgentConfig(
                provider_factory=ChatAt(server.base_url),
                rate_limit=RateLimit(requests_per_minute=1_200),
            ),
            events=60,
            keys=20,
        )
        stats = server.stats()

    assert limited.errors == []
    assert len(limited.outputs) == 60
    assert stats.throttled <= 3, f"{stats.throttled} of {stats.requests} calls met a 429"


@pytest.mark.pipeline
def test_limits_change_when_a_call_goes_never_what_it_answers() -> None:
    with RateLimitedServer(rpm=1_200, latency_s=0.02) as server:
        limited = _run(
            AgentConfig(
                provider_factory=ChatAt(server.base_url),
                rate_limit=RateLimit(requests_per_minute=1_200, tokens_per_minute=40_000),
            ),
            events=40,
            keys=10,
        )
    with RateLimitedServer(latency_s=0.02) as server:
        serial = _run(
            AgentConfig(provider_factory=ChatAt(server.base_url), max_inflight_calls=1),
            events=40,
            keys=10,
        )

    assert limited.errors == []
    assert limited.fingerprint() == serial.fingerprint()


@pytest.mark.pipeline
def test_without_a_rate_limit_429s_wait_and_are_retried_instead_of_dead_lettering() -> None:
    """The SDK's own retries are off: every 429 reaches flow control, which waits it out."""
    with RateLimitedServer(rpm=600, latency_s=0.01) as server:
        run = _run(
            AgentConfig(provider_factory=ChatAt(server.base_url, max_retries=0)),
            events=30,
            keys=30,
        )
        stats = server.stats()

    assert run.errors == []
    assert len(run.outputs) == 30
    assert stats.throttled > 0, "the server never refused: the test proves nothing"
    assert run.counter("beam_agents.model", "rate_limit_retries") >= stats.throttled


@pytest.mark.pipeline
@pytest.mark.parametrize("status", [429, 403])
def test_a_daily_quota_dead_letters_as_model_rate_limited_without_a_retry_storm(
    status: int,
) -> None:
    with RateLimitedServer(latency_s=0.0, quota_status=status) as server:
        server.quota_exhausted = True
        run = _run(
            AgentConfig(
                provider_factory=ChatAt(server.base_url),
                rate_limit=RateLimit(requests_per_minute=6_000),
            ),
            events=6,
            keys=6,
        )
        stats = server.stats()

    assert run.reasons() == ["model_rate_limited"] * 6
    assert all("quota exhausted" in error.detail for error in run.errors)
    assert sorted(error.payload for error in run.errors) == [
        f"event {i}".encode() for i in range(6)
    ]
    # One request per event: a spent quota is not asked again.
    assert stats.requests == 6
    assert stats.quota_refused == 6


@pytest.mark.pipeline
def test_a_day_long_retry_after_dead_letters_its_event_and_the_fleet_goes_on(
    redis_url: str,
) -> None:
    """One 429 asking for 24 h holds the shared schedule only `max_hold_s`: one dead letter."""
    with RateLimitedServer(latency_s=0.01) as server:
        server.refuse_next(1, retry_after_s=86_400)
        run = _run(
            AgentConfig(
                provider_factory=ChatAt(server.base_url),
                rate_limit=RateLimit(
                    requests_per_minute=6_000,
                    scope=redis_url,
                    key=f"capped-{os.getpid()}-{time.monotonic_ns()}",
                    max_hold_s=1.0,
                ),
            ),
            events=6,
            keys=6,
        )
        stats = server.stats()

    assert run.reasons() == ["model_rate_limited"]
    (error,) = run.errors
    assert "past RateLimit.max_hold_s (1 s)" in error.detail
    assert len(run.outputs) == 5
    # Every event asked once; the refused call was not tried again.
    assert (stats.requests, stats.throttled, stats.accepted) == (6, 1, 5)
    assert run.counter("beam_agents.model", "rate_limit_holds_capped") == 1


@pytest.mark.pipeline
def test_a_parked_call_queued_past_the_activation_timeout_still_answers() -> None:
    """The wait for a turn is not the call's time: a parked activation waits without a thread."""
    with RateLimitedServer(rpm=120, latency_s=0.01) as server:
        run = _run(
            AgentConfig(
                provider_factory=ChatAt(server.base_url),
                rate_limit=RateLimit(requests_per_minute=120),
                activation_timeout_s=1.5,
            ),
            events=8,
            keys=8,
        )
        stats = server.stats()

    assert run.errors == []
    assert len(run.outputs) == 8
    assert run.counter("beam_agents.runtime", "parks") > 0, "nothing parked"
    assert stats.throttled == 0


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test's own: the test kills it."""
    yield from serve(lambda: RedisServer(tmp_path / "redis"), "redis-server")


@pytest.mark.pipeline
def test_killing_the_shared_limiters_redis_mid_run_loses_nothing(own_redis: RedisServer) -> None:
    with RateLimitedServer(rpm=1_200, latency_s=0.02) as server:

        def kill_after_some_calls() -> None:
            while server.stats().accepted < 10:
                time.sleep(0.01)
            own_redis.stop()

        killer = threading.Thread(target=kill_after_some_calls, daemon=True)
        killer.start()
        run = _run(
            AgentConfig(
                provider_factory=ChatAt(server.base_url),
                rate_limit=RateLimit(
                    requests_per_minute=1_200, scope=own_redis.url, key=f"kill-{os.getpid()}"
                ),
            ),
            events=60,
            keys=20,
        )
        killer.join(timeout=30)
        stats = server.stats()

    assert not killer.is_alive(), "the run ended before Redis was killed"
    assert run.errors == []
    assert len(run.outputs) == 60
    assert run.counter("beam_agents.model", "rate_limit_fallbacks") > 0
    # Calls already scheduled by Redis and the fallback's fresh schedule overlap for a
    # moment: the server may refuse a few, which wait and are retried, and none is lost.
    assert stats.accepted == 60


@pytest.mark.pipeline
def test_a_spec_provider_on_the_network_parks_its_first_call_where_a_user_factory_learns() -> None:
    """An `openai:` spec's calls always wait, so none runs in place to learn that they do."""
    with RateLimitedServer(latency_s=0.05) as server:
        spec = f"openai:flow-test?base_url={server.base_url}&api_key_env={KEY_ENV}"
        from_spec = _run(AgentConfig(provider_factory=provider_from_spec(spec)), events=4, keys=4)
        learned = _run(AgentConfig(provider_factory=ChatAt(server.base_url)), events=4, keys=4)
        serial = _run(
            AgentConfig(provider_factory=provider_from_spec(spec), max_inflight_calls=1),
            events=4,
            keys=4,
        )

    assert from_spec.counter("beam_agents.runtime", "parks") == 4
    assert learned.counter("beam_agents.runtime", "parks") == 3
    assert sorted(from_spec.outputs) == sorted(serial.outputs) == sorted(learned.outputs)
    assert len(serial.outputs) == 4


@pytest.mark.pipeline
def test_a_user_factory_that_says_its_calls_wait_parks_its_first_call_too() -> None:
    with RateLimitedServer(latency_s=0.05) as server:
        said = _run(AgentConfig(provider_factory=ServedChatAt(server.base_url)), events=4, keys=4)
        learned = _run(AgentConfig(provider_factory=ChatAt(server.base_url)), events=4, keys=4)

    assert said.counter("beam_agents.runtime", "parks") == 4
    assert learned.counter("beam_agents.runtime", "parks") == 3
    assert sorted(said.outputs) == sorted(learned.outputs)
    assert len(said.outputs) == 4
