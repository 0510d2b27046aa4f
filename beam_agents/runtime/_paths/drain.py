"""The drain: events that waited behind a resolved suspension or park, run in order.

Each held event is an ordinary activation at the next seq with its own
event time and event_id. One that suspends or parks in turn takes the rest
as its own backlog, so a key's events still run one at a time, in arrival
order, whatever happens to any of them. From an answer that waited in a
park's buffer on, what waited is handed in again as it arrived
(`parked_answers`).
"""

from __future__ import annotations

from collections.abc import Sequence

from beam_agents.errors import StateDecodeError
from beam_agents.proto.beam_agents_pb2 import BufferedEvent
from beam_agents.runtime import errors as reasons
from beam_agents.runtime._cells import KeyCells
from beam_agents.runtime._metrics import runtime_metrics
from beam_agents.runtime._outputs import Output
from beam_agents.runtime._paths.attempt import COMPLETED, PARKED, SUSPENDED, activate
from beam_agents.runtime._paths.instance import Instance
from beam_agents.runtime._paths.parked_answers import deliver, split
from beam_agents.runtime._paths.run import Run
from beam_agents.runtime._wake_book import find, read_pending

__all__ = ["coalesced", "drain", "drain_after"]


def drain_after(act: Instance, run: Run, cells: KeyCells, seq: int | None = None) -> list[Output]:
    """Drain `run`'s backlog from the seq after it (or `seq`)."""
    return drain(
        act,
        run.entity_key,
        run.backlog,
        run.seq + 1 if seq is None else seq,
        cells,
        element_time_ms=run.element_time_ms,
        answered=run.answered,
    )


def drain(
    act: Instance,
    entity_key: bytes,
    backlog: Sequence[BufferedEvent],
    seq: int,
    cells: KeyCells,
    *,
    element_time_ms: int = 0,
    answered: int = 0,
) -> list[Output]:
    """Run the events that waited behind a resolved suspension, in arrival order.

    The first `answered` were drained by an answer arriving at
    `element_time_ms`, which their records carry.
    """
    out: list[Output] = []
    events, rest = split(backlog)
    position = 0
    while position < len(events):
        held = events[position]
        wake = held.wake if held.HasField("wake") else None
        if wake is not None and not _still_pending(act, entity_key, held, cells, out):
            position += 1
            continue  # cancelled or scheduled anew since it came due: the cancel wins
        group = coalesced(events, position, act.config.coalesce_max) if wake is None else ()
        taken = 1 + len(group)
        run = Run(
            entity_key=entity_key,
            event=held.event,
            event_id=held.event_id,
            seq=seq,
            now_ms=held.event_time_ms,
            element_time_ms=element_time_ms if position < answered else held.event_time_ms,
            backlog=backlog[position + taken :],
            drained=wake is None,
            answered=max(0, answered - position - taken),
            wake=wake,
            coalesced=group,
        )
        position += taken
        if wake is None:
            runtime_metrics.suspension_drained.inc()
        if group:
            runtime_metrics.coalesced.inc(len(group))
        more, outcome = activate(act, run, cells)
        out.extend(more)
        if outcome == PARKED:
            return out  # its park holds the rest, answers included
        if outcome == SUSPENDED:
            break  # its buffer holds the events before `rest`
        if outcome == COMPLETED:
            seq += 1
    if rest:
        out.extend(deliver(act.entrance, entity_key, rest, cells))
    return out


def coalesced(
    events: Sequence[BufferedEvent], position: int, limit: int
) -> Sequence[BufferedEvent]:
    """The events after `position` that its run takes with it: up to `limit - 1`, in order.

    Only plain events coalesce (a follow-up runs alone, as does what comes
    after it), and the grouping is read from the buffer alone, which state
    holds: a retried bundle, or a re-run, groups exactly the same way.
    """
    end = position + 1
    while end < len(events) and end - position < limit and not events[end].HasField("wake"):
        end += 1
    return events[position + 1 : end]


def _still_pending(
    act: Instance, entity_key: bytes, held: BufferedEvent, cells: KeyCells, out: list[Output]
) -> bool:
    """Whether the wake `held` stands for is still the key's (undecodable: dead-lettered)."""
    try:
        return find(read_pending(cells.wakes), held.wake) is not None
    except StateDecodeError as exc:
        out.extend(
            act.emit.refusal(
                entity_key, reasons.STATE_DECODE_ERROR, str(exc), held.event_time_ms, held.event
            )
        )
        return False
