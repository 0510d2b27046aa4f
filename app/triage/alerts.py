"""The wire formats the application reads: alerts and approval answers, as JSON lines.

An alert is `{"alert_id", "event_time_ms", "message", "service", "severity_hint"}`;
an answer is `{"answer", "event_time_ms", "intent_id", "service"}`. Both are
encoded canonically (sorted keys, no insignificant whitespace), so the bundled
files regenerate byte for byte and an alert's bytes, which the runtime hashes
into its event id, never depend on who wrote them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "SEVERITY_HINTS",
    "Alert",
    "Answer",
    "InvalidAlertError",
    "canonical_json",
    "read_alerts",
    "read_answers",
]

SEVERITY_HINTS = ("critical", "warning", "info")


class InvalidAlertError(ValueError):
    """An alert or answer line that is not what the format says; names what is wrong."""


def canonical_json(value: dict[str, Any]) -> bytes:
    """Sorted keys, compact separators, UTF-8: equal values always give equal bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _json_object(data: bytes, where: str) -> dict[str, Any]:
    """One line as a JSON object, raising `InvalidAlertError` when it is not one."""
    try:
        raw = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidAlertError(f"{where}: not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise InvalidAlertError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    return raw


def _field(data: dict[str, Any], name: str, kind: type, where: str) -> Any:
    value = data.get(name)
    if type(value) is not kind:
        raise InvalidAlertError(f"{where}: field {name!r} must be {kind.__name__}, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class Alert:
    """One alert for one service (the entity key)."""

    service: str
    alert_id: str
    severity_hint: str
    message: str
    event_time_ms: int

    def to_bytes(self) -> bytes:
        """The canonical JSON bytes the agent receives as its event."""
        return canonical_json(asdict(self))

    @classmethod
    def from_bytes(cls, data: bytes, *, where: str = "alert") -> Alert:
        """Parse one alert, raising `InvalidAlertError` naming the bad field."""
        raw = _json_object(data, where)
        alert = cls(
            service=_field(raw, "service", str, where),
            alert_id=_field(raw, "alert_id", str, where),
            severity_hint=_field(raw, "severity_hint", str, where),
            message=_field(raw, "message", str, where),
            event_time_ms=_field(raw, "event_time_ms", int, where),
        )
        if not alert.service or not alert.alert_id:
            raise InvalidAlertError(f"{where}: 'service' and 'alert_id' must not be empty")
        if alert.severity_hint not in SEVERITY_HINTS:
            raise InvalidAlertError(
                f"{where}: 'severity_hint' must be one of {SEVERITY_HINTS}, "
                f"got {alert.severity_hint!r}"
            )
        return alert


@dataclass(frozen=True, slots=True)
class Answer:
    """A human's answer to one approval intent: `approve` or `deny`, with an optional note."""

    service: str
    intent_id: str
    answer: str
    event_time_ms: int

    def to_bytes(self) -> bytes:
        """The canonical JSON line of this answer."""
        return canonical_json(asdict(self))

    @classmethod
    def from_bytes(cls, data: bytes, *, where: str = "answer") -> Answer:
        """Parse one answer, raising `InvalidAlertError` naming the bad field."""
        raw = _json_object(data, where)
        return cls(
            service=_field(raw, "service", str, where),
            intent_id=_field(raw, "intent_id", str, where),
            answer=_field(raw, "answer", str, where),
            event_time_ms=_field(raw, "event_time_ms", int, where),
        )


def _lines(path: Path) -> Iterator[tuple[str, bytes]]:
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                yield f"{path}:{number}", line.rstrip(b"\r\n")


def read_alerts(path: Path) -> list[Alert]:
    """Every alert of a JSON-lines file, in file order."""
    return [Alert.from_bytes(line, where=where) for where, line in _lines(path)]


def read_answers(path: Path) -> list[Answer]:
    """Every answer of a JSON-lines file, in file order."""
    return [Answer.from_bytes(line, where=where) for where, line in _lines(path)]
