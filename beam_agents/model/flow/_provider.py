"""FlowControlledProvider: a RunAgent's model calls sent when their turn comes, never changed.

It wraps a provider with the RunAgent's `FlowControl` (its limiter and its
in-flight window, `beam_agents.model.flow._control`):

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
at once, without another request. So does a call whose refusal asked for
longer than `RateLimit.max_hold_s`: the schedule everyone shares is held
only that long (`FlowControl.slow_down`), and the one call that was told to
wait longer is not tried again inside the hold it was refused past. The
jitter is the one random number here; like every wait, it changes when a
call is sent, never its answer.

Embedding requests pass straight through: the rate limit is the chat
model's, and an embedder has its own quota.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

from beam_agents._beam_metrics import counter, distribution
from beam_agents._scoped import Scoped
from beam_agents.model._calls import NAMESPACE, throttle_callback
from beam_agents.model.errors import ModelRateLimited, ProviderError
from beam_agents.model.flow._control import FlowControl
from beam_agents.model.flow._ticket import Ticket, call_ticket
from beam_agents.model.messages import EmbedRequest, LlmRequest, LlmResponse
from beam_agents.model.provider import ModelProvider, close_provider

__all__ = [
    "BACKOFF_CAP_S",
    "BACKOFF_START_S",
    "DEFAULT_OUTPUT_TOKENS",
    "FlowCallStats",
    "FlowControlledProvider",
    "estimate_tokens",
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


@runtime_checkable
class _Named(Protocol):
    """A provider that says which model it calls: the protocol does not ask it to."""

    @property
    def model(self) -> object:
        """The model's name as the provider knows it."""
        ...


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
    def model(self) -> object:
        """The inner provider's model name (AttributeError when it has none)."""
        provider = self._provider
        if not isinstance(provider, _Named):
            raise AttributeError(f"{type(provider).__name__} names no model")
        return provider.model

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
        estimate = estimate_tokens(request)
        attempt = 0
        while True:
            started = await self._take_turn(estimate, started, ticket, first=attempt == 0)
            refusals = _Refusals()
            sent = time.monotonic()
            try:
                with Scoped(throttle_callback, refusals):
                    answer = await self._provider.complete(request)
            except ProviderError as exc:
                if not await self._try_again(exc, refusals, attempt, started):
                    raise
                attempt += 1
                continue
            await self._answered(answer, estimate, time.monotonic() - sent, refusals, attempt)
            return answer

    async def _take_turn(
        self, estimate: int, started: float, ticket: Ticket | None, *, first: bool
    ) -> float:
        """Sleep until the limiter's next slot; the call's start, as its budget counts it.

        Raises `ModelRateLimited` at once when the slot lies beyond the budget.
        """
        wait = await self._flow.reserve(estimate)
        parked_first = ticket is not None and first
        if parked_first:
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
        stats = _stats.get()
        if stats is not None:
            stats.wait_ms += round(wait * 1000)
        if wait > 0:
            await asyncio.sleep(wait)
        if parked_first and ticket is not None:
            ticket.admit()
        return started

    async def _try_again(
        self, exc: ProviderError, refusals: _Refusals, attempt: int, started: float
    ) -> bool:
        """Whether a failed attempt is worth another, once its refusal is waited out.

        False for a failure that is not about rate; `ModelRateLimited` when
        waiting cannot help (the quota is spent, or the hold outlasts the budget).
        """
        if exc.quota_exhausted:
            what = f"HTTP {exc.status}" if exc.status is not None else exc.error_class
            raise ModelRateLimited(
                f"quota exhausted, waiting will not help ({what}): {exc.provider_message}"
            ) from exc
        if exc.error_class != "rate_limited":
            if refusals.seen:  # 429s the SDK retried before failing otherwise
                await self._slow_all(refusals.retry_after_s, attempt)
            return False
        hold = await self._throttled(exc, refusals, attempt)
        cap = self._flow.max_hold_s
        if hold > cap:
            raise ModelRateLimited(
                f"rate limited for {hold:.0f} s, past RateLimit.max_hold_s ({cap:g} s): "
                f"the shared schedule is held {cap:g} s and this call fails"
            ) from exc
        left = self._left(started)
        if hold > left:
            raise ModelRateLimited(
                f"rate limited for {hold:.0f} s; the activation had {left:.0f} s left"
            ) from exc
        _retries.inc()
        stats = _stats.get()
        if stats is not None:
            stats.retries += 1
        return True

    async def _answered(
        self,
        answer: LlmResponse,
        estimate: int,
        latency: float,
        refusals: _Refusals,
        attempt: int,
    ) -> None:
        """Settle the reservation with the tokens used, and tell the window how it went."""
        actual = answer.input_tokens + answer.output_tokens
        if actual > 0:  # a server that reports no usage leaves the estimate standing
            await self._flow.settle(estimate, actual)
        if refusals.seen:
            # The SDK retried a 429 itself and then succeeded: still a signal.
            await self._slow_all(refusals.retry_after_s, attempt)
        else:
            self._flow.window.on_success(latency)

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
