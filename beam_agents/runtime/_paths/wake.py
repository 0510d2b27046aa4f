"""A follow-up comes due: run it for its key, or hold it behind what the key waits on.

A wake's timer fires at (or after) its due time; every wake of that time
domain due by then is handed to the key's order of runs, marked `handed` so
its timer is not armed for it again. A key that waits (on an answer, or on
a parked model call) takes them into the same buffer as the events that
arrive meanwhile, in order; one that does not runs them now, one by one,
through the drain, each an ordinary activation at the next seq with
`ctx.wake` set and its due time as its clock. Whether it still runs is
decided when its turn comes: a cancel or a re-schedule committed since wins
(`beam_agents.runtime._paths.drain`).
"""

from __future__ import annotations

from collections.abc import Sequence

from beam_agents.errors import StateDecodeError
from beam_agents.proto.beam_agents_pb2 import BufferedEvent, Continuation, PendingWake, SeqState
from beam_agents.runtime import errors as reasons
from beam_agents.runtime._cells import KeyCells
from beam_agents.runtime._cells import read_message as parse
from beam_agents.runtime._metrics import runtime_metrics
from beam_agents.runtime._outputs import Output
from beam_agents.runtime._paths import suspension
from beam_agents.runtime._paths.drain import drain
from beam_agents.runtime._paths.event import held
from beam_agents.runtime._paths.instance import Instance
from beam_agents.runtime._wake_book import due, marker_of, read_pending, write_pending
from beam_agents.runtime.intents import event_id_for

__all__ = ["enter", "on_wake"]


def on_wake(
    act: Instance, entity_key: bytes, fire_ms: int, cells: KeyCells, processing_time: bool
) -> list[Output]:
    """A wake timer fired at `fire_ms`: hand every wake of its domain due by then to the key."""
    try:
        seq_state = parse(cells.seq, SeqState, "SEQ")
        suspended = suspension.live(cells, seq_state)
        pending = read_pending(cells.wakes)
    except StateDecodeError as exc:
        return act.emit.refusal(entity_key, reasons.STATE_DECODE_ERROR, str(exc), fire_ms)
    ready = due(pending, fire_ms, processing_time)
    if not ready:
        return []  # a timer delivered twice, or one whose wakes were cancelled since
    for wake in ready:
        wake.handed = True
    write_pending(cells, pending)  # arms the timer at the next wake not handed
    wakes = [_buffered(entity_key, wake) for wake in ready]
    return enter(act, entity_key, wakes, cells, fire_ms, read=(seq_state, suspended))


def enter(
    act: Instance,
    entity_key: bytes,
    wakes: Sequence[BufferedEvent],
    cells: KeyCells,
    time_ms: int,
    *,
    read: tuple[SeqState | None, Continuation | None] | None = None,
) -> list[Output]:
    """Run handed wakes now, in order, or append them to the buffer of what the key waits on.

    `read` is the key's SEQ and live suspension when the caller read them already.
    """
    if read is None:
        seq_state = parse(cells.seq, SeqState, "SEQ")
        read = seq_state, suspension.live(cells, seq_state)
    seq_state, suspended = read
    if suspended is not None:
        # No bound is checked: a key holds at most MAX_PENDING_WAKES wakes, each bounded.
        suspended.buffered.extend(wakes)
        runtime_metrics.wakes_buffered.inc(len(wakes))
        return held(act, entity_key, suspended, len(suspended.buffered), time_ms, cells)
    seq = (seq_state.seq if seq_state is not None else 0) + 1
    return drain(act, entity_key, wakes, seq, cells)


def _buffered(entity_key: bytes, wake: PendingWake) -> BufferedEvent:
    """A wake in the form the key's buffers and its drain take: its payload at its due time."""
    # Its own event_id: the name and scheduling seq keep it apart from an event
    # with the same payload and time.
    identity = f"wake/{wake.name}/{wake.scheduled_seq}/".encode() + wake.payload
    return BufferedEvent(
        event=wake.payload,
        event_time_ms=wake.due_ms,
        event_id=event_id_for(entity_key, wake.due_ms, identity),
        wake=marker_of(wake),
    )
