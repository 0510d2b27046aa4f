"""The activation lifecycle, independent of Beam's state API.

`Activator` holds what one DoFn instance owns (the agent, its config, the
event loop, the provider) and implements the four things that can happen to
a key: an event, an answer, the TTL timer and the HITL timer. It reads and
writes the key's cells through the `Cell`/`Timer` protocol of
`beam_agents.runtime._cells`, which keeps this logic testable and
benchmarkable without a runner. With lifecycle records on, each entry point
also yields the `LifecycleEvent`s of what it committed
(`beam_agents.runtime.lifecycle`).

An activation whose model call has to wait parks (`beam_agents.runtime._parking`):
it commits nothing, and the HITL timer's callback polls, re-running it at
the same seq once the call has answered.

The rule everything here follows: compute first, write last. Until the
agent (and everything after it) has succeeded nothing is written, so a
failure anywhere leaves every cell as it was and produces exactly one
`ActivationError`. State is written only when it changed.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Final, NamedTuple

from apache_beam.pvalue import TaggedOutput

from beam_agents.budget import BudgetExceeded, Meter
from beam_agents.coders import encode_deterministic
from beam_agents.config import AgentConfig
from beam_agents.errors import StateDecodeError
from beam_agents.memory.facade import Memory, MemoryOverflow
from beam_agents.memory.longterm import LongtermMemory, LongtermReadError
from beam_agents.memory.resident import shared_resident
from beam_agents.memory.stores.base import MAX_ENTITY_KEY_BYTES, MemoryRecord, MemoryStore
from beam_agents.model.provider import ModelProvider
from beam_agents.model.replay import ReplayCache, ReplayLimits
from beam_agents.proto.beam_agents_pb2 import (
    BufferedEvent,
    Continuation,
    MemoryBlob,
    PendingIntents,
    SeqState,
)
from beam_agents.proto.beam_agents_pb2 import ReplayCache as ReplayCacheBlob
from beam_agents.runtime import _failpoints as failpoints
from beam_agents.runtime import _parking as parking
from beam_agents.runtime import _suspension as suspension
from beam_agents.runtime import errors as reasons
from beam_agents.runtime import lifecycle as trace
from beam_agents.runtime._calls import CallTimedOut, Parked, Parking, call_loop
from beam_agents.runtime._cells import Cell, KeyCells, Timer, write_seq
from beam_agents.runtime._cells import read_message as _parse
from beam_agents.runtime._driver import LoopDriver, RunawayError
from beam_agents.runtime._expiry import ExpireFlushRefused, flush_on_expire
from beam_agents.runtime._flush import FlushOutcomeUnknown, flush
from beam_agents.runtime._metrics import ActivationTally, count_error, runtime_metrics
from beam_agents.runtime._run import Run as _Run
from beam_agents.runtime._timestamps import millis, timer_timestamp
from beam_agents.runtime._tools import ActivationTools
from beam_agents.runtime._tracebacks import dead_letter_log, describe_exception
from beam_agents.runtime.context import ActivationContext
from beam_agents.runtime.errors import ActivationError, ModelCallError
from beam_agents.runtime.results import Complete, Suspend
from beam_agents.telemetry import ActivationSpan, flush_span, sdk_installed
from beam_agents.tools.errors import ToolError

__all__ = [
    "ERRORS_TAG",
    "INTENTS_TAG",
    "Activator",
    "Agent",
    "Cell",
    "KeyCells",
    "Timer",
]

ERRORS_TAG: Final = "errors"
INTENTS_TAG: Final = "intents"

Agent = Callable[[ActivationContext], Coroutine[Any, Any, Complete | Suspend]]
Tagged = TaggedOutput[str, Any]
Output = tuple[bytes, bytes] | Tagged


class _SummarizerFailed(Exception):
    """Marks a failure raised during tier-2 summarization, whatever its type."""


def _classify(exc: BaseException) -> str:
    if isinstance(exc, _SummarizerFailed):
        return reasons.SUMMARIZER_ERROR
    if isinstance(exc, TimeoutError | CallTimedOut):
        return reasons.ACTIVATION_TIMEOUT
    if isinstance(exc, MemoryOverflow):
        return reasons.MEMORY_OVERFLOW
    if isinstance(exc, ModelCallError):
        return reasons.MODEL_ERROR
    if isinstance(exc, ToolError):
        return reasons.TOOL_ERROR
    if isinstance(exc, StateDecodeError):
        return reasons.STATE_DECODE_ERROR
    if isinstance(exc, LongtermReadError):
        return reasons.LONGTERM_READ_FAILED
    if isinstance(exc, BudgetExceeded):
        return reasons.BUDGET_EXCEEDED
    return reasons.ACTIVATION_ERROR


def _describe(exc: BaseException, config: AgentConfig) -> str:
    if isinstance(exc, RunawayError):
        return (
            f"agent did not finish within {config.activation_timeout_s} s and ignored "
            "cancellation for a further second: abandoned (it may still run on the worker; "
            "an agent must not catch CancelledError without re-raising it)"
        )
    if isinstance(exc, TimeoutError | CallTimedOut):
        return f"agent did not finish within {config.activation_timeout_s} s"
    if isinstance(exc, _SummarizerFailed) and exc.__cause__ is not None:
        return f"summarizer: {describe_exception(exc.__cause__)}"
    return describe_exception(exc)


_COMPLETED: Final = 0
_SUSPENDED: Final = 1
_FAILED: Final = 2
_PARKED: Final = 3
_FATAL: Final = (KeyboardInterrupt, SystemExit)
"""What a task group may carry that must still stop the worker."""
_RESULTS: Final = (Complete, Suspend)
"""What an agent may return."""
_NO_INDICES: Final[frozenset[int]] = frozenset()
_OUTCOMES: Final = ("completed", "suspended", "failed", "parked")
"""Span outcome names, indexed by the outcome constants above."""


def _dead_letter_of(out: Sequence[Output]) -> tuple[str, str] | None:
    """The (reason, detail) of the dead letter among an attempt's outputs, if any."""
    for item in out:
        if isinstance(item, TaggedOutput) and item.tag == ERRORS_TAG:
            error: ActivationError = item.value
            return error.reason, error.detail
    return None


def _rerun_of(run: _Run) -> str | None:
    if run.parked is not None:
        return "parked"
    return "resumed" if run.resumed is not None else None


def _live_suspension(cells: KeyCells, seq_state: SeqState | None) -> Continuation | None:
    """The key's suspension, read only where SEQ says there may be one.

    A key whose last commit left CONTINUATION empty (`continuation_clear`),
    or that never committed (every commit writing CONTINUATION writes SEQ),
    has none, and is spared the read: on a production runner, a state fetch.
    """
    if seq_state is None or seq_state.continuation_clear:
        return None
    return _parse(cells.continuation, Continuation, "CONTINUATION")


def _parse_parked(cells: KeyCells) -> Continuation:
    """The key's parked continuation, which the caller knows is there."""
    parked = _parse(cells.continuation, Continuation, "CONTINUATION")
    assert parked is not None
    return parked


def _parked_in(group: BaseExceptionGroup[BaseException]) -> Parked | None:
    """The park signal a task group raised, when parking is all that happened in it."""
    parked, rest = group.split(Parked)
    if parked is None or rest is not None:
        return None
    while isinstance(parked, BaseExceptionGroup):
        parked = parked.exceptions[0]  # type: ignore[assignment]
    return parked if isinstance(parked, Parked) else None


class _TimerWatch:
    """A timer that remembers the last time it was set to (in ms), for the TTL callback."""

    __slots__ = ("last_ms", "timer")

    def __init__(self, timer: Timer) -> None:
        self.timer = timer
        self.last_ms: int | None = None

    def set(self, timestamp: object) -> None:
        self.last_ms = millis(timestamp)  # type: ignore[arg-type]
        self.timer.set(timestamp)

    def clear(self) -> None:
        self.last_ms = None
        self.timer.clear()


class _Held(NamedTuple):
    """What a key holds when its TTL fires."""

    seq: int
    blob: MemoryBlob | None
    suspended: Continuation | None
    cache: ReplayCacheBlob | None
    pending: PendingIntents | None


class _Opened(NamedTuple):
    """An activation ready to run: what `_open` built from the key's cells."""

    ctx: ActivationContext
    memory: Memory
    cache: ReplayCache
    longterm: LongtermMemory | None
    compactions: trace.CompactionLog | None
    committed: int
    """Working-memory bytes as committed, for the records."""


def _committed_bytes(blob: MemoryBlob | None) -> int:
    return blob.total_value_bytes if blob is not None else 0


class Activator:
    """Runs activations for one DoFn instance; see the module docstring."""

    def __init__(
        self,
        *,
        agent: Agent,
        config: AgentConfig,
        token: str,
        clock_ms: Callable[[], int],
        driver: LoopDriver,
        provider: ModelProvider | None,
        store: MemoryStore | None = None,
        limits: ReplayLimits | None = None,
        lifecycle: bool = False,
        poll_clock_ms: Callable[[], int] | None = None,
        poll_after_call: bool = False,
        tools: ActivationTools | None = None,
    ) -> None:
        self.agent = agent
        self.config = config
        self.token = token
        self.clock_ms = clock_ms
        self.driver = driver
        self.provider = provider
        self.store = store
        self.limits = limits or ReplayLimits()
        self.resident = shared_resident()
        self.lifecycle = lifecycle
        self.tally = ActivationTally()
        """Held per-activation metrics; whoever runs the activator flushes them per bundle."""
        self.max_key_bytes = MAX_ENTITY_KEY_BYTES if store is not None else sys.maxsize
        """Longest entity key admitted: with a store, the longest every backend can hold."""
        factory = config.provider_factory
        self.parking = (
            Parking(
                token=token,
                factory=factory,
                limit=config.max_inflight_calls,
                timeout_s=config.activation_timeout_s,
                tools_factory=None if tools is None else tools.copy,
            )
            if (factory is not None or tools is not None) and config.max_inflight_calls > 1
            else None
        )
        """Where calls that wait go; None runs every call in place (`max_inflight_calls=1`)."""
        self.tools = tools
        """The configured tools and their ledger; None when the config has none."""
        self.poll_clock_ms = poll_clock_ms
        """The clock a park's poll is due by; None: due at once (`_parking.POLL_AT_MS`)."""
        self.poll_after_call = poll_after_call
        self.traced = sdk_installed()
        """Whether activations get spans; whoever runs the activator re-asks per bundle."""
        """Set the poll when the call is expected to have answered, not at once: a
        deployed runner fires processing-time timers on the wall clock, and a poll
        that fired at once would hold a worker thread for the rest of the call."""

    # -- entry points -----------------------------------------------------------------

    def on_event(
        self, entity_key: bytes, event: bytes, event_time_ms: int, cells: KeyCells
    ) -> list[Output]:
        """One event for one key: run the agent once (or dead-letter the event)."""
        if len(entity_key) > self.max_key_bytes:
            return self._refuse_key(entity_key, event, event_time_ms)
        try:
            seq_state = _parse(cells.seq, SeqState, "SEQ")
            suspended = _live_suspension(cells, seq_state)
        except StateDecodeError as exc:
            return self._dead_letter(
                self._error(entity_key, reasons.STATE_DECODE_ERROR, str(exc), event_time_ms, event)
            )
        if suspended is not None:
            return self._hold(entity_key, event, event_time_ms, suspended, cells)
        seq = (seq_state.seq if seq_state is not None else 0) + 1
        run = _Run(
            entity_key=entity_key,
            event=event,
            event_id=None,
            seq=seq,
            now_ms=event_time_ms,
            element_time_ms=event_time_ms,
        )
        return self._activate(run, cells)[0]

    def on_answer(
        self,
        entity_key: bytes,
        intent_id: str,
        answer: bytes,
        element_time_ms: int,
        cells: KeyCells,
    ) -> list[Output]:
        """An answer to a pending approval: resume the suspended activation."""
        if len(entity_key) > self.max_key_bytes:
            return self._refuse_key(entity_key, answer, element_time_ms)
        try:
            suspended = _parse(cells.continuation, Continuation, "CONTINUATION")
            pending = _parse(cells.pending, PendingIntents, "PENDING")
        except StateDecodeError as exc:
            return self._dead_letter(
                self._error(
                    entity_key, reasons.STATE_DECODE_ERROR, str(exc), element_time_ms, answer
                )
            )
        if parking.is_parked(suspended):
            # The answer comes after the parked activation, as it would in place.
            assert suspended is not None
            out = self._unpark_in_place(entity_key, suspended, cells)
            return out + self.on_answer(entity_key, intent_id, answer, element_time_ms, cells)
        waiting = {i.intent_id for i in pending.intents} if pending is not None else set()
        if suspended is None or intent_id not in waiting:
            detail = f"no live suspension of this key is waiting on intent {intent_id}"
            return self._dead_letter(
                self._error(entity_key, reasons.ORPHANED_ANSWER, detail, element_time_ms, answer)
            )
        runtime_metrics.resumptions.inc()  # type: ignore[no-untyped-call]
        run = _Run(
            entity_key=entity_key,
            event=suspended.event,
            event_id=suspended.event_id,
            seq=suspended.seq,
            now_ms=suspended.event_time_ms,
            element_time_ms=element_time_ms,
            answer=answer,
            resumed=suspended,
            backlog=list(suspended.buffered),
            answered=len(suspended.buffered),
        )
        out, outcome = self._activate(run, cells)
        if outcome == _COMPLETED and run.backlog:
            # Denied or approved alike, the suspension is resolved: run what waited.
            out.extend(self._drain_after(run, cells))
        return out

    def on_invalid(
        self, entity_key: bytes, detail: str, payload: bytes, time_ms: int
    ) -> list[Output]:
        """A malformed input element: dead-lettered, no state read or written."""
        return self._dead_letter(
            self._error(entity_key, reasons.INVALID_EVENT, detail, time_ms, payload)
        )

    def on_refused(
        self, entity_key: bytes, reason: str, detail: str, payload: bytes, time_ms: int
    ) -> list[Output]:
        """An input refused before it reaches state (an answer failing its signature)."""
        return self._dead_letter(self._error(entity_key, reason, detail, time_ms, payload))

    def _refuse_key(self, entity_key: bytes, payload: bytes, time_ms: int) -> list[Output]:
        """An entity key no store can hold: refused where it enters, never at its expiry.

        Admitted, it would run until the first long-term write or on_expire
        flush of the key, which the store refuses on every attempt.
        """
        detail = (
            f"entity key is {len(entity_key)} bytes, over the {self.max_key_bytes}-byte limit "
            "of a key with a long-term store (AgentConfig.longterm_memory)"
        )
        return self._dead_letter(
            self._error(entity_key, reasons.INVALID_EVENT, detail, time_ms, payload)
        )

    def on_ttl(self, entity_key: bytes, fire_time_ms: int, cells: KeyCells) -> list[Output]:
        """The key was idle for `ttl_ms`: wipe its working state (SEQ survives)."""
        try:
            held = self._held_at_expiry(cells)
        except StateDecodeError as exc:
            # Unreadable state is never wiped: a deploy mistake must not become data loss.
            return self._dead_letter(
                self._error(entity_key, reasons.STATE_DECODE_ERROR, str(exc), fire_time_ms)
            )
        if parking.is_parked(held.suspended):
            # The expiry waits for the parked activation, as it waits for a
            # suspension: the poll expires the key if nothing re-arms the TTL.
            assert held.suspended is not None
            parking.mark_expiry(held.suspended, fire_time_ms, cells)
            return []
        return self._expire(entity_key, fire_time_ms, held, cells)

    def _held_at_expiry(self, cells: KeyCells) -> _Held:
        """What the key holds, read only where SEQ says it may hold it."""
        cache = pending = None
        seq_state = _parse(cells.seq, SeqState, "SEQ")
        blob = _parse(cells.memory, MemoryBlob, "MEMORY")
        suspended = _live_suspension(cells, seq_state)
        # PENDING and LLM_CACHE are written only beside a CONTINUATION and
        # cleared with it, in one commit, so an idle key skips them too: each
        # read is a state fetch (a sized cache fill on the portable runner).
        if suspended is not None:
            cache = _parse(cells.cache, ReplayCacheBlob, "LLM_CACHE")
            pending = _parse(cells.pending, PendingIntents, "PENDING")
        seq = seq_state.seq if seq_state is not None else 0
        return _Held(seq, blob, suspended, cache, pending)

    def _expire(
        self, entity_key: bytes, fire_time_ms: int, held: _Held, cells: KeyCells
    ) -> list[Output]:
        seq, blob, suspended = held.seq, held.blob, held.suspended
        out: list[Output] = []
        if suspended is not None:
            out.extend(self._wipe_suspension(entity_key, suspended, blob, fire_time_ms, cells))
        rows = 0
        if blob is not None and blob.entries:
            rows = self._flush_on_expire(entity_key, blob, seq, fire_time_ms, out)
        self.resident.forget(self.token, entity_key)  # a retried timer bundle just decodes
        cleared = (
            (cells.memory, blob),
            (cells.cache, held.cache),
            (cells.continuation, suspended),
            (cells.pending, held.pending),
        )
        for cell, message in cleared:
            if message is not None:  # an empty cell needs no clear (a state write per cell)
                cell.clear()
        runtime_metrics.ttl_wipes.inc()  # type: ignore[no-untyped-call]
        if self.lifecycle:
            if rows:
                size = _committed_bytes(blob)
                out.append(
                    trace.record(
                        entity_key, trace.EXPIRE_FLUSHED, fire_time_ms, seq, size, f"{rows}"
                    )
                )
            out.append(trace.record(entity_key, trace.TTL_EXPIRED, fire_time_ms, seq, 0))
        return out

    def _wipe_suspension(
        self,
        entity_key: bytes,
        suspended: Continuation,
        blob: MemoryBlob | None,
        fire_time_ms: int,
        cells: KeyCells,
    ) -> list[Output]:
        """Dead letters for a suspension the wipe reaches, and every event held behind it."""
        detail = (
            f"TTL garbage collection reached the key while suspended at seq "
            f"{suspended.seq} waiting on intent {suspended.intent_id}"
        )
        held = [(detail, suspended.event), *suspension.wiped(suspended)]
        out: list[Output] = []
        for text, payload in held:
            error = self._error(
                entity_key, reasons.TTL_WIPED_SUSPENSION, text, fire_time_ms, payload
            )
            out.extend(self._dead_letter(error, suspended.seq, _committed_bytes(blob)))
        cells.hitl_timer.clear()
        return out

    def _flush_on_expire(
        self, entity_key: bytes, blob: MemoryBlob, seq: int, fire_time_ms: int, out: list[Output]
    ) -> int:
        """Rows the on_expire flush wrote; a permanent refusal is appended to `out`."""
        try:
            return flush_on_expire(
                config=self.config,
                store=self.store,
                driver=self.driver,
                entity_key=entity_key,
                blob=blob,
                seq=seq,
                fire_time_ms=fire_time_ms,
            )
        except ExpireFlushRefused as refused:
            error = self._error(
                entity_key,
                reasons.EXPIRE_FLUSH_REFUSED,
                refused.detail,
                fire_time_ms,
                refused.payload,
            )
            out.extend(self._dead_letter(error, seq, _committed_bytes(blob)))
            return 0

    def on_hitl(self, entity_key: bytes, cells: KeyCells) -> list[Output]:
        """The suspension's deadline passed with no answer."""
        try:
            suspended = _parse(cells.continuation, Continuation, "CONTINUATION")
        except StateDecodeError as exc:
            return self._dead_letter(
                self._error(entity_key, reasons.STATE_DECODE_ERROR, str(exc), 0)
            )
        if suspended is None:
            return []  # answered (or wiped) before the timer fired
        if parking.is_parked(suspended):
            return self._poll(entity_key, suspended, cells)  # the timer is the poll
        detail = (
            f"no answer to intent {suspended.intent_id} before the deadline "
            f"({suspended.deadline_ms} ms processing time)"
        )
        cells.continuation.clear()
        cells.pending.clear()
        cells.cache.clear()
        error = self._error(
            entity_key,
            reasons.SUSPENSION_TIMEOUT,
            detail,
            suspended.deadline_ms,
            suspended.event,
        )
        out = self._dead_letter(error, suspended.seq, self._memory_bytes(cells))
        if suspended.buffered:
            # No event time drained these (the deadline is processing time): each
            # drained run's records carry its own event time.
            out.extend(self._drain(entity_key, suspended.buffered, suspended.seq + 1, cells))
        return out

    # -- parking ---------------------------------------------------------------------

    def _poll(self, entity_key: bytes, parked: Continuation, cells: KeyCells) -> list[Output]:
        """Wait for the parked activation's call, re-run it, and settle what it leaves.

        The wait happens here, in the callback: on a runner whose processing
        time is a test clock nothing else would move it on, and elsewhere the
        call has had the time since the park. A call this process does not
        know is not waited on: the re-run issues it again.
        """
        if self.parking is not None:
            if failpoints.fires(failpoints.POLL, entity_key, parked.seq):
                self.parking.forget(parked.parked.call_key)
            self.parking.wait(parked.parked.call_key)
        expiry = parked.parked.expire_at_ms if parked.parked.HasField("expire_at_ms") else None
        watch = _TimerWatch(cells.ttl_timer)
        cells = cells._replace(ttl_timer=watch)
        run = parking.rerun(entity_key, parked)
        out, outcome = self._activate(run, cells)
        if outcome == _PARKED and self._asked_anew(parked, cells):
            # Its requests are not a function of its inputs (an impure prompt): each
            # re-run would park on a new call. Run it in place, as without parking.
            self.parking.forget(parked.parked.call_key)  # type: ignore[union-attr]
            run = parking.rerun(entity_key, _parse_parked(cells))
            run.in_place = True
            out2, outcome = self._activate(run, cells)
            out.extend(out2)
        runtime_metrics.model_calls_inflight.set(call_loop.inflight)  # type: ignore[no-untyped-call]
        if outcome == _COMPLETED and run.backlog:
            out.extend(self._drain_after(run, cells))
        elif outcome == _FAILED:
            free = parking.restore(run, cells)
            if free:
                run.backlog = free
                out.extend(self._drain_after(run, cells, seq=run.seq))
        if expiry is not None and watch.last_ms is None:
            out.extend(self._expire_after_poll(entity_key, expiry, cells))
        return out

    def _asked_anew(self, parked: Continuation, cells: KeyCells) -> bool:
        """Whether a re-run parked on another call than the one it waited on, leaving that one."""
        if self.parking is None:
            return False
        waited_on = parked.parked.call_key
        now = _parse_parked(cells)
        return now.parked.call_key != waited_on and self.parking.unclaimed(waited_on)

    def _expire_after_poll(
        self, entity_key: bytes, fire_time_ms: int, cells: KeyCells
    ) -> list[Output]:
        """A TTL firing that waited for the parked activation, now that nothing re-armed it.

        Still parked (a drained event parked in turn), the key keeps waiting;
        otherwise it expires now, as it would have after the activation in place.
        """
        current = _parse(cells.continuation, Continuation, "CONTINUATION")
        if parking.is_parked(current):
            assert current is not None
            parking.mark_expiry(current, fire_time_ms, cells)
            return []
        return self.on_ttl(entity_key, fire_time_ms, cells)

    def _unpark_in_place(
        self, entity_key: bytes, parked: Continuation, cells: KeyCells
    ) -> list[Output]:
        """Backpressure: poll the key here until it no longer waits on the model."""
        out: list[Output] = []
        current: Continuation | None = parked
        while current is not None and parking.is_parked(current):
            out.extend(self._poll(entity_key, current, cells))
            current = _parse(cells.continuation, Continuation, "CONTINUATION")
        return out

    def _park(self, run: _Run, opened: _Opened, call_key: str, cells: KeyCells) -> list[Output]:
        """Commit the park: the key now waits on `call_key`, and nothing staged is kept."""
        poll = self.poll_clock_ms
        poll_at_ms = parking.POLL_AT_MS if poll is None else poll()
        if self.poll_after_call and self.parking is not None:
            poll_at_ms += self.parking.expected_ms()
        parking.commit(
            run,
            opened.ctx,
            opened.cache,
            call_key,
            cells,
            limits=self.limits,
            poll_at_ms=poll_at_ms,
        )
        runtime_metrics.parks.inc()  # type: ignore[no-untyped-call]
        runtime_metrics.model_calls_inflight.set(call_loop.inflight)  # type: ignore[no-untyped-call]
        if not self.lifecycle:
            return []
        return [
            trace.record(
                run.entity_key, trace.PARKED, run.now_ms, run.seq, opened.committed, call_key
            )
        ]

    # -- the suspension buffer ---------------------------------------------------------

    def _hold(
        self,
        entity_key: bytes,
        event: bytes,
        event_time_ms: int,
        suspended: Continuation,
        cells: KeyCells,
    ) -> list[Output]:
        """An event for a suspended key: buffer it behind the suspension, or dead-letter it."""
        refused = suspension.refusal(suspended, event, self.config)
        if refused is not None and parking.is_parked(suspended):
            # Backpressure: the event waits for the parked activation, never dropped.
            out = self._unpark_in_place(entity_key, suspended, cells)
            return out + self.on_event(entity_key, event, event_time_ms, cells)
        if refused is not None:
            if self.config.suspended_event_buffer:
                runtime_metrics.suspension_buffer_overflows.inc()  # type: ignore[no-untyped-call]
            detail = (
                f"key is suspended at seq {suspended.seq} waiting on intent "
                f"{suspended.intent_id} and {refused}; the event was not run"
            )
            error = self._error(
                entity_key, reasons.EVENT_WHILE_SUSPENDED, detail, event_time_ms, event
            )
            return self._dead_letter(error, suspended.seq, self._memory_bytes(cells))
        depth = suspension.hold(suspended, entity_key, event, event_time_ms)
        cells.continuation.write(encode_deterministic(suspended))
        runtime_metrics.suspension_buffered.inc()  # type: ignore[no-untyped-call]
        if not self.lifecycle:
            return []
        size = self._memory_bytes(cells)
        return [
            trace.record(entity_key, trace.BUFFERED, event_time_ms, suspended.seq, size, f"{depth}")
        ]

    def _drain_after(self, run: _Run, cells: KeyCells, seq: int | None = None) -> list[Output]:
        """Drain `run`'s backlog from the seq after it (or `seq`)."""
        return self._drain(
            run.entity_key,
            run.backlog,
            run.seq + 1 if seq is None else seq,
            cells,
            element_time_ms=run.element_time_ms,
            answered=run.answered,
        )

    def _drain(
        self,
        entity_key: bytes,
        backlog: Sequence[BufferedEvent],
        seq: int,
        cells: KeyCells,
        *,
        element_time_ms: int = 0,
        answered: int = 0,
    ) -> list[Output]:
        """Run the events that waited behind a resolved suspension, in arrival order.

        Each is an ordinary activation at the next seq with its own event time
        and event_id. The first `answered` were drained by an answer arriving
        at `element_time_ms`, which their records carry. One that suspends or
        parks takes the rest as its own backlog.
        """
        out: list[Output] = []
        for position, held in enumerate(backlog):
            run = _Run(
                entity_key=entity_key,
                event=held.event,
                event_id=held.event_id,
                seq=seq,
                now_ms=held.event_time_ms,
                element_time_ms=element_time_ms if position < answered else held.event_time_ms,
                backlog=backlog[position + 1 :],
                drained=True,
                answered=max(0, answered - position - 1),
            )
            runtime_metrics.suspension_drained.inc()  # type: ignore[no-untyped-call]
            more, outcome = self._activate(run, cells)
            out.extend(more)
            if outcome in (_SUSPENDED, _PARKED):
                break
            if outcome == _COMPLETED:
                seq += 1
        return out

    # -- the activation ----------------------------------------------------------------

    def _activate(self, run: _Run, cells: KeyCells) -> tuple[list[Output], int]:
        """Run one activation and commit it, under its span; its outputs and how it ended."""
        if not self.traced:
            return self._attempt(run, cells)
        span = run.span = ActivationSpan(
            run.entity_key,
            run.seq,
            rerun=_rerun_of(run),
            reveal_key=self.config.trace_entity_keys,
        )
        try:
            out, outcome = self._attempt(run, cells)
        except BaseException as exc:
            span.end("bundle_failed", (type(exc).__name__, describe_exception(exc)))
            raise
        failed = outcome == _FAILED and span.recording
        span.end(_OUTCOMES[outcome], _dead_letter_of(out) if failed else None)
        return out, outcome

    def _attempt(self, run: _Run, cells: KeyCells) -> tuple[list[Output], int]:
        started = time.perf_counter()
        opened: _Opened | None = None
        try:
            opened = self._open(run, cells)
            result, folded = self._run_agent(opened.ctx)
        except Parked as parked:
            assert opened is not None  # only a call the agent made parks
            return self._park(run, opened, parked.call_key, cells), _PARKED
        except (Exception, asyncio.CancelledError, CallTimedOut, BaseExceptionGroup) as exc:
            found = _parked_in(exc) if isinstance(exc, BaseExceptionGroup) else None
            if found is not None and opened is not None:
                return self._park(run, opened, found.call_key, cells), _PARKED
            if isinstance(exc, BaseExceptionGroup):
                if exc.subgroup(_FATAL) is not None:
                    raise
                # What failed beside a park is what would have failed in place.
                exc = exc.split(Parked)[1] or exc
            self.tally.started += 1
            committed = opened.committed if opened is not None else 0
            return self._dead_letter(self._failed(run, exc), run.seq, committed), _FAILED
        self.tally.started += 1
        if isinstance(result, Suspend):
            out, outcome = self._commit_suspension(run, opened, result, cells), _SUSPENDED
        else:
            out, outcome = self._complete(run, opened, result, folded, cells)
        if outcome != _FAILED:
            self.tally.completed(int((time.perf_counter() - started) * 1e6))
        return out, outcome

    def _open(self, run: _Run, cells: KeyCells) -> _Opened:
        """Everything the agent sees: its memory (as committed), replay cache and context."""
        cache_blob = (
            _parse(cells.cache, ReplayCacheBlob, "LLM_CACHE")
            if run.resumed is not None or run.parked is not None
            else None
        )
        longterm = (
            LongtermMemory(
                self.store,
                entity_key=run.entity_key,
                seq=run.seq,
                now_ms=run.now_ms,
                timeout_s=self.config.longterm_timeout_s,
            )
            if self.store is not None
            else None
        )
        compactor = self.config.compactor
        log: trace.CompactionLog | None = None
        if self.lifecycle and compactor is not None:
            compactor = log = trace.CompactionLog(compactor)
        # Decoded afresh, or the resident snapshot of exactly these bytes.
        memory = self.resident.open(
            self.token,
            run.entity_key,
            cells.memory.read(),
            now_ms=run.now_ms,
            compactor=compactor,
            longterm=longterm,
        )
        cache = ReplayCache(cache_blob)
        ctx = ActivationContext(
            entity_key=run.entity_key,
            event=run.event,
            event_id=run.event_id,
            event_time_ms=run.now_ms,
            seq=run.seq,
            now_ms=run.now_ms,
            memory=memory,
            answer=run.answer,
            provider=self.provider,
            cache=cache,
            token=self.token,
            reserved_indices=frozenset(run.resumed.reserved_indices)
            if run.resumed
            else _NO_INDICES,
            parking=None if run.in_place else self.parking,
            tools=self.tools,
        )
        if run.span is not None or self.config.token_budget is not None:
            meter = None if self.config.token_budget is None else self._meter(run, cells)
            ctx.instrument(run.span, meter)
        return _Opened(ctx, memory, cache, longterm, log, memory.size_bytes)

    def _meter(self, run: _Run, cells: KeyCells) -> Meter:
        """The key's token spend as committed, with what a parked attempt carried."""
        budget = self.config.token_budget
        assert budget is not None
        carried = run.parked.parked.spent_tokens if run.parked is not None else 0
        return Meter(budget, _parse(cells.seq, SeqState, "SEQ"), run.now_ms, carried)

    def _run_agent(self, ctx: ActivationContext) -> tuple[Complete | Suspend, int]:
        """The agent's result (and how many entries the summarizer folded), under the timeout."""
        if self.config.summarizer is None:
            # No second step to run after the agent: drive its coroutine as is.
            result = self.driver.run(self.agent(ctx), self.config.activation_timeout_s)
            folded = 0
        else:
            result, folded = self.driver.run(
                self._agent_then_summarizer(ctx), self.config.activation_timeout_s
            )
        if not isinstance(result, _RESULTS):
            raise TypeError(f"agent returned {type(result).__name__}; expected Complete or Suspend")
        return result, folded

    def _commit_suspension(
        self, run: _Run, opened: _Opened, result: Suspend, cells: KeyCells
    ) -> list[Output]:
        approval = suspension.commit(
            run,
            opened.ctx,
            opened.cache,
            result,
            cells,
            config=self.config,
            clock_ms=self.clock_ms,
            limits=self.limits,
        )
        out: list[Output] = [TaggedOutput(INTENTS_TAG, approval)]
        if self.lifecycle:
            committed = opened.committed
            out.append(self._opened(run, committed))
            out.append(
                trace.record(
                    run.entity_key,
                    trace.SUSPENDED,
                    run.now_ms,
                    run.seq,
                    committed,
                    approval.intent_id,
                )
            )
        return out

    def _complete(
        self, run: _Run, opened: _Opened, result: Complete, folded: int, cells: KeyCells
    ) -> tuple[list[Output], int]:
        """Flush the staged long-term saves, then commit; or dead-letter a failed flush."""
        longterm, memory = opened.longterm, opened.memory
        staged = longterm.staged() if longterm is not None else []
        if staged:
            unflushed = self._flush(run, staged)
            if unflushed is not None:
                return self._dead_letter(unflushed, run.seq, opened.committed), _FAILED
        out = self._commit_completion(run, opened, result, cells)
        if staged:
            runtime_metrics.longterm_upserts.inc(len(staged))  # type: ignore[no-untyped-call]
        if self.lifecycle:
            size = memory.size_bytes
            out.append(self._opened(run, size))
            out.extend(
                trace.completion(
                    run.entity_key,
                    run.now_ms,
                    run.seq,
                    size,
                    compactions=opened.compactions.runs if opened.compactions is not None else (),
                    soft_cap=memory.soft_cap_reached,
                    folded=folded,
                    flushed=len(staged),
                )
            )
        return out, _COMPLETED

    def _opened(self, run: _Run, memory_bytes: int) -> Tagged:
        resumed = run.resumed.intent_id if run.resumed is not None else None
        return trace.opened(
            run.entity_key,
            run.now_ms,
            run.seq,
            memory_bytes,
            resumed_intent=resumed,
            drained=run.drained,
        )

    def _dead_letter(self, error: Tagged, seq: int = 0, memory_bytes: int = 0) -> list[Output]:
        """`error`, followed with lifecycle records on by its `failed` record."""
        if not self.lifecycle:
            return [error]
        e: ActivationError = error.value
        failed = trace.record(
            e.entity_key, trace.FAILED, e.event_time_ms, seq, memory_bytes, e.reason
        )
        return [error, failed]

    def _memory_bytes(self, cells: KeyCells) -> int:
        """Committed working-memory size, read only for lifecycle records."""
        if not self.lifecycle:
            return 0
        try:
            return _committed_bytes(_parse(cells.memory, MemoryBlob, "MEMORY"))
        except StateDecodeError:
            return 0

    async def _agent_then_summarizer(
        self, ctx: ActivationContext
    ) -> tuple[Complete | Suspend, int]:
        result = await self.agent(ctx)
        summarizer = self.config.summarizer
        folded = 0
        # Only a completing activation commits memory, so only it is summarized.
        if summarizer is not None and isinstance(result, Complete):
            try:
                folded = await summarizer.summarize(ctx)
            except Exception as exc:
                raise _SummarizerFailed from exc
            if folded:
                runtime_metrics.summarizations.inc(folded)  # type: ignore[no-untyped-call]
        return result, folded

    def _flush(self, run: _Run, staged: list[MemoryRecord]) -> Tagged | None:
        """The commit-tail flush; on failure, the error to emit instead of committing.

        `FlushOutcomeUnknown` is not caught: a commit that may have landed
        must not be reported as nothing written, so the bundle fails and its
        retry settles it (`beam_agents.runtime._flush`).
        """
        assert self.store is not None
        try:
            with flush_span(run.span, len(staged)):
                self.driver.run(
                    flush(self.store, run.entity_key, staged, self.config.longterm_timeout_s)
                )
        except FlushOutcomeUnknown:
            raise
        except Exception as exc:
            detail = f"flushing {len(staged)} staged save(s) failed: {describe_exception(exc)}"
            payload = run.answer if run.answer is not None else run.event
            return self._error(
                run.entity_key, reasons.LONGTERM_FLUSH_FAILED, detail, run.element_time_ms, payload
            )
        return None

    def _failed(self, run: _Run, exc: BaseException) -> Tagged:
        reason = _classify(exc)
        payload = run.answer if run.answer is not None else run.event
        return self._error(
            run.entity_key, reason, _describe(exc, self.config), run.element_time_ms, payload
        )

    def _commit_completion(
        self, run: _Run, opened: _Opened, result: Complete, cells: KeyCells
    ) -> list[Output]:
        ctx, memory = opened.ctx, opened.memory
        # Ran with CONTINUATION empty (a fresh event) or clears it below (a resumption).
        if self.config.token_budget is None:
            write_seq(cells, run.seq, continuation_clear=True)
        else:
            write_seq(cells, run.seq, continuation_clear=True, spend=ctx.spend_state())
        if memory.dirty:
            if len(memory):
                # Only the changed entries are encoded; the rest are spliced.
                cells.memory.write(self.resident.commit(self.token, run.entity_key, memory))
            else:
                self.resident.forget(self.token, run.entity_key)
                cells.memory.clear()
            runtime_metrics.memory_writes.inc()  # type: ignore[no-untyped-call]
            runtime_metrics.memory_bytes.update(memory.size_bytes)  # type: ignore[no-untyped-call]
        if run.resumed is not None:
            # LLM_CACHE is only ever filled for a live suspension: this was it.
            for cell in (cells.continuation, cells.pending, cells.cache):
                cell.clear()
            cells.hitl_timer.clear()
        elif run.parked is not None:  # the park's cells and its poll
            cells.continuation.clear()
            if opened.cache.had_committed:  # a state write each, where a runner sizes it
                cells.cache.clear()
            cells.hitl_timer.clear()
        cells.ttl_timer.set(
            timer_timestamp(max(run.element_time_ms, run.now_ms) + self.config.ttl_ms)
        )
        intents = ctx.staged_intents()
        failpoints.should_fail(failpoints.COMMIT, run.entity_key, run.seq)
        if ctx.tool_calls:
            failpoints.should_fail(failpoints.AFTER_TOOL, run.entity_key, run.seq)
        out: list[Output] = [(run.entity_key, result.output)]
        if intents:
            out.extend([TaggedOutput(INTENTS_TAG, intent) for intent in intents])
            runtime_metrics.intents.inc(len(intents))  # type: ignore[no-untyped-call]
        return out

    def _error(
        self, entity_key: bytes, reason: str, detail: str, event_time_ms: int, payload: bytes = b""
    ) -> Tagged:
        count_error(reason)
        error = ActivationError.of(entity_key, reason, detail, event_time_ms, payload)
        dead_letter_log.record(error)
        return TaggedOutput(ERRORS_TAG, error)
