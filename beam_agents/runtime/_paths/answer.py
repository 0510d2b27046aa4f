"""An answer to a pending approval, and the deadline that passes without one.

An answer resumes the suspended activation at its seq, with its event and
clock, and the answer in `ctx.answer`; the events buffered behind it run
after it, approved or denied alike. An answer no live suspension waits on
is dead-lettered as `orphaned_answer`. An answer for a parked key waits in
its buffer (`parked_answers`). The HITL timer is the deadline, or, for a
parked key, its poll (`beam_agents.runtime._paths.poll`).
"""

from __future__ import annotations

from beam_agents.errors import StateDecodeError
from beam_agents.proto.beam_agents_pb2 import Continuation, PendingIntents
from beam_agents.runtime import errors as reasons
from beam_agents.runtime._cells import KeyCells
from beam_agents.runtime._cells import read_message as parse
from beam_agents.runtime._metrics import runtime_metrics
from beam_agents.runtime._outputs import Output
from beam_agents.runtime._paths import parked_answers, parking, suspension
from beam_agents.runtime._paths.attempt import COMPLETED, activate
from beam_agents.runtime._paths.drain import drain, drain_after
from beam_agents.runtime._paths.event import held, refuse_key
from beam_agents.runtime._paths.instance import Instance
from beam_agents.runtime._paths.poll import poll, unpark_in_place
from beam_agents.runtime._paths.run import Run
from beam_agents.runtime._paths.wake_writes import wake_fired

__all__ = ["on_answer", "on_deadline"]


def on_answer(
    act: Instance,
    entity_key: bytes,
    intent_id: str,
    answer: bytes,
    element_time_ms: int,
    cells: KeyCells,
    approver: str | None = None,
) -> list[Output]:
    """An answer to a pending approval: resume the suspended activation."""
    if len(entity_key) > act.max_key_bytes:
        return refuse_key(act, entity_key, answer, element_time_ms)
    try:
        suspended = parse(cells.continuation, Continuation, "CONTINUATION")
        pending = parse(cells.pending, PendingIntents, "PENDING")
    except StateDecodeError as exc:
        return act.emit.refusal(
            entity_key, reasons.STATE_DECODE_ERROR, str(exc), element_time_ms, answer
        )
    if parking.is_parked(suspended):
        # The answer comes after the parked activation, as it would in place:
        # it waits in the park's buffer, or, that full, for the activation here.
        assert suspended is not None
        if suspension.refusal(suspended, answer, act.config) is None:
            return _hold(
                act, entity_key, intent_id, answer, element_time_ms, suspended, cells, approver
            )
        out = unpark_in_place(act, entity_key, suspended, cells)
        return out + on_answer(act, entity_key, intent_id, answer, element_time_ms, cells, approver)
    waiting = {i.intent_id for i in pending.intents} if pending is not None else set()
    if suspended is None or intent_id not in waiting:
        detail = f"no live suspension of this key is waiting on intent {intent_id}"
        return act.emit.refusal(
            entity_key, reasons.ORPHANED_ANSWER, detail, element_time_ms, answer
        )
    runtime_metrics.resumptions.inc()
    run = Run(
        entity_key=entity_key,
        event=suspended.event,
        event_id=suspended.event_id,
        seq=suspended.seq,
        now_ms=suspended.event_time_ms,
        element_time_ms=element_time_ms,
        answer=answer,
        approver=approver,
        resumed=suspended,
        backlog=list(suspended.buffered),
        answered=len(suspended.buffered),
        wake=suspended.wake if suspended.HasField("wake") else None,
        coalesced=list(suspended.coalesced),
    )
    out, outcome = activate(act, run, cells)
    if outcome == COMPLETED and run.backlog:
        # Denied or approved alike, the suspension is resolved: run what waited.
        out.extend(drain_after(act, run, cells))
    return out


def _hold(
    act: Instance,
    entity_key: bytes,
    intent_id: str,
    answer: bytes,
    element_time_ms: int,
    parked: Continuation,
    cells: KeyCells,
    approver: str | None,
) -> list[Output]:
    """An answer for a parked key, appended to its buffer (`parked_answers`)."""
    depth = parked_answers.hold(parked, intent_id, answer, element_time_ms, approver)
    return held(act, entity_key, parked, depth, element_time_ms, cells)


def on_deadline(act: Instance, entity_key: bytes, cells: KeyCells) -> list[Output]:
    """The HITL timer: a suspension's deadline passed with no answer, or a park's poll."""
    try:
        suspended = parse(cells.continuation, Continuation, "CONTINUATION")
    except StateDecodeError as exc:
        return act.emit.refusal(entity_key, reasons.STATE_DECODE_ERROR, str(exc), 0)
    if suspended is None:
        return []  # answered (or wiped) before the timer fired
    if parking.is_parked(suspended):
        return poll(act, entity_key, suspended, cells)  # the timer is the poll
    detail = (
        f"no answer to intent {suspended.intent_id} before the deadline "
        f"({suspended.deadline_ms} ms processing time)"
    )
    cells.continuation.clear()
    cells.pending.clear()
    cells.cache.clear()
    error = act.emit.error(
        entity_key,
        reasons.SUSPENSION_TIMEOUT,
        detail,
        suspended.deadline_ms,
        suspended.event,
    )
    size = act.emit.memory_bytes(cells)
    out = act.emit.each_event(
        error, suspended.coalesced, suspended.seq, size, suspended.deadline_ms
    )
    if suspended.HasField("wake"):  # the wake this suspension was ran, and timed out
        out.extend(
            wake_fired(
                act, entity_key, suspended.seq, cells, suspended.wake, suspended.event_time_ms
            )
        )
    if suspended.buffered:
        # No event time drained these (the deadline is processing time): each
        # drained run's records carry its own event time.
        out.extend(drain(act, entity_key, suspended.buffered, suspended.seq + 1, cells))
    return out
