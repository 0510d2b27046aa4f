"""A key's pending follow-ups, read back from the lifecycle records its pipeline emitted.

Pending wakes live in the key's Beam state, which nothing outside the
running pipeline can read; what a pipeline shows the world is its records.
So `beam-agents inspect --lifecycle` and the console derive them: a wake is
pending from its `wake_scheduled` record until a later record of the same
name ends it, a `wake_fired`, a `wake_cancelled`, or another
`wake_scheduled` (which replaces it). A key's records are emitted in the
order its activations commit, and one activation's as fired, cancelled,
scheduled, so one pass over them in that order gives the pending set the
key's state holds once those commits are in.

A `wake_fired` ends only the schedule it names (same due time and clock),
so a file that orders one activation's records some other way (sorted by
their bytes, say) still reads right: a wake that re-schedules itself stays
pending at its next due time.

Only the standard library and the runtime's limits are imported: the
command line and the console read records without loading Apache Beam. The
kind names are the runtime's, defined without Beam in
`beam_agents.runtime.wakes`, persisted, so they never change.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, Protocol, TypeGuard

from beam_agents.errors import BeamAgentsError
from beam_agents.runtime.wakes import (
    MAX_PENDING_WAKES,
    WAKE_CANCELLED,
    WAKE_FIRED,
    WAKE_KINDS,
    WAKE_SCHEDULED,
)

__all__ = [
    "WAKE_CANCELLED",
    "WAKE_FIRED",
    "WAKE_KINDS",
    "WAKE_SCHEDULED",
    "LifecycleFields",
    "PendingFollowUp",
    "WakeLedger",
    "WakeRecord",
    "WakeRecordError",
    "pending_wakes",
    "wake_record",
    "wake_record_of_json",
]


Action = Literal["scheduled", "fired", "cancelled"]
_ACTIONS: Final[dict[str, Action]] = {
    WAKE_SCHEDULED: "scheduled",
    WAKE_FIRED: "fired",
    WAKE_CANCELLED: "cancelled",
}
_CLOCKS: Final = {"event": False, "processing": True}


class WakeRecordError(BeamAgentsError, ValueError):
    """A wake record that is not what a pipeline emits, or records that cannot be one key's.

    The message names the record's kind and what was wrong with it.
    """


class LifecycleFields(Protocol):
    """What a wake record is read from: a `LifecycleEvent`, or anything with its fields."""

    @property
    def kind(self) -> str: ...
    @property
    def detail(self) -> str: ...
    @property
    def event_time_ms(self) -> int: ...
    @property
    def seq(self) -> int: ...


@dataclass(frozen=True, slots=True)
class WakeRecord:
    """One `wake_*` lifecycle record, its detail read.

    `event_time_ms` and `seq` are the committing activation's; `due_ms` and
    `processing_time` are None for a cancel, whose record names only the wake.
    """

    action: Action
    name: str
    event_time_ms: int
    seq: int
    due_ms: int | None = None
    processing_time: bool | None = None

    def __post_init__(self) -> None:
        timed = self.due_ms is not None and self.processing_time is not None
        if timed == (self.action == "cancelled"):
            needs = "no due_ms or clock" if self.action == "cancelled" else "a due_ms and a clock"
            raise WakeRecordError(f"a {self.action} wake record carries {needs} ({self.name!r})")

    @property
    def clock(self) -> str:
        """'event', 'processing', or '' for a cancel: the clock `due_ms` is counted on."""
        if self.processing_time is None:
            return ""
        return "processing" if self.processing_time else "event"


@dataclass(frozen=True, slots=True)
class PendingFollowUp:
    """A wake the records say is scheduled and has neither run nor been cancelled.

    `scheduled_ms` and `scheduled_seq` are the event time and seq of the
    activation that scheduled it (its latest schedule, when it was replaced).
    """

    name: str
    due_ms: int
    processing_time: bool
    scheduled_ms: int
    scheduled_seq: int

    @property
    def clock(self) -> str:
        """'event' or 'processing': the clock `due_ms` is counted on."""
        return "processing" if self.processing_time else "event"


def wake_record(record: LifecycleFields) -> WakeRecord | None:
    """The wake record `record` is, or None for a record of another kind."""
    action = _ACTIONS.get(record.kind)
    if action is None:
        return None
    where = f"{record.kind} record at seq {record.seq}"
    try:
        detail = json.loads(record.detail)
    except (json.JSONDecodeError, RecursionError):
        detail = None
    if not isinstance(detail, dict):
        raise WakeRecordError(f"{where}: detail is not a JSON object: {record.detail[:200]!r}")
    name = detail.get("name")
    if not isinstance(name, str) or not name:
        raise WakeRecordError(f"{where}: detail has no wake name: {record.detail[:200]!r}")
    if action == "cancelled":
        return WakeRecord(action, name, record.event_time_ms, record.seq)
    due_ms, clock = detail.get("due_ms"), detail.get("time")
    if not _is_int(due_ms):
        raise WakeRecordError(f"{where}: wake {name!r} has no integer due_ms")
    if clock not in _CLOCKS:
        raise WakeRecordError(
            f"{where}: wake {name!r} has time {clock!r}, not 'event' or 'processing'"
        )
    return WakeRecord(action, name, record.event_time_ms, record.seq, due_ms, _CLOCKS[clock])


@dataclass(frozen=True, slots=True)
class _JsonRecord:
    kind: str
    detail: str
    event_time_ms: int
    seq: int


def wake_record_of_json(line: Mapping[str, object]) -> WakeRecord | None:
    """`wake_record` of a record in its JSON-lines form (`kind`, `detail`, `event_time_ms`, `seq`).

    That is the form a pipeline writes its lifecycle output in for people
    and tools to read (the triage application's `lifecycle.jsonl`).
    """
    kind = line.get("kind")
    if kind not in WAKE_KINDS:
        return None
    detail, time_ms, seq = line.get("detail"), line.get("event_time_ms"), line.get("seq")
    if isinstance(detail, str) and _is_int(time_ms) and _is_int(seq):
        return wake_record(_JsonRecord(str(kind), detail, time_ms, seq))
    raise WakeRecordError(
        f"{kind} record: needs a text detail and integer event_time_ms and seq, "
        f"got {detail!r}, {time_ms!r}, {seq!r}"
    )


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


class WakeLedger:
    """One key's pending follow-ups, kept current one wake record at a time.

    Feed it the key's wake records in the order they were emitted. It never
    holds more than the runtime lets a key hold (`MAX_PENDING_WAKES`): more
    means the records are not one key's, in order, and `take` refuses.
    """

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: dict[str, PendingFollowUp] = {}

    def take(self, record: WakeRecord) -> None:
        """Apply one record: schedule (or replace), or end the schedule it names."""
        held = self._pending.get(record.name)
        if record.due_ms is None or record.processing_time is None:  # a cancel
            self._pending.pop(record.name, None)
        elif record.action == "fired":
            if held is not None and (held.due_ms, held.processing_time) == (
                record.due_ms,
                record.processing_time,
            ):
                del self._pending[record.name]
        else:
            if held is None and len(self._pending) >= MAX_PENDING_WAKES:
                raise WakeRecordError(
                    f"wake_scheduled record at seq {record.seq}: wake {record.name!r} would "
                    f"be the key's {MAX_PENDING_WAKES + 1}th pending wake, more than a key "
                    "holds: these are not one key's records in the order they were emitted"
                )
            self._pending[record.name] = PendingFollowUp(
                record.name, record.due_ms, record.processing_time, record.event_time_ms, record.seq
            )

    @property
    def pending(self) -> list[PendingFollowUp]:
        """The pending follow-ups, soonest due first (ties by name)."""
        return sorted(self._pending.values(), key=lambda wake: (wake.due_ms, wake.name))

    def __len__(self) -> int:
        return len(self._pending)


def pending_wakes(records: Iterable[WakeRecord]) -> list[PendingFollowUp]:
    """A key's pending follow-ups once all of `records` (its wake records, in order) are in."""
    ledger = WakeLedger()
    for record in records:
        ledger.take(record)
    return ledger.pending
