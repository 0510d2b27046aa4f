"""The answers sink: approvals decided in the console, as the JSON lines a pipeline reads.

One line per answer, `{"answer", "approver", "event_time_ms", "intent_id",
"reason", "service"}`, appended whole (one `write` of one line on a file
opened for appending), so a pipeline following the file never reads half
of one. The agent reads `answer`: `approve` or `deny`, followed by `: reason`
when one was given. An intent is answered at most once: `submit` refuses
an unknown intent id, a second answer, and one whose suspension has ended
(timed out, wiped) or whose deadline is too close for the pipeline to read
the answer in time, saying which.

With a signing key each line also carries `expires_at_ms` and `signature`,
an HMAC-SHA256 of the intent id, the entity key, `answer`, `approver` and
`expires_at_ms` (`beam_agents.answer_signing`): the whole line is then the
answer bytes a pipeline configured with the same key verifies. The expiry
is the run's clock now (the pipeline's processing time, as the run
publishes it; else the wall clock, which a deployed pipeline's workers
keep) plus the approval's timeout: the approval cannot outlive that, since
it was committed before the console saw it, and a copy of the line is
useless afterwards, on this deployment or a later one.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from beam_agents.answer_signing import answer_signature
from beam_agents.console.activity import ANSWER_WINDOW, Approval, RunActivity
from beam_agents.console.follow import JsonLinesFollower
from beam_agents.errors import BeamAgentsError

__all__ = ["DECISIONS", "AnswerRefusedError", "AnswersFile"]

DECISIONS = ("approve", "deny")
MAX_REASON_CHARS = 200
MAX_APPROVER_CHARS = 80


class AnswerRefusedError(BeamAgentsError, ValueError):
    """An answer the console will not write; the message says why (shown to the person)."""


def _clean(text: str, name: str, limit: int, *, required: bool) -> str:
    cleaned = " ".join(text.split())
    if required and not cleaned:
        raise AnswerRefusedError(f"{name} is required")
    if len(cleaned) > limit:
        raise AnswerRefusedError(f"{name} is longer than {limit} characters")
    return cleaned


class AnswersFile:
    """A JSON-lines answers file: read at start, appended to for each accepted answer."""

    def __init__(self, path: Path, activity: RunActivity, signing_key: bytes | None = None) -> None:
        self.path = path
        self._activity = activity
        self._signing_key = signing_key
        self._lock = threading.Lock()
        self._follower = JsonLinesFollower(path)
        self._answered: OrderedDict[str, None] = OrderedDict()
        """Intent ids answered, newest last, as many as the activity holds approvals."""
        self.refresh()

    def refresh(self) -> None:
        """Take in answers others appended (another console, a person with an editor)."""
        with self._lock:
            records, _ = self._follower.read_new()
            for record in records:
                self._remember(str(record.get("intent_id", "")))
                self._activity.record_answer(record)

    def submit(self, intent_id: str, decision: str, reason: str, approver: str) -> dict[str, Any]:
        """Validate and append one answer; returns the line written."""
        if decision not in DECISIONS:
            raise AnswerRefusedError(f"decision must be one of {DECISIONS}")
        reason = _clean(reason, "reason", MAX_REASON_CHARS, required=False)
        approver = _clean(approver, "approver", MAX_APPROVER_CHARS, required=True)
        self.refresh()
        with self._lock:
            approval = self._activity.approval(intent_id)
            if approval is None:
                raise AnswerRefusedError("no approval with this intent id")
            if intent_id in self._answered or approval.answer is not None:
                raise AnswerRefusedError("this approval was already answered")
            if approval.refusal:
                raise AnswerRefusedError(approval.refusal)
            text = f"{decision}: {reason}" if reason else decision
            answer: dict[str, Any] = {
                "answer": text,
                "approver": approver,
                "event_time_ms": int(time.time() * 1000),
                "intent_id": intent_id,
                "reason": reason,
                "service": approval.entity,
            }
            if self._signing_key is not None:
                answer["expires_at_ms"] = self._expires_at_ms(approval)
                answer["signature"] = answer_signature(
                    self._signing_key,
                    intent_id=intent_id,
                    entity_key=approval.entity.encode("utf-8"),
                    answer=text,
                    approver=approver,
                    expires_at_ms=answer["expires_at_ms"],
                )
            line = json.dumps(answer, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            self.deliver(line, answer)
            self._remember(intent_id)
        self._activity.record_answer(answer)
        return answer

    def _expires_at_ms(self, approval: Approval) -> int:
        """When a signed answer stops counting, on the pipeline's processing-time clock."""
        wall_ms = int(time.time() * 1000)
        clock = self._activity.clock
        now_ms = clock.now_ms(wall_ms) if clock is not None else wall_ms
        args = approval.intent.get("args")
        timeout = args.get("timeout_ms") if isinstance(args, dict) else None
        if not isinstance(timeout, int) or isinstance(timeout, bool) or timeout <= 0:
            timeout = self._activity.approval_timeout_ms
        return now_ms + timeout

    def _remember(self, intent_id: str) -> None:
        self._answered[intent_id] = None
        while len(self._answered) > ANSWER_WINDOW:
            self._answered.popitem(last=False)

    def deliver(self, line: str, answer: dict[str, Any]) -> None:
        """Hand one answer to the pipeline: here, append it to the file it follows."""
        self._append(line)

    def _append(self, line: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
