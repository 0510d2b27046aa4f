"""Writing what an activation decided: a completion, a suspension or a park.

The rule is compute first, write last: these run only once the agent (and
the summarizer after it) has succeeded or parked, and the one external
write, the long-term flush, comes before any cell is touched, so a failed
flush leaves every cell as it was and ends as one dead letter. A park keeps
nothing the agent staged (`beam_agents.runtime._paths.parking`).
"""

from __future__ import annotations

from typing import NamedTuple

from beam_agents import _failpoints as failpoints
from beam_agents.memory.facade import Memory
from beam_agents.memory.longterm import LongtermMemory
from beam_agents.memory.resident import EMPTY_DIGEST, Stored
from beam_agents.memory.stores.base import MemoryRecord
from beam_agents.model.replay import ReplayCache
from beam_agents.runtime import errors as reasons
from beam_agents.runtime import lifecycle as trace
from beam_agents.runtime._calls.activation_calls import ActivationCalls
from beam_agents.runtime._calls.call_loop import call_loop
from beam_agents.runtime._cells import KeyCells, later_ttl, write_seq
from beam_agents.runtime._log_cell import log_after_write
from beam_agents.runtime._metrics import runtime_metrics
from beam_agents.runtime._outputs import DeadLetter, Output, intent_output
from beam_agents.runtime._paths import parking, suspension
from beam_agents.runtime._paths.flush import FlushOutcomeUnknown, flush
from beam_agents.runtime._paths.instance import Instance
from beam_agents.runtime._paths.run import Run
from beam_agents.runtime._paths.wake_writes import commit_wakes
from beam_agents.runtime._timestamps import timer_timestamp
from beam_agents.runtime._tracebacks import describe_exception
from beam_agents.runtime.context import ActivationContext
from beam_agents.runtime.results import Complete, Suspend
from beam_agents.telemetry import flush_span

__all__ = ["Opened", "commit_suspension", "complete", "park"]


class Opened(NamedTuple):
    """An activation ready to run: what the attempt built from the key's cells."""

    ctx: ActivationContext
    calls: ActivationCalls
    """The runtime's side of the activation: what it staged, spent and called."""
    memory: Memory
    cache: ReplayCache
    longterm: LongtermMemory | None
    compactions: trace.CompactionLog | None
    committed: int
    """Working-memory bytes as committed, for the records."""
    memory_stored: Stored
    """What the memory was opened over, which its commit builds on."""


def park(act: Instance, run: Run, opened: Opened, call_key: str, cells: KeyCells) -> list[Output]:
    """Commit the park: the key now waits on `call_key`, and nothing staged is kept."""
    poll = act.poll_clock_ms
    poll_at_ms = parking.POLL_AT_MS if poll is None else poll()
    if act.poll_after_call and act.parking is not None and not act.parking.answers_in_place:
        # When the call is expected to have answered (one answered in place has).
        poll_at_ms += act.parking.expected_ms()
    parking.commit(
        run,
        opened.calls,
        opened.ctx.event_id,
        opened.cache,
        call_key,
        cells,
        limits=act.limits,
        poll_at_ms=poll_at_ms,
        memory_digest=opened.memory_stored.digest,
    )
    runtime_metrics.parks.inc()
    runtime_metrics.model_calls_inflight.set(call_loop.inflight)
    if not act.lifecycle:
        return []
    return [
        trace.record(run.entity_key, trace.PARKED, run.now_ms, run.seq, opened.committed, call_key)
    ]


def commit_suspension(
    act: Instance, run: Run, opened: Opened, result: Suspend, cells: KeyCells
) -> list[Output]:
    """Commit a `Suspend`: the approval intent goes out, the continuation stays in state."""
    approval = suspension.commit(
        run,
        opened.calls,
        opened.ctx.event_id,
        opened.cache,
        result,
        cells,
        config=act.config,
        clock_ms=act.clock_ms,
        limits=act.limits,
        answer_key=act.answer_key,
    )
    out: list[Output] = [intent_output(approval)]
    if act.lifecycle:
        committed = opened.committed
        out.append(act.emit.opened(run, committed))
        if run.resumed is None:
            out.extend(act.emit.coalesced(run, committed))
        out.append(
            trace.record(
                run.entity_key, trace.SUSPENDED, run.now_ms, run.seq, committed, approval.intent_id
            )
        )
    return out


def complete(
    act: Instance, run: Run, opened: Opened, result: Complete, folded: int, cells: KeyCells
) -> tuple[list[Output], bool]:
    """Flush the staged long-term saves, then commit; or dead-letter a failed flush.

    The flag says whether it committed: a failed flush leaves every cell as
    it was, and its dead letter is the whole output.
    """
    longterm, memory = opened.longterm, opened.memory
    staged = longterm.staged() if longterm is not None else []
    if staged:
        unflushed = _flush(act, run, staged)
        if unflushed is not None:
            return act.emit.each_event(unflushed, run.coalesced, run.seq, opened.committed), False
    out, wake_records = _commit_completion(act, run, opened, result, cells)
    if staged:
        runtime_metrics.longterm_upserts.inc(len(staged))
    if act.lifecycle:
        size = memory.size_bytes
        out.append(act.emit.opened(run, size))
        if run.resumed is None:  # a resumed run's events were recorded when it suspended
            out.extend(act.emit.coalesced(run, size))
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
        out.extend(wake_records)
    return out, True


def _flush(act: Instance, run: Run, staged: list[MemoryRecord]) -> DeadLetter | None:
    """The commit-tail flush; on failure, the error to emit instead of committing.

    `FlushOutcomeUnknown` is not caught: a commit that may have landed
    must not be reported as nothing written, so the bundle fails and its
    retry settles it (`beam_agents.runtime._paths.flush`).
    """
    assert act.store is not None
    try:
        with flush_span(run.span, len(staged)):
            act.driver.run(flush(act.store, run.entity_key, staged, act.config.longterm_timeout_s))
    except FlushOutcomeUnknown:
        raise
    except Exception as exc:
        detail = f"flushing {len(staged)} staged save(s) failed: {describe_exception(exc)}"
        payload = run.answer if run.answer is not None else run.event
        return act.emit.error(
            run.entity_key, reasons.LONGTERM_FLUSH_FAILED, detail, run.element_time_ms, payload
        )
    return None


def _commit_completion(
    act: Instance, run: Run, opened: Opened, result: Complete, cells: KeyCells
) -> tuple[list[Output], list[Output]]:
    """Write the completion; its outputs, and the lifecycle records of its follow-ups."""
    calls, memory = opened.calls, opened.memory
    # Ran with CONTINUATION empty (a fresh event) or clears it below (a resumption).
    ttl_at_ms = later_ttl(
        cells,
        max(run.element_time_ms, run.latest_ms) + act.config.ttl_ms,
        run.parked,
        run.held_ttl_ms,
    )
    spend = b"" if act.config.token_budget is None else calls.spend_state()
    stored = opened.memory_stored
    digest = _write_memory(act, run, memory, stored, cells) if memory.dirty else stored.digest
    write_seq(
        cells,
        run.seq,
        continuation_clear=True,
        spend=spend,
        ttl_at_ms=ttl_at_ms,
        memory_digest=digest or b"",
    )
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
    cells.ttl_timer.set(timer_timestamp(ttl_at_ms))
    book = calls.wakes
    wake_records = (
        commit_wakes(
            act, book, run.entity_key, run.seq, run.now_ms, lambda: memory.size_bytes, cells
        )
        if book is not None and book.touched
        else []
    )
    intents = calls.staged_intents()
    failpoints.should_fail(failpoints.COMMIT, run.entity_key, run.seq)
    if calls.tool_calls:
        failpoints.should_fail(failpoints.AFTER_TOOL, run.entity_key, run.seq)
    # One output per event: the activation's, or each event's own (Complete.each).
    if result.per_event is not None:
        out: list[Output] = [(run.entity_key, output) for output in result.per_event]
    else:
        out = [(run.entity_key, result.output)] * run.events
    if intents:
        out.extend([intent_output(intent) for intent in intents])
        runtime_metrics.intents.inc(len(intents))
    return out, wake_records


def _write_memory(
    act: Instance, run: Run, memory: Memory, stored: Stored, cells: KeyCells
) -> bytes | None:
    """What changed, appended to the log; or the whole memory, the log cleared.

    An emptied memory clears all three cells, and the process forgets it.
    Returns the memory's digest for SEQ (`SeqState.memory_digest`), None
    for a memory written as deltas.
    """
    digest: bytes | None = EMPTY_DIGEST
    if len(memory):
        write = act.resident.commit(
            act.token, run.entity_key, memory, stored, log_after=log_after_write(cells.memory)
        )
        digest = write.digest
        if write.appended:
            cells.memory_log.add(write.value)
        else:
            cells.memory.write(write.value)
            if write.clear_log:
                cells.memory_log.clear()
        if write.head is not None:
            cells.memory_head.write(write.head)
        elif stored.head is not None:
            cells.memory_head.clear()
    else:
        act.resident.forget(act.token, run.entity_key)
        cells.memory.clear()
        if stored.head is not None:
            cells.memory_log.clear()
            cells.memory_head.clear()
    runtime_metrics.memory_writes.inc()
    runtime_metrics.memory_bytes.update(memory.size_bytes)
    return digest
