"""FlowControlledProvider over a real OpenAICompatibleProvider against a quota-holding server.

The server (`beam_agents.testing.rate_limited_server`) is real HTTP on
loopback and refuses past its quota as providers do; every assertion is
on what it counted, never on how long anything took.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid

import pytest
from apache_beam.metrics.execution import MetricsContainer
from apache_beam.metrics.metricbase import MetricName

from beam_agents.model import (
    LlmRequest,
    LlmResponse,
    OpenAICompatibleProvider,
    ProviderError,
    RateLimit,
)
from beam_agents.model._calls import NAMESPACE
from beam_agents.model.flow import (
    FlowControl,
    FlowControlledProvider,
    estimate_tokens,
    flow_control,
    forget_flow_control,
    observe_flow,
)
from beam_agents.model.flow._fleet_limiter import FleetLimiter
from beam_agents.model.messages import EmbedRequest
from beam_agents.runtime.errors import ModelRateLimited
from beam_agents.testing.rate_limited_server import RateLimitedServer
from tests.model.exchange import KEY_ENV
from tests.step_metrics import step_metrics

pytestmark = pytest.mark.usefixtures("secret_key")

JITTER_S = 0.5
"""How late a request may reach the server after its scheduled start (event loop, threads)."""


def _request(text: str) -> LlmRequest:
    return LlmRequest(model_id="m", messages=[{"role": "user", "content": text}])


def _provider(server: RateLimitedServer, max_retries: int = 3) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        "m", base_url=server.base_url, api_key_env=KEY_ENV, max_retries=max_retries
    )


def _counter(container: MetricsContainer, name: str) -> int:
    value: int = container.get_counter(MetricName(NAMESPACE, name)).get_cumulative()
    return value


def _ask_all(provider: FlowControlledProvider, texts: list[str]) -> list[LlmResponse]:
    async def scenario() -> list[LlmResponse]:
        try:
            return await asyncio.gather(*(provider.complete(_request(t)) for t in texts))
        finally:
            await provider.aclose()

    return asyncio.run(scenario())


def test_sixty_calls_at_the_quota_rate_meet_no_429_and_stay_under_the_cap() -> None:
    """60 calls at once at 600 rpm: spread out, none refused, no second over rate + burst."""
    rpm, burst_s = 600, 0.25
    # The server stands for a provider's per-minute quota, which forgives a short
    # bunching; it forgives two seconds of the rate, so requests the client paced
    # but a loaded machine delivered up to 1.75 s late, together, still pass. The
    # client's own pacing is what the one-second bound below checks.
    with RateLimitedServer(rpm=rpm, latency_s=0.05, burst_s=2.0) as server:
        flow = FlowControl(RateLimit(requests_per_minute=rpm, burst_s=burst_s), max_inflight=64)
        provider = FlowControlledProvider(_provider(server, max_retries=0), flow, budget_s=60)
        answers = _ask_all(provider, [f"q{i}" for i in range(60)])
        stats = server.stats()
    assert [a.response for a in answers] == [f"echo: q{i}".encode() for i in range(60)]
    assert (stats.accepted, stats.throttled) == (60, 0)
    # GCRA sends at most rate * window + (1 + burst / interval) in any window;
    # requests reach the server up to JITTER_S late on a loaded machine, which
    # can fold a little more of the schedule into one of its windows.
    per_second = rpm / 60
    assert stats.max_per_1s <= per_second * (1 + JITTER_S) + 1 + burst_s * per_second
    assert stats.max_per_1s < 60 / 2  # unlimited, they would all land in one second


def test_token_limit_keeps_calls_under_the_servers_tokens_per_minute() -> None:
    """The estimate (chars / 4 + max_output_tokens) holds a token quota with no 429."""
    tpm = 60_000  # 1000 tokens a second
    with RateLimitedServer(tpm=tpm, output_tokens=100) as server:
        flow = FlowControl(RateLimit(tokens_per_minute=tpm, burst_s=0.5), max_inflight=64)
        provider = FlowControlledProvider(_provider(server, max_retries=0), flow, budget_s=60)
        request_tokens = estimate_tokens(
            LlmRequest(model_id="m", messages=[{"role": "user", "content": "x" * 400}])
        )

        async def scenario() -> None:
            try:
                await asyncio.gather(
                    *(
                        provider.complete(
                            LlmRequest(
                                model_id="m",
                                messages=[{"role": "user", "content": "x" * 400}],
                                sampling_params={"max_output_tokens": 100},
                            )
                        )
                        for _ in range(20)
                    )
                )
            finally:
                await provider.aclose()

        asyncio.run(scenario())
        stats = server.stats()
    assert 400 // 4 + 512 <= request_tokens <= 450 // 4 + 512
    assert (stats.accepted, stats.throttled) == (20, 0)


def test_429s_become_waits_and_then_the_answer() -> None:
    with RateLimitedServer() as server, step_metrics() as metrics:
        server.refuse_next(2, retry_after_s=0.2)
        flow = FlowControl(None, max_inflight=8)
        provider = FlowControlledProvider(_provider(server), flow, budget_s=30)
        with observe_flow() as seen:
            [answer] = _ask_all(provider, ["hello"])
        statuses = server.statuses()
    assert answer.response == b"echo: hello"
    assert statuses == [429, 429, 200]
    assert seen.retries == 2
    assert seen.wait_ms >= 200
    assert _counter(metrics, "rate_limit_retries") == 2
    assert _counter(metrics, "provider_throttled") == 2


def test_no_request_is_sent_while_the_retry_after_lasts() -> None:
    """Retry-After honoured, by every caller: the server sees nothing until it has passed."""
    with RateLimitedServer() as server:
        server.refuse_next(1, retry_after_s=1.5)
        flow = FlowControl(RateLimit(requests_per_minute=6000), max_inflight=8)
        provider = FlowControlledProvider(_provider(server), flow, budget_s=30)

        async def scenario() -> list[LlmResponse]:
            try:
                first = asyncio.ensure_future(provider.complete(_request("a")))
                # Until the 429 has come back: state of the window, no event to await.
                while flow.window.size == 8:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
                later = [provider.complete(_request(t)) for t in ("b", "c")]
                return await asyncio.gather(first, *later)
            finally:
                await provider.aclose()

        answers = asyncio.run(scenario())
        refused_at = server.first_at(429)
        assert refused_at is not None
        during = server.requests_between(refused_at + 1e-6, refused_at + 1.5)
        statuses = server.statuses()
    assert [a.response for a in answers] == [b"echo: a", b"echo: b", b"echo: c"]
    assert statuses == [429, 200, 200, 200]
    assert during == 0


def test_a_retry_after_longer_than_the_time_left_fails_at_once_as_model_rate_limited() -> None:
    with RateLimitedServer() as server:
        server.refuse_next(1, retry_after_s=45)
        provider = FlowControlledProvider(
            _provider(server), FlowControl(None, max_inflight=8), budget_s=12
        )
        with pytest.raises(ModelRateLimited, match=r"rate limited for 45 s; the activation had"):
            _ask_all(provider, ["hello"])
        stats = server.stats()
    # One request: neither the SDK (it would sleep 45 s) nor the flow control retried.
    assert stats.requests == 1


def test_a_day_long_retry_after_fails_its_call_and_holds_the_fleet_only_max_hold_s(
    redis_url: str,
) -> None:
    """One refusal asking for 24 h: its call fails at once, the next call on the key still goes."""
    limit = RateLimit(
        requests_per_minute=6000, scope=redis_url, key=f"cap-{uuid.uuid4().hex}", max_hold_s=0.5
    )
    flow = FlowControl(limit, max_inflight=8)
    with RateLimitedServer() as server, step_metrics() as metrics:
        server.refuse_next(1, retry_after_s=86_400)
        provider = FlowControlledProvider(_provider(server), flow, budget_s=30)

        async def scenario() -> tuple[BaseException | None, LlmResponse]:
            refused: BaseException | None = None
            try:
                try:
                    await provider.complete(_request("refused"))
                except ModelRateLimited as exc:
                    refused = exc
                return refused, await provider.complete(_request("next"))
            finally:
                await provider.aclose()
                if isinstance(flow.limiter, FleetLimiter):
                    await flow.limiter.aclose()

        refused, answer = asyncio.run(scenario())
        statuses = server.statuses()
    assert isinstance(refused, ModelRateLimited)
    assert "past RateLimit.max_hold_s (0.5 s)" in str(refused)
    assert answer.response == b"echo: next"
    assert statuses == [429, 200]  # the refused call was not tried again
    assert _counter(metrics, "rate_limit_holds_capped") == 1
    assert _counter(metrics, "rate_limit_retries") == 0


@pytest.mark.parametrize("status", [429, 403])
def test_an_exhausted_quota_fails_after_one_request_as_model_rate_limited(status: int) -> None:
    with RateLimitedServer(quota_status=status) as server:
        server.quota_exhausted = True
        provider = FlowControlledProvider(
            _provider(server), FlowControl(None, max_inflight=8), budget_s=600
        )
        with pytest.raises(ModelRateLimited, match=rf"quota exhausted.*HTTP {status}"):
            _ask_all(provider, ["hello"])
        stats = server.stats()
    assert stats.requests == 1


def test_without_flow_control_the_sdk_still_retries_429s_itself() -> None:
    """The response hook changes nothing for a provider used bare."""
    with RateLimitedServer() as server:
        server.refuse_next(1, retry_after_s=0.1)

        async def scenario() -> LlmResponse:
            provider = _provider(server)
            try:
                return await provider.complete(_request("hi"))
            finally:
                await provider.aclose()

        answer = asyncio.run(scenario())
        statuses = server.statuses()
    assert answer.response == b"echo: hi"
    assert statuses == [429, 200]


def test_a_429_halves_the_window_and_successes_grow_it_back() -> None:
    with RateLimitedServer() as server:
        server.refuse_next(1, retry_after_s=0.1)
        flow = FlowControl(None, max_inflight=8)
        provider = FlowControlledProvider(_provider(server), flow, budget_s=30)

        async def scenario() -> list[int]:
            sizes = []
            try:
                await provider.complete(_request("first"))
                sizes.append(flow.window.size)
                for i in range(4 + 5 + 6 + 7):
                    await provider.complete(_request(f"next {i}"))
                sizes.append(flow.window.size)
            finally:
                await provider.aclose()
            return sizes

        with step_metrics() as metrics:
            sizes = asyncio.run(scenario())
        gauge = metrics.get_gauge(MetricName(NAMESPACE, "inflight_window")).get_cumulative()
    assert sizes == [4, 8]
    assert gauge.value == 8


def test_embeddings_pass_straight_through_the_chat_models_limit() -> None:
    """An embed request is not held by a rate limit that holds the chat calls."""
    with RateLimitedServer() as server:
        flow = FlowControl(RateLimit(requests_per_minute=60), max_inflight=1)
        provider = FlowControlledProvider(_provider(server), flow, budget_s=5)

        async def scenario() -> tuple[LlmResponse, BaseException | None]:
            await flow.slow_down(3600)
            try:
                embedded = await provider.complete(
                    EmbedRequest(model_id="m", messages=[{"role": "user", "content": "e"}])
                )
                try:
                    await provider.complete(_request("chat"))
                except ModelRateLimited as exc:
                    return embedded, exc
                return embedded, None
            finally:
                await provider.aclose()

        embedded, refused = asyncio.run(scenario())
        requests = server.stats().requests
    assert embedded.response.startswith(b"echo:")
    assert isinstance(refused, ModelRateLimited)
    assert requests == 1


def test_one_runagent_has_one_flow_control_per_process() -> None:
    token = f"t{uuid.uuid4().hex}"
    try:
        first = flow_control(token, RateLimit(requests_per_minute=60), 4)
        assert flow_control(token, RateLimit(requests_per_minute=60), 4) is first
        assert flow_control(f"{token}-other", None, 4) is not first
    finally:
        forget_flow_control(token)
        forget_flow_control(f"{token}-other")


def test_the_server_counts_the_busiest_second_and_ten_seconds() -> None:
    """The server's own counters, which the other tests trust."""
    with RateLimitedServer(rpm=60, burst_s=3) as server:
        provider = _provider(server, max_retries=0)

        async def scenario() -> None:
            try:
                for i in range(4):
                    with contextlib.suppress(Exception):
                        await provider.complete(_request(str(i)))
            finally:
                await provider.aclose()

        started = time.monotonic()
        asyncio.run(scenario())
        stats = server.stats()
        assert server.requests_between(started, time.monotonic() + 1) == 4
    assert (stats.accepted, stats.throttled) == (3, 1)
    assert stats.max_per_1s == 3
    assert stats.max_per_10s == 3


class _Scripted:
    """A provider that answers from a script: errors to raise, then an answer."""

    def __init__(self, *outcomes: ProviderError | LlmResponse) -> None:
        self.outcomes = list(outcomes)
        self.calls = 0

    async def complete(self, request: LlmRequest) -> LlmResponse:
        self.calls += 1
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, ProviderError):
            raise outcome
        return outcome


def _error(error_class: str, retry_after_s: float | None = None) -> ProviderError:
    return ProviderError(
        "p", "m", error_class=error_class, message="no", retries=0, retry_after_s=retry_after_s
    )


def test_a_failure_other_than_rate_passes_through_untried() -> None:
    inner = _Scripted(_error("server_error"), LlmResponse(b"never"))
    provider = FlowControlledProvider(inner, FlowControl(None, max_inflight=4), budget_s=30)  # type: ignore[arg-type]
    with pytest.raises(ProviderError, match="no"):
        asyncio.run(provider.complete(_request("x")))
    assert inner.calls == 1


def test_a_rate_refusal_from_a_provider_without_the_http_hook_is_waited_out() -> None:
    """Any provider raising ProviderError(rate_limited) gets the same handling."""
    inner = _Scripted(_error("rate_limited", 0.05), _error("rate_limited"), LlmResponse(b"ok"))
    flow = FlowControl(None, max_inflight=4)
    provider = FlowControlledProvider(inner, flow, budget_s=30)  # type: ignore[arg-type]
    with step_metrics() as metrics, observe_flow() as seen:
        answer = asyncio.run(provider.complete(_request("x")))
    assert answer.response == b"ok"
    assert inner.calls == 3
    assert seen.retries == 2
    assert _counter(metrics, "provider_throttled") == 2
