"""The demo's model: a rules-based provider that classifies alerts by keyword and summarizes.

The demo must run offline and give the same answers on every machine, so
its "LLM" is a small rules engine speaking the same requests a real model
gets (`app.triage.prompts`): a classification request is answered with
`{"class": ..., "reason": ...}` from keyword rules over the alert's message
only (never the context around it); a summarization request is answered
with a bounded digest of the folded alerts and the prior summary. Swap it
for a real model with `--model openai:...` or `--model gemini:...`; the
agent does not change.

`rules_llm` is a module-level instance, so the provider spec
`py:app.triage.model:rules_llm` names it too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from app.triage.prompts import CLASSES, CLASSIFY_TASK, SUMMARIZE_TASK, parse_summary
from beam_agents import LlmRequest, LlmResponse

__all__ = ["KEYWORD_RULES", "RulesTriageModel", "classify", "rules_llm"]

KEYWORD_RULES: tuple[tuple[str, str], ...] = (
    ("unreachable", "P1"),
    ("outage", "P1"),
    ("error rate", "P1"),
    ("data loss", "P1"),
    ("certificate expired", "P1"),
    ("latency", "P2"),
    ("disk usage", "P2"),
    ("replication lag", "P2"),
    ("backlog", "P2"),
    ("crash-looping", "P2"),
    ("cpu at", "P3"),
    ("memory at", "P3"),
    ("deprecated", "P3"),
    ("slow query", "P3"),
    ("cache hit ratio", "P3"),
)
"""Message keyword → class, first match wins; no match is `noise`."""

_MODEL_ID = "triage-rules-1"
_TOP_TOPICS = 3
_TOPIC = re.compile(r"[a-z][a-z-]+(?: [a-z][a-z-]+)?")


def classify(message: str) -> tuple[str, str]:
    """The class of an alert message and why: the first keyword rule that matches."""
    text = message.lower()
    for keyword, label in KEYWORD_RULES:
        if keyword in text:
            return label, f"matched {keyword!r}"
    return "noise", "no rule matched"


def _topic(message: str) -> str:
    """The first words of a message, its recurring part ("replication lag", "heartbeat ok")."""
    found = _TOPIC.search(message.lower().split(":", 1)[-1])
    return found.group(0) if found else "other"


def _summarize(items: list[str], prior: str) -> str:
    """A bounded digest: totals per class, the most frequent topics, and the time span."""
    totals, topics, first, last = parse_summary(prior)
    for line in items:
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        totals[item.get("class", "noise")] += 1
        topics[_topic(str(item.get("message", "")))] += 1
        t = int(item.get("t", 0))
        first = t if first == 0 else min(first, t)
        last = max(last, t)
    counts = ", ".join(f"{label} {totals[label]}" for label in CLASSES)
    top = "; ".join(f"{name} x{n}" for name, n in topics.most_common(_TOP_TOPICS))
    return f"folded {sum(totals.values())} alerts ({counts}); top: {top}; span {first}..{last}"


@dataclass(frozen=True)
class RulesTriageModel:
    """A deterministic `ModelProvider` for the triage prompts; its own zero-argument factory."""

    model_id: str = _MODEL_ID

    def __call__(self) -> RulesTriageModel:
        return self

    async def aclose(self) -> None:
        """Rules hold nothing to release."""

    async def complete(self, request: LlmRequest) -> LlmResponse:
        """Answer a classification or a summarization request."""
        messages = [str(m) for m in request.messages]
        task = messages[0] if messages else ""
        if task.startswith(SUMMARIZE_TASK):
            prior = messages[1].removeprefix("Prior summary: ") if len(messages) > 1 else ""
            text = _summarize(messages[2:], prior)
        elif task.startswith(CLASSIFY_TASK):
            alert = json.loads(messages[-1].removeprefix("Alert: "))
            label, reason = classify(str(alert.get("message", "")))
            text = json.dumps({"class": label, "reason": reason}, sort_keys=True)
        else:
            text = json.dumps({"class": "noise", "reason": "unknown task"}, sort_keys=True)
        body = text.encode()
        prompt_chars = sum(len(m) for m in messages)
        return LlmResponse(
            response=body,
            model_id=self.model_id,
            input_tokens=prompt_chars // 4,
            output_tokens=len(body) // 4,
        )


rules_llm = RulesTriageModel()
"""The instance `--model rules` (and `py:app.triage.model:rules_llm`) selects."""
