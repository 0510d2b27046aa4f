"""ProcessLimiter: one process's schedule of model calls, by the generic cell rate algorithm.

GCRA keeps one number per limit, the theoretical arrival time (TAT): when
the next call would be due if calls went exactly at the rate. A call may go
at `TAT - burst` at the earliest, and going moves the TAT on by one
emission interval (`60 / rpm` seconds for requests, `60 / tpm` per token
for tokens). So the limiter never polls: each `reserve` makes one decision,
returns how long the caller must wait, and has already taken the slot, so
callers that reserve together are spread one interval apart rather than
all waking at once.

Time is `time.monotonic()`, never the wall clock. The limiter is shared by
the Beam threads' activation loops and the call loop, so a plain lock
guards it; nothing awaits while holding it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from beam_agents.model.flow.rate_limit import RateLimit

__all__ = ["ProcessLimiter"]


class ProcessLimiter:
    """Requests and tokens per minute for one process, thread-safe."""

    __slots__ = (
        "_burst",
        "_clock",
        "_hold_until",
        "_lock",
        "_per_request",
        "_per_token",
        "_request_tat",
        "_token_tat",
        "rate_limit",
    )

    def __init__(
        self, rate_limit: RateLimit, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate_limit = rate_limit
        rpm, tpm = rate_limit.requests_per_minute, rate_limit.tokens_per_minute
        self._per_request = 60.0 / rpm if rpm else 0.0
        self._per_token = 60.0 / tpm if tpm else 0.0
        self._burst = rate_limit.burst_s
        self._clock = clock
        self._lock = threading.Lock()
        now = clock()
        self._request_tat = now
        self._token_tat = now
        self._hold_until = now

    def reserve(self, tokens: int) -> float:
        """Take the next slot for a call of `tokens` estimated tokens; seconds to wait for it."""
        with self._lock:
            now = self._clock()
            at = max(
                now,
                self._hold_until,
                self._request_tat - self._burst,
                self._token_tat - self._burst,
            )
            if self._per_request:
                self._request_tat = max(self._request_tat, at) + self._per_request
            if self._per_token:
                self._token_tat = max(self._token_tat, at) + max(0, tokens) * self._per_token
            return at - now

    def settle(self, estimated: int, actual: int) -> None:
        """Correct a reservation by what the call really used: a refund or a further charge."""
        if not self._per_token or actual == estimated:
            return
        with self._lock:
            self._token_tat += (actual - estimated) * self._per_token

    def slow_down(self, retry_after_s: float) -> None:
        """Hold every later reservation until `retry_after_s` from now, then resume evenly.

        The provider said the quota is spent: calls already scheduled inside
        the hold would only be refused too. After it, calls go at the rate
        from the hold's end, without a burst, so the first second back does
        not trip the limit again.
        """
        with self._lock:
            until = self._clock() + max(0.0, retry_after_s)
            if until <= self._hold_until:
                return
            self._hold_until = until
            if self._per_request:
                self._request_tat = max(self._request_tat, until + self._burst)
