"""The activation lifecycle, independent of Beam's state API.

`Activator` holds what one DoFn instance owns (the agent, its config, the
event loop, the provider) and implements the four things that can happen to
a key: an event, an answer, the TTL timer and the HITL timer. It reads and
writes the key's cells through a small `Cell`/`Timer` protocol that Beam's
runtime state objects satisfy as they are, which keeps this logic testable
and benchmarkable without a runner.

The rule everything here follows: compute first, write last. Until the
agent (and everything after it) has succeeded nothing is written, so a
failure anywhere leaves every cell as it was and produces exactly one
`ActivationError`. State is written only when it changed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

from apache_beam.pvalue import TaggedOutput

from beam_agents.coders import encode_deterministic
from beam_agents.config import AgentConfig
from beam_agents.errors import StateDecodeError
from beam_agents.memory.facade import Memory, MemoryOverflow
from beam_agents.memory.longterm import LongtermMemory, LongtermReadError, record_time_ms
from beam_agents.memory.stores.base import MemoryRecord, MemoryStore
from beam_agents.model.provider import ModelProvider
from beam_agents.model.replay import ReplayCache, ReplayLimits
from beam_agents.proto.beam_agents_pb2 import (
    Continuation,
    MemoryBlob,
    PendingIntents,
    SeqState,
)
from beam_agents.proto.beam_agents_pb2 import ReplayCache as ReplayCacheBlob
from beam_agents.runtime import errors as reasons
from beam_agents.runtime import failpoints
from beam_agents.runtime.context import ActivationContext
from beam_agents.runtime.driver import LoopDriver
from beam_agents.runtime.errors import ActivationError, ModelCallError, scrub_secrets
from beam_agents.runtime.intents import canonical_json, make_intent
from beam_agents.runtime.metrics import count_error, runtime_metrics
from beam_agents.runtime.results import Complete, Suspend
from beam_agents.runtime.timestamps import timer_timestamp
from beam_agents.runtime.tracebacks import dead_letter_log, describe_exception

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
APPROVAL_TOOL: Final = "approval"
_SCHEMA: Final = 1

Agent = Callable[[ActivationContext], Coroutine[Any, Any, Complete | Suspend]]
Tagged = TaggedOutput[str, Any]
Output = tuple[bytes, bytes] | Tagged
M = TypeVar("M", Continuation, MemoryBlob, PendingIntents, SeqState, ReplayCacheBlob)


class Cell(Protocol):
    """One keyed state cell holding deterministic protobuf bytes."""

    def read(self) -> bytes | None: ...

    def write(self, value: bytes) -> None: ...

    def clear(self) -> None: ...


class Timer(Protocol):
    """One keyed timer; `set` takes a Beam Timestamp."""

    def set(self, timestamp: object) -> None: ...

    def clear(self) -> None: ...


@dataclass(frozen=True, slots=True)
class KeyCells:
    """The five cells and two timers of one key (DESIGN section 7)."""

    memory: Cell
    seq: Cell
    cache: Cell
    continuation: Cell
    pending: Cell
    ttl_timer: Timer
    hitl_timer: Timer


def _parse(cell: Cell, message_type: type[M], what: str) -> M | None:
    raw = cell.read()
    if not raw:
        return None
    try:
        message = message_type.FromString(raw)
    except Exception as exc:  # protobuf raises DecodeError, or worse on garbage
        raise StateDecodeError(f"{what} cell does not decode: {exc}") from None
    version = message.state_schema_version
    if version != _SCHEMA:
        raise StateDecodeError(f"{what} cell has state_schema_version {version}, reads {_SCHEMA}")
    return message


def _write_seq(cells: KeyCells, seq: int) -> None:
    cells.seq.write(encode_deterministic(SeqState(state_schema_version=_SCHEMA, seq=seq)))


class ExpireFlushError(RuntimeError):
    """The on_expire flush failed: the timer bundle fails and is retried, unwiped."""


class _SummarizerFailed(Exception):
    """Marks a failure raised during tier-2 summarization, whatever its type."""


def _classify(exc: BaseException) -> str:
    if isinstance(exc, _SummarizerFailed):
        return reasons.SUMMARIZER_ERROR
    if isinstance(exc, TimeoutError):
        return reasons.ACTIVATION_TIMEOUT
    if isinstance(exc, MemoryOverflow):
        return reasons.MEMORY_OVERFLOW
    if isinstance(exc, ModelCallError):
        return reasons.MODEL_ERROR
    if isinstance(exc, StateDecodeError):
        return reasons.STATE_DECODE_ERROR
    if isinstance(exc, LongtermReadError):
        return reasons.LONGTERM_READ_FAILED
    return reasons.ACTIVATION_ERROR


def _describe(exc: BaseException, config: AgentConfig) -> str:
    if isinstance(exc, TimeoutError):
        return f"agent did not finish within {config.activation_timeout_s} s"
    if isinstance(exc, _SummarizerFailed) and exc.__cause__ is not None:
        return f"summarizer: {describe_exception(exc.__cause__)}"
    return describe_exception(exc)


@dataclass(slots=True)
class _Run:
    """One activation's inputs."""

    entity_key: bytes
    event: bytes
    event_id: str | None
    seq: int
    now_ms: int
    element_time_ms: int
    answer: bytes | None = None
    resumed: Continuation | None = None


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
    ) -> None:
        self.agent = agent
        self.config = config
        self.token = token
        self.clock_ms = clock_ms
        self.driver = driver
        self.provider = provider
        self.store = store
        self.limits = limits or ReplayLimits()

    # -- entry points -----------------------------------------------------------------

    def on_event(
        self, entity_key: bytes, event: bytes, event_time_ms: int, cells: KeyCells
    ) -> list[Output]:
        """One event for one key: run the agent once (or dead-letter the event)."""
        try:
            suspended = _parse(cells.continuation, Continuation, "CONTINUATION")
            seq_state = _parse(cells.seq, SeqState, "SEQ")
        except StateDecodeError as exc:
            return [
                self._error(entity_key, reasons.STATE_DECODE_ERROR, str(exc), event_time_ms, event)
            ]
        if suspended is not None:
            detail = (
                f"key is suspended at seq {suspended.seq} waiting on intent "
                f"{suspended.intent_id}; the event was not run"
            )
            return [
                self._error(entity_key, reasons.EVENT_WHILE_SUSPENDED, detail, event_time_ms, event)
            ]
        seq = (seq_state.seq if seq_state is not None else 0) + 1
        run = _Run(
            entity_key=entity_key,
            event=event,
            event_id=None,
            seq=seq,
            now_ms=event_time_ms,
            element_time_ms=event_time_ms,
        )
        return self._activate(run, cells)

    def on_answer(
        self,
        entity_key: bytes,
        intent_id: str,
        answer: bytes,
        element_time_ms: int,
        cells: KeyCells,
    ) -> list[Output]:
        """An answer to a pending approval: resume the suspended activation."""
        try:
            suspended = _parse(cells.continuation, Continuation, "CONTINUATION")
            pending = _parse(cells.pending, PendingIntents, "PENDING")
        except StateDecodeError as exc:
            return [
                self._error(
                    entity_key, reasons.STATE_DECODE_ERROR, str(exc), element_time_ms, answer
                )
            ]
        waiting = {i.intent_id for i in pending.intents} if pending is not None else set()
        if suspended is None or intent_id not in waiting:
            detail = f"no live suspension of this key is waiting on intent {intent_id}"
            return [
                self._error(entity_key, reasons.ORPHANED_ANSWER, detail, element_time_ms, answer)
            ]
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
        )
        return self._activate(run, cells)

    def on_invalid(self, entity_key: bytes, detail: str, payload: bytes, time_ms: int) -> Tagged:
        """A malformed input element: dead-lettered, no state read or written."""
        return self._error(entity_key, reasons.INVALID_EVENT, detail, time_ms, payload)

    def on_ttl(self, entity_key: bytes, fire_time_ms: int, cells: KeyCells) -> list[Output]:
        """The key was idle for `ttl_ms`: wipe its working state (SEQ survives)."""
        try:
            suspended = _parse(cells.continuation, Continuation, "CONTINUATION")
            blob = _parse(cells.memory, MemoryBlob, "MEMORY")
            _parse(cells.cache, ReplayCacheBlob, "LLM_CACHE")
            _parse(cells.pending, PendingIntents, "PENDING")
            seq_state = _parse(cells.seq, SeqState, "SEQ")
        except StateDecodeError as exc:
            # Unreadable state is never wiped: a deploy mistake must not become data loss.
            return [self._error(entity_key, reasons.STATE_DECODE_ERROR, str(exc), fire_time_ms)]
        out: list[Output] = []
        if suspended is not None:
            detail = (
                f"TTL garbage collection reached the key while suspended at seq "
                f"{suspended.seq} waiting on intent {suspended.intent_id}"
            )
            out.append(
                self._error(
                    entity_key, reasons.TTL_WIPED_SUSPENSION, detail, fire_time_ms, suspended.event
                )
            )
            cells.hitl_timer.clear()
        if blob is not None and blob.entries:
            seq = seq_state.seq if seq_state is not None else 0
            self._flush_on_expire(entity_key, blob, seq, fire_time_ms)
        for cell in (cells.memory, cells.cache, cells.continuation, cells.pending):
            cell.clear()
        runtime_metrics.ttl_wipes.inc()  # type: ignore[no-untyped-call]
        return out

    def _flush_on_expire(
        self, entity_key: bytes, blob: MemoryBlob, seq: int, fire_time_ms: int
    ) -> None:
        """Demote committed working memory before the wipe; raise (unwiped) on failure."""
        on_expire = self.config.on_expire
        if on_expire is None or self.store is None:
            return
        record = MemoryRecord(
            key=on_expire.key,
            value=encode_deterministic(blob),
            seq=seq,
            updated_at_ms=record_time_ms(fire_time_ms),
        )
        try:
            self.driver.run(
                self.store.upsert_many(entity_key, [record]), self.config.longterm_timeout_s
            )
        except Exception as exc:
            raise ExpireFlushError(
                f"on_expire flush of {entity_key!r} at seq {seq} failed "
                f"({type(exc).__name__}: {scrub_secrets(str(exc))}); the key is left unwiped "
                "and the timer bundle will be retried"
            ) from exc
        runtime_metrics.expire_flushes.inc()  # type: ignore[no-untyped-call]

    def on_hitl(self, entity_key: bytes, cells: KeyCells) -> list[Output]:
        """The suspension's deadline passed with no answer."""
        try:
            suspended = _parse(cells.continuation, Continuation, "CONTINUATION")
        except StateDecodeError as exc:
            return [self._error(entity_key, reasons.STATE_DECODE_ERROR, str(exc), 0)]
        if suspended is None:
            return []  # answered (or wiped) before the timer fired
        detail = (
            f"no answer to intent {suspended.intent_id} before the deadline "
            f"({suspended.deadline_ms} ms processing time)"
        )
        cells.continuation.clear()
        cells.pending.clear()
        cells.cache.clear()
        return [
            self._error(
                entity_key,
                reasons.SUSPENSION_TIMEOUT,
                detail,
                suspended.deadline_ms,
                suspended.event,
            )
        ]

    # -- the activation ----------------------------------------------------------------

    def _activate(self, run: _Run, cells: KeyCells) -> list[Output]:
        started = time.perf_counter()
        runtime_metrics.activations.inc()  # type: ignore[no-untyped-call]
        try:
            blob = _parse(cells.memory, MemoryBlob, "MEMORY")
            cache_blob = (
                _parse(cells.cache, ReplayCacheBlob, "LLM_CACHE")
                if run.resumed is not None
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
            memory = Memory(
                blob,
                now_ms=run.now_ms,
                compactor=self.config.compactor,
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
                else frozenset(),
            )
            result = self.driver.run(
                self._agent_then_summarizer(ctx), self.config.activation_timeout_s
            )
            if not isinstance(result, Complete | Suspend):
                raise TypeError(
                    f"agent returned {type(result).__name__}; expected Complete or Suspend"
                )
        except (Exception, asyncio.CancelledError) as exc:
            return [self._failed(run, exc)]
        if isinstance(result, Suspend):
            out = self._commit_suspension(run, ctx, cache, result, cells)
        else:
            staged = longterm.staged() if longterm is not None else []
            if staged:
                failure = self._flush(run, staged)
                if failure is not None:
                    return [failure]
            out = self._commit_completion(run, ctx, memory, result, cells)
            if staged:
                runtime_metrics.longterm_upserts.inc(len(staged))  # type: ignore[no-untyped-call]
        runtime_metrics.activation_micros.update(  # type: ignore[no-untyped-call]
            int((time.perf_counter() - started) * 1e6)
        )
        return out

    async def _agent_then_summarizer(self, ctx: ActivationContext) -> Complete | Suspend:
        result = await self.agent(ctx)
        summarizer = self.config.summarizer
        # Only a completing activation commits memory, so only it is summarized.
        if summarizer is not None and isinstance(result, Complete):
            try:
                folded = await summarizer.summarize(ctx)
            except Exception as exc:
                raise _SummarizerFailed(str(exc)) from exc
            if folded:
                runtime_metrics.summarizations.inc(folded)  # type: ignore[no-untyped-call]
        return result

    def _flush(self, run: _Run, staged: list[MemoryRecord]) -> Tagged | None:
        """The commit-tail flush; on failure, the error to emit instead of committing."""
        assert self.store is not None
        try:
            self.driver.run(
                self.store.upsert_many(run.entity_key, staged), self.config.longterm_timeout_s
            )
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
        self,
        run: _Run,
        ctx: ActivationContext,
        memory: Memory,
        result: Complete,
        cells: KeyCells,
    ) -> list[Output]:
        _write_seq(cells, run.seq)
        if memory.dirty:
            if len(memory):
                cells.memory.write(encode_deterministic(memory.to_blob()))
            else:
                cells.memory.clear()
            runtime_metrics.memory_writes.inc()  # type: ignore[no-untyped-call]
            runtime_metrics.memory_bytes.update(memory.size_bytes)  # type: ignore[no-untyped-call]
        if run.resumed is not None:
            # LLM_CACHE is only ever filled for a live suspension: this was it.
            for cell in (cells.continuation, cells.pending, cells.cache):
                cell.clear()
            cells.hitl_timer.clear()
        cells.ttl_timer.set(
            timer_timestamp(max(run.element_time_ms, run.now_ms) + self.config.ttl_ms)
        )
        intents = ctx.staged_intents()
        failpoints.should_fail(failpoints.COMMIT, run.entity_key, run.seq)
        out: list[Output] = [(run.entity_key, result.output)]
        out.extend(TaggedOutput(INTENTS_TAG, intent) for intent in intents)
        if intents:
            runtime_metrics.intents.inc(len(intents))  # type: ignore[no-untyped-call]
        return out

    def _commit_suspension(
        self,
        run: _Run,
        ctx: ActivationContext,
        cache: ReplayCache,
        result: Suspend,
        cells: KeyCells,
    ) -> list[Output]:
        # Memory writes, long-term saves and intents staged before Suspend are
        # discarded: the resumed run re-executes the agent at this seq and
        # recomputes them identically, so committing them now would apply
        # them twice. Only the model answers are kept, so the re-run replays.
        timeout_ms = result.timeout_ms or self.config.hitl_timeout_ms
        index = ctx.approval_index()
        approval = make_intent(
            entity_key=run.entity_key,
            seq=run.seq,
            index=index,
            tool=APPROVAL_TOOL,
            args_json=canonical_json({"timeout_ms": timeout_ms}),
            event_time_ms=run.now_ms,
            awaits_answer=True,
        )
        approval.prompt = result.prompt
        deadline_ms = self.clock_ms() + timeout_ms
        reserved = sorted({*(run.resumed.reserved_indices if run.resumed else ()), index})
        continuation = Continuation(
            state_schema_version=_SCHEMA,
            seq=run.seq,
            intent_id=approval.intent_id,
            event=run.event,
            event_id=ctx.event_id,
            event_time_ms=run.now_ms,
            prompt=result.prompt,
            deadline_ms=deadline_ms,
            reserved_indices=reserved,
            suspended_at_ms=run.element_time_ms,
        )
        _write_seq(cells, run.seq)
        cells.continuation.write(encode_deterministic(continuation))
        cells.pending.write(
            encode_deterministic(PendingIntents(state_schema_version=_SCHEMA, intents=[approval]))
        )
        kept = cache.for_commit(run.seq, run.now_ms, self.limits)
        if kept.calls:
            cells.cache.write(encode_deterministic(kept))
        elif cache.had_committed:
            cells.cache.clear()
        cells.hitl_timer.set(timer_timestamp(deadline_ms))
        # GC must not pre-empt the suspension's own timeout.
        ttl_base = max(run.element_time_ms, run.now_ms + timeout_ms)
        cells.ttl_timer.set(timer_timestamp(ttl_base + self.config.ttl_ms))
        failpoints.should_fail(failpoints.COMMIT, run.entity_key, run.seq)
        runtime_metrics.suspensions.inc()  # type: ignore[no-untyped-call]
        runtime_metrics.intents.inc()  # type: ignore[no-untyped-call]
        return [TaggedOutput(INTENTS_TAG, approval)]

    def _error(
        self, entity_key: bytes, reason: str, detail: str, event_time_ms: int, payload: bytes = b""
    ) -> Tagged:
        count_error(reason)
        error = ActivationError.of(entity_key, reason, detail, event_time_ms, payload)
        dead_letter_log.record(error)
        return TaggedOutput(ERRORS_TAG, error)
