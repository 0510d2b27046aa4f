"""The process-wide call loop, where the model and tool calls of parked activations run.

A model call that has to wait would hold the Beam thread for its whole
latency: one thread, one call at a time. Instead, the activation parks (see
`beam_agents.runtime._paths.parking`) and its call runs here: one event loop on
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

A call here ends as it would have ended in place, under the driver's rule
for an activation past its timeout (`beam_agents.runtime._calls.driver`): it is
cancelled at `activation_timeout_s`, cancelled again every
`RECANCEL_EVERY_S` while it catches that, and `RUNAWAY_GRACE_S` later
abandoned. An abandoned call finishes in the table with `RunawayError`, so
the poll's re-run fails as the runaway it was in place, and it stops
counting as in flight; the call itself is left to run on the loop, its
answer going nowhere. A call a waiting activation awaits here (a tool call
that does not park) gets that activation's cancellations, as it would on
the activation's own loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Final

from apache_beam.runners.worker import statesampler

from beam_agents.model.flow import Ticket, call_ticket
from beam_agents.model.messages import LlmRequest
from beam_agents.model.provider import ModelProvider, ProviderFactory, check_provider
from beam_agents.runtime._calls.driver import RECANCEL_EVERY_S, RUNAWAY_GRACE_S, RunawayError
from beam_agents.tools.calls import ToolCall

if TYPE_CHECKING:
    from beam_agents.runtime._calls.tools import ActivationTools

__all__ = [
    "CallAbandoned",
    "CallLoop",
    "CallTimedOut",
    "Parked",
    "Parking",
    "RunningCall",
    "call_loop",
]

_log = logging.getLogger(__name__)

Outcome = concurrent.futures.Future[Any]
"""A call's result: an `LlmResponse` for a model call, a `ToolResult` for a tool call."""
_TOOLS: Final = "\0tools"
_EMBEDDINGS: Final = "\0embeddings"
"""Appended to a RunAgent's token where its embedder's calls, not its chat calls, are meant."""
"""Appended to a RunAgent's token where its tools, not its provider, are meant."""
PARK_TOOL_AFTER_MS: Final = 20
"""Tool calls park once they take this long on average: about what a park costs
(its state write, its poll's timer and the re-run), on the DirectRunner most."""

_WAIT_GRACE_S: Final = 5.0
"""How long past its own timeout a poll waits on a call before it parks the key again."""
_QUEUED_RECHECK_S: Final = 1.0
"""How often a queued call's bound looks whether it was admitted yet."""
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


class CallAbandoned(CallTimedOut):
    """A parked call ignored every cancellation past the activation timeout and was abandoned.

    The re-run fails as the runaway it is in place (`RunawayError` there).
    """


class RunningCall:
    """A call on the loop that an activation awaits, and the way to cancel it from there."""

    __slots__ = ("_loop", "_task", "future")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._task: asyncio.Task[object] | None = None
        """The call's own task, set on the loop's thread once it starts."""
        self.future: Outcome = concurrent.futures.Future()
        """The call's outcome (replaced by the loop's own future as the call is sent)."""

    def interrupt(self) -> None:
        """Cancel the call on the loop, as a cancelled activation cancels a call in place.

        Unlike cancelling `future`, this leaves the outcome to the call: one
        that catches the cancellation goes on, and its end is still awaited.
        """
        self._loop.call_soon_threadsafe(self._cancel)

    def _cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def settled(self) -> Outcome:
        """`future` once the call ended, each cancellation of the caller passed on to it.

        Raises `CancelledError` when the call ended cancelled.
        """
        waiter = asyncio.wrap_future(self.future)
        while not waiter.done():
            try:
                await asyncio.wait((waiter,))
            except asyncio.CancelledError:
                if waiter.done():
                    break
                self.interrupt()
        if waiter.cancelled():
            raise asyncio.CancelledError
        waiter.exception()  # retrieved: the caller reads the outcome from `future`
        return self.future


class CallLoop:
    """One background event loop per process and the table of its calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._calls: OrderedDict[tuple[str, str], Outcome] = OrderedDict()
        self._queued: list[tuple[Coroutine[Any, Any, object], Outcome, contextvars.Context]] = []
        """Submitted calls the loop has not started yet (`_start_queued`)."""
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
        future: Outcome = concurrent.futures.Future()
        with self._lock:
            if (token, key) in self._calls:
                return False
            self._sweep()
            self._running += 1
            self._calls[(token, key)] = future
            call = self._call(timed_as or token, work, timeout_s, counted=True)
            # Started in the submitter's context, as run_coroutine_threadsafe would.
            self._queued.append((call, future, contextvars.copy_context()))
            wake = len(self._queued) == 1
        if wake:
            loop.call_soon_threadsafe(self._start_queued)
        future.add_done_callback(lambda done: self._finished((token, key), done))
        return True

    def _start_queued(self) -> None:
        """Start every call submitted since the loop last took them (on the loop's thread).

        Each wake-up of the loop from another thread is a write to its
        self-pipe, a system call: one per burst of submissions rather than
        one per call, since the Beam threads park many keys before the loop
        thread gets the interpreter back.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            queued, self._queued = self._queued, []
        for call, future, context in queued:
            task = loop.create_task(call, context=context)
            task.add_done_callback(functools.partial(_settle, future))

    def _finished(self, entry: tuple[str, str], future: Outcome) -> None:
        with self._lock:
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
    ) -> RunningCall:
        """Run `work` on the loop for a caller that waits for it; not in the table."""
        loop = self._started()
        running = RunningCall(loop)
        call = self._call(timed_as, work, timeout_s, running=running)
        running.future = asyncio.run_coroutine_threadsafe(call, loop)
        return running

    async def _call(
        self,
        token: str,
        work: Callable[[CallLoop], Awaitable[object]],
        timeout_s: float,
        *,
        counted: bool = False,
        running: RunningCall | None = None,
    ) -> object:
        """`work`'s outcome, bounded as an activation in place is (see the module docstring).

        A `counted` call stops counting as in flight here, before its outcome
        is visible to a poll that reads the count.
        """
        started = time.monotonic()
        ticket = Ticket()
        lent = call_ticket.set(ticket)  # the task starts with a copy of this context
        try:
            try:
                task = asyncio.ensure_future(work(self))
            finally:
                call_ticket.reset(lent)
            if running is not None:
                running._task = task
            return await _bounded(task, timeout_s, ticket)
        finally:
            took = time.monotonic() - started
            before = self._expected_s.get(token)
            self._expected_s[token] = took if before is None else before + (took - before) / 8
            if counted:
                with self._lock:
                    self._running -= 1

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


def _settle(future: Outcome, task: asyncio.Future[object]) -> None:
    """Hand a started call's end to the future its submitter holds (nobody cancels that one)."""
    if task.cancelled():
        future.cancel()
        future.set_running_or_notify_cancel()
        return
    future.set_running_or_notify_cancel()
    error = task.exception()
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(task.result())


async def _bounded(task: asyncio.Task[object], timeout_s: float, ticket: Ticket) -> object:
    """`task`'s result, under the runaway rule of an activation in place.

    Past `timeout_s` the outcome is never the task's result: one that caught
    the cancellation and answered anyway still timed out (`TimeoutError`),
    and one that keeps catching it is abandoned (`RunawayError`) and gives
    back what its ticket holds. The time runs from the call's admission: a
    model call queued for its share of a rate limit has not started.
    """
    try:
        while not task.done():
            since = ticket.since
            left = _QUEUED_RECHECK_S if since is None else since + timeout_s - time.monotonic()
            if left <= 0:
                break
            await asyncio.wait((task,), timeout=left)
        if task.done():
            return task.result()
        loop = asyncio.get_running_loop()
        give_up = loop.time() + RUNAWAY_GRACE_S
        while not task.done() and loop.time() < give_up:
            task.cancel()
            await asyncio.wait((task,), timeout=min(RECANCEL_EVERY_S, give_up - loop.time()))
    except asyncio.CancelledError:
        task.cancel()  # the caller gave up on the call
        raise
    if not task.done():
        ticket.abandon()
        _log.warning(
            "a call kept running %.1f s past its %s s bound, catching every cancellation; "
            "it was abandoned (its answer is never used)",
            RUNAWAY_GRACE_S,
            timeout_s,
        )
        raise RunawayError(f"did not finish within {timeout_s} s and ignored cancellation")
    if not task.cancelled():
        task.exception()  # retrieved: what came after the deadline is discarded
    raise TimeoutError(f"did not finish within {timeout_s} s")


call_loop: Final = CallLoop()
"""The process's call loop; its thread starts with the first parked call."""


class Parking:
    """What an activator lends its activations' contexts: where a waiting call goes."""

    __slots__ = (
        "answers_in_place",
        "factory",
        "limit",
        "loop",
        "parks_first",
        "timeout_s",
        "token",
        "tools_factory",
    )

    def __init__(
        self,
        *,
        token: str,
        factory: ProviderFactory | None,
        limit: int,
        timeout_s: float,
        tools_factory: Callable[[], ActivationTools] | None = None,
        loop: CallLoop = call_loop,
        parks_first: bool = False,
        answers_in_place: bool = False,
    ) -> None:
        self.token = token
        self.answers_in_place = answers_in_place
        """`max_inflight_calls=1` for a coalescing agent: the Beam thread waits for each
        call it parks before the activation parks. Calls are in place as far as the
        thread is concerned, and the key still parks, so the events that arrive
        behind it wait in its buffer and group exactly as they would with calls in
        flight: a coalescing agent's results do not depend on `max_inflight_calls`."""
        self.parks_first = parks_first
        """Whether the RunAgent's chat calls park from the first, without a first call in
        place to learn whether they wait: they are known to. A rate limit makes them wait
        for their turns (in place, a turn would be waited for holding the Beam thread,
        within the activation's time), and a provider on the network always waits."""
        self.factory = factory
        self.tools_factory = tools_factory
        self.limit = limit
        self.timeout_s = timeout_s
        self.loop = loop

    def waits(self, embedding: bool) -> bool:
        """Whether this RunAgent's calls of this kind park.

        Chat calls park once the provider was seen waiting, or from the first
        when they are known to wait (`parks_first`). Embeddings are learned
        from the embedder's own calls: one that answers at once (a local
        model) must not park because the chat model waits, or every recall
        would cost a park, a poll and a re-run for nothing.
        """
        if embedding:
            return self.loop.provider_waits(self.token + _EMBEDDINGS)
        return self.parks_first or self.loop.provider_waits(self.token)

    def saw_waiting(self, embedding: bool) -> None:
        self.loop.saw_waiting(self.token + _EMBEDDINGS if embedding else self.token)

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

    async def call_tool(self, call: ToolCall) -> Outcome:
        """Run the tool call on the call loop and wait here until it ended, without parking.

        The activation's cancellations reach the call, as they would reach
        it in place; one that ignores them is waited on, so the activation
        ends as the runaway it would be in place. The loop's own bound on the
        call starts only once the activation has given up on it: the two
        clocks must not race to end it.
        """
        bound_s = self.timeout_s + RUNAWAY_GRACE_S
        running = self.loop.run(self.token + _TOOLS, self._tool_work(call), bound_s)
        try:
            return await running.settled()
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
            started = False
        elif not self.answers_in_place and self.loop.inflight >= self.limit:
            return None
        else:
            started = self.loop.submit(self.token, key, work, self.timeout_s, timed_as)
        if self.answers_in_place:
            self.wait(key)
        return started

    def wait(self, key: str) -> None:
        self.loop.wait(self.token, key, self.timeout_s + _WAIT_GRACE_S)

    def forget(self, key: str) -> None:
        self.loop.forget(self.token, key)

    def expected_ms(self) -> int:
        return self.loop.expected_ms(self.token)

    def unclaimed(self, key: str) -> bool:
        """Whether the call is still in the table: a re-run that waited on it did not ask it."""
        return self.loop.find(self.token, key) is not None
