"""An event for a key: run the agent once, or hold the event behind a suspension.

A suspended key cannot run its next event (the resumed activation must see
memory exactly as the suspension left it), so the event waits in the
suspension's buffer (`beam_agents.runtime._paths.suspension`) and runs when the
suspension resolves; past the buffer's bounds it is dead-lettered as
`event_while_suspended`, unless the key is only parked, where it polls the
key in place first.
"""

from __future__ import annotations

from beam_agents.coders import encode_deterministic
from beam_agents.errors import StateDecodeError
from beam_agents.memory.resident import EMPTY_DIGEST
from beam_agents.proto.beam_agents_pb2 import Continuation, SeqState
from beam_agents.runtime import errors as reasons
from beam_agents.runtime import lifecycle as trace
from beam_agents.runtime._cells import KeyCells
from beam_agents.runtime._cells import read_message as parse
from beam_agents.runtime._metrics import runtime_metrics
from beam_agents.runtime._outputs import Output
from beam_agents.runtime._paths import parking, suspension
from beam_agents.runtime._paths.attempt import activate
from beam_agents.runtime._paths.instance import Instance
from beam_agents.runtime._paths.poll import unpark_in_place
from beam_agents.runtime._paths.run import Run

__all__ = ["on_event", "refuse_key"]


def on_event(
    act: Instance, entity_key: bytes, event: bytes, event_time_ms: int, cells: KeyCells
) -> list[Output]:
    """One event for one key: run the agent once (or dead-letter the event)."""
    if len(entity_key) > act.max_key_bytes:
        return refuse_key(act, entity_key, event, event_time_ms)
    try:
        seq_state = parse(cells.seq, SeqState, "SEQ")
        suspended = suspension.live(cells, seq_state)
    except StateDecodeError as exc:
        return act.emit.refusal(
            entity_key, reasons.STATE_DECODE_ERROR, str(exc), event_time_ms, event
        )
    if suspended is not None:
        return _hold(act, entity_key, event, event_time_ms, suspended, cells)
    if seq_state is None:
        # Every commit writes SEQ, and the TTL's wipe keeps it: a key without
        # one never committed, and has no working memory to read.
        seq, held_ttl_ms = 1, 0
        digest: bytes | None = EMPTY_DIGEST
    else:
        seq, held_ttl_ms = seq_state.seq + 1, seq_state.ttl_at_ms
        digest = seq_state.memory_digest or None
    run = Run(
        entity_key=entity_key,
        event=event,
        event_id=None,
        seq=seq,
        now_ms=event_time_ms,
        element_time_ms=event_time_ms,
        held_ttl_ms=held_ttl_ms,
        memory_digest=digest,
    )
    return activate(act, run, cells)[0]


def refuse_key(act: Instance, entity_key: bytes, payload: bytes, time_ms: int) -> list[Output]:
    """An entity key no store can hold: refused where it enters, never at its expiry.

    Admitted, it would run until the first long-term write or on_expire
    flush of the key, which the store refuses on every attempt.
    """
    detail = (
        f"entity key is {len(entity_key)} bytes, over the {act.max_key_bytes}-byte limit "
        "of a key with a long-term store (AgentConfig.longterm_memory)"
    )
    return act.emit.refusal(entity_key, reasons.INVALID_EVENT, detail, time_ms, payload)


def _hold(
    act: Instance,
    entity_key: bytes,
    event: bytes,
    event_time_ms: int,
    suspended: Continuation,
    cells: KeyCells,
) -> list[Output]:
    """An event for a suspended key: buffer it behind the suspension, or dead-letter it."""
    refused = suspension.refusal(suspended, event, act.config)
    if refused is not None and parking.is_parked(suspended):
        # Backpressure: the event waits for the parked activation, never dropped.
        out = unpark_in_place(act, entity_key, suspended, cells)
        return out + on_event(act, entity_key, event, event_time_ms, cells)
    if refused is not None:
        if act.config.suspended_event_buffer:
            runtime_metrics.suspension_buffer_overflows.inc()
        detail = (
            f"key is suspended at seq {suspended.seq} waiting on intent "
            f"{suspended.intent_id} and {refused}; the event was not run"
        )
        error = act.emit.error(
            entity_key, reasons.EVENT_WHILE_SUSPENDED, detail, event_time_ms, event
        )
        return act.emit.dead_letter(error, suspended.seq, act.emit.memory_bytes(cells))
    depth = suspension.hold(suspended, entity_key, event, event_time_ms)
    return held(act, entity_key, suspended, depth, event_time_ms, cells)


def held(
    act: Instance,
    entity_key: bytes,
    suspended: Continuation,
    depth: int,
    time_ms: int,
    cells: KeyCells,
) -> list[Output]:
    """Write the buffer an event or an answer was appended to; count it, record it."""
    cells.continuation.write(encode_deterministic(suspended))
    runtime_metrics.suspension_buffered.inc()
    if not act.lifecycle:
        return []
    size = act.emit.memory_bytes(cells)
    return [trace.record(entity_key, trace.BUFFERED, time_ms, suspended.seq, size, f"{depth}")]
