"""The labelled alert set `beam-agents eval` scores triage candidates against.

`python -m app.triage labels --hours N [--services K] --out DIR` writes
`events.jsonl` (the alerts of the first N hours of the bundled data, for the
first K services, and the humans' answers to their approvals) and
`labels.jsonl` (what each alert's class truly is), in the evaluation's
formats (docs/eval.md). Like the data, both are a pure function of the
generator: the same arguments write the same bytes.

The truth comes from the generator's incident model, not from a model's
answer. Every alert is drawn from a class's templates, and the generator
checks as it draws that the keyword rules read the message as that class,
so the message's class is the class it was drawn as. The alerts whose
right answer depends on history are the generator's labelled recurrences
(`app.triage.data.generate_labels`): a known flap's repeat, whose message
reads P1 but which the on-call has called a flap (truly P3), and a
recurring outage cause, whose message reads P2 but which took the service
down last time (truly P1). Only a candidate that remembers gets those right.

A P1 nobody answers within the window waits for its deadline and is
escalated by the pipeline, outside the agent: it has no output to score,
so it is left unlabelled (and counts as a dead letter for every candidate
alike, which `dead_letters` in the summary shows).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.triage.alerts import Alert, Answer, canonical_json
from app.triage.data import (
    SERVICES,
    START_MS,
    Label,
    activation_seqs,
    generate,
    generate_labels,
)
from app.triage.model import classify
from beam_agents import intent_id

__all__ = ["CLASS_FIELD", "LabelledSet", "labelled_set", "write_labelled"]

CLASS_FIELD = "class"
"""The output field the labels give (and the confusion matrix is drawn over)."""
_HOUR_MS = 3_600_000


@dataclass(frozen=True, slots=True)
class LabelledSet:
    """Events and answers as eval lines, and one label per scorable alert, in event order."""

    events: list[dict[str, Any]]
    labels: list[dict[str, Any]]

    @property
    def alerts(self) -> int:
        """How many alerts the set holds (answers not counted)."""
        return sum(1 for e in self.events if "answer_to" not in e)


def _service_index(key: str) -> int:
    return int(key.removeprefix("svc-"))


def labelled_set(hours: float, services: int = SERVICES) -> LabelledSet:
    """The first `hours` hours of the bundled alerts of the first `services` services."""
    if not 0 < hours <= 12:
        raise ValueError(f"hours must be in (0, 12], got {hours}")
    if not 0 < services <= SERVICES:
        raise ValueError(f"services must be in 1..{SERVICES}, got {services}")
    end_ms = START_MS + int(hours * _HOUR_MS)

    def inside(item: Alert | Answer) -> bool:
        return item.event_time_ms < end_ms and _service_index(item.service) < services

    alerts, answers = generate()
    seqs = activation_seqs()  # the rechecks that run before an alert count too
    kept = [a for a in alerts if inside(a)]
    by_intent = {intent_id(a.service.encode(), seqs[a.alert_id], 0): a for a in kept}
    answered = {a.intent_id: a for a in answers if inside(a) and a.intent_id in by_intent}
    recurrences = {label.alert_id: label for label in generate_labels()}

    lines = [_alert_line(alert) for alert in kept]
    labels = [
        label
        for alert in kept
        if (label := _label(alert, seqs[alert.alert_id], recurrences.get(alert.alert_id), answered))
        is not None
    ]
    for intent, answer in answered.items():
        lines.append(_answer_line(intent, answer, by_intent[intent].alert_id))
    lines.sort(key=lambda line: (line[0], line[1]))
    return LabelledSet(events=[line[2] for line in lines], labels=labels)


_Line = tuple[int, str, dict[str, Any]]
"""An event line with what it is ordered by: `(time_ms, key, line)`."""


def _alert_line(alert: Alert) -> _Line:
    """An alert as a line of the events file."""
    line = {
        "id": alert.alert_id,
        "key": alert.service,
        "payload": alert.to_bytes().decode(),
        "time_ms": alert.event_time_ms,
    }
    return alert.event_time_ms, alert.service, line


def _answer_line(intent: str, answer: Answer, alert_id: str) -> _Line:
    """An approval's answer as a line of the events file, naming the alert it answers."""
    line = {
        "key": answer.service,
        "payload": answer.answer,
        "time_ms": answer.event_time_ms,
        "intent_id": intent,
        "answer_to": alert_id,
    }
    return answer.event_time_ms, answer.service, line


def _label(
    alert: Alert, seq: int, recurrence: Label | None, answered: Mapping[str, Answer]
) -> dict[str, Any] | None:
    """The class an alert (activation `seq`) should get, or None for a P1 nobody answers."""
    message_class, _ = classify(alert.message)
    truth = recurrence.expected_class if recurrence else message_class
    asks = message_class == "P1" or truth == "P1"
    if truth == "P1" and intent_id(alert.service.encode(), seq, 0) not in answered:
        return None  # waits for a human who never answers: escalated, nothing to score
    label: dict[str, Any] = {
        "id": alert.alert_id,
        "expected": {CLASS_FIELD: truth},
        "class_field": CLASS_FIELD,
    }
    if recurrence is not None:
        label["scenario"] = recurrence.scenario
        label["message_class"] = message_class
    elif asks:
        label["scenario"] = "approval"
    return label


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    return b"".join(canonical_json(record) + b"\n" for record in records)


def write_labelled(out: Path, hours: float, services: int = SERVICES) -> tuple[Path, Path]:
    """Write `events.jsonl` and `labels.jsonl` into `out`; returns their paths."""
    found = labelled_set(hours, services)
    out.mkdir(parents=True, exist_ok=True)
    events, labels = out / "events.jsonl", out / "labels.jsonl"
    events.write_bytes(_jsonl(found.events))
    labels.write_bytes(_jsonl(found.labels))
    return events, labels
