"""The recorded log an evaluation replays, and the labels it is scored against.

Both are JSON lines read through Beam's filesystems, so a path may be
local or `gs://...` (wherever the production capture wrote its windows).
An event line is `{"key", "payload", "time_ms", "id"?}`; an answer line
also has `"answer_to"` (the id of the event whose suspension it answers)
and `"intent_id"` (the approval intent it resumes). The payload is UTF-8
text or `{"b64": ...}`. Without an `id`, an event is known by the id the
runtime gives it (`ActivationContext.event_id`): labels can name either.
A time after 9999 is refused with the line named: the replay's watermark
runs past the last event, and Beam's stream refuses times near its own end.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from beam_agents._instants import LATEST_MS
from beam_agents.eval.errors import EvalInputError
from beam_agents.runtime.intents import event_id_for

__all__ = ["Answer", "Event", "EventLog", "read_events", "read_labels"]


@dataclass(frozen=True, slots=True)
class Event:
    """One recorded event: `id` is the user's, `runtime_id` the runtime's."""

    id: str
    runtime_id: str
    key: str
    payload: bytes
    time_ms: int


@dataclass(frozen=True, slots=True)
class Answer:
    """One recorded answer to an approval."""

    key: str
    intent_id: str
    answer_to: str
    payload: bytes
    time_ms: int


@dataclass(frozen=True, slots=True)
class EventLog:
    """The events in file order, and the answers."""

    events: tuple[Event, ...]
    answers: tuple[Answer, ...]

    def by_runtime_id(self) -> dict[str, Event]:
        """Each event under the id the runtime gives it."""
        return {event.runtime_id: event for event in self.events}


def json_objects(
    path: str, error: type[Exception] = EvalInputError
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each JSON object of a JSONL file on any Beam filesystem, with its `path:line`.

    Blank lines are skipped; anything else that is not an object raises
    `error` naming the line, so a user can find it.
    """
    from apache_beam.io.filesystems import FileSystems

    try:
        handle = FileSystems.open(path)
    except Exception as exc:  # any filesystem's own error: say which path
        raise error(f"{path}: cannot open ({type(exc).__name__}: {exc})") from None
    with handle:
        data = handle.read()
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise error(f"{where}: not JSON ({exc})") from None
        if not isinstance(record, dict):
            raise error(f"{where}: expected a JSON object, got {type(record).__name__}")
        yield where, record


def _payload(value: object, where: str) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, dict) and set(value) == {"b64"} and isinstance(value["b64"], str):
        try:
            return base64.b64decode(value["b64"], validate=True)
        except ValueError:
            raise EvalInputError(f"{where}: payload.b64 is not base64") from None
    raise EvalInputError(f"{where}: payload must be a string or {{'b64': ...}}, got {value!r:.60}")


def _text(record: dict[str, Any], name: str, where: str) -> str:
    value = record.get(name)
    if type(value) is not str or not value:
        raise EvalInputError(f"{where}: {name} must be a non-empty string, got {value!r:.60}")
    return value


def read_events(path: str) -> EventLog:
    """Read an events file; raises EvalInputError naming the file and line of a bad record."""
    events: list[Event] = []
    answers: list[Answer] = []
    seen: dict[str, str] = {}
    for where, record in json_objects(path):
        key = _text(record, "key", where)
        time_ms = record.get("time_ms")
        if type(time_ms) is not int or not 0 <= time_ms <= LATEST_MS:
            raise EvalInputError(
                f"{where}: time_ms must be an int in [0, {LATEST_MS}] (the epoch to the end of "
                f"9999), got {time_ms!r:.60}"
            )
        payload = _payload(record.get("payload"), where)
        if "answer_to" in record:
            answer_to = _text(record, "answer_to", where)
            intent = _text(record, "intent_id", where)
            answers.append(Answer(key, intent, answer_to, payload, time_ms))
            continue
        runtime_id = event_id_for(key.encode("utf-8"), time_ms, payload)
        event_id = _text(record, "id", where) if "id" in record else runtime_id
        for name in {event_id, runtime_id}:
            if name in seen:
                raise EvalInputError(
                    f"{where}: the same event as {seen[name]} (same id, or same key, time and "
                    "payload, which the runtime cannot tell apart)"
                )
            seen[name] = where
        events.append(Event(event_id, runtime_id, key, payload, time_ms))
    if not events:
        raise EvalInputError(f"{path}: no events")
    return EventLog(tuple(events), tuple(answers))


def read_labels(path: str, log: EventLog) -> dict[str, dict[str, Any]]:
    """Labels by event id (the user's or the runtime's); refuses a label of an unknown event."""
    known = {event.id: event.id for event in log.events}
    known.update({event.runtime_id: event.id for event in log.events})
    labels: dict[str, dict[str, Any]] = {}
    for where, record in json_objects(path):
        label_id = _text(record, "id", where)
        if label_id not in known:
            raise EvalInputError(f"{where}: no event has id {label_id!r}")
        for name in ("expected_intents", "expected_tool_calls"):
            if name in record and not isinstance(record[name], list):
                raise EvalInputError(f"{where}: {name} must be a list")
        if "expected" in record and not isinstance(record["expected"], dict):
            raise EvalInputError(f"{where}: expected must be an object")
        if known[label_id] in labels:
            raise EvalInputError(f"{where}: a second label for event {label_id!r}")
        labels[known[label_id]] = record
    return labels
