"""The two requests the triage agent makes, and the schema its classification answers in.

Both go through `ctx.call_model`, so both must be pure functions of their
inputs: the runtime keys each call by a hash of the request, and a replayed
activation that built a different request would miss the replay cache and
ask the model again. The classification request carries its answer's
schema (`Classification`): the runtime holds the answer to it, re-asks once
with what was wrong, and dead-letters the alert `output_invalid` rather
than guess a class from an answer that does not fit.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Final, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field

from app.triage.alerts import Alert
from beam_agents import LlmRequest

__all__ = [
    "ALERT_HEADER",
    "CLASSES",
    "CLASSIFY_TASK",
    "HISTORY_EFFECTS",
    "HISTORY_HEADER",
    "HISTORY_TASK",
    "MAX_REASON_CHARS",
    "MODEL_ID",
    "SUMMARIZE_TASK",
    "Classification",
    "History",
    "Priority",
    "classify_request",
    "extract_summary",
    "parse_summary",
    "summarize_request",
]

Priority: TypeAlias = Literal["P1", "P2", "P3", "noise"]
"""An alert's class: P1 pages a human, P2 opens a ticket, P3 and noise are remembered."""
History: TypeAlias = Literal["none", "escalated", "downgraded"]
"""Whether recalled past incidents raised the class, lowered it, or left it."""
CLASSES: Final[tuple[Priority, ...]] = get_args(Priority)
HISTORY_EFFECTS: Final[tuple[History, ...]] = get_args(History)
MAX_REASON_CHARS: Final = 200
"""A decision keeps this much of the model's reason: a long one is cut, not refused."""
MODEL_ID = "triage"
CLASSIFY_TASK = (
    "You triage on-call alerts. Give the alert's priority: P1 (page a human now), P2 (open a "
    "ticket), P3 (worth remembering) or noise, and the reason in one short sentence. The "
    "history is none unless past incidents changed the priority."
)
HISTORY_TASK = (
    " The service's most similar past incidents follow the recent alerts, most similar "
    "first, each with its cosine similarity to this alert and what came of it: weigh "
    "them (a human denying a page for a known flap, an outage whose cause recurs), and set "
    "the history to escalated or downgraded when they changed your priority."
)
"""Appended to `CLASSIFY_TASK` when the request carries recalled incidents."""
HISTORY_HEADER = "Similar past incidents of "
ALERT_HEADER = "Alert: "
"""What the message holding the alert itself starts with."""
SUMMARIZE_TASK = (
    "You keep an on-call agent's memory short. Fold these older alerts into the prior "
    "summary: totals per class, the recurring problems, the time span. At most 400 characters."
)
_MAX_SUMMARY_BYTES = 400
_SUMMARY_RE = re.compile(
    r"^folded (\d+) alerts \(P1 (\d+), P2 (\d+), P3 (\d+), noise (\d+)\); "
    r"top: (.*); span (\d+)\.\.(\d+)$"
)
_TOPIC_RE = re.compile(r"^(.+) x(\d+)$")


class Classification(BaseModel):
    """An alert's triage: its priority, why, and whether past incidents changed it."""

    # The docstring and the field descriptions go to the model inside the schema, so they
    # speak to it. Every field is required and no other is allowed: the strict form a
    # provider's native structured output (OpenAI's strict mode) accepts.
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    priority: Priority = Field(description="P1, P2, P3 or noise")
    reason: str = Field(description="why, in one short sentence")
    history: History = Field(
        description="escalated or downgraded when past incidents changed the priority, else none"
    )


def classify_request(
    alert: Alert,
    summary: bytes | None,
    recent: Sequence[bytes],
    incidents: Sequence[bytes] | None = None,
) -> LlmRequest:
    """Ask for the class of `alert`, with the running summary and the recent alerts as context.

    The answer is a `Classification`. `incidents` are the recalled past
    incidents (canonical JSON, most similar first); None when recall is
    off, which leaves the request exactly as it is without recall, so its
    replay-cache key does not change either.
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
            f"{ALERT_HEADER}{alert.to_bytes().decode()}",
        ],
        sampling_params={"temperature": 0},
        output_type=Classification,
    )


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
