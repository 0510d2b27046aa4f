"""FlowControl: the rate limiter and the in-flight window of one RunAgent in one process.

One exists per RunAgent per process, in a registry keyed by the RunAgent's
token, so the DoFn instances of a worker process and the call loop all
draw on one schedule and one window. The limiter is none, per process
(`ProcessLimiter`) or shared by the fleet through Redis (`FleetLimiter`),
as the `RateLimit` says; a 429's hold is kept here as well, so that it is
waited out even without a limiter.

Every hold passes through here, so here it is bounded: no refusal holds
the schedule (every worker and entity on a shared key) longer than
`RateLimit.max_hold_s` (a minute without a `RateLimit`), and each hold cut
short is counted in `rate_limit_holds_capped`. What to do with the call
whose refusal asked for more is the caller's (`_provider`): it fails.
"""

from __future__ import annotations

import threading
import time

from beam_agents._beam_metrics import counter
from beam_agents.model._calls import NAMESPACE
from beam_agents.model.flow._fleet_limiter import FleetLimiter
from beam_agents.model.flow._process_limiter import ProcessLimiter
from beam_agents.model.flow._window import AdaptiveWindow
from beam_agents.model.flow.rate_limit import DEFAULT_MAX_HOLD_S, RateLimit

__all__ = ["FlowControl", "flow_control", "forget_flow_control"]

_holds_capped = counter(NAMESPACE, "rate_limit_holds_capped")


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

    @property
    def max_hold_s(self) -> float:
        """The longest one refusal may hold the schedule."""
        limit = self.rate_limit
        return DEFAULT_MAX_HOLD_S if limit is None else limit.max_hold_s

    async def slow_down(self, retry_after_s: float) -> None:
        """Hold every later call until `retry_after_s` from now, at most `max_hold_s`.

        Held here too, not only in the limiter: without a RateLimit there is
        no limiter, and a 429's Retry-After must still be waited out.
        """
        if retry_after_s > self.max_hold_s:
            _holds_capped.inc()
            retry_after_s = self.max_hold_s
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
