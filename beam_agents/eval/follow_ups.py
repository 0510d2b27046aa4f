"""Follow-ups in an evaluation: each wake that ran, given to the event that started it.

A wake runs as an activation of its own, under an id no logged event has,
so by event id its run would be nobody's; yet it is part of what its event
decided (the re-check that escalates, the case closed after a quiet day).
So the notes of each key are read in the order its activations ran, keeping
the key's pending wakes as the runtime keeps them: a committed activation
cancels, then schedules; a wake's own run takes it out, whether it completed
or failed. Each wake then belongs to the activation that scheduled it last,
and through a chain of wakes to the event that started the chain.

What the set still holds at the end never ran (a processing-time wake the
replay's clock did not reach, one buffered behind an approval that never
came), and neither did a wake due after the replay's event time ended
(`beam_agents.eval.observe.FollowUpAfterReplay`): both are reported with
their event, not lost.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from beam_agents.eval.events import EventLog
from beam_agents.eval.observe import FOLLOW_UP_AFTER_REPLAY, Note, WakeRun
from beam_agents.runtime.errors import ActivationError

__all__ = ["FollowUps", "not_run_unlogged", "trace_follow_ups"]

_DEAD_LETTER_LOGGER: Final = "beam_agents.runtime.dead_letters"
_NOT_RUN: Final = f": {FOLLOW_UP_AFTER_REPLAY}: "


@dataclass(frozen=True)
class FollowUps:
    """Per logged event (by its runtime id): the wakes it started, run and not run."""

    ran: dict[str, list[tuple[str, WakeRun]]] = field(default_factory=dict)
    """Each wake that ran, with the id of its run's note, in the order they ran."""
    not_run: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """`{"name", "due_ms"}` of each wake that did not run (`due_ms` None: processing time)."""
    errors: dict[str, ActivationError] = field(default_factory=dict)
    """A wake's dead letter, by the note id of its run."""

    def count(self) -> dict[str, int]:
        """How many follow-ups ran and how many did not, over the whole run."""
        return {
            "ran": sum(len(wakes) for wakes in self.ran.values()),
            "not_run": sum(len(wakes) for wakes in self.not_run.values()),
        }


def trace_follow_ups(
    notes: Mapping[str, Note], log: EventLog, errors: Sequence[ActivationError]
) -> tuple[FollowUps, list[ActivationError]]:
    """Every wake of the run given to its event; returns it with the dead letters no wake owns.

    A wake not run because it was due after the replay leaves a dead letter
    behind (its activation raised): it is reported as not run, not counted
    as a dead letter.
    """
    traced = FollowUps()
    by_key: dict[bytes, list[tuple[str, Note]]] = {}
    for note_id, note in notes.items():
        by_key.setdefault(note.key, []).append((note_id, note))
    for key, activations in by_key.items():
        activations.sort(key=lambda pair: pair[1].order)
        _trace_key(key, activations, log, traced)
    rest = _claim_errors(notes, errors, traced)
    return traced, rest


def _trace_key(
    key: bytes, activations: list[tuple[str, Note]], log: EventLog, traced: FollowUps
) -> None:
    """One key's activations in the order they ran, with the wakes pending between them."""
    known = log.by_runtime_id()
    pending: dict[str, tuple[str, int | None]] = {}  # name -> (root event, due)
    for note_id, note in activations:
        if note.wake is None:
            root = note_id if note_id in known else _owner(log, key, note.now_ms)
        else:
            scheduled = pending.pop(note.wake.name, None)
            root = scheduled[0] if scheduled is not None else _owner(log, key, note.wake.due_ms)
            if note.after_replay:
                traced.not_run.setdefault(root, []).append(_wake(note.wake.name, note.wake.due_ms))
            else:
                traced.ran.setdefault(root, []).append((note_id, note.wake))
        if note.output is None:
            continue  # failed, suspended or not run: it committed no schedule or cancel
        for name in note.cancels:
            pending.pop(name, None)
        for name, due in note.schedules.items():
            pending[name] = (root, due)
    for name, (root, due) in sorted(pending.items(), key=lambda item: item[0]):
        traced.not_run.setdefault(root, []).append(_wake(name, due))


def _wake(name: str, due_ms: int | None) -> dict[str, Any]:
    return {"name": name, "due_ms": due_ms}


def _owner(log: EventLog, key: bytes, time_ms: int) -> str:
    """The logged event of `key` latest at `time_ms` (else its first): an owner of last resort."""
    mine = [e for e in log.events if e.key.encode("utf-8") == key]
    before = [e for e in mine if e.time_ms <= time_ms]
    return (max(before, key=lambda e: e.time_ms) if before else mine[0]).runtime_id


def _claim_errors(
    notes: Mapping[str, Note], errors: Sequence[ActivationError], traced: FollowUps
) -> list[ActivationError]:
    """Give each wake's dead letter to its run, and drop those of wakes not run.

    A dead letter names the key, time and payload, not the wake: of two
    wakes alike in those, it is the one whose run did not complete.
    """
    wakes: dict[tuple[bytes, int, bytes], list[tuple[str, Note]]] = {}
    for note_id, note in notes.items():
        if note.wake is not None:
            wakes.setdefault((note.key, note.wake.due_ms, note.wake.payload), []).append(
                (note_id, note)
            )
    rest = []
    for error in errors:
        where = (error.entity_key, error.event_time_ms, error.payload)
        not_run = error.detail.startswith(FOLLOW_UP_AFTER_REPLAY)
        failed = [
            pair
            for pair in wakes.get(where, [])
            if pair[1].output is None and pair[1].after_replay == not_run
        ]
        if not failed:
            rest.append(error)
            continue
        note_id, _ = min(failed, key=lambda pair: pair[1].order)
        if not not_run:
            traced.errors[note_id] = error
        wakes[where] = [pair for pair in wakes[where] if pair[0] != note_id]
    return rest


@contextlib.contextmanager
def not_run_unlogged() -> Iterator[None]:
    """While a replay runs, the runtime does not warn of the dead letter of a wake not run.

    The wake is no failure: the summary and results.jsonl report it as not
    run, so a warning with a traceback would only alarm whoever reads the log.
    """
    logger = logging.getLogger(_DEAD_LETTER_LOGGER)
    logger.addFilter(_logged)
    try:
        yield
    finally:
        logger.removeFilter(_logged)


def _logged(record: logging.LogRecord) -> bool:
    return _NOT_RUN not in record.getMessage()
