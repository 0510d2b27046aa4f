"""One attempt at an activation: open the key's memory, run the agent, then park or commit.

Every path that runs an agent (an event, an answer, a poll, a drain) comes
through `activate`, which returns the outputs and one of four outcomes. A
failure anywhere before the commit becomes exactly one dead letter and
writes nothing; a call that has to wait parks instead (`_commit.park`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Final

from beam_agents.budget import BudgetExceeded, Meter
from beam_agents.config import AgentConfig
from beam_agents.errors import StateDecodeError
from beam_agents.memory.facade import MemoryOverflow
from beam_agents.memory.longterm import LongtermMemory, LongtermReadError
from beam_agents.memory.resident import EMPTY_DIGEST
from beam_agents.model.replay import ReplayCache
from beam_agents.proto.beam_agents_pb2 import ReplayCache as ReplayCacheBlob
from beam_agents.proto.beam_agents_pb2 import SeqState
from beam_agents.runtime import errors as reasons
from beam_agents.runtime import lifecycle as trace
from beam_agents.runtime._calls.activation_calls import ActivationCalls
from beam_agents.runtime._calls.call_loop import CallAbandoned, CallTimedOut, Parked
from beam_agents.runtime._calls.driver import RunawayError
from beam_agents.runtime._cells import KeyCells
from beam_agents.runtime._cells import read_message as parse
from beam_agents.runtime._log_cell import known_empty, known_log
from beam_agents.runtime._metrics import runtime_metrics
from beam_agents.runtime._outputs import DeadLetter, Output, dead_letter_of
from beam_agents.runtime._paths.commit import Opened, commit_suspension, complete, park
from beam_agents.runtime._paths.instance import Instance
from beam_agents.runtime._paths.run import Run
from beam_agents.runtime._paths.wake_writes import wake_fired
from beam_agents.runtime._tracebacks import describe_exception
from beam_agents.runtime._typed_outputs import untyped_output
from beam_agents.runtime._wake_book import WakeBook, wake_seen
from beam_agents.runtime.context import ActivationContext
from beam_agents.runtime.errors import ModelCallError, ModelRateLimited, OutputInvalid
from beam_agents.runtime.results import Complete, Suspend
from beam_agents.state_signing import signing_state
from beam_agents.telemetry import ActivationSpan
from beam_agents.tools.errors import ToolError

__all__ = ["COMPLETED", "FAILED", "PARKED", "SUSPENDED", "activate"]

COMPLETED: Final = 0
SUSPENDED: Final = 1
FAILED: Final = 2
PARKED: Final = 3
_OUTCOMES: Final = ("completed", "suspended", "failed", "parked")
"""Span outcome names, indexed by the outcome constants above."""
_FATAL: Final = (KeyboardInterrupt, SystemExit)
"""What a task group may carry that must still stop the worker."""
_RESULTS: Final = (Complete, Suspend)
"""What an agent may return."""
_NO_INDICES: Final[frozenset[int]] = frozenset()
_CAUGHT: Final = (Exception, asyncio.CancelledError, CallTimedOut, BaseExceptionGroup)
"""What an attempt turns into a park or a dead letter rather than a failed bundle."""


class _SummarizerFailed(Exception):
    """Marks a failure raised during tier-2 summarization, whatever its type."""


def activate(act: Instance, run: Run, cells: KeyCells) -> tuple[list[Output], int]:
    """Run one activation and commit it, under its span; its outputs and how it ended."""
    if not act.traced:
        return _attempt(act, run, cells)
    span = run.span = ActivationSpan(
        run.entity_key,
        run.seq,
        rerun=_rerun_of(run),
        reveal_key=act.config.trace_entity_keys,
        hash_key=act.entity_hasher,
    )
    try:
        out, outcome = _attempt(act, run, cells)
    except BaseException as exc:
        span.end("bundle_failed", (type(exc).__name__, describe_exception(exc)))
        raise
    failed = outcome == FAILED and span.recording
    span.end(_OUTCOMES[outcome], dead_letter_of(out) if failed else None)
    return out, outcome


def _rerun_of(run: Run) -> str | None:
    if run.parked is not None:
        return "parked"
    if run.resumed is not None:
        return "resumed"
    return "wake" if run.wake is not None else None


def _attempt(act: Instance, run: Run, cells: KeyCells) -> tuple[list[Output], int]:
    started = time.perf_counter()
    try:
        opened = _open(act, run, cells)
    except _CAUGHT as exc:
        return _failure(act, run, None, exc, cells)
    try:
        return _run_opened(act, run, opened, cells, started)
    finally:
        # The resident snapshot it borrowed, unless its commit kept the memory.
        act.resident.give_back(act.token, run.entity_key, opened.memory)


def _run_opened(
    act: Instance, run: Run, opened: Opened, cells: KeyCells, started: float
) -> tuple[list[Output], int]:
    try:
        result, folded = _run_agent(act, opened.ctx)
    except Parked as parked:
        return park(act, run, opened, parked.call_key, cells), PARKED
    except _CAUGHT as exc:
        return _failure(act, run, opened, exc, cells)
    act.tally.started += 1
    if isinstance(result, Suspend):
        out, outcome = commit_suspension(act, run, opened, result, cells), SUSPENDED
    else:
        out, committed = complete(act, run, opened, result, folded, cells)
        outcome = COMPLETED if committed else FAILED
        if not committed:
            out = _wake_spent(act, run, out, cells)
    if outcome != FAILED:
        act.tally.completed(int((time.perf_counter() - started) * 1e6))
    return out, outcome


def _failure(
    act: Instance, run: Run, opened: Opened | None, exc: BaseException, cells: KeyCells
) -> tuple[list[Output], int]:
    """A park a task group carried, or exactly one dead letter per event (nothing written)."""
    found = _parked_in(exc) if isinstance(exc, BaseExceptionGroup) else None
    if found is not None and opened is not None:
        return park(act, run, opened, found.call_key, cells), PARKED
    if isinstance(exc, BaseExceptionGroup):
        if exc.subgroup(_FATAL) is not None:
            raise exc
        # What failed beside a park is what would have failed in place.
        exc = exc.split(Parked)[1] or exc
    act.tally.started += 1
    committed = opened.committed if opened is not None else 0
    out = act.emit.each_event(_failed(act, run, exc), run.coalesced, run.seq, committed)
    return _wake_spent(act, run, out, cells), FAILED


def _wake_spent(act: Instance, run: Run, out: list[Output], cells: KeyCells) -> list[Output]:
    """A wake whose run failed ran once: it leaves the key's set beside its dead letter."""
    if run.wake is not None:
        out.extend(wake_fired(act, run.entity_key, run.seq, cells, run.wake, run.now_ms))
    return out


def _parked_in(group: BaseExceptionGroup[BaseException]) -> Parked | None:
    """The park signal a task group raised, when parking is all that happened in it."""
    parked, rest = group.split(Parked)
    if parked is None or rest is not None:
        return None
    first: BaseException = parked
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first if isinstance(first, Parked) else None


def _open(act: Instance, run: Run, cells: KeyCells) -> Opened:
    """Everything the agent sees: its memory (as committed), replay cache and context."""
    cache_blob = (
        parse(cells.cache, ReplayCacheBlob, "LLM_CACHE")
        if run.resumed is not None or run.parked is not None
        else None
    )
    config = act.config
    longterm = (
        LongtermMemory(
            act.store,
            entity_key=run.entity_key,
            seq=run.seq,
            now_ms=run.now_ms,
            timeout_s=config.longterm_timeout_s,
            cross_entity=config.cross_entity_recall,
        )
        if act.store is not None
        else None
    )
    compactor = config.compactor
    log: trace.CompactionLog | None = None
    if act.lifecycle and compactor is not None:
        compactor = log = trace.CompactionLog(compactor)
    # The resident snapshot of exactly these cells, or decoded afresh.
    memory, stored = act.resident.open(
        act.token,
        run.entity_key,
        cells.memory,
        cells.memory_head,
        cells.memory_log,
        now_ms=run.now_ms,
        compactor=compactor,
        longterm=longterm,
        digest=run.memory_digest,
    )
    if stored.digest is EMPTY_DIGEST:  # the open's own constant: no memory, not read
        known_empty(cells.memory)  # a write appends to it unread
    elif stored.log is not None:
        known_log(cells.memory, stored.log)
    cache = ReplayCache(cache_blob)
    calls = _calls(act, run, cache, cells)
    if longterm is not None and act.embedder is not None:
        longterm.bind_embedder(calls.embed_texts)
    ctx = ActivationContext(
        calls,
        event=run.event,
        event_id=run.event_id,
        event_time_ms=run.now_ms,
        memory=memory,
        answer=run.answer,
        wake=None if run.wake is None else wake_seen(run.wake, run.event, run.now_ms),
        coalesced=[held.event for held in run.coalesced] if run.coalesced else (),
    )
    return Opened(ctx, calls, memory, cache, longterm, log, memory.size_bytes, stored)


def _calls(act: Instance, run: Run, cache: ReplayCache, cells: KeyCells) -> ActivationCalls:
    """The runtime's side of the activation, with its loop budgets, span and token meter."""
    config = act.config
    calls = ActivationCalls(
        entity_key=run.entity_key,
        seq=run.seq,
        now_ms=run.now_ms,
        provider=act.provider,
        cache=cache,
        token=act.token,
        reserved_indices=frozenset(run.resumed.reserved_indices) if run.resumed else _NO_INDICES,
        parking=None if run.in_place else act.parking,
        waited_on=run.parked.parked.call_key if run.parked is not None else None,
        tools=act.tools,
        output_repairs=config.output_repairs,
    )
    calls.wake_cell = cells.wakes
    if run.wake is not None:
        calls.wakes = WakeBook(cells.wakes, run.wake)
    if config.max_model_calls is not None or config.max_tool_calls is not None:
        calls.limit_calls(config.max_model_calls, config.max_tool_calls)
    if run.span is not None or config.token_budget is not None:
        meter = None if config.token_budget is None else _meter(config, run, cells)
        calls.instrument(run.span, meter)
    return calls


def _meter(config: AgentConfig, run: Run, cells: KeyCells) -> Meter:
    """The key's token spend as committed, with what a parked attempt carried and admitted."""
    budget = config.token_budget
    assert budget is not None
    parked = run.parked.parked if run.parked is not None else None
    carried = parked.spent_tokens if parked is not None else 0
    admitted = parked.admitted_calls if parked is not None else ()
    return Meter(budget, parse(cells.seq, SeqState, "SEQ"), run.now_ms, carried, admitted)


def _run_agent(act: Instance, ctx: ActivationContext) -> tuple[Complete | Suspend, int]:
    """The agent's result (and how many entries the summarizer folded), under the timeout."""
    timeout_s = act.config.activation_timeout_s
    # The job's key signs what adapters keep of their framework's state (state_signing).
    with signing_state(act.answer_key):
        if act.config.summarizer is None and act.embedder is None:
            # No second step to run after the agent: drive its coroutine as is.
            done = act.driver.run(act.agent(ctx), timeout_s)
            result = _held_to_type(act, done, ctx)
            folded = 0
        else:
            result, folded = act.driver.run(_agent_then_finish(act, ctx), timeout_s)
    return result, folded


def _held_to_type(act: Instance, result: object, ctx: ActivationContext) -> Complete | Suspend:
    """The agent's result, a completion's output as the RunAgent's output type promises it.

    Checked before anything after the agent runs (a summarizer, the commit),
    so an invalid output (`OutputInvalid`, dead-lettered `output_invalid`)
    spends nothing more and commits nothing.
    """
    if not isinstance(result, _RESULTS):
        raise TypeError(f"agent returned {type(result).__name__}; expected Complete or Suspend")
    if isinstance(result, Suspend):
        return result
    if result.per_event is not None:
        return _each_to_type(act, result, result.per_event, len(ctx.events))
    typed = act.typed
    if typed is not None:
        return Complete(typed.check(result.output))
    if type(result.output) is not bytes:
        raise untyped_output(result.output)
    return result


def _each_to_type(
    act: Instance, result: Complete, outputs: tuple[object, ...], events: int
) -> Complete:
    """`Complete.each`'s outputs, one per event of `ctx.events`, each as its type promises."""
    if len(outputs) != events:
        raise ValueError(
            f"Complete.each got {len(outputs)} output(s) for the {events} event(s) of "
            "ctx.events: one per event, in their order"
        )
    typed = act.typed
    if typed is not None:
        return Complete.each([typed.check(output) for output in outputs])
    for output in outputs:
        if type(output) is not bytes:
            raise untyped_output(output)
    return result


async def _agent_then_finish(
    act: Instance, ctx: ActivationContext
) -> tuple[Complete | Suspend, int]:
    """The agent, then what must run before a completion commits: summarizing, embedding."""
    result = _held_to_type(act, await act.agent(ctx), ctx)
    summarizer = act.config.summarizer
    folded = 0
    # Only a completing activation commits memory, so only it is summarized.
    if summarizer is not None and isinstance(result, Complete):
        try:
            folded = await summarizer.summarize(ctx)
        except Exception as exc:
            raise _SummarizerFailed from exc
        if folded:
            runtime_metrics.summarizations.inc(folded)
    longterm = ctx.memory.longterm_or_none
    if longterm is not None and isinstance(result, Complete):
        # The texts staged with saves, embedded in one call before the flush.
        await longterm.embed_staged()
    return result, folded


def _failed(act: Instance, run: Run, exc: BaseException) -> DeadLetter:
    payload = run.answer if run.answer is not None else run.event
    return act.emit.error(
        run.entity_key,
        _classify(exc),
        _describe(exc, act.config),
        run.element_time_ms,
        payload,
    )


def _classify(exc: BaseException) -> str:
    if isinstance(exc, _SummarizerFailed):
        return reasons.SUMMARIZER_ERROR
    if isinstance(exc, TimeoutError | CallTimedOut):
        return reasons.ACTIVATION_TIMEOUT
    if isinstance(exc, MemoryOverflow):
        return reasons.MEMORY_OVERFLOW
    if isinstance(exc, OutputInvalid):
        return reasons.OUTPUT_INVALID
    if isinstance(exc, ModelRateLimited):
        return reasons.MODEL_RATE_LIMITED
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
    if isinstance(exc, RunawayError | CallAbandoned):
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
