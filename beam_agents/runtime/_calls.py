"""The process-wide call loop, where the model and tool calls of parked activations run.

A model call that has to wait would hold the Beam thread for its whole
latency: one thread, one call at a time. Instead, the activation parks (see
`beam_agents.runtime._parking`) and its call runs here: one event loop on
one background thread per worker process, shared by every DoFn instance, so
hundreds of calls overlap while the Beam threads move on. Providers used
here are built here, by the RunAgent's own `provider_factory`, once per
RunAgent in the process: async clients belong to the loop they start on.
Tool calls run here too, through the loop's own copy of the RunAgent's
handlers and tool ledger, made once per RunAgent: the DoFn's own copies
belong to its activation loop, and a DirectRunner sets a DoFn up for every
bundle, where the loop's copies (their sessions and connections) last. A
tool call parks only once its tool calls are seen to take `PARK_TOOL_AFTER_MS`
on average; a faster call is awaited in place (on the loop, the Beam thread
waiting), since a park's poll and re-run would cost more than the call.

The table of calls is keyed by (RunAgent token, replay-cache key). The poll
that re-runs a parked activation takes the finished call's outcome from it;
a call the table does not know (the key moved to another worker, or the
worker restarted) is simply issued again by the re-run: at-least-once, as
for a retried bundle.

Beam drops metric updates made off a Beam thread, so what providers count
here (tokens, latency, retries) is held as a list of updates and replayed on
the Beam thread that takes a finished call, into that thread's bundle.

Whether a provider (or the tools) waits at all is learned from its first
call, run in place as before: a provider that answers without waiting (a
scripted one) never parks anything, and costs what an in-place call costs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, cast

from apache_beam.runners.worker import statesampler

from beam_agents.model.messages import LlmRequest
from beam_agents.model.provider import ModelProvider, ProviderFactory, check_provider
from beam_agents.tools.calls import ToolCall, ToolResult

if TYPE_CHECKING:
    from beam_agents.runtime._tools import ActivationTools

__all__ = ["CallLoop", "CallTimedOut", "Parked", "Parking", "call_loop"]

Outcome = concurrent.futures.Future[Any]
"""A call's result: an `LlmResponse` for a model call, a `ToolResult` for a tool call."""
_TOOLS: Final = "\0tools"
"""Appended to a RunAgent's token where its tools, not its provider, are meant."""
PARK_TOOL_AFTER_MS: Final = 20
"""Tool calls park once they take this long on average: about what a park costs
(its state write, its poll's timer and the re-run), on the DirectRunner most."""

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
        self._tools: dict[str, ActivationTools] = {}
        """Per RunAgent token, the loop's copy of its tools; touched only on the loop's thread."""
        self._waiting: set[str] = set()
        """Tokens whose provider was seen waiting on a call (tool calls go by `_expected_s`)."""
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
        work: Callable[[CallLoop], Awaitable[object]],
        timeout_s: float,
        timed_as: str | None = None,
    ) -> bool:
        """Start `work` on the loop unless the table knows the call; whether it was started now.

        `work` is called on the loop's thread, with this loop, whose
        `provider` and `tools` it takes its clients from. Its latency is
        averaged under `timed_as` (default: `token`, the provider's calls).
        """
        loop = self._started()
        with self._lock:
            if (token, key) in self._calls:
                return False
            self._sweep()
            self._running += 1
            call = self._call(timed_as or token, work, timeout_s)
            future = asyncio.run_coroutine_threadsafe(call, loop)
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

    def run(
        self, timed_as: str, work: Callable[[CallLoop], Awaitable[object]], timeout_s: float
    ) -> Outcome:
        """Run `work` on the loop for a caller that waits for it; not in the table."""
        return asyncio.run_coroutine_threadsafe(
            self._call(timed_as, work, timeout_s), self._started()
        )

    async def _call(
        self, token: str, work: Callable[[CallLoop], Awaitable[object]], timeout_s: float
    ) -> object:
        started = time.monotonic()
        try:
            return await asyncio.wait_for(work(self), timeout_s)
        finally:
            took = time.monotonic() - started
            before = self._expected_s.get(token)
            self._expected_s[token] = took if before is None else before + (took - before) / 8

    def provider(self, token: str, factory: ProviderFactory) -> ModelProvider:
        """The RunAgent's provider on this loop, built on first use (on the loop's thread)."""
        provider = self._providers.get(token)
        if provider is None:
            provider = self._providers[token] = check_provider(factory())
        return provider

    def tools(self, token: str, factory: Callable[[], ActivationTools]) -> ActivationTools:
        """The RunAgent's tools on this loop, built on first use (on the loop's thread)."""
        tools = self._tools.get(token)
        if tools is None:
            tools = self._tools[token] = factory()
        return tools

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

    __slots__ = ("factory", "limit", "loop", "timeout_s", "token", "tools_factory")

    def __init__(
        self,
        *,
        token: str,
        factory: ProviderFactory | None,
        limit: int,
        timeout_s: float,
        tools_factory: Callable[[], ActivationTools] | None = None,
        loop: CallLoop = call_loop,
    ) -> None:
        self.token = token
        self.factory = factory
        self.tools_factory = tools_factory
        self.limit = limit
        self.timeout_s = timeout_s
        self.loop = loop

    @property
    def waits(self) -> bool:
        """Whether this RunAgent's provider has been seen waiting (so its calls park)."""
        return self.loop.provider_waits(self.token)

    def saw_waiting(self) -> None:
        self.loop.saw_waiting(self.token)

    @property
    def tools_park(self) -> bool:
        """Whether this RunAgent's tool calls take long enough, on average, to park."""
        return self.loop.expected_ms(self.token + _TOOLS) >= PARK_TOOL_AFTER_MS

    def take(self, key: str) -> Outcome | None:
        finished = self.loop.take(self.token, key)
        if finished is not None:
            self.loop.metrics.hand_over()
        return finished

    def park(self, key: str, request: LlmRequest) -> bool | None:
        """Send the model call to the call loop: True if started now, False if already
        known, None if `limit` calls are in flight (the caller runs it in place)."""
        factory = self.factory
        assert factory is not None, "a model call parks only with a provider"
        token = self.token
        return self._submit(key, lambda loop: loop.provider(token, factory).complete(request))

    def park_tool(self, key: str, call: ToolCall) -> bool | None:
        """Send the tool call to the call loop, as `park` does a model call."""
        return self._submit(key, self._tool_work(call), timed_as=self.token + _TOOLS)

    async def call_tool(self, call: ToolCall) -> ToolResult:
        """Run the tool call on the call loop and wait for it here, without parking."""
        future = self.loop.run(self.token + _TOOLS, self._tool_work(call), self.timeout_s)
        try:
            return cast(ToolResult, await asyncio.wrap_future(future))
        finally:
            self.loop.metrics.hand_over()

    def _tool_work(self, call: ToolCall) -> Callable[[CallLoop], Awaitable[object]]:
        factory = self.tools_factory
        assert factory is not None, "a tool call goes to the call loop only with tools"
        token = self.token
        return lambda loop: loop.tools(token, factory).call(call)

    def _submit(
        self, key: str, work: Callable[[CallLoop], Awaitable[object]], timed_as: str | None = None
    ) -> bool | None:
        if self.loop.find(self.token, key) is not None:
            return False
        if self.loop.inflight >= self.limit:
            return None
        return self.loop.submit(self.token, key, work, self.timeout_s, timed_as)

    def wait(self, key: str) -> None:
        self.loop.wait(self.token, key, self.timeout_s + _WAIT_GRACE_S)

    def forget(self, key: str) -> None:
        self.loop.forget(self.token, key)

    def expected_ms(self) -> int:
        return self.loop.expected_ms(self.token)

    def unclaimed(self, key: str) -> bool:
        """Whether the call is still in the table: a re-run that waited on it did not ask it."""
        return self.loop.find(self.token, key) is not None
