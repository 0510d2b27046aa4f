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

from app.triage.alerts import Alert
from beam_agents import LlmRequest

__all__ = [
    "CLASSES",
    "CLASSIFY_TASK",
    "MODEL_ID",
    "SUMMARIZE_TASK",
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


def classify_request(alert: Alert, summary: bytes | None, recent: Sequence[bytes]) -> LlmRequest:
    """Ask for the class of `alert`, with the running summary and the recent alerts as context."""
    context = "\n".join(item.decode() for item in recent) or "(none)"
    return LlmRequest(
        model_id=MODEL_ID,
        messages=[
            CLASSIFY_TASK,
            f"Summary of older alerts: {(summary or b'(none)').decode()}",
            f"Recent alerts of {alert.service}, oldest first:\n{context}",
            f"Alert: {alert.to_bytes().decode()}",
        ],
        sampling_params={"temperature": 0},
    )


def parse_classification(response: bytes, alert: Alert) -> tuple[str, str]:
    """`(class, reason)` from a model answer; the severity hint when it names no class."""
    text = response.decode("utf-8", "replace")
    reason = ""
    try:
        data = json.loads(text)
        if isinstance(data, dict):
            reason = str(data.get("reason", ""))[:200]
    except json.JSONDecodeError:
        pass
    found = _CLASS_RE.search(text)
    if found is None:
        return _HINT_CLASS.get(alert.severity_hint, "P3"), "model answer unreadable; used the hint"
    return found.group(1) or found.group(2), reason


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
