"""What a run did so far, rebuilt from its records: approvals, entities, dead letters, figures.

The records are the JSON lines a pipeline emits (intents, lifecycle, errors,
outputs), as the triage application writes them: each names its entity in
`service` (or `entity`). An approval is an intent with `awaits_answer`; it
is pending until one of three things happens: an answer for its intent id
reaches the sink, a `suspension_timeout` dead letter names the same alert,
or an output shows the alert decided (an answer that came another way).

A console may follow a run for weeks, so what it holds is bounded: the
last `RECORD_WINDOW` records of each file, every pending approval up to
`PENDING_WINDOW`, the last `SETTLED_WINDOW` approvals answered, timed out
or decided, and the answers of approvals it still holds. The figures count
every record ever read; the charts and lists show the window.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beam_agents.console.follow import JsonLinesFollower

__all__ = [
    "PENDING_WINDOW",
    "RECORD_WINDOW",
    "SETTLED_WINDOW",
    "Approval",
    "RunActivity",
    "entity_of",
]

TIMEOUT_REASON = "suspension_timeout"
_FILES = ("intents", "lifecycle", "errors", "outputs")
RECORD_WINDOW = 10_000
"""Records of each file held (the newest)."""
PENDING_WINDOW = 10_000
"""Pending approvals held; past it the oldest pending one is let go."""
SETTLED_WINDOW = 1_000
"""Answered, timed-out or decided approvals held (the newest)."""
ANSWER_WINDOW = PENDING_WINDOW + SETTLED_WINDOW
"""Answers held (the newest): one per approval held, read before or after it."""


def entity_of(record: dict[str, Any]) -> str:
    """The entity a record belongs to (`service` in the triage application)."""
    value = record.get("service", record.get("entity", ""))
    return value if isinstance(value, str) else str(value)


def _alert_id(payload: object) -> str | None:
    """The `alert_id` inside a JSON payload or prompt, when there is one."""
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except (json.JSONDecodeError, RecursionError):
            return None
    if isinstance(payload, dict) and isinstance(payload.get("alert_id"), str):
        return str(payload["alert_id"])
    return None


@dataclass
class Approval:
    """One approval intent and what became of it."""

    intent: dict[str, Any]
    first_seen_ms: int
    answer: dict[str, Any] | None = None
    timed_out: dict[str, Any] | None = None
    decided: dict[str, Any] | None = None

    @property
    def intent_id(self) -> str:
        return str(self.intent.get("intent_id", ""))

    @property
    def entity(self) -> str:
        return entity_of(self.intent)

    @property
    def prompt(self) -> dict[str, Any]:
        prompt = self.intent.get("prompt")
        return prompt if isinstance(prompt, dict) else {"prompt": prompt}

    @property
    def pending(self) -> bool:
        return self.answer is None and self.timed_out is None and self.decided is None

    @property
    def state(self) -> str:
        if self.answer is not None:
            return "answered"
        if self.timed_out is not None:
            return "timed out"
        return "decided" if self.decided is not None else "pending"


def _window() -> deque[dict[str, Any]]:
    return deque(maxlen=RECORD_WINDOW)


@dataclass
class _Records:
    intents: deque[dict[str, Any]] = field(default_factory=_window)
    lifecycle: deque[dict[str, Any]] = field(default_factory=_window)
    errors: deque[dict[str, Any]] = field(default_factory=_window)
    outputs: deque[dict[str, Any]] = field(default_factory=_window)
    totals: Counter[str] = field(default_factory=Counter)
    """Records read from each file since it last started, the window's and older."""


class RunActivity:
    """A run directory followed as it grows; `refresh()` reads what was appended."""

    def __init__(self, directory: Path, *, approval_timeout_ms: int) -> None:
        self.directory = directory
        self.approval_timeout_ms = approval_timeout_ms
        self._followers = {name: JsonLinesFollower(directory / f"{name}.jsonl") for name in _FILES}
        self._records = _Records()
        self._approvals: dict[str, Approval] = {}
        self._answers: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.RLock()

    def refresh(self) -> None:
        """Take in every complete line appended to the run's files since the last refresh."""
        with self._lock:
            for name, follower in self._followers.items():
                records, restarted = follower.read_new()
                held: deque[dict[str, Any]] = getattr(self._records, name)
                if restarted:
                    held.clear()
                    self._records.totals[name] = 0
                    if name == "intents":
                        self._approvals.clear()
                held.extend(records)
                self._records.totals[name] += len(records)
                if name == "intents":
                    self._take_intents(records)
            self._resolve()

    def record_answer(self, answer: dict[str, Any]) -> None:
        """An answer the sink holds (read at start, or just written)."""
        with self._lock:
            intent_id = str(answer.get("intent_id", ""))
            self._answers.pop(intent_id, None)
            self._answers[intent_id] = answer
            while len(self._answers) > ANSWER_WINDOW:
                self._answers.popitem(last=False)
            self._resolve()

    def _take_intents(self, records: Iterable[dict[str, Any]]) -> None:
        now = int(time.time() * 1000)
        for intent in records:
            if intent.get("awaits_answer") and isinstance(intent.get("intent_id"), str):
                self._approvals.setdefault(intent["intent_id"], Approval(intent, now))

    def _resolve(self) -> None:
        timeouts = {
            (entity_of(e), _alert_id(e.get("payload"))): e
            for e in self._records.errors
            if e.get("reason") == TIMEOUT_REASON
        }
        decided = {(entity_of(o), o.get("alert_id")): o for o in self._records.outputs}
        for approval in self._approvals.values():
            key = (approval.entity, _alert_id(approval.prompt))
            approval.answer = self._answers.get(approval.intent_id)
            approval.timed_out = timeouts.get(key) if key[1] is not None else None
            approval.decided = decided.get(key) if key[1] is not None else None
        self._trim()

    def _trim(self) -> None:
        """Let the oldest approvals go past the windows."""
        pending = [i for i, a in self._approvals.items() if a.pending]
        settled = [i for i, a in self._approvals.items() if not a.pending]
        # Both lists are in arrival order (dicts keep insertion order): oldest first.
        for intent_id in (
            pending[: max(len(pending) - PENDING_WINDOW, 0)]
            + settled[: max(len(settled) - SETTLED_WINDOW, 0)]
        ):
            del self._approvals[intent_id]

    def approvals(self) -> list[Approval]:
        """Every approval seen, newest first."""
        with self._lock:
            return sorted(self._approvals.values(), key=lambda a: -a.first_seen_ms)

    def approval(self, intent_id: str) -> Approval | None:
        with self._lock:
            return self._approvals.get(intent_id)

    def lifecycle_of(self, entity: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self._records.lifecycle if entity_of(r) == entity]

    def errors(self) -> list[dict[str, Any]]:
        """Every dead letter, newest first."""
        with self._lock:
            return list(reversed(self._records.errors))

    def entities(self) -> list[tuple[str, int]]:
        """Each entity with its number of lifecycle records, busiest first."""
        with self._lock:
            seen = Counter(entity_of(r) for r in self._records.lifecycle)
            seen.update({entity_of(r): 0 for r in self._records.intents})
        return sorted(seen.items(), key=lambda item: (-item[1], item[0]))

    def figures(self) -> dict[str, Any]:
        """The run's figures, counted from its records (and summary.json when it exists)."""
        with self._lock:
            records = self._records
            approvals = list(self._approvals.values())
            figures: dict[str, Any] = {
                "alerts triaged": records.totals["outputs"],
                "entities": len({entity_of(r) for r in [*records.lifecycle, *records.outputs]}),
                "intents": records.totals["intents"],
                "dead letters": records.totals["errors"],
                "approvals pending": sum(a.pending for a in approvals),
                "approvals answered here": sum(a.answer is not None for a in approvals),
                "approvals timed out": sum(a.timed_out is not None for a in approvals),
            }
            charts = {
                "outcomes": Counter(str(o.get("class", "?")) for o in records.outputs),
                "decisions": Counter(str(o.get("decision", "?")) for o in records.outputs),
                "intents by tool": Counter(str(i.get("tool", "?")) for i in records.intents),
                "dead letters by reason": Counter(str(e.get("reason")) for e in records.errors),
                "lifecycle by kind": Counter(str(r.get("kind")) for r in records.lifecycle),
            }
        return {"figures": figures, "charts": charts, "summary": self._summary()}

    def _summary(self) -> dict[str, Any]:
        try:
            summary = json.loads((self.directory / "summary.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            return {}
        if not isinstance(summary, dict):
            return {}
        return {k: v for k, v in summary.items() if isinstance(v, int | float | str)}
