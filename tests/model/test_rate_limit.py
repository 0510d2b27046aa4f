"""RateLimit's validation, and the per-process machinery under it: GCRA, the window, refusals."""

from __future__ import annotations

import asyncio
import email.utils
import pickle
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from beam_agents.errors import ConfigurationError
from beam_agents.model import ProviderError, RateLimit
from beam_agents.model._refusals import (
    gemini_quota_exhausted,
    gemini_retry_delay_s,
    openai_quota_exhausted,
    retry_after_s,
)
from beam_agents.model.flow._process_limiter import ProcessLimiter
from beam_agents.model.flow._window import LATENCY_BOUND, AdaptiveWindow
from beam_agents.runtime.errors import (
    MODEL_RATE_LIMITED,
    REASONS,
    ModelCallError,
    ModelRateLimited,
)

ROOT = Path(__file__).parents[2]
SECRET_SCOPE = "secretmanager://projects/acme-prod/secrets/fleet-redis/versions/2"


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({}, "RateLimit.requests_per_minute"),
        ({"requests_per_minute": 0}, "RateLimit.requests_per_minute"),
        ({"requests_per_minute": True}, "RateLimit.requests_per_minute"),
        ({"requests_per_minute": 10.5}, "RateLimit.requests_per_minute"),
        ({"tokens_per_minute": -1}, "RateLimit.tokens_per_minute"),
        ({"requests_per_minute": 60, "scope": "memcached://h:1"}, "RateLimit.scope"),
        ({"requests_per_minute": 60, "scope": "redis://"}, "RateLimit.scope"),
        ({"requests_per_minute": 60, "scope": "redis://h:1/x"}, "RateLimit.scope"),
        ({"requests_per_minute": 60, "scope": 7}, "RateLimit.scope"),
        ({"requests_per_minute": 60, "scope": "redis://h:1/0?password=x"}, "RateLimit.scope"),
        (
            {"requests_per_minute": 60, "scope": "secretmanager://projects/p/secrets/s"},
            "RateLimit.scope",
        ),
        (
            {"requests_per_minute": 60, "scope": "secretmanager://projects/p/secrets/s/versions/0"},
            "RateLimit.scope",
        ),
        (
            {
                "requests_per_minute": 60,
                "scope": "secretmanager://projects/p/secrets/s/versions/1?x",
            },
            "RateLimit.scope",
        ),
        ({"requests_per_minute": 60, "key": ""}, "RateLimit.key"),
        ({"requests_per_minute": 60, "fallback_share": 0}, "RateLimit.fallback_share"),
        ({"requests_per_minute": 60, "fallback_share": 1.5}, "RateLimit.fallback_share"),
        ({"requests_per_minute": 60, "burst_s": 0}, "RateLimit.burst_s"),
        ({"requests_per_minute": 60, "burst_s": float("inf")}, "RateLimit.burst_s"),
        ({"requests_per_minute": 60, "max_hold_s": 0}, "RateLimit.max_hold_s"),
        ({"requests_per_minute": 60, "max_hold_s": -1.0}, "RateLimit.max_hold_s"),
        ({"requests_per_minute": 60, "max_hold_s": float("inf")}, "RateLimit.max_hold_s"),
        ({"requests_per_minute": 60, "max_hold_s": float("nan")}, "RateLimit.max_hold_s"),
        ({"requests_per_minute": 60, "max_hold_s": True}, "RateLimit.max_hold_s"),
        ({"requests_per_minute": 60, "max_hold_s": "60"}, "RateLimit.max_hold_s"),
    ],
)
def test_bad_rate_limit_is_refused_naming_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        RateLimit(**kwargs)
    assert caught.value.field == field


@pytest.mark.parametrize(
    "scope",
    [
        "redis://:{password}@127.0.0.1:6379/0",
        "rediss://default:{password}@10.0.0.3:6378",
        "redis://:{password}@127.0.0.1:6379/db",
    ],
)
def test_a_password_in_scope_is_refused_pointing_at_secret_manager(scope: str) -> None:
    """The limit is pickled into the job graph, so a password there is refused, never echoed."""
    password = "s3cret-pa55"
    with pytest.raises(ConfigurationError) as caught:
        RateLimit(requests_per_minute=600, scope=scope.format(password=password))
    assert caught.value.field == "RateLimit.scope"
    assert "secretmanager://projects/P/secrets/S/versions/V" in caught.value.problem
    assert password not in f"{caught.value!r} {caught.value}"


def test_a_secret_manager_scope_is_shared_and_survives_pickling() -> None:
    limit = RateLimit(requests_per_minute=600, scope=SECRET_SCOPE, key="fleet")
    assert limit.shared
    assert pickle.loads(pickle.dumps(limit)) == limit
    assert f"scope={SECRET_SCOPE!r}" in repr(limit)


def test_a_secret_manager_scope_validates_without_any_client_library() -> None:
    """The machine that builds the pipeline needs neither redis nor Secret Manager's client."""
    # grpc is not blocked: Beam itself, which beam_agents.model imports, needs it.
    script = textwrap.dedent(
        f"""
        import importlib.abc
        import sys

        BLOCKED = ("redis", "google.cloud.secretmanager", "google.cloud.secretmanager_v1")

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if any(name == b or name.startswith(b + ".") for b in BLOCKED):
                    raise ImportError(f"blocked: {{name}}")
                return None

        sys.meta_path.insert(0, Block())
        from beam_agents.model import RateLimit

        limit = RateLimit(requests_per_minute=600, scope={SECRET_SCOPE!r})
        assert limit.shared
        loaded = [m for m in sys.modules if any(m == b or m.startswith(b + ".") for b in BLOCKED)]
        assert not loaded, loaded
        print("validated")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "validated" in done.stdout


def test_rate_limit_survives_pickling_as_the_job_graph_carries_it() -> None:
    limit = RateLimit(requests_per_minute=600, tokens_per_minute=200_000, scope="redis://h:1/2")
    assert pickle.loads(pickle.dumps(limit)) == limit
    assert limit.shared
    assert not RateLimit(requests_per_minute=1).shared


def test_fallback_limits_are_the_share_of_the_fleet_limits() -> None:
    limit = RateLimit(requests_per_minute=600, tokens_per_minute=200_000, fallback_share=0.05)
    assert limit.scaled(0.05).requests_per_minute == 30
    assert limit.scaled(0.05).tokens_per_minute == 10_000


def test_reservations_are_spread_one_interval_apart_after_the_burst() -> None:
    clock = Clock()
    limiter = ProcessLimiter(RateLimit(requests_per_minute=600, burst_s=0.25), clock=clock)
    waits = [limiter.reserve(1) for _ in range(8)]
    # 0.25 s of burst at 0.1 s per request: three at once, then one every 0.1 s.
    assert waits == pytest.approx([0, 0, 0, 0.05, 0.15, 0.25, 0.35, 0.45])


def test_token_reservations_settle_to_the_tokens_used() -> None:
    clock = Clock()
    limit = RateLimit(tokens_per_minute=60_000, burst_s=0.1)  # 1000 tokens a second
    limiter = ProcessLimiter(limit, clock=clock)
    assert limiter.reserve(1000) == 0
    assert limiter.reserve(1000) == pytest.approx(0.9)
    limiter.settle(estimated=1000, actual=100)  # the second call used a tenth
    assert limiter.reserve(1000) == pytest.approx(1.0)
    limiter.settle(estimated=1000, actual=3000)  # the third used three times its estimate
    # Schedule after the third: 1.1 + 1.0 s, plus 2.0 s for the 2000 extra tokens.
    assert limiter.reserve(10) == pytest.approx(4.0)


def test_slow_down_holds_every_later_reservation_then_resumes_without_a_burst() -> None:
    clock = Clock()
    limiter = ProcessLimiter(RateLimit(requests_per_minute=600, burst_s=0.5), clock=clock)
    limiter.slow_down(2.0)
    waits = [limiter.reserve(1) for _ in range(3)]
    assert waits == pytest.approx([2.0, 2.1, 2.2])
    limiter.slow_down(1.0)  # a shorter hold than the one in force changes nothing
    assert limiter.reserve(1) == pytest.approx(2.3)


def test_window_halves_on_a_429_and_grows_back_by_one_per_window() -> None:
    clock = Clock()
    window = AdaptiveWindow(16, clock=clock)
    window.on_throttled()
    assert window.size == 8
    window.on_throttled()  # the same moment's 429s: one decrease
    assert window.size == 8
    clock.now += 1.5
    window.on_throttled()
    assert window.size == 4
    for _ in range(4):
        window.on_success(0.1)
    assert window.size == 5
    for size in range(5, 16):
        for _ in range(size):
            window.on_success(0.1)
    assert window.size == 16
    for _ in range(100):
        window.on_success(0.1)
    assert window.size == 16


def test_window_shrinks_when_latency_rises_past_the_baseline() -> None:
    clock = Clock()
    window = AdaptiveWindow(16, clock=clock)
    for _ in range(40):
        window.on_success(0.1)
        clock.now += 0.1
    assert window.size == 16
    for _ in range(5):
        window.on_success(0.1 * LATENCY_BOUND * 3)
    assert window.size == 12


def test_window_holds_callers_beyond_its_size_and_wakes_them_on_other_loops() -> None:
    """A slot freed on one thread's loop is handed to a waiter on another thread's loop."""
    window = AdaptiveWindow(2)
    entered: list[str] = []
    first_two = threading.Barrier(3)
    release_them = threading.Event()

    def hold(name: str) -> None:
        async def run() -> None:
            await window.acquire()
            entered.append(name)
            first_two.wait()
            await asyncio.get_running_loop().run_in_executor(None, release_them.wait)
            window.release()

        asyncio.run(run())

    def wait_for_slot() -> None:
        async def run() -> None:
            await window.acquire()
            entered.append("third")
            window.release()

        asyncio.run(run())

    holders = [threading.Thread(target=hold, args=(n,)) for n in ("one", "two")]
    for thread in holders:
        thread.start()
    first_two.wait()
    third = threading.Thread(target=wait_for_slot)
    third.start()
    third.join(timeout=0.5)
    assert third.is_alive()
    assert sorted(entered) == ["one", "two"]
    release_them.set()
    for thread in [*holders, third]:
        thread.join(timeout=10)
    assert entered[-1] == "third"
    assert window.inflight == 0


def test_a_cancelled_waiter_gives_its_slot_back() -> None:
    async def scenario() -> int:
        window = AdaptiveWindow(1)
        await window.acquire()
        waiter = asyncio.ensure_future(window.acquire())
        await asyncio.sleep(0)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        window.release()
        await asyncio.wait_for(window.acquire(), timeout=5)
        return window.inflight

    assert asyncio.run(scenario()) == 1


def test_provider_error_keeps_retry_after_and_quota_through_pickling() -> None:
    error = ProviderError(
        "openai",
        "m",
        error_class="rate_limited",
        message="slow down",
        retries=0,
        status=429,
        retry_after_s=2.5,
        quota_exhausted=True,
    )
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.retry_after_s, copy.quota_exhausted, copy.status) == (2.5, True, 429)


def test_retry_after_is_read_from_milliseconds_seconds_or_an_http_date() -> None:
    assert retry_after_s({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after_s({"retry-after": "7"}) == 7.0
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (retry_after_s({"retry-after": date}) or 0) <= 30
    assert retry_after_s({"retry-after": "soon"}) is None
    assert retry_after_s({"retry-after": "-3"}) is None
    assert retry_after_s({}) is None


def test_quota_exhaustion_is_told_from_a_passing_rate_limit() -> None:
    assert openai_quota_exhausted(429, "insufficient_quota", "You exceeded your current quota")
    assert not openai_quota_exhausted(429, "rate_limit_exceeded", "Rate limit reached")
    assert openai_quota_exhausted(403, None, "Billing hard limit reached")
    assert not openai_quota_exhausted(403, None, "Invalid API key")
    per_day = {
        "error": {
            "code": 429,
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel"}],
                },
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "26s"},
            ],
        }
    }
    per_minute = {
        "error": {
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [{"quotaId": "GenerateRequestsPerMinutePerProjectPerModel"}],
                }
            ]
        }
    }
    assert gemini_quota_exhausted(429, per_day, "quota")
    assert not gemini_quota_exhausted(429, per_minute, "quota")
    assert gemini_retry_delay_s(per_day) == 26.0
    assert gemini_retry_delay_s(per_minute) is None


def test_model_rate_limited_is_a_model_call_error_with_a_reason_of_its_own() -> None:
    assert issubclass(ModelRateLimited, ModelCallError)
    assert MODEL_RATE_LIMITED == "model_rate_limited"
    assert MODEL_RATE_LIMITED in REASONS
