"""The two requests the triage agent makes, and how their answers are read.

Both go through `ctx.call_model`, so both must be pure functions of their
inputs: the runtime keys each call by a hash of the request, and a replayed
activation that built a different request would miss the replay cache and
ask the model again. Parsing is lenient on purpose: a real model may wrap
its JSON in prose, and an unreadable answer falls back to the alert's
severity hint instead of failing the activation.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from app.triage.alerts import Alert
from beam_agents import LlmRequest

__all__ = [
    "CLASSES",
    "CLASSIFY_TASK",
    "HISTORY_EFFECTS",
    "HISTORY_HEADER",
    "HISTORY_TASK",
    "MODEL_ID",
    "SUMMARIZE_TASK",
    "Classification",
    "classify_request",
    "extract_summary",
    "parse_classification",
    "parse_summary",
    "summarize_request",
]

CLASSES = ("P1", "P2", "P3", "noise")
MODEL_ID = "triage"
CLASSIFY_TASK = (
    "You triage on-call alerts. Classify the alert as P1 (page a human now), P2 (open a "
    "ticket), P3 (worth remembering) or noise. Answer with JSON "
    '{"class": "P1|P2|P3|noise", "reason": "<one short sentence>"}.'
)
HISTORY_TASK = (
    " The service's most similar past incidents follow the recent alerts, most similar "
    "first, each with its cosine similarity to this alert and what came of it: weigh "
    "them (a human denying a page for a known flap, an outage whose cause recurs), and add "
    '"history": "escalated" or "downgraded" when they changed your class, else "none".'
)
"""Appended to `CLASSIFY_TASK` when the request carries recalled incidents."""
HISTORY_HEADER = "Similar past incidents of "
HISTORY_EFFECTS = ("none", "escalated", "downgraded")
SUMMARIZE_TASK = (
    "You keep an on-call agent's memory short. Fold these older alerts into the prior "
    "summary: totals per class, the recurring problems, the time span. At most 400 characters."
)
_MAX_SUMMARY_BYTES = 400
_HINT_CLASS = {"critical": "P1", "warning": "P2", "info": "P3"}
_CLASS_RE = re.compile(r'"class"\s*:\s*"(P1|P2|P3|noise)"|\b(P1|P2|P3|noise)\b')
_SUMMARY_RE = re.compile(
    r"^folded (\d+) alerts \(P1 (\d+), P2 (\d+), P3 (\d+), noise (\d+)\); "
    r"top: (.*); span (\d+)\.\.(\d+)$"
)
_TOPIC_RE = re.compile(r"^(.+) x(\d+)$")


def classify_request(
    alert: Alert,
    summary: bytes | None,
    recent: Sequence[bytes],
    incidents: Sequence[bytes] | None = None,
) -> LlmRequest:
    """Ask for the class of `alert`, with the running summary and the recent alerts as context.

    `incidents` are the recalled past incidents (canonical JSON, most similar
    first); None when recall is off, which leaves the request exactly as it
    was without recall, so its replay-cache key does not change either.
    """
    context = "\n".join(item.decode() for item in recent) or "(none)"
    task = CLASSIFY_TASK
    history: list[str] = []
    if incidents is not None:
        task += HISTORY_TASK
        shown = "\n".join(item.decode() for item in incidents) or "(none)"
        history.append(f"{HISTORY_HEADER}{alert.service}, most similar first:\n{shown}")
    return LlmRequest(
        model_id=MODEL_ID,
        messages=[
            task,
            f"Summary of older alerts: {(summary or b'(none)').decode()}",
            f"Recent alerts of {alert.service}, oldest first:\n{context}",
            *history,
            f"Alert: {alert.to_bytes().decode()}",
        ],
        sampling_params={"temperature": 0},
    )


@dataclass(frozen=True, slots=True)
class Classification:
    """What the model decided: the class, why, and whether past incidents changed it."""

    label: str
    reason: str
    history: str = "none"
    """`escalated` or `downgraded` when recalled incidents changed the class, else `none`."""


def parse_classification(response: bytes, alert: Alert) -> Classification:
    """The model's answer; the severity hint when it names no class."""
    text = response.decode("utf-8", "replace")
    reason = ""
    history = "none"
    try:
        data = json.loads(text)
        if isinstance(data, dict):
            reason = str(data.get("reason", ""))[:200]
            if data.get("history") in HISTORY_EFFECTS:
                history = str(data["history"])
    except json.JSONDecodeError:
        pass
    found = _CLASS_RE.search(text)
    if found is None:
        hint = _HINT_CLASS.get(alert.severity_hint, "P3")
        return Classification(hint, "model answer unreadable; used the hint")
    return Classification(found.group(1) or found.group(2), reason, history)


def summarize_request(items: tuple[bytes, ...], prior: bytes | None) -> LlmRequest:
    """The SummarizeCompactor's request: the prior summary, then the folded ring items."""
    return LlmRequest(
        model_id=MODEL_ID,
        messages=[
            SUMMARIZE_TASK,
            f"Prior summary: {(prior or b'').decode()}",
            *(item.decode() for item in items),
        ],
        sampling_params={"temperature": 0},
    )


def extract_summary(response: bytes) -> bytes:
    """The summary a model wrote, bounded so it always shrinks what it replaces."""
    return response.strip()[:_MAX_SUMMARY_BYTES]


def parse_summary(prior: str) -> tuple[Counter[str], Counter[str], int, int]:
    """Totals per class, topic counts and time span of a summary the rules model wrote."""
    totals: Counter[str] = Counter({label: 0 for label in CLASSES})
    topics: Counter[str] = Counter()
    found = _SUMMARY_RE.match(prior.strip())
    if found is None:
        return totals, topics, 0, 0
    for label, value in zip(CLASSES, found.groups()[1:5], strict=True):
        totals[label] = int(value)
    for part in found.group(6).split("; "):
        topic = _TOPIC_RE.match(part)
        if topic is not None:
            topics[topic.group(1)] = int(topic.group(2))
    return totals, topics, int(found.group(7)), int(found.group(8))
