"""The process-wide call loop, where the model calls of parked activations run.

A model call that has to wait would hold the Beam thread for its whole
latency: one thread, one call at a time. Instead, the activation parks (see
`beam_agents.runtime._parking`) and its call runs here: one event loop on
one background thread per worker process, shared by every DoFn instance, so
hundreds of calls overlap while the Beam threads move on. Providers used
here are built here, by the RunAgent's own `provider_factory`, once per
RunAgent in the process: async clients belong to the loop they start on.

The table of calls is keyed by (RunAgent token, replay-cache key). The poll
that re-runs a parked activation takes the finished call's outcome from it;
a call the table does not know (the key moved to another worker, or the
worker restarted) is simply issued again by the re-run: at-least-once, as
for a retried bundle.

Beam drops metric updates made off a Beam thread, so what providers count
here (tokens, latency, retries) is held as a list of updates and replayed on
the Beam thread that takes a finished call, into that thread's bundle.

Whether a provider waits at all is learned from its first call, run in
place as before: a provider that answers without waiting (a scripted one)
never parks anything, and costs what an in-place call costs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from apache_beam.runners.worker import statesampler

from beam_agents.model.messages import LlmRequest, LlmResponse
from beam_agents.model.provider import ModelProvider, check_provider

__all__ = ["CallLoop", "CallTimedOut", "Parked", "Parking", "call_loop"]

Outcome = concurrent.futures.Future[LlmResponse]

_WAIT_GRACE_S: Final = 5.0
"""How long past its own timeout a poll waits on a call before it parks the key again."""
_UNCLAIMED_S: Final = 3_600.0
"""How long a finished call nobody took stays in the table (its key moved away)."""


class Parked(BaseException):
    """Raised out of `ctx.call_model` when its call went to the call loop.

    A `BaseException`, like `CancelledError`: an agent's own `except
    Exception:` must not swallow it, or the activation would carry on
    without the answer it asked for.
    """

    def __init__(self, call_key: str) -> None:
        super().__init__(call_key)
        self.call_key = call_key


class _HeldMetrics:
    """Stands in for a Beam state sampler on the call loop's thread.

    Beam hands a metric update to the thread's current tracker; this one
    keeps the updates for a Beam thread to replay into its own bundle.
    """

    metrics_container = None
    """What Beam code asking for the thread's container directly gets: none."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._updates: list[tuple[object, object]] = []

    def current_state(self) -> _HeldMetrics:
        return self

    def update_metric(self, name: object, value: object) -> None:
        with self._lock:
            self._updates.append((name, value))

    def hand_over(self) -> None:
        """Replay what is held on the calling Beam thread, whose bundle then counts it."""
        with self._lock:
            updates, self._updates = self._updates, []
        tracker = statesampler.get_current_tracker()  # type: ignore[no-untyped-call]
        if tracker is None:
            return
        for name, value in updates:
            tracker.update_metric(name, value)


class CallTimedOut(BaseException):
    """A parked call ran past the activation timeout: the re-run fails as `activation_timeout`.

    A `BaseException`, as the cancellation that times an activation out in
    place is: an agent's `except Exception:` does not turn it into a result.
    """


class CallLoop:
    """One background event loop per process and the table of its calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._calls: OrderedDict[tuple[str, str], Outcome] = OrderedDict()
        self._finished_at: dict[Outcome, float] = {}
        self._running = 0
        self._providers: dict[str, ModelProvider] = {}
        """Per RunAgent token; touched only on the loop's thread."""
        self._waiting: set[str] = set()
        """Tokens whose provider was seen waiting on a call."""
        self.metrics = _HeldMetrics()
        self._expected_s: dict[str, float] = {}
        """Per token, a moving average of how long calls take (set on the loop's thread)."""

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=self._serve, args=(loop,), name="beam-agents-calls", daemon=True
                )
                thread.start()
                self._loop = loop
            return self._loop

    def _serve(self, loop: asyncio.AbstractEventLoop) -> None:
        statesampler.set_current_tracker(self.metrics)  # type: ignore[no-untyped-call]
        loop.run_forever()

    @property
    def inflight(self) -> int:
        """Calls started and not finished yet."""
        return self._running

    def provider_waits(self, token: str) -> bool:
        return token in self._waiting

    def saw_waiting(self, token: str) -> None:
        self._waiting.add(token)

    def submit(
        self,
        token: str,
        key: str,
        factory: Callable[[], ModelProvider],
        request: LlmRequest,
        timeout_s: float,
    ) -> bool:
        """Start the call unless the table knows it; whether it was started now."""
        loop = self._started()
        with self._lock:
            if (token, key) in self._calls:
                return False
            self._sweep()
            self._running += 1
            future = asyncio.run_coroutine_threadsafe(
                self._call(token, factory, request, timeout_s), loop
            )
            self._calls[(token, key)] = future
        future.add_done_callback(lambda done: self._finished((token, key), done))
        return True

    def _finished(self, entry: tuple[str, str], future: Outcome) -> None:
        with self._lock:
            self._running -= 1
            if self._calls.get(entry) is future:  # not taken or forgotten already
                self._finished_at[future] = time.monotonic()

    def _sweep(self) -> None:
        """Drop the oldest finished calls nobody took within `_UNCLAIMED_S` (under the lock).

        A key that moved to another worker never polls here again: without
        this its answer would stay for the life of the process.
        """
        horizon = time.monotonic() - _UNCLAIMED_S
        while self._calls:
            oldest = next(iter(self._calls.values()))
            finished = self._finished_at.get(oldest)
            if finished is None or finished > horizon:
                return
            self._calls.popitem(last=False)
            del self._finished_at[oldest]

    async def _call(
        self,
        token: str,
        factory: Callable[[], ModelProvider],
        request: LlmRequest,
        timeout_s: float,
    ) -> LlmResponse:
        provider = self._providers.get(token)
        if provider is None:
            provider = self._providers[token] = check_provider(factory())
        started = time.monotonic()
        try:
            return await asyncio.wait_for(provider.complete(request), timeout_s)
        finally:
            took = time.monotonic() - started
            before = self._expected_s.get(token)
            self._expected_s[token] = took if before is None else before + (took - before) / 8

    def expected_ms(self, token: str) -> int:
        """How long this RunAgent's calls take, on recent average (0 before the first)."""
        return int(self._expected_s.get(token, 0.0) * 1000)

    def find(self, token: str, key: str) -> Outcome | None:
        with self._lock:
            return self._calls.get((token, key))

    def take(self, token: str, key: str) -> Outcome | None:
        """The call's outcome if it finished (and out of the table), else None."""
        with self._lock:
            future = self._calls.get((token, key))
            if future is None or not future.done():
                return None
            del self._calls[(token, key)]
            self._finished_at.pop(future, None)
            return future

    def wait(self, token: str, key: str, timeout_s: float) -> None:
        """Block until the call finishes, at most `timeout_s`; at once if the table does not
        know it. Bounded although every call is: a provider that blocks the call loop's
        thread would otherwise hold the Beam thread with it."""
        future = self.find(token, key)
        if future is not None:
            concurrent.futures.wait([future], timeout=timeout_s)

    def forget(self, token: str, key: str) -> None:
        """Forget one call, as a worker the key moved to would not know it (chaos tests)."""
        with self._lock:
            future = self._calls.pop((token, key), None)
            if future is not None:
                self._finished_at.pop(future, None)


call_loop: Final = CallLoop()
"""The process's call loop; its thread starts with the first parked call."""


class Parking:
    """What an activator lends its activations' contexts: where a waiting call goes."""

    __slots__ = ("factory", "limit", "loop", "timeout_s", "token")

    def __init__(
        self,
        *,
        token: str,
        factory: Callable[[], ModelProvider],
        limit: int,
        timeout_s: float,
        loop: CallLoop = call_loop,
    ) -> None:
        self.token = token
        self.factory = factory
        self.limit = limit
        self.timeout_s = timeout_s
        self.loop = loop

    @property
    def waits(self) -> bool:
        """Whether this RunAgent's provider has been seen waiting (so its calls park)."""
        return self.loop.provider_waits(self.token)

    def saw_waiting(self) -> None:
        self.loop.saw_waiting(self.token)

    def take(self, key: str) -> Outcome | None:
        finished = self.loop.take(self.token, key)
        if finished is not None:
            self.loop.metrics.hand_over()
        return finished

    def park(self, key: str, request: LlmRequest) -> bool | None:
        """Send the call to the call loop: True if started now, False if already known,
        None if `limit` calls are in flight (the caller runs it in place)."""
        if self.loop.find(self.token, key) is not None:
            return False
        if self.loop.inflight >= self.limit:
            return None
        return self.loop.submit(self.token, key, self.factory, request, self.timeout_s)

    def wait(self, key: str) -> None:
        self.loop.wait(self.token, key, self.timeout_s + _WAIT_GRACE_S)

    def forget(self, key: str) -> None:
        self.loop.forget(self.token, key)

    def expected_ms(self) -> int:
        return self.loop.expected_ms(self.token)

    def unclaimed(self, key: str) -> bool:
        """Whether the call is still in the table: a re-run that waited on it did not ask it."""
        return self.loop.find(self.token, key) is not None
