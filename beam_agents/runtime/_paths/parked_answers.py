"""Answers that arrive while their key is parked wait in its buffer, as events do.

In place, an answer for a key whose activation waits on a model call comes
after that activation and every event already waiting behind it. Polling the
key in place to get there holds the runner's only thread for the rest of the
call, and on a local run no other input enters meanwhile. So the answer is
appended to the park's buffer instead, in arrival order with the events, and
applied where the key's order reaches it: after the re-run and the events
ahead of it, through the same answer path as in place (`Entrance.answered`), with the element time
it arrived at. What it reads then (the key's state, PENDING, its own bytes
and time) is what it would have read in place, so it resolves the same way:
a resumption, or an `orphaned_answer` dead letter. A signed answer is
verified as it arrives, before any state is read, as in place; the buffer
keeps the verified text and its approver.

Only a park's buffer holds answers. A suspension's buffer takes the events
up to the first answer (`split`); from that answer on, what waited is handed
in again, in order, as if it arrived now (`deliver`): an answer resumes or
is refused, an event runs or is buffered behind the suspension, and once the
key is parked again the rest waits in the new park's buffer. A full buffer
still polls the key in place (backpressure, never a drop).
"""

from __future__ import annotations

from collections.abc import Sequence

from beam_agents.coders import encode_deterministic
from beam_agents.proto.beam_agents_pb2 import BufferedAnswer, BufferedEvent, Continuation
from beam_agents.runtime._cells import KeyCells
from beam_agents.runtime._cells import read_message as parse
from beam_agents.runtime._outputs import Output
from beam_agents.runtime._paths.instance import Entrance

__all__ = ["deliver", "hold", "split"]


def hold(
    parked: Continuation,
    intent_id: str,
    answer: bytes,
    element_time_ms: int,
    approver: str | None,
) -> int:
    """Append the answer to the park's buffer (the caller writes the cell); the new depth."""
    held = BufferedAnswer(intent_id=intent_id, answer=answer)
    if approver is not None:
        held.approver = approver
    parked.buffered.append(BufferedEvent(event_time_ms=element_time_ms, answer=held))
    return len(parked.buffered)


def split(
    buffered: Sequence[BufferedEvent],
) -> tuple[Sequence[BufferedEvent], Sequence[BufferedEvent]]:
    """The events before the first held answer, and what follows from that answer on."""
    for position, item in enumerate(buffered):
        if item.HasField("answer"):
            return buffered[:position], buffered[position:]
    return buffered, ()


def deliver(
    entrance: Entrance, entity_key: bytes, items: Sequence[BufferedEvent], cells: KeyCells
) -> list[Output]:
    """Hand `items` in again in arrival order, as each would have arrived after the last.

    Once the key is parked again, the rest waits in that park's buffer: it
    held them all before, so no bound is passed.
    """
    out: list[Output] = []
    for position, item in enumerate(items):
        current = parse(cells.continuation, Continuation, "CONTINUATION")
        if current is not None and current.HasField("parked"):
            current.buffered.extend(items[position:])
            cells.continuation.write(encode_deterministic(current))
            return out
        if item.HasField("answer"):
            held = item.answer
            approver = held.approver if held.HasField("approver") else None
            out.extend(
                entrance.answered(
                    entity_key, held.intent_id, held.answer, item.event_time_ms, cells, approver
                )
            )
        elif item.HasField("wake"):
            out.extend(entrance.woke(entity_key, item, cells))
        else:
            out.extend(entrance.on_event(entity_key, item.event, item.event_time_ms, cells))
    return out
