"""What a run did so far, rebuilt from its records: approvals, entities, follow-ups, figures.

The records are the JSON lines a pipeline emits (intents, lifecycle, errors,
outputs), as the triage application writes them: each names its entity in
`service` (or `entity`). An approval is an intent with `awaits_answer`; it
is pending until its suspension ends: an answer for its intent id reaches
the sink, a `suspension_timeout` or `ttl_wiped_suspension` dead letter names
the same alert, or an output shows the alert decided (an answer that came
another way). Its outcome (paged, denied, timed out, escalated, wiped, or an
answer the pipeline dead-lettered as `orphaned_answer`) comes from the same
records. An entity's pending follow-ups come from its wake records
(`beam_agents.console.follow_ups`).

When the run publishes its clock (`clock.json`, a live run), an approval's
deadline is counted in the run's time, as the pipeline counts it, and it
stops being answerable shortly before: an answer the pipeline would read
after the deadline would only become an `orphaned_answer`.

A console may follow a run for weeks, so what it holds is bounded: the
last `RECORD_WINDOW` records of each file, every pending approval up to
`PENDING_WINDOW`, the last `SETTLED_WINDOW` approvals answered, timed out
or decided, and the answers of approvals it still holds. The figures count
every record ever read; the charts and lists show the window.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beam_agents.console.clock import RunClock, read_clock
from beam_agents.console.follow import JsonLinesFollower
from beam_agents.console.follow_ups import FollowUps, wake_history
from beam_agents.runtime.pending_wakes import PendingFollowUp, WakeRecord

__all__ = [
    "PENDING_WINDOW",
    "RECORD_WINDOW",
    "RESULTS_SHOWN",
    "SETTLED_WINDOW",
    "Approval",
    "RunActivity",
    "entity_of",
    "run_progress",
]

TIMEOUT_REASON = "suspension_timeout"
WIPED_REASON = "ttl_wiped_suspension"
ORPHANED_REASON = "orphaned_answer"
ANSWER_MARGIN_S = 2.0
"""An approval stops being answerable this long (the reader's seconds) before its deadline,
plus the run's lag: the pipeline must read the answer before the deadline fires."""
_INTENT_IN_DETAIL = re.compile(r"intent ([0-9A-Za-z-]+)")
_FILES = ("intents", "lifecycle", "errors", "outputs")
RECORD_WINDOW = 10_000
"""Records of each file held (the newest)."""
PENDING_WINDOW = 10_000
"""Pending approvals held; past it the oldest pending one is let go."""
SETTLED_WINDOW = 1_000
"""Answered, timed-out or decided approvals held (the newest)."""
ANSWER_WINDOW = PENDING_WINDOW + SETTLED_WINDOW
"""Answers held (the newest): one per approval held, read before or after it."""
RESULTS_SHOWN = 50
"""An entity's results on its page (the newest)."""


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
    wiped: dict[str, Any] | None = None
    orphaned: dict[str, Any] | None = None
    """The pipeline's `orphaned_answer` dead letter for this intent's answer."""
    escalated: dict[str, Any] | None = None
    remaining_s: float | None = None
    """Seconds (the reader's) until the deadline; None when the console cannot know it."""
    run_remaining_ms: int | None = None
    """The same in the run's time, when the run publishes its clock."""
    margin_s: float = ANSWER_MARGIN_S

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
    def alert_id(self) -> str:
        return str(self.prompt.get("alert_id", ""))

    @property
    def pending(self) -> bool:
        """Its suspension has not ended, as far as the records say."""
        return self.state == "pending"

    @property
    def answerable(self) -> bool:
        """Pending, and an answer written now reaches the pipeline before the deadline."""
        return self.pending and (self.remaining_s is None or self.remaining_s > self.margin_s)

    @property
    def state(self) -> str:
        """`pending`, `answered`, `timed out`, `wiped` or `decided`: how its suspension ended."""
        if self.answer is not None:
            return "answered"
        if self.timed_out is not None:
            return "timed out"
        if self.wiped is not None:
            return "wiped"
        return "decided" if self.decided is not None else "pending"

    @property
    def outcome(self) -> str:
        """What became of it, in the words of the answered list."""
        if self.orphaned is not None:
            return "answer refused by the pipeline (orphaned_answer)"
        decision = str(self.decided.get("decision", "")) if self.decided is not None else ""
        if decision in ("paged", "denied"):
            return decision
        if self.answer is not None:
            return "answered, awaiting the pipeline"
        if self.timed_out is not None:
            return "timed out, escalated" if self.escalated is not None else "timed out"
        if self.wiped is not None:
            return "wiped (TTL)"
        if decision:
            return decision
        if not self.answerable:
            return "deadline passed, timing out"
        return "pending"

    @property
    def refusal(self) -> str:
        """Why an answer cannot be taken now ('' when it can)."""
        if self.wiped is not None:
            return (
                "this approval is no longer pending (wiped): TTL garbage collection wiped "
                "the service's memory while it waited, so the pipeline would dead-letter "
                "an answer as orphaned_answer"
            )
        if self.timed_out is not None:
            return (
                "this approval is no longer pending (timed out): its deadline passed "
                "and the pipeline escalated it"
            )
        if not self.pending:
            return f"this approval is no longer pending ({self.state})"
        if not self.answerable:
            return (
                "its deadline has passed in the run's clock: the pipeline is timing it "
                "out, and an answer now would arrive too late (orphaned_answer)"
            )
        return ""


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
        self._follow_ups = FollowUps()
        self._lock = threading.RLock()
        self.clock: RunClock | None = None
        """The run's clock when it publishes one (a live run)."""

    def refresh(self) -> None:
        """Take in every complete line appended to the run's files since the last refresh."""
        with self._lock:
            for name, follower in self._followers.items():
                records, restarted = follower.read_new()
                held: deque[dict[str, Any]] = getattr(self._records, name)
                if restarted:
                    self._restart(name)
                held.extend(records)
                self._records.totals[name] += len(records)
                if name == "intents":
                    self._take_intents(records)
                elif name == "lifecycle":
                    for record in records:
                        self._follow_ups.take(entity_of(record), record)
            self.clock = read_clock(self.directory)
            self._resolve()

    def _restart(self, name: str) -> None:
        """A file was rewritten from empty (a new run): forget what it said."""
        getattr(self._records, name).clear()
        self._records.totals[name] = 0
        if name == "intents":
            self._approvals.clear()
        elif name == "lifecycle":
            self._follow_ups.clear()

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

    def _by_alert(self, reason: str) -> dict[tuple[str, str | None], dict[str, Any]]:
        return {
            (entity_of(e), _alert_id(e.get("payload"))): e
            for e in self._records.errors
            if e.get("reason") == reason
        }

    def _resolve(self) -> None:
        timeouts = self._by_alert(TIMEOUT_REASON)
        wipes = self._by_alert(WIPED_REASON)
        orphaned: dict[str, dict[str, Any]] = {}
        for error in self._records.errors:
            found = _INTENT_IN_DETAIL.search(str(error.get("detail", "")))
            if error.get("reason") == ORPHANED_REASON and found:
                orphaned[found.group(1)] = error
        escalations = {
            (entity_of(i), str(i["args"].get("alert_id"))): i
            for i in self._records.intents
            if i.get("tool") == "escalate" and isinstance(i.get("args"), dict)
        }
        decided: dict[tuple[str, Any], dict[str, Any]] = {}
        for output in self._records.outputs:
            # The alert's first decision is the approval's; a later one for the same
            # alert is a follow-up's (an escalation nobody settled), shown on its entity.
            decided.setdefault((entity_of(output), output.get("alert_id")), output)
        for approval in self._approvals.values():
            key = (approval.entity, _alert_id(approval.prompt))
            known = key[1] is not None
            approval.answer = self._answers.get(approval.intent_id)
            approval.timed_out = timeouts.get(key) if known else None
            approval.wiped = wipes.get(key) if known else None
            approval.decided = decided.get(key) if known else None
            approval.orphaned = orphaned.get(approval.intent_id)
            approval.escalated = escalations.get((key[0], str(key[1]))) if known else None
            self._count_down(approval)
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

    def _count_down(self, approval: Approval) -> None:
        """Time left before the deadline: in the run's clock when it publishes one."""
        now_ms = int(time.time() * 1000)
        clock = self.clock
        timeout = (
            approval.intent.get("args", {}).get("timeout_ms")
            if isinstance(approval.intent.get("args"), dict)
            else None
        )
        at = approval.intent.get("event_time_ms")
        if clock is not None and isinstance(at, int):
            run_timeout = timeout if isinstance(timeout, int) else clock.approval_timeout_ms
            approval.run_remaining_ms = at + run_timeout - clock.now_ms(now_ms)
            approval.remaining_s = clock.wall_s(approval.run_remaining_ms)
            approval.margin_s = ANSWER_MARGIN_S + clock.lag_s
            return
        approval.run_remaining_ms = None
        approval.remaining_s = (approval.first_seen_ms + self.approval_timeout_ms - now_ms) / 1000
        approval.margin_s = float("-inf")  # no clock: the pipeline's deadline is not ours to tell

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

    def pending_wakes_of(self, entity: str) -> list[PendingFollowUp]:
        """The entity's follow-ups its records say are pending, soonest due first."""
        with self._lock:
            return self._follow_ups.pending_of(entity)

    def wake_history_of(self, entity: str) -> list[WakeRecord]:
        """The entity's follow-ups scheduled, fired and cancelled, in record order (the window)."""
        return wake_history(self.lifecycle_of(entity))

    def results_of(self, entity: str) -> list[dict[str, Any]]:
        """The entity's results (its outputs), newest first, at most `RESULTS_SHOWN`."""
        with self._lock:
            found = [r for r in reversed(self._records.outputs) if entity_of(r) == entity]
        return found[:RESULTS_SHOWN]

    def errors(self) -> list[dict[str, Any]]:
        """Every dead letter, newest first."""
        with self._lock:
            return list(reversed(self._records.errors))

    def entities(self) -> list[tuple[str, int]]:
        """Each entity with its number of lifecycle records, busiest first.

        An entity with intents or results but no lifecycle records (a
        pipeline that writes none) is listed too, so its page is reachable.
        """
        with self._lock:
            seen = Counter(entity_of(r) for r in self._records.lifecycle)
            seen.update({entity_of(r): 0 for r in self._records.intents})
            seen.update({entity_of(r): 0 for r in self._records.outputs})
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
                "approvals wiped": sum(a.wiped is not None for a in approvals),
                **self._follow_ups.figures(),
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


def run_progress(clock: RunClock | None) -> dict[str, Any] | None:
    """How far a run that publishes its clock has got: alerts fed, run time, lag."""
    if clock is None:
        return None
    now = clock.now_ms(int(time.time() * 1000))
    span = max(clock.last_ms - clock.first_ms, 1)
    done = min(max(now - clock.first_ms, 0), span)
    return {
        "state": clock.state,
        "run_ms": now,
        "speedup": clock.speedup,
        "fed": clock.alerts_sent,
        "total": clock.alerts_total,
        "percent": round(100 * clock.alerts_sent / max(clock.alerts_total, 1)),
        "hours_done": done / 3_600_000,
        "hours_total": span / 3_600_000,
        "lag_run_min": clock.lag_ms / 60_000,
        "lag_s": clock.lag_s,
        "behind": clock.lag_s >= 5,
        "window_s": clock.wall_s(clock.approval_timeout_ms),
    }
