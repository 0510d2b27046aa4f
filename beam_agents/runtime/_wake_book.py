"""A key's pending follow-ups: what an activation stages, and what its commit writes.

The WAKES cell holds a `PendingWakes`, sorted by name, read only by an
activation that schedules or cancels, by a wake's own run and by the
timers: most keys never schedule, and their events never read it. An
activation stages its schedules and cancels here (the last word per name
wins); nothing reaches the cell unless the activation commits, so a failed
activation schedules nothing.

Two timers stand for the whole set: the watermark timer at the earliest
event-time wake not yet handed to the key's runs, the processing-time timer
at the earliest processing-time one. Each commit that changes the set arms
them from what it wrote, touching a timer only when its time changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta

from beam_agents.coders import encode_deterministic
from beam_agents.proto.beam_agents_pb2 import PendingWake, PendingWakes, WakeMarker
from beam_agents.runtime._cells import SCHEMA_VERSION, Cell, KeyCells, read_message
from beam_agents.runtime._timestamps import MAX_TIMER_MS, timer_timestamp
from beam_agents.runtime.wakes import (
    MAX_PENDING_WAKES,
    MAX_WAKE_NAME_BYTES,
    MAX_WAKE_PAYLOAD_BYTES,
    Wake,
    WakeLimitError,
)

__all__ = [
    "Settled",
    "WakeBook",
    "cancel_detail",
    "consume",
    "detail",
    "due",
    "find",
    "marker_of",
    "read_pending",
    "wake_seen",
    "write_pending",
]


@dataclass(frozen=True, slots=True)
class _Schedule:
    due_ms: int | None
    """Event time, or an absolute processing time; None: `after_ms` from the commit's clock."""
    after_ms: int
    payload: bytes
    processing_time: bool


@dataclass(frozen=True, slots=True)
class Settled:
    """What a commit does to the key's wakes: the new set, and what changed in it."""

    pending: list[PendingWake]
    scheduled: list[PendingWake]
    cancelled: list[str]
    fired: PendingWake | None


def read_pending(cell: Cell) -> list[PendingWake]:
    """The key's pending wakes as committed (`StateDecodeError` if unreadable)."""
    message = read_message(cell, PendingWakes, "WAKES")
    return list(message.wakes) if message is not None else []


def write_pending(
    cells: KeyCells, pending: list[PendingWake], before: list[PendingWake] | None = None
) -> None:
    """Write the set (sorted by name) and arm the timers from it.

    `before` is the set as committed, whose timers are armed already: a
    timer whose time did not change is left alone (a timer write each,
    where most commits that touch follow-ups cancel one and schedule
    another). None arms both.
    """
    pending.sort(key=lambda wake: wake.name)
    if pending:
        message = PendingWakes(state_schema_version=SCHEMA_VERSION, wakes=pending)
        cells.wakes.write(encode_deterministic(message))
    else:
        cells.wakes.clear()
    event, clock = _earliest(pending)
    armed = None if before is None else _earliest(before)
    for timer, at, was in (
        (cells.wake_timer, event, None if armed is None else armed[0]),
        (cells.wake_clock, clock, None if armed is None else armed[1]),
    ):
        if armed is not None and at == was:
            continue
        if at is None:
            timer.clear()
        else:
            timer.set(timer_timestamp(at))


def _earliest(pending: Iterable[PendingWake]) -> tuple[int | None, int | None]:
    """The earliest due of each time domain among the wakes not yet handed to a run."""
    event: int | None = None
    clock: int | None = None
    for wake in pending:
        if wake.handed:
            continue
        if wake.processing_time:
            clock = wake.due_ms if clock is None else min(clock, wake.due_ms)
        else:
            event = wake.due_ms if event is None else min(event, wake.due_ms)
    return event, clock


def due(pending: list[PendingWake], fire_ms: int, processing_time: bool) -> list[PendingWake]:
    """The wakes of one time domain due by `fire_ms`, in the order they run: due time, name."""
    ready = [
        wake
        for wake in pending
        if not wake.handed and wake.processing_time == processing_time and wake.due_ms <= fire_ms
    ]
    ready.sort(key=lambda wake: (wake.due_ms, wake.name))
    return ready


def marker_of(wake: PendingWake) -> WakeMarker:
    return WakeMarker(
        name=wake.name, scheduled_seq=wake.scheduled_seq, processing_time=wake.processing_time
    )


def find(pending: Iterable[PendingWake], marker: WakeMarker) -> PendingWake | None:
    """The pending wake `marker` stands for; None once it ran, was cancelled or replaced."""
    for wake in pending:
        if wake.name == marker.name and wake.scheduled_seq == marker.scheduled_seq:
            return wake
    return None


def wake_seen(marker: WakeMarker, payload: bytes, due_ms: int) -> Wake:
    """What the agent sees of the wake its run is (`ctx.wake`)."""
    return Wake(marker.name, payload, due_ms, marker.processing_time)


def consume(cells: KeyCells, marker: WakeMarker) -> PendingWake | None:
    """Take the wake `marker` stands for off the set (its run failed); what was taken."""
    before = read_pending(cells.wakes)
    taken = find(before, marker)
    if taken is not None:
        write_pending(cells, [wake for wake in before if wake is not taken], before)
    return taken


def detail(wake: PendingWake) -> str:
    """A wake's lifecycle-record detail."""
    time = "processing" if wake.processing_time else "event"
    return json.dumps({"name": wake.name, "due_ms": wake.due_ms, "time": time})


def cancel_detail(name: str) -> str:
    """A cancel's lifecycle-record detail."""
    return json.dumps({"name": name})


class WakeBook:
    """One activation's schedules and cancels, over the key's wakes as committed.

    The cell is read on the first schedule or cancel (the count limit needs
    it), on the Beam thread the agent runs on, and never by an activation
    that does neither.
    """

    __slots__ = ("_cancels", "_cell", "_committed", "_fired", "_schedules")

    def __init__(self, cell: Cell, fired: WakeMarker | None) -> None:
        self._cell = cell
        self._fired = fired
        self._committed: list[PendingWake] | None = None
        self._schedules: dict[str, _Schedule] = {}
        self._cancels: set[str] = set()

    def _pending(self) -> list[PendingWake]:
        if self._committed is None:
            self._committed = read_pending(self._cell)
        return self._committed

    def schedule(
        self,
        name: str,
        *,
        now_ms: int,
        after: timedelta | None,
        at_ms: int | None,
        payload: bytes,
        processing_time: bool,
    ) -> None:
        _check_name(name)
        if not isinstance(payload, bytes):
            raise TypeError(f"wake payload must be bytes, not {type(payload).__name__}")
        if len(payload) > MAX_WAKE_PAYLOAD_BYTES:
            raise WakeLimitError(
                f"wake {name!r}: payload of {len(payload)} bytes is over the "
                f"{MAX_WAKE_PAYLOAD_BYTES}-byte limit of a wake's payload"
            )
        self._schedules[name] = _when(name, now_ms, after, at_ms, payload, processing_time)
        self._cancels.discard(name)
        kept = self._names_after()
        if len(kept) > MAX_PENDING_WAKES:
            del self._schedules[name]
            raise WakeLimitError(
                f"wake {name!r}: the key would hold {len(kept)} pending wakes, over the "
                f"limit of {MAX_PENDING_WAKES} per key; cancel one or let one fire first"
            )

    def cancel(self, name: str) -> None:
        _check_name(name)
        self._schedules.pop(name, None)
        self._cancels.add(name)

    def _names_after(self) -> set[str]:
        names = {wake.name for wake in self._pending() if not self._is_fired(wake)}
        return (names - self._cancels) | set(self._schedules)

    def _is_fired(self, wake: PendingWake) -> bool:
        fired = self._fired
        return (
            fired is not None
            and wake.name == fired.name
            and wake.scheduled_seq == fired.scheduled_seq
        )

    @property
    def touched(self) -> bool:
        """Whether the commit has anything to write: a schedule, a cancel, or a wake that ran."""
        return bool(self._schedules or self._cancels) or self._fired is not None

    @property
    def committed(self) -> list[PendingWake]:
        """The key's wakes as committed (read now if nothing read them yet)."""
        return list(self._pending())

    def settle(self, seq: int, clock_ms: Callable[[], int]) -> Settled:
        """The set this activation commits, scheduled at `seq`; `clock_ms` dates processing time."""
        fired: PendingWake | None = None
        kept: dict[str, PendingWake] = {}
        for wake in self._pending():
            if self._is_fired(wake):
                fired = wake
            else:
                kept[wake.name] = wake
        cancelled = sorted(name for name in self._cancels if name in kept)
        for name in cancelled:
            del kept[name]
        scheduled: list[PendingWake] = []
        now = None
        for name, when in sorted(self._schedules.items()):
            due_ms = when.due_ms
            if due_ms is None:
                now = clock_ms() if now is None else now
                due_ms = now + when.after_ms
            wake = PendingWake(
                name=name,
                due_ms=min(due_ms, MAX_TIMER_MS),
                payload=when.payload,
                processing_time=when.processing_time,
                scheduled_seq=seq,
            )
            kept[name] = wake
            scheduled.append(wake)
        return Settled(list(kept.values()), scheduled, cancelled, fired)


def _check_name(name: str) -> None:
    if not isinstance(name, str):
        raise TypeError(f"wake name must be str, not {type(name).__name__}")
    size = len(name.encode("utf-8", "surrogatepass"))
    if not 0 < size <= MAX_WAKE_NAME_BYTES:
        raise WakeLimitError(
            f"wake name must be 1 to {MAX_WAKE_NAME_BYTES} UTF-8 bytes, got {size}"
        )


def _when(
    name: str,
    now_ms: int,
    after: timedelta | None,
    at_ms: int | None,
    payload: bytes,
    processing_time: bool,
) -> _Schedule:
    """When a schedule is due, as far as the activation can tell; refused when it cannot be."""
    if (after is None) == (at_ms is None):
        raise WakeLimitError(f"wake {name!r}: give exactly one of after= and at_ms=")
    if after is not None:
        if not isinstance(after, timedelta):
            raise TypeError(f"wake {name!r}: after= must be a timedelta")
        after_ms = after // timedelta(milliseconds=1)
        if after_ms < 1:
            raise WakeLimitError(f"wake {name!r}: after= must be at least 1 ms, got {after}")
        if after_ms > MAX_TIMER_MS:
            raise WakeLimitError(f"wake {name!r}: after= is past the last time a timer can hold")
        if processing_time:  # dated on the processing clock when the activation commits
            return _Schedule(None, after_ms, payload, True)
        return _Schedule(now_ms + after_ms, 0, payload, False)
    if type(at_ms) is not int:
        raise TypeError(f"wake {name!r}: at_ms= must be an int (milliseconds since the epoch)")
    if not processing_time and at_ms <= now_ms:
        raise WakeLimitError(
            f"wake {name!r}: at_ms={at_ms} is not after this activation's event time "
            f"{now_ms} (an event-time wake is due later than the activation scheduling it)"
        )
    if not 0 <= at_ms <= MAX_TIMER_MS:
        raise WakeLimitError(f"wake {name!r}: at_ms={at_ms} is outside what a timer can hold")
    return _Schedule(at_ms, 0, payload, processing_time)
