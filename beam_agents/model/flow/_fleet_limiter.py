"""FleetLimiter: one rate-limit schedule shared by every worker process, held in Redis.

A project's quota belongs to the project, not to a worker: ten Dataflow
workers each holding 600 rpm send 6000. So the schedule of
`ProcessLimiter` (one theoretical arrival time per limit, plus the hold
a 429 imposes) lives in one Redis hash, and a Lua script makes each
reservation atomic in one round trip. The script reads Redis `TIME`, never
a worker's clock: workers' clocks disagree, Redis's is one.

The client is the synchronous `redis.Redis` (its connection pool is
thread-safe) driven through a small executor of this limiter's own, so
any event loop (a Beam thread's activation loop, the call loop) can await
it. Sockets time out after half a second, and redis-py's own retries are
off: a reservation must never stall a call for long.

A Redis that needs a password is named by a `secretmanager://` scope (the
limit is pickled into the job graph, a password must not be): the
limiter reads the URL from that version once, when the process builds it,
and connects with it. Errors name the version, never what it holds; logs
name the host and port only.

When Redis cannot be reached the limiter does not fail the call, and does
not stall: each process falls back to a `ProcessLimiter` at
`fallback_share` of the limits (size it as 1 / the number of processes),
counts `rate_limit_fallbacks` for each call so scheduled, logs the outage
once, and tries Redis again only after `RECONNECT_AFTER_S`, so a dead
Redis costs one timeout per back-off rather than one per call. A Redis
that comes back empty (restarted without persistence) simply starts a new
schedule.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from beam_agents._beam_metrics import counter
from beam_agents._connections.secret_sources import read_secret_version, secret_uri_version
from beam_agents.errors import ConfigurationError
from beam_agents.model._calls import NAMESPACE
from beam_agents.model.flow._process_limiter import ProcessLimiter
from beam_agents.model.flow.rate_limit import RateLimit

if TYPE_CHECKING:
    import redis

__all__ = ["KEY_PREFIX", "RECONNECT_AFTER_S", "SOCKET_TIMEOUT_S", "FleetLimiter"]

_log = logging.getLogger(__name__)

KEY_PREFIX: Final = "beam_agents:rate_limit:"
RECONNECT_AFTER_S: Final = 5.0
SOCKET_TIMEOUT_S: Final = 0.5
_MICROS: Final = 1_000_000
_REDIS_SCHEMES: Final = ("redis", "rediss")

_fallbacks = counter(NAMESPACE, "rate_limit_fallbacks")

# ARGV: op, seconds per request, seconds per token, burst seconds, amount
# (tokens to reserve, token difference to settle, or seconds to hold), all
# in microseconds where they are times. Returns the wait in microseconds.
_SCRIPT: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local op = ARGV[1]
local per_request = tonumber(ARGV[2])
local per_token = tonumber(ARGV[3])
local burst = tonumber(ARGV[4])
local amount = tonumber(ARGV[5])
local state = redis.call('HMGET', KEYS[1], 'r', 't', 'h')
local rtat = tonumber(state[1]) or now
local ttat = tonumber(state[2]) or now
local hold = tonumber(state[3]) or now
local wait = 0
if op == 'reserve' then
  local at = math.max(now, hold, rtat - burst, ttat - burst)
  if per_request > 0 then rtat = math.max(rtat, at) + per_request end
  if per_token > 0 then ttat = math.max(ttat, at) + amount * per_token end
  wait = at - now
elseif op == 'settle' then
  ttat = ttat + amount * per_token
elseif op == 'hold' then
  local until_at = now + amount
  if until_at > hold then
    hold = until_at
    if per_request > 0 then rtat = math.max(rtat, until_at + burst) end
  end
end
redis.call('HSET', KEYS[1], 'r', string.format('%.0f', rtat),
  't', string.format('%.0f', ttat), 'h', string.format('%.0f', hold))
local horizon = math.max(rtat, ttat, hold, now) - now
redis.call('PEXPIRE', KEYS[1], math.floor(horizon / 1000) + 60000)
return string.format('%.0f', wait)
"""


class FleetLimiter:
    """The `ProcessLimiter` interface, async, over one Redis-held schedule per `key`."""

    def __init__(
        self,
        rate_limit: RateLimit,
        *,
        reconnect_after_s: float = RECONNECT_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not rate_limit.shared:
            raise ValueError(
                "FleetLimiter needs a redis:// or secretmanager:// scope; use ProcessLimiter"
            )
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError:
            raise ConfigurationError(
                "RateLimit.scope",
                "a redis:// scope needs the redis client: pip install 'beam-agents[memory-stores]'",
            ) from None
        self.rate_limit = rate_limit
        url = _redis_url(rate_limit.scope)
        self._where = _where(url)
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self._client: redis.Redis = redis.Redis.from_url(
            url,
            socket_timeout=SOCKET_TIMEOUT_S,
            socket_connect_timeout=SOCKET_TIMEOUT_S,
            retry=Retry(NoBackoff(), 0),
        )
        self._script = self._client.register_script(_SCRIPT)
        self._key = KEY_PREFIX + rate_limit.key
        rpm, tpm = rate_limit.requests_per_minute, rate_limit.tokens_per_minute
        self._per_request = round(60 * _MICROS / rpm) if rpm else 0
        self._per_token = 60 * _MICROS / tpm if tpm else 0.0
        self._burst = round(rate_limit.burst_s * _MICROS)
        self.fallback = ProcessLimiter(rate_limit.scaled(rate_limit.fallback_share), clock=clock)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=4, thread_name_prefix="beam-agents-fleet-limiter"
        )
        self._reconnect_after_s = reconnect_after_s
        self._clock = clock
        self._lock = threading.Lock()
        self._retry_at = float("-inf")
        self._outage = False

    @property
    def in_fallback(self) -> bool:
        """Whether calls are scheduled by the per-process fallback now."""
        return self._outage

    async def reserve(self, tokens: int) -> float:
        """Take the fleet's next slot for `tokens` estimated tokens; seconds to wait for it."""
        micros = await self._run("reserve", max(0, tokens))
        if micros is None:
            _fallbacks.inc()
            return self.fallback.reserve(tokens)
        return micros / _MICROS

    async def settle(self, estimated: int, actual: int) -> None:
        """Correct a reservation by what the call really used."""
        if not self._per_token or actual == estimated:
            return
        if await self._run("settle", actual - estimated) is None:
            self.fallback.settle(estimated, actual)

    async def slow_down(self, retry_after_s: float) -> None:
        """Hold the whole fleet's later reservations until `retry_after_s` from now."""
        if await self._run("hold", round(max(0.0, retry_after_s) * _MICROS)) is None:
            self.fallback.slow_down(retry_after_s)

    async def aclose(self) -> None:
        """Close the connections and the executor."""
        self._executor.shutdown(wait=False)
        self._client.close()

    async def _run(self, op: str, amount: float) -> float | None:
        """The script's answer, or None when Redis is (known to be) unreachable."""
        with self._lock:
            if self._outage and self._clock() < self._retry_at:
                return None
        loop = asyncio.get_running_loop()
        try:
            answer = await loop.run_in_executor(self._executor, self._call, op, amount)
        except self._errors as exc:
            self._went_down(exc)
            return None
        self._came_back()
        return float(answer)

    def _call(self, op: str, amount: float) -> Any:
        args: list[str | float] = [op, self._per_request, self._per_token, self._burst, amount]
        return self._script(keys=[self._key], args=args)

    def _went_down(self, exc: BaseException) -> None:
        with self._lock:
            self._retry_at = self._clock() + self._reconnect_after_s
            first = not self._outage
            self._outage = True
        if first:
            _log.warning(
                "rate limit %r: Redis at %s unreachable (%s); each process now holds "
                "itself to %s of the limits, retrying Redis every %.0f s",
                self.rate_limit.key,
                self._where,
                type(exc).__name__,
                self.rate_limit.fallback_share,
                self._reconnect_after_s,
            )

    def _came_back(self) -> None:
        with self._lock:
            back = self._outage
            self._outage = False
        if back:
            _log.warning(
                "rate limit %r: Redis at %s reachable again; the fleet shares one schedule",
                self.rate_limit.key,
                self._where,
            )


def _redis_url(scope: str) -> str:
    """The Redis URL `scope` names: itself, or the one its Secret Manager version holds."""
    version = secret_uri_version("RateLimit.scope", scope)
    if version is None:
        return scope
    url = read_secret_version("RateLimit.scope", version)
    try:
        parts = urlsplit(url)
        usable = parts.scheme in _REDIS_SCHEMES and bool(parts.hostname) and parts.port != 0
    except ValueError:
        usable = False
    if not usable:
        raise ConfigurationError(
            "RateLimit.scope",
            f"{version} must hold a redis:// or rediss:// URL with a host "
            "(e.g. redis://:PASSWORD@HOST:6379/0)",
        )
    return url


def _where(url: str) -> str:
    """Host and port of the Redis only: no userinfo, no query (a CA path, say)."""
    try:
        parts = urlsplit(url)
        return f"{parts.hostname}:{parts.port or 6379}"
    except ValueError:
        return "(unparsable URL)"
