"""Flow control of a RunAgent's model calls in a process: when each call goes, never what it says.

`FlowControl` pairs the rate limiter (none, per process, or shared by the
fleet through Redis) with the adaptive in-flight window. One exists per
RunAgent per process, in a registry keyed by the RunAgent's token, so the
DoFn instances of a worker process and the call loop all draw on one
schedule and one window.

`FlowControlledProvider` wraps a provider with it:

1. take a slot in the window;
2. reserve a start time from the limiter for the request's estimated
   tokens, and sleep until then (`rate_limit_wait_ms`);
3. call the provider;
4. settle the reservation with the tokens the answer reports, and tell the
   window how long the call took.

A refusal for rate (`ProviderError`, `error_class="rate_limited"`) slows the
whole schedule down by the provider's `Retry-After` (or, when it names
none, an exponential backoff with full jitter from 0.5 s, capped at 30 s),
halves the window, and the call is tried again, as long as the wait fits
in what is left of `budget_s` from the call's start. When it does not, or
when the quota is exhausted for good, the call fails with `ModelRateLimited`
at once, without another request. The jitter is the one random number
here; like every wait, it changes when a call is sent, never its answer.

Embedding requests pass straight through: the rate limit is the chat
model's, and an embedder has its own quota.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final

from beam_agents._beam_metrics import counter, distribution
from beam_agents._scoped import Scoped
from beam_agents.model._calls import NAMESPACE, throttle_callback
from beam_agents.model._fleet_limiter import FleetLimiter
from beam_agents.model._gcra import ProcessLimiter
from beam_agents.model._ticket import Ticket, call_ticket
from beam_agents.model._window import AdaptiveWindow
from beam_agents.model.errors import ModelRateLimited, ProviderError
from beam_agents.model.messages import EmbedRequest, LlmRequest, LlmResponse
from beam_agents.model.provider import ModelProvider, close_provider
from beam_agents.model.rate_limit import RateLimit

__all__ = [
    "BACKOFF_CAP_S",
    "BACKOFF_START_S",
    "DEFAULT_OUTPUT_TOKENS",
    "FlowCallStats",
    "FlowControl",
    "FlowControlledProvider",
    "estimate_tokens",
    "flow_control",
    "forget_flow_control",
    "observe_flow",
]

DEFAULT_OUTPUT_TOKENS: Final = 512
"""Output tokens assumed for a request that sets no `max_output_tokens`."""
CHARS_PER_TOKEN: Final = 4
BACKOFF_START_S: Final = 0.5
BACKOFF_CAP_S: Final = 30.0

_wait_ms = distribution(NAMESPACE, "rate_limit_wait_ms")
_retries = counter(NAMESPACE, "rate_limit_retries")
_throttled = counter(NAMESPACE, "provider_throttled")


def estimate_tokens(request: LlmRequest) -> int:
    """Tokens a request is expected to spend, before it is sent.

    The characters of its messages (each as text, keys and all) / 4, plus its
    `max_output_tokens` (or `max_tokens`) sampling parameter, else 512. The
    answer's reported usage corrects the estimate afterwards.
    """
    chars = sum(len(str(message)) for message in request.messages)
    output = DEFAULT_OUTPUT_TOKENS
    params = request.sampling_params or {}
    for name in ("max_output_tokens", "max_tokens"):
        value = params.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            output = value
            break
    return chars // CHARS_PER_TOKEN + output


@dataclass(slots=True)
class FlowCallStats:
    """What flow control did to the calls made inside `observe_flow()`: for the model span."""

    wait_ms: int = 0
    retries: int = 0


_stats: ContextVar[FlowCallStats | None] = ContextVar("beam_agents_flow_stats", default=None)


@contextlib.contextmanager
def observe_flow() -> Iterator[FlowCallStats]:
    """Collect the waits and retries of the flow-controlled calls awaited in the block."""
    stats = FlowCallStats()
    with Scoped(_stats, stats):
        yield stats


class FlowControl:
    """The limiter and the window of one RunAgent in one process."""

    def __init__(self, rate_limit: RateLimit | None, max_inflight: int) -> None:
        self.rate_limit = rate_limit
        self.window = AdaptiveWindow(max_inflight)
        self._lock = threading.Lock()
        self._hold_until = float("-inf")
        self.limiter: ProcessLimiter | FleetLimiter | None
        if rate_limit is None:
            self.limiter = None
        elif rate_limit.shared:
            self.limiter = FleetLimiter(rate_limit)
        else:
            self.limiter = ProcessLimiter(rate_limit)

    async def reserve(self, tokens: int) -> float:
        """Seconds until a call of `tokens` estimated tokens may start (slot taken)."""
        limiter = self.limiter
        if isinstance(limiter, FleetLimiter):
            wait = await limiter.reserve(tokens)
        elif limiter is not None:
            wait = limiter.reserve(tokens)
        else:
            wait = 0.0
        with self._lock:
            return max(wait, self._hold_until - time.monotonic())

    async def settle(self, estimated: int, actual: int) -> None:
        """Correct a reservation by the tokens the call really used."""
        limiter = self.limiter
        if isinstance(limiter, FleetLimiter):
            await limiter.settle(estimated, actual)
        elif limiter is not None:
            limiter.settle(estimated, actual)

    async def slow_down(self, retry_after_s: float) -> None:
        """Hold every later call until `retry_after_s` from now.

        Held here too, not only in the limiter: without a RateLimit there is
        no limiter, and a 429's Retry-After must still be waited out.
        """
        with self._lock:
            self._hold_until = max(self._hold_until, time.monotonic() + retry_after_s)
        limiter = self.limiter
        if isinstance(limiter, FleetLimiter):
            await limiter.slow_down(retry_after_s)
        elif limiter is not None:
            limiter.slow_down(retry_after_s)


_registry: dict[str, FlowControl] = {}
_registry_lock = threading.Lock()


def flow_control(token: str, rate_limit: RateLimit | None, max_inflight: int) -> FlowControl:
    """The process-wide FlowControl of the RunAgent with this token, made on first use."""
    with _registry_lock:
        flow = _registry.get(token)
        if flow is None:
            flow = _registry[token] = FlowControl(rate_limit, max_inflight)
        return flow


def forget_flow_control(token: str) -> None:
    """Drop a RunAgent's FlowControl (tests, or a pipeline torn down for good)."""
    with _registry_lock:
        _registry.pop(token, None)


class _Refusals:
    """The 429s one attempt met, reported by the HTTP response hook as they come."""

    __slots__ = ("retry_after_s", "seen")

    def __init__(self) -> None:
        self.seen = 0
        self.retry_after_s: float | None = None

    def __call__(self, retry_after_s: float | None) -> None:
        self.seen += 1
        if retry_after_s is not None:
            self.retry_after_s = max(self.retry_after_s or 0.0, retry_after_s)


class FlowControlledProvider:
    """A provider whose calls wait their turn, and wait out 429s, within `budget_s`."""

    def __init__(
        self,
        provider: ModelProvider,
        flow: FlowControl,
        *,
        budget_s: float,
        windowed: bool = True,
    ) -> None:
        self._provider = provider
        self._flow = flow
        self._budget_s = budget_s
        self._windowed = windowed
        """Whether calls take a place in the window: the call loop's do; a call in place
        holds its Beam thread, which bounds those already."""
        self._random = random.Random()  # noqa: S311 - backoff jitter, not a secret

    @property
    def inner(self) -> ModelProvider:
        """The provider being flow-controlled."""
        return self._provider

    @property
    def model(self) -> Any:
        """The inner provider's model name (AttributeError when it has none)."""
        return self._provider.model  # type: ignore[attr-defined]

    async def aclose(self) -> None:
        """Close the inner provider; the FlowControl is process-wide and stays."""
        await close_provider(self._provider)

    async def complete(self, request: LlmRequest) -> LlmResponse:
        """The inner provider's answer, sent when the limit allows; else ModelRateLimited."""
        if isinstance(request, EmbedRequest):
            return await self._provider.complete(request)
        ticket = call_ticket.get()
        if ticket is not None:
            ticket.queue()  # parked: the wait for a turn is not the call's time
        started = time.monotonic()
        if not self._windowed:
            return await self._complete(request, started, ticket)
        release = self._flow.window.slot()
        await release.acquired()
        if ticket is not None:
            ticket.hold(release)
        try:
            return await self._complete(request, started, ticket)
        finally:
            release()

    async def _complete(
        self, request: LlmRequest, started: float, ticket: Ticket | None
    ) -> LlmResponse:
        flow, stats = self._flow, _stats.get()
        estimate = estimate_tokens(request)
        attempt = 0
        while True:
            wait = await flow.reserve(estimate)
            if ticket is not None and attempt == 0:
                # Parked: the first turn is waited for without a thread, outside the
                # activation's time, which runs from the admission.
                started = time.monotonic() + wait
                left = math.inf
            else:
                left = self._left(started)
            if wait > left:
                raise ModelRateLimited(
                    f"rate limited: the next slot is {wait:.1f} s away; "
                    f"the activation had {left:.1f} s left"
                )
            _wait_ms.update(round(wait * 1000))
            if stats is not None:
                stats.wait_ms += round(wait * 1000)
            if wait > 0:
                await asyncio.sleep(wait)
            if ticket is not None and attempt == 0:
                ticket.admit()
            refusals = _Refusals()
            sent = time.monotonic()
            try:
                with Scoped(throttle_callback, refusals):
                    answer = await self._provider.complete(request)
            except ProviderError as exc:
                if exc.quota_exhausted:
                    what = f"HTTP {exc.status}" if exc.status is not None else exc.error_class
                    raise ModelRateLimited(
                        f"quota exhausted, waiting will not help ({what}): {exc.provider_message}"
                    ) from exc
                if exc.error_class != "rate_limited":
                    if refusals.seen:  # 429s the SDK retried before failing otherwise
                        await self._slow_all(refusals.retry_after_s, attempt)
                    raise
                hold = await self._throttled(exc, refusals, attempt)
                left = self._left(started)
                if hold > left:
                    raise ModelRateLimited(
                        f"rate limited for {hold:.0f} s; the activation had {left:.0f} s left"
                    ) from exc
                attempt += 1
                _retries.inc()
                if stats is not None:
                    stats.retries += 1
                continue
            latency = time.monotonic() - sent
            actual = answer.input_tokens + answer.output_tokens
            if actual > 0:  # a server that reports no usage leaves the estimate standing
                await flow.settle(estimate, actual)
            if refusals.seen:
                # The SDK retried a 429 itself and then succeeded: still a signal.
                await self._slow_all(refusals.retry_after_s, attempt)
            else:
                flow.window.on_success(latency)
            return answer

    async def _throttled(self, exc: ProviderError, refusals: _Refusals, attempt: int) -> float:
        """Slow everyone down for a refusal; the hold in seconds."""
        if not refusals.seen:
            _throttled.inc()
        retry_after = exc.retry_after_s
        if refusals.retry_after_s is not None:
            retry_after = max(retry_after or 0.0, refusals.retry_after_s)
        return await self._slow_all(retry_after, attempt)

    async def _slow_all(self, retry_after_s: float | None, attempt: int) -> float:
        hold = retry_after_s
        if hold is None:
            ceiling = min(BACKOFF_CAP_S, BACKOFF_START_S * 2**attempt)
            hold = self._random.uniform(0.0, ceiling)
        self._flow.window.on_throttled()
        await self._flow.slow_down(hold)
        return hold

    def _left(self, started: float) -> float:
        return self._budget_s - (time.monotonic() - started)

    def __repr__(self) -> str:
        return f"FlowControlledProvider({self._provider!r}, rate_limit={self._flow.rate_limit!r})"
