"""The poll: a parked activation's call has answered (or is waited on), so re-run it.

The HITL timer of a parked key is its poll. The wait happens in the
callback: on a runner whose processing time is a test clock nothing else
would move it on, and elsewhere the call has had the time since the park.
A call this process does not know is not waited on: the re-run issues it
again. On a local run whose clock allows it, a poll whose call is still
running sets itself again instead of waiting (`deferred_polls`). Events
and answers that cannot wait behind a parked key (its buffer is full) poll
it in place first, waiting: backpressure, never a drop.

A poll whose key ends parked again (its re-run completed and the next
buffered event parked in turn) leaves SEQ as it found it: SEQ already says
"read CONTINUATION", and CONTINUATION carries the seq the key is at and, in
its parked record, the SEQ bytes a failed re-run puts back. Each SEQ write
is a state write a portable runner's cache sizes, and one such chain would
otherwise write SEQ once per event. With a token budget SEQ also carries the
committed spend, which the next re-run's meter reads, so it is written.
"""

from __future__ import annotations

from typing import cast

from apache_beam.utils.timestamp import Timestamp

from beam_agents import _failpoints as failpoints
from beam_agents.proto.beam_agents_pb2 import Continuation, Parked
from beam_agents.runtime._calls.call_loop import Parking, call_loop
from beam_agents.runtime._cells import Cell, KeyCells, KnownCell, Timer
from beam_agents.runtime._cells import read_message as parse
from beam_agents.runtime._metrics import runtime_metrics
from beam_agents.runtime._outputs import Output
from beam_agents.runtime._paths import deferred_polls, parking
from beam_agents.runtime._paths.attempt import COMPLETED, FAILED, PARKED, SUSPENDED, activate
from beam_agents.runtime._paths.drain import drain_after
from beam_agents.runtime._paths.expiry import on_ttl
from beam_agents.runtime._paths.instance import Instance
from beam_agents.runtime._paths.parked_answers import deliver, split
from beam_agents.runtime._timestamps import millis

__all__ = ["poll", "unpark_in_place"]


class _HeldTimer:
    """A timer as a poll sees it: only where the poll leaves it reaches the runner.

    A poll clears the key's poll timer when its re-run completes and sets it
    again when the next buffered event parks, and re-arms the TTL at each
    completion; a runner takes each of those as a timer update (on the
    portable harness, an element on the timer stream). A later set or clear
    replaces an earlier one, so the last is the only one written.
    """

    __slots__ = ("last", "timer", "touched")

    def __init__(self, timer: Timer) -> None:
        self.timer = timer
        self.last: object | None = None
        self.touched = False

    @property
    def last_ms(self) -> int | None:
        """Where the poll set the timer (in ms); None if it cleared it or never set it."""
        return None if self.last is None else millis(cast(Timestamp, self.last))

    def set(self, timestamp: object) -> None:
        self.last, self.touched = timestamp, True

    def clear(self) -> None:
        self.last, self.touched = None, True

    def settle(self) -> None:
        if not self.touched:
            return
        if self.last is None:
            self.timer.clear()
        else:
            self.timer.set(self.last)


class _HeldSeq:
    """SEQ as a poll sees it: its writes held until the poll knows whether they are needed."""

    __slots__ = ("cell", "value", "written")

    def __init__(self, cell: Cell) -> None:
        self.cell = cell
        self.value: bytes | None = None
        self.written = False

    def read(self) -> bytes | None:
        return self.value if self.written else self.cell.read()

    def write(self, value: bytes) -> None:
        self.value, self.written = value, True

    def clear(self) -> None:
        self.value, self.written = None, True

    def settle(self, parked_again: bool) -> None:
        """Write what the poll left in SEQ, unless the key is parked again (see the module)."""
        if not self.written or parked_again:
            return
        if self.value is None:
            self.cell.clear()
        else:
            self.cell.write(self.value)


def poll(
    act: Instance, entity_key: bytes, parked: Continuation, cells: KeyCells, *, defer: bool = True
) -> list[Output]:
    """Wait for the parked activation's call, re-run it, and settle what it leaves.

    `defer`: a poll may set itself again rather than wait (`deferred_polls`).
    """
    seq = _HeldSeq(cells.seq)
    ttl, hitl = _HeldTimer(cells.ttl_timer), _HeldTimer(cells.hitl_timer)
    held = cells._replace(seq=seq, ttl_timer=ttl, hitl_timer=hitl)
    out = _poll(act, entity_key, parked, _known(held, parked.parked), ttl, defer)
    if seq.written:
        keep = act.config.token_budget is None and seq.value is not None
        seq.settle(keep and parking.is_parked(_current(cells)))
    ttl.settle()
    hitl.settle()
    return out


def _known(cells: KeyCells, parked: Parked) -> KeyCells:
    """LLM_CACHE answered without a state read when the park kept no answer in it.

    A park written before `cache_clear` existed leaves it unset, and the
    re-run reads the cell as before.
    """
    if parked.cache_clear:
        return cells._replace(cache=KnownCell(cells.cache, None))
    return cells


def _poll(
    act: Instance,
    entity_key: bytes,
    parked: Continuation,
    cells: KeyCells,
    watch: _HeldTimer,
    defer: bool,
) -> list[Output]:
    if act.parking is not None:
        call_key = parked.parked.call_key
        if failpoints.fires(failpoints.POLL, entity_key, parked.seq):
            act.parking.forget(call_key)
        again = deferred_polls.poll_again_at(_timers_from(act, parked)) if defer else None
        if again is not None and _running(act.parking, call_key):
            cells.hitl_timer.set(again)  # the key stays parked as it is
            return []
        act.parking.wait(call_key)
    expiry = parked.parked.expire_at_ms if parked.parked.HasField("expire_at_ms") else None
    run = parking.rerun(entity_key, parked)
    out, outcome = activate(act, run, cells)
    if outcome == PARKED and act.parking is not None and _asked_anew(act.parking, parked, cells):
        # Its requests are not a function of its inputs (an impure prompt): each
        # re-run would park on a new call. Run it in place, as without parking.
        act.parking.forget(parked.parked.call_key)
        run = parking.rerun(entity_key, _parked(cells))
        run.in_place = True
        out2, outcome = activate(act, run, cells)
        out.extend(out2)
    runtime_metrics.model_calls_inflight.set(call_loop.inflight)
    if outcome == COMPLETED and run.backlog:
        out.extend(drain_after(act, run, cells))
    elif outcome == SUSPENDED and run.backlog:
        # Its buffer took the events up to the first answer that waited.
        out.extend(deliver(act.entrance, entity_key, split(run.backlog)[1], cells))
    elif outcome == FAILED:
        free = parking.restore(run, cells)
        if free:
            run.backlog = free
            out.extend(drain_after(act, run, cells, seq=run.seq))
    if expiry is not None and watch.last_ms is None:
        out.extend(_expire_after_poll(act, entity_key, expiry, cells))
    return out


def unpark_in_place(
    act: Instance, entity_key: bytes, parked: Continuation, cells: KeyCells
) -> list[Output]:
    """Backpressure: poll the key here until it no longer waits on the model."""
    out: list[Output] = []
    current: Continuation | None = parked
    while current is not None and parking.is_parked(current):
        out.extend(poll(act, entity_key, current, cells, defer=False))
        current = parse(cells.continuation, Continuation, "CONTINUATION")
    return out


def _timers_from(act: Instance, parked: Continuation) -> int:
    """The earliest a timer the parked activation's completion sets could be due.

    Its TTL (event time) and a `Suspend`'s default deadline (processing time,
    which a replay's clock takes from event time) both count from its event.
    """
    config = act.config
    return parked.event_time_ms + min(config.ttl_ms, config.hitl_timeout_ms)


def _running(parking: Parking, call_key: str) -> bool:
    """Whether this process runs the call and it has not finished."""
    call = parking.loop.find(parking.token, call_key)
    return call is not None and not call.done()


def _parked(cells: KeyCells) -> Continuation:
    """The key's parked continuation, which the caller knows is there."""
    parked = _current(cells)
    assert parked is not None
    return parked


def _current(cells: KeyCells) -> Continuation | None:
    return parse(cells.continuation, Continuation, "CONTINUATION")


def _asked_anew(parking: Parking, parked: Continuation, cells: KeyCells) -> bool:
    """Whether a re-run parked on another call than the one it waited on, leaving that one."""
    waited_on = parked.parked.call_key
    now = _parked(cells)
    return now.parked.call_key != waited_on and parking.unclaimed(waited_on)


def _expire_after_poll(
    act: Instance, entity_key: bytes, fire_time_ms: int, cells: KeyCells
) -> list[Output]:
    """A TTL firing that waited for the parked activation, now that nothing re-armed it.

    Still parked (a drained event parked in turn), the key keeps waiting;
    otherwise it expires now, as it would have after the activation in place.
    """
    current = parse(cells.continuation, Continuation, "CONTINUATION")
    if parking.is_parked(current):
        assert current is not None
        parking.mark_expiry(current, fire_time_ms, cells)
        return []
    return on_ttl(act, entity_key, fire_time_ms, cells)
