"""Driving agent coroutines on the Beam thread.

One event loop per DoFn instance, created in `setup()` and closed in
`teardown()`, driven in place with `run_until_complete`. Not a loop on a
separate bridge thread: a cross-thread hand-off costs ~135 µs p50 per call
on the reference machine, more than the whole activation overhead budget,
against ~30 µs in place; and Beam silently drops metric updates made off
the Beam thread. Async clients (stores, providers) are created on this loop
and only ever used from it.

An agent that blocks the loop with synchronous code cannot be timed out by
this (or any in-process) design: the timeout fires only when the coroutine
yields.

Eager start. Even in place, `run_until_complete` costs two loop iterations
(an epoll call each), a task and a timer per call: ~30-60 µs, which was
about half of a no-op activation's cost. Most activations never wait on
anything (no model call, or a replay-cache hit), so `run` starts each
coroutine eagerly, as Python 3.12's eager tasks do: it creates the task
that would run it, makes that task current and the loop running on this
thread, and steps the coroutine once right here. If it finishes, that is
the result, with no loop iteration and no timer. If it awaits, the task
resumes it where it stopped (a thin `_Resume` forwards every later step,
value and exception, including cancellation), under the same timeout
measured from the start. Inside the coroutine nothing can tell the
difference: `asyncio.current_task()` is its task, `get_running_loop()` its
loop, a `TaskGroup` or `asyncio.timeout` works, and it runs in the task's
own copy of the context. One difference remains: a task the agent spawns
without awaiting gets its first step at the loop's next iteration rather
than before `run` returns (the loop is iterated every `_DRAIN_EVERY`
activations that leave something queued).

The task is kept for the next activation. Its first step, which Task()
queues, is taken off the loop at once and queued again only if the
coroutine waits; a coroutine that finishes eagerly leaves the task pending
and untouched, and building a task (its step, its registration) was half
of driving a no-op agent. The next `run` hands it the next coroutine, under
the rule that keeps this invisible: only a task nothing has marked. One the
agent cancelled, gave a done-callback or renamed, or whose context the
agent changed or the thread's context no longer equals, is dropped and a
new one built. What an agent can still tell: two activations on one
instance may see the same `current_task()` object, as two tasks may share
an id once the first is gone.

From Python 3.12 on, asyncio has eager tasks itself, and the driver uses
them instead of the private bookkeeping above: `Task(coro,
eager_start=True)` takes the first step in its constructor when the loop is
running, so the activation loop reports itself running while a coroutine
is started in place (`_InPlaceLoop`), and the thread's running loop is set
through `asyncio._set_running_loop`, the hook asyncio provides for loop
implementations. Each activation gets a fresh task (no task is kept: the
kept task's rules read private task state), and what it spawned is run by
an iteration of the loop every `_DRAIN_EVERY` activations that queued
something, counted by the loop's `call_soon`.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
from asyncio import events, tasks
from collections import deque
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Final, NamedTuple, TypeVar, TypeVarTuple, cast

__all__ = ["RECANCEL_EVERY_S", "RUNAWAY_GRACE_S", "LoopDriver", "RunawayError"]

T = TypeVar("T")
_Ts = TypeVarTuple("_Ts")

_log = logging.getLogger(__name__)

RUNAWAY_GRACE_S: Final = 1.0
"""How long past its deadline an agent that catches cancellation is cancelled again."""
RECANCEL_EVERY_S: Final = 0.05

_DRAIN_EVERY: Final = 64
"""Eagerly finished activations that left something queued (a task the agent
spawned) between two iterations of the loop that run it."""

_EAGER_HOOKS: Final = all(
    hasattr(module, name)
    for module, name in (
        (events, "_set_running_loop"),
        (tasks, "_enter_task"),
        (tasks, "_leave_task"),
    )
)
"""The eager step uses asyncio's own (private) task bookkeeping, present from 3.11 on.

Should an interpreter lack it, every coroutine runs as a plain task on the
loop: slower per activation, identical in behaviour.
"""


_EAGER_TASKS: Final = sys.version_info >= (3, 12)
"""asyncio's own eager tasks (3.12 on) start coroutines in place; 3.11 uses the hooks."""


class _InPlaceLoop(asyncio.SelectorEventLoop):
    """The activation loop: running while a coroutine is started in place.

    An eager task takes its first step in its constructor only when its loop
    is running; the driver sets `in_place` around that constructor. It also
    counts what is queued to run soon, which tells the driver that an
    eagerly finished activation left work (a task it spawned) for the loop.
    """

    in_place = False
    queued = 0

    def is_running(self) -> bool:
        return self.in_place or super().is_running()

    def call_soon(
        self,
        callback: Callable[[*_Ts], object],
        *args: *_Ts,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        self.queued += 1
        return super().call_soon(callback, *args, context=context)


class RunawayError(TimeoutError):
    """A coroutine past its deadline caught every cancellation and was abandoned."""


class _Resume(Coroutine[Any, Any, Any]):
    """The task's coroutine: it continues the one its eager step started.

    Its first step hands the task what the eager step yielded (the future
    the coroutine waits on, or None for a bare yield), so the task waits on
    exactly that; every later step, value or exception (cancellation
    included), goes straight to the coroutine. A plain object rather than an
    `async def`, so it adds no frame per step, and a husk whose coroutine
    finished eagerly is never reported as "never awaited".
    """

    __slots__ = ("coro", "done", "first", "yielded")

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.done = False
        self.first = True
        self.yielded: Any = None

    def send(self, value: Any) -> Any:
        if self.first:
            self.first = False
            if self.done:
                raise StopIteration(None)
            return self.yielded
        return self.coro.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        if self.first:
            self.first = False
            if self.done:
                raise typ if val is None else val
        if val is None:
            return self.coro.throw(typ)
        return self.coro.throw(val)

    def close(self) -> None:
        if not self.done:
            self.coro.close()

    def __await__(self) -> Generator[Any, Any, Any]:
        raise TypeError("_Resume is driven by its task only")


def _is_husk(task: asyncio.Task[Any]) -> bool:
    """Whether `task` is a husk: its last coroutine finished in the eager step."""
    coro = task.get_coro()
    return isinstance(coro, _Resume) and coro.done and coro.first


class _Spare(NamedTuple):
    """A task whose coroutine finished eagerly, kept for the next activation."""

    task: asyncio.Task[Any]
    state: _Resume
    step: asyncio.Handle
    """The task's first step, held off the loop until a coroutine waits."""
    context: contextvars.Context
    name: str


def _discard(task: asyncio.Task[Any]) -> None:
    """Retrieve an abandoned task's outcome, which nothing uses, so it is not logged."""
    if not task.cancelled():
        task.exception()


class LoopDriver:
    """Owns one event loop and runs coroutines to completion on the calling thread."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = (
            _InPlaceLoop() if _EAGER_TASKS else asyncio.new_event_loop()
        )
        self._eager_done = 0
        ready = getattr(self._loop, "_ready", None) if not _EAGER_TASKS else None
        # The loop's queue of callbacks due now (a deque on every asyncio loop of
        # the standard library), where Task() queues a task's first step.
        self._ready: deque[asyncio.Handle] | None = (
            ready if _EAGER_HOOKS and isinstance(ready, deque) else None
        )
        self._spare: _Spare | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop clients must be created on."""
        if self._loop is None:
            raise RuntimeError("the activation loop is closed")
        return self._loop

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run `coro` to completion; raise TimeoutError after `timeout_s`.

        Started eagerly (see the module docstring): a coroutine that never
        waits finishes here without iterating the loop. The timeout is a
        cancel scheduled on the loop rather than `asyncio.wait_for`, which
        wraps the coroutine in a second task and costs three more loop
        iterations per call.
        """
        loop = self._loop
        if loop is None:
            raise RuntimeError("the activation loop is closed")
        started = loop.time()
        if isinstance(loop, _InPlaceLoop):
            return self._run_eager_task(loop, coro, started, timeout_s)
        ready = self._ready
        if ready is None:
            plain = asyncio.Task(coro, loop=loop, context=contextvars.copy_context())
            return cast(T, self._finish(plain, started, timeout_s))
        spare, self._spare = self._spare, None
        if spare is not None and spare.context == contextvars.copy_context():
            task, state, step, context, _ = spare
            state.coro, state.done, state.yielded = coro, False, None
        else:
            state = _Resume(coro)
            context = contextvars.copy_context()
            queued = len(ready)
            # Task() directly: the loop is ours and has no task factory to honour.
            task = asyncio.Task(state, loop=loop, context=context)
            if len(ready) != queued + 1:  # its step went elsewhere: let the loop run it
                return cast(T, self._finish(task, started, timeout_s))
            step = ready.pop()
            task._log_destroy_pending = False  # type: ignore[attr-defined]
            spare = _Spare(task, state, step, context, task.get_name())
        result: T
        events._set_running_loop(loop)
        tasks._enter_task(loop, task)
        try:
            state.yielded = context.run(coro.send, None)
        except StopIteration as stop:
            state.done = True
            result = stop.value
        except BaseException:
            state.done = True
            raise
        finally:
            tasks._leave_task(loop, task)
            events._set_running_loop(None)
            if state.done:
                self._keep(spare)
        if state.done:
            return result
        ready.append(step)  # the task takes the coroutine over from here
        return cast(T, self._finish(task, started, timeout_s))

    def _run_eager_task(
        self,
        loop: _InPlaceLoop,
        coro: Coroutine[Any, Any, T],
        started: float,
        timeout_s: float | None,
    ) -> T:
        """Start `coro` as an eager task of asyncio's own (3.12 on); finish it on the loop."""
        context = contextvars.copy_context()
        loop.in_place = True
        asyncio._set_running_loop(loop)
        try:
            task: asyncio.Task[T] = asyncio.Task(  # type: ignore[call-arg, unused-ignore]
                coro, loop=loop, context=context, eager_start=True
            )
        finally:
            asyncio._set_running_loop(None)
            loop.in_place = False
        if not task.done():
            return cast(T, self._finish(task, started, timeout_s))
        if loop.queued:
            self._eager_done += 1
            if self._eager_done >= _DRAIN_EVERY:
                loop.queued = 0
                self._drain()
        return task.result()

    def _finish(self, task: asyncio.Task[Any], started: float, timeout_s: float | None) -> Any:
        """Iterate the loop until `task` is done, cancelling it `timeout_s` after `started`.

        Past the deadline the task's outcome is never its result: an agent
        that caught the cancellation and returned anyway still timed out.
        One that keeps catching it is cancelled again every
        `RECANCEL_EVERY_S` and, `RUNAWAY_GRACE_S` after the deadline,
        abandoned: `run` raises TimeoutError and the task is left to the
        loop (it runs only while later activations drive it, and `close`
        cancels it once more).
        """
        loop = self.loop
        if timeout_s is None:
            return loop.run_until_complete(task)
        gate = loop.create_future()
        deadline = started + timeout_s
        expired = False

        def release(_: object = None) -> None:
            if not gate.done():
                gate.set_result(None)

        def expire() -> None:
            nonlocal expired
            expired = True
            task.cancel()
            if loop.time() < deadline + RUNAWAY_GRACE_S:
                handles[0] = loop.call_later(RECANCEL_EVERY_S, expire)
            else:
                release()

        handles = [loop.call_at(deadline, expire)]
        task.add_done_callback(release)
        try:
            loop.run_until_complete(gate)
        finally:
            handles[0].cancel()
            task.remove_done_callback(release)
        if not task.done():
            task.add_done_callback(_discard)
            _log.warning(
                "an agent kept running %.1f s past its %s s timeout, catching every "
                "cancellation; it was abandoned (its result is never committed)",
                RUNAWAY_GRACE_S,
                timeout_s,
            )
            raise RunawayError(f"did not finish within {timeout_s} s and ignored cancellation")
        if expired:
            if not task.cancelled():
                task.exception()  # retrieved: what came after the deadline is discarded
            raise TimeoutError(f"did not finish within {timeout_s} s") from None
        return task.result()

    def _keep(self, spare: _Spare) -> None:
        """Keep an eagerly finished task for the next activation, unless the agent marked it.

        Marked: cancelled, given a done-callback or renamed (a changed context
        is caught when the next `run` compares it with the thread's). A marked
        task is dropped: pending, never run, never logged. What the
        agent queued (a task it spawned) still runs: the loop is iterated
        every `_DRAIN_EVERY` such activations.
        """
        task = spare.task
        if not (
            task._must_cancel  # type: ignore[attr-defined]
            or task.cancelling()
            or task._callbacks
            or task.get_name() != spare.name
        ):
            self._spare = spare
        if self._ready:
            self._eager_done += 1
            if self._eager_done >= _DRAIN_EVERY:
                self._drain()

    def _drain(self) -> None:
        """Let the loop run what eagerly finished activations left queued."""
        self._eager_done = 0
        self.loop.run_until_complete(asyncio.sleep(0))

    def close(self) -> None:
        """Cancel what is left, finish async generators and close the loop."""
        loop, self._loop = self._loop, None
        self._spare = None
        if loop is None or loop.is_closed():
            return
        try:
            loop.run_until_complete(asyncio.sleep(0))  # run what activations left queued
            # A husk never runs, so it is never awaited (one is alive here only
            # if it is the spare or an agent kept a reference to its own task).
            pending = [t for t in asyncio.all_tasks(loop) if not _is_husk(t)]
            for task in pending:
                task.cancel()
            if pending:
                # Bounded: an abandoned agent may catch this cancellation too.
                loop.run_until_complete(asyncio.wait(pending, timeout=RUNAWAY_GRACE_S))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
