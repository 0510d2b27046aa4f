"""The follow-ups of a run as its lifecycle records tell them: pending per entity, and counts.

A pending wake lives in the pipeline's state, out of the console's reach;
its records say when it was scheduled and when it fired or was cancelled
(`beam_agents.runtime.pending_wakes`). The console folds each wake record
into its entity's ledger as it reads it, rather than deriving the set from
the record window, so a wake scheduled a week ago, long out of the window,
still shows as pending until a record ends it.

What it holds is bounded like the rest of the console: only entities with
a wake pending keep a ledger (each at most the 64 a key can hold), the
`PENDING_WAKE_ENTITIES` most recently touched of them.
"""

from __future__ import annotations

import logging
from collections import Counter, OrderedDict
from collections.abc import Iterable
from typing import Any, Final

from beam_agents.console.charts import when
from beam_agents.runtime.pending_wakes import (
    WAKE_CANCELLED,
    WAKE_FIRED,
    WAKE_KINDS,
    WAKE_SCHEDULED,
    PendingFollowUp,
    WakeLedger,
    WakeRecord,
    WakeRecordError,
    wake_record_of_json,
)

__all__ = ["PENDING_WAKE_ENTITIES", "FollowUps", "lifecycle_detail", "wake_history"]

PENDING_WAKE_ENTITIES: Final = 10_000
"""Entities whose pending follow-ups are held; past it the least recently touched is let go."""

_log = logging.getLogger(__name__)


class FollowUps:
    """Every entity's pending follow-ups, and how many were scheduled, fired and cancelled."""

    def __init__(self) -> None:
        self._ledgers: OrderedDict[str, WakeLedger] = OrderedDict()
        self.totals: Counter[str] = Counter()
        """Wake records read, by kind, since the lifecycle file last started."""
        self.skipped = 0
        """Wake records that could not be read, or were not one key's in order."""

    def clear(self) -> None:
        """Forget everything: the lifecycle file was rewritten (a new run)."""
        self._ledgers.clear()
        self.totals.clear()
        self.skipped = 0

    def take(self, entity: str, record: dict[str, Any]) -> None:
        """Fold one newly read lifecycle record of `entity` in, if it is a wake record."""
        if record.get("kind") not in WAKE_KINDS:
            return
        self.totals[str(record["kind"])] += 1
        ledger = self._ledgers.pop(entity, None)
        if ledger is None:
            ledger = WakeLedger()
        try:
            wake = wake_record_of_json(record)
            if wake is not None:
                ledger.take(wake)
        except WakeRecordError as exc:
            self.skipped += 1
            _log.warning("skipped a wake record of entity %r: %s", entity, exc)
        if len(ledger):
            self._ledgers[entity] = ledger  # now the most recently touched
            if len(self._ledgers) > PENDING_WAKE_ENTITIES:
                self._ledgers.popitem(last=False)

    def pending_of(self, entity: str) -> list[PendingFollowUp]:
        """The entity's pending follow-ups, soonest due first."""
        ledger = self._ledgers.get(entity)
        return ledger.pending if ledger is not None else []

    def figures(self) -> dict[str, int]:
        """The overview's counts: pending now, and every scheduled, fired and cancelled."""
        return {
            "follow-ups pending": sum(len(ledger) for ledger in self._ledgers.values()),
            "follow-ups scheduled": self.totals[WAKE_SCHEDULED],
            "follow-ups fired": self.totals[WAKE_FIRED],
            "follow-ups cancelled": self.totals[WAKE_CANCELLED],
        }


def wake_history(records: Iterable[dict[str, Any]]) -> list[WakeRecord]:
    """The wake records among one entity's lifecycle records, in record order.

    A record that cannot be read is left out (`FollowUps` logs it once, as it reads it).
    """
    history = []
    for record in records:
        try:
            wake = wake_record_of_json(record)
        except WakeRecordError:
            continue
        if wake is not None:
            history.append(wake)
    return history


def lifecycle_detail(record: dict[str, Any]) -> str:
    """A lifecycle record's detail as the timeline shows it: a wake's due time as a date.

    Any other record's detail is shown as it is; so is a wake record that
    cannot be read.
    """
    detail = record.get("detail", "")
    try:
        wake = wake_record_of_json(record)
    except WakeRecordError:
        wake = None
    if wake is None or wake.due_ms is None:
        return str(detail) if wake is None else wake.name
    return f"{wake.name}, due {when(wake.due_ms)} ({wake.clock} time)"
