"""What a commit, or a wake's failed run, writes of the key's follow-ups, with its records.

A completing activation's schedules and cancels reach WAKES only here, in
its commit, after the long-term flush succeeded: a failed activation
schedules nothing. A wake leaves the set exactly once, with the commit of
the run it was, or beside the dead letter of that run when it failed, so it
fires once per schedule however often its run is retried, parked or resumed.
"""

from __future__ import annotations

from collections.abc import Callable

from beam_agents.proto.beam_agents_pb2 import PendingWake, WakeMarker
from beam_agents.runtime import lifecycle as trace
from beam_agents.runtime._cells import KeyCells
from beam_agents.runtime._metrics import runtime_metrics
from beam_agents.runtime._outputs import Output
from beam_agents.runtime._paths.instance import Instance
from beam_agents.runtime._timestamps import timer_timestamp
from beam_agents.runtime._wake_book import (
    WakeBook,
    cancel_detail,
    consume,
    detail,
    write_pending,
)

__all__ = ["commit_wakes", "wake_fired", "wakes_wiped"]


def commit_wakes(
    act: Instance,
    book: WakeBook,
    entity_key: bytes,
    seq: int,
    time_ms: int,
    memory_bytes: Callable[[], int],
    cells: KeyCells,
) -> list[Output]:
    """Write what the activation at `seq` scheduled, cancelled and ran; its records."""
    settled = book.settle(seq, act.clock_ms)
    write_pending(cells, settled.pending, before=book.committed)
    if settled.scheduled:
        runtime_metrics.wakes_scheduled.inc(len(settled.scheduled))
    if settled.cancelled:
        runtime_metrics.wakes_cancelled.inc(len(settled.cancelled))
    if settled.fired is not None:
        runtime_metrics.wakes_fired.inc()
    if not act.lifecycle:
        return []
    size = memory_bytes()
    out: list[Output] = []
    if settled.fired is not None:
        fired = detail(settled.fired)
        out.append(trace.record(entity_key, trace.WAKE_FIRED, time_ms, seq, size, fired))
    for name in settled.cancelled:
        cancelled = cancel_detail(name)
        out.append(trace.record(entity_key, trace.WAKE_CANCELLED, time_ms, seq, size, cancelled))
    for wake in settled.scheduled:
        out.append(trace.record(entity_key, trace.WAKE_SCHEDULED, time_ms, seq, size, detail(wake)))
    return out


def wake_fired(
    act: Instance,
    entity_key: bytes,
    seq: int,
    cells: KeyCells,
    marker: WakeMarker,
    time_ms: int,
) -> list[Output]:
    """Take a wake whose run ended without a commit (it failed, or timed out) off the set."""
    taken = consume(cells, marker)
    if taken is None:
        return []
    # No commit re-arms the TTL, which a pending follow-up held off: this does.
    cells.ttl_timer.set(timer_timestamp(time_ms + act.config.ttl_ms))
    runtime_metrics.wakes_fired.inc()
    if not act.lifecycle:
        return []
    size = act.emit.memory_bytes(cells)
    return [trace.record(entity_key, trace.WAKE_FIRED, time_ms, seq, size, detail(taken))]


def wakes_wiped(
    act: Instance,
    entity_key: bytes,
    seq: int,
    wakes: list[PendingWake],
    time_ms: int,
    cells: KeyCells,
) -> list[Output]:
    """Follow-ups a TTL wipe reached in a suspension's buffer: done, dead-lettered with it."""
    write_pending(cells, [])
    runtime_metrics.wakes_fired.inc(len(wakes))
    if not act.lifecycle:
        return []
    return [
        trace.record(entity_key, trace.WAKE_FIRED, time_ms, seq, 0, detail(wake))
        for wake in sorted(wakes, key=lambda wake: wake.name)
    ]
