"""The fleet limiter: one schedule in a real redis-server, shared by OS processes, and its fallback.

A Redis with a password is reached as the runtime reaches it: through a
`secretmanager://` scope, its URL served by a loopback Secret Manager. The
multi-process test spawns fresh interpreters, which a monkeypatched client
does not reach, so it runs on the session's password-less Redis.

Assertions are on what the quota-holding server and Redis counted; no
test asserts how long anything took.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import multiprocessing
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from apache_beam.metrics.metricbase import MetricName

from beam_agents.errors import ConfigurationError
from beam_agents.model import LlmRequest, OpenAICompatibleProvider, RateLimit
from beam_agents.model._calls import NAMESPACE
from beam_agents.model.flow import FlowControl, FlowControlledProvider
from beam_agents.model.flow._fleet_limiter import KEY_PREFIX, FleetLimiter
from beam_agents.testing.pytest_plugin import serve
from beam_agents.testing.rate_limited_server import RateLimitedServer
from beam_agents.testing.services.redis import RedisServer
from beam_agents.testing.services.secret_manager import SecretManagerServer
from tests.model.exchange import KEY_ENV
from tests.step_metrics import step_metrics

FLEET_RPM = 1200
BURST_S = 0.25
PROCESSES = 3
CALLS_EACH = 60
PASSWORD = "fleet-limiter-pa55"
VERSION = "projects/acme-prod/secrets/fleet-redis/versions/4"
SECRET_SCOPE = f"secretmanager://{VERSION}"


def _one_worker(base_url: str, scope: str, key: str) -> int:
    """One worker process: CALLS_EACH calls through its own FlowControl on the shared bucket."""
    limit = RateLimit(requests_per_minute=FLEET_RPM, scope=scope, key=key, burst_s=BURST_S)
    flow = FlowControl(limit, max_inflight=16)

    async def run() -> int:
        inner = OpenAICompatibleProvider("m", base_url=base_url, api_key_env=KEY_ENV)
        provider = FlowControlledProvider(inner, flow, budget_s=120)
        try:
            answers = await asyncio.gather(
                *(
                    provider.complete(
                        LlmRequest(model_id="m", messages=[{"role": "user", "content": f"{i}"}])
                    )
                    for i in range(CALLS_EACH)
                )
            )
        finally:
            await provider.aclose()
            if isinstance(flow.limiter, FleetLimiter):
                await flow.limiter.aclose()
        return len(answers)

    return asyncio.run(run())


@pytest.mark.usefixtures("secret_key")
def test_three_processes_sharing_one_redis_bucket_hold_the_fleet_cap(redis_url: str) -> None:
    """Each process alone would send the full rate; together they send it once, within 5%."""
    key = f"fleet-{uuid.uuid4().hex}"
    with RateLimitedServer(rpm=FLEET_RPM) as server:
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(PROCESSES, mp_context=context) as pool:
            workers = [
                pool.submit(_one_worker, server.base_url, redis_url, key) for _ in range(PROCESSES)
            ]
            done = [worker.result() for worker in workers]
        stats = server.stats()
        accepted = server.accepted_times()
    assert done == [CALLS_EACH] * PROCESSES
    assert (stats.accepted, stats.throttled) == (PROCESSES * CALLS_EACH, 0)
    # Past the first burst (1 + burst / interval calls), calls go one interval
    # apart: the fleet's rate, not three times it. A loaded machine delays
    # some requests and lets the next ones arrive bunched behind them, so the
    # span of the whole run says little; most gaps stay one interval, which
    # three processes each holding the full rate would cut to a third.
    interval = 60 / FLEET_RPM
    steady = accepted[1 + round(BURST_S / interval) :]
    gaps = sorted(later - earlier for earlier, later in itertools.pairwise(steady))
    assert gaps[len(gaps) // 2] >= 0.95 * interval


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test's own, with a password: the test kills it."""
    yield from serve(lambda: RedisServer(tmp_path / "redis", password=PASSWORD), "redis-server")


@pytest.fixture
def secret_scope(own_redis: RedisServer, secret_manager: SecretManagerServer) -> str:
    """A scope naming the Secret Manager version that holds `own_redis`'s password URL."""
    secret_manager.versions[VERSION] = f"{own_redis.url}\n".encode()
    return SECRET_SCOPE


def test_a_secret_scope_shares_the_schedule_on_the_redis_its_version_holds(
    own_redis: RedisServer, secret_manager: SecretManagerServer, secret_scope: str
) -> None:
    """Flow control reads the URL once, signs in with its password, and keeps the schedule there."""
    key = f"secret-{uuid.uuid4().hex}"
    limit = RateLimit(requests_per_minute=1, scope=secret_scope, key=key)
    flow = FlowControl(limit, 4)
    limiter = flow.limiter
    assert isinstance(limiter, FleetLimiter)

    async def scenario() -> list[float]:
        waits = [await flow.reserve(1) for _ in range(2)]
        await limiter.aclose()
        return waits

    waits = asyncio.run(scenario())
    direct = redis.Redis.from_url(own_redis.url)
    try:
        stored = direct.hgetall(KEY_PREFIX + key)
    finally:
        direct.close()
    assert not limiter.in_fallback
    assert set(stored) == {b"r", b"t", b"h"}
    # One request a minute: the second is scheduled most of a minute after the first.
    assert waits[0] == 0
    assert waits[1] > 50
    assert secret_manager.requests == [VERSION]


@pytest.mark.parametrize(
    "value",
    [
        b"bigtable://acme-prod/instance/table",
        f"memcached://:{PASSWORD}@10.0.0.3:11211".encode(),
        f"redis://:{PASSWORD}@".encode(),
        f"redis://:{PASSWORD}@10.0.0.3:0/0".encode(),
        SECRET_SCOPE.encode(),
    ],
)
def test_a_secret_scope_holding_no_redis_url_fails_naming_the_version_never_the_value(
    secret_manager: SecretManagerServer, value: bytes
) -> None:
    secret_manager.versions[VERSION] = value
    with pytest.raises(ConfigurationError) as caught:
        FleetLimiter(RateLimit(requests_per_minute=600, scope=SECRET_SCOPE))
    message = f"{caught.value!r} {caught.value}"
    assert caught.value.field == "RateLimit.scope"
    assert f"{VERSION} must hold a redis:// or rediss:// URL" in caught.value.problem
    assert PASSWORD not in message
    assert value.decode() not in message


def test_a_secret_scope_whose_version_is_missing_fails_naming_it(
    secret_manager: SecretManagerServer,
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        FleetLimiter(RateLimit(requests_per_minute=600, scope=SECRET_SCOPE))
    assert caught.value.field == "RateLimit.scope"
    assert f"{VERSION}: NotFound" in caught.value.problem


def test_a_dead_redis_falls_back_to_the_process_share_and_recovers(
    own_redis: RedisServer,
    secret_manager: SecretManagerServer,
    secret_scope: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    key = f"fallback-{uuid.uuid4().hex}"
    limit = RateLimit(
        requests_per_minute=600, scope=secret_scope, key=key, fallback_share=0.5, burst_s=0.25
    )
    limiter = FleetLimiter(limit, reconnect_after_s=0.3)
    direct = redis.Redis.from_url(own_redis.url)

    async def scenario() -> tuple[list[float], list[bool]]:
        modes = []
        await limiter.reserve(1)
        modes.append(limiter.in_fallback)
        own_redis.stop()
        waits = [await limiter.reserve(1) for _ in range(6)]
        modes.append(limiter.in_fallback)
        own_redis.start()
        await asyncio.sleep(0.4)  # past the back-off: the next reservation asks Redis again
        await limiter.reserve(1)
        modes.append(limiter.in_fallback)
        await limiter.aclose()
        return waits, modes

    try:
        with step_metrics() as metrics:
            waits, modes = asyncio.run(scenario())
        fallbacks = metrics.get_counter(MetricName(NAMESPACE, "rate_limit_fallbacks"))
        stored = direct.hgetall(KEY_PREFIX + key)
    finally:
        direct.close()
    assert modes == [False, True, False]
    assert fallbacks.get_cumulative() == 6
    # The fallback holds half of 600 rpm: 0.2 s apart after a burst of two.
    assert waits[3] > 0.3
    assert set(stored) == {b"r", b"t", b"h"}  # the restarted Redis holds the schedule again
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert sum("unreachable" in message for message in warnings) == 1
    assert sum("reachable again" in message for message in warnings) == 1
    assert not [r for r in caplog.records if PASSWORD in r.getMessage()]
    assert all(f"Redis at 127.0.0.1:{own_redis.port} " in message for message in warnings)
    assert secret_manager.requests == [VERSION]  # read once, not at each reconnection


def test_a_frozen_redis_costs_one_timeout_then_the_fallback_answers(
    own_redis: RedisServer, secret_scope: str
) -> None:
    """A Redis that hangs rather than refuses: the socket timeout, then the fallback."""
    limit = RateLimit(requests_per_minute=600, scope=secret_scope, key=f"frozen-{uuid.uuid4()}")
    limiter = FleetLimiter(limit, reconnect_after_s=60)

    async def scenario() -> list[bool]:
        await limiter.reserve(1)
        modes = [limiter.in_fallback]
        with own_redis.paused():
            for _ in range(3):
                await limiter.reserve(1)
                modes.append(limiter.in_fallback)
        await limiter.aclose()
        return modes

    assert asyncio.run(scenario()) == [False, True, True, True]


def test_a_day_long_hold_is_kept_in_redis_as_max_hold_s_for_every_worker(redis_url: str) -> None:
    """A 24 h Retry-After written to the shared hash holds another worker at most max_hold_s."""
    key = f"capped-{uuid.uuid4().hex}"
    limit = RateLimit(requests_per_minute=6000, scope=redis_url, key=key, max_hold_s=60)
    refused, other = FlowControl(limit, 4), FlowControl(limit, 4)

    async def scenario() -> float:
        try:
            await refused.slow_down(86_400)
            return await other.reserve(1)
        finally:
            for flow in (refused, other):
                if isinstance(flow.limiter, FleetLimiter):
                    await flow.limiter.aclose()

    with step_metrics() as metrics:
        wait = asyncio.run(scenario())
    direct = redis.Redis.from_url(redis_url)
    try:
        seconds, micros = direct.time()
        hold = int(direct.hget(KEY_PREFIX + key, "h") or 0)
    finally:
        direct.close()
    assert hold - (seconds * 1_000_000 + micros) <= 60 * 1_000_000
    assert 0 < wait <= 60
    capped = metrics.get_counter(MetricName(NAMESPACE, "rate_limit_holds_capped"))
    assert capped.get_cumulative() == 1
