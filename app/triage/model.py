"""The demo's model: a rules-based provider that classifies alerts by keyword and summarizes.

The demo must run offline and give the same answers on every machine, so
its "LLM" is a small rules engine speaking the same requests a real model
gets (`app.triage.prompts`): a classification request is answered with
JSON of exactly the schema it carries, `{"priority": ..., "reason": ...,
"history": ...}` for the agent's `Classification`, from keyword rules over
the alert's message, then the recalled past incidents the request carries
(`classify_with_history`); a summarization request is answered with a
bounded digest of the folded alerts and the prior summary. Swap it for a
real model with `--model openai:...` or `--model gemini:...`; the agent does
not change.

History matters to the rules in two cases, both read from what humans
answered before, so only incidents a person judged change a decision:

- a known flap: an alert of the same problem (its topic, "error rate") was
  paged for before and the on-call denied the page calling it a flap; the
  repeat is downgraded to P3, remembered without asking anyone;
- a recurring outage cause: a paged outage's approval named this alert's
  problem as its cause ("root cause was replication lag"); the recurrence is
  escalated to P1, asking for a page before the outage repeats.

Only incidents at least `HISTORY_MIN_SCORE` similar count: with the demo's
embedder the same problem on the same service scores well above it, and a
different problem well below.

`rules_llm` is a module-level instance, so the provider spec
`py:app.triage.model:rules_llm` names it too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from app.triage.prompts import (
    ALERT_HEADER,
    CLASSES,
    CLASSIFY_TASK,
    HISTORY_HEADER,
    SUMMARIZE_TASK,
    parse_summary,
)
from beam_agents import LlmRequest, LlmResponse
from beam_agents.model import output_schema

__all__ = [
    "CAUSE_MARK",
    "FLAP_MARK",
    "HISTORY_MIN_SCORE",
    "KEYWORD_RULES",
    "RulesTriageModel",
    "classify",
    "classify_with_history",
    "rules_llm",
    "topic",
]

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


def topic(message: str) -> str:
    """The first words of a message, its recurring part ("replication lag", "heartbeat ok")."""
    found = _TOPIC.search(message.lower().split(":", 1)[-1])
    return found.group(0) if found else "other"


FLAP_MARK = "flap"
"""What a denial's note says when the on-call judged the alert a known flap."""
CAUSE_MARK = "cause"
"""What an approval's note says before naming the problem that caused the outage."""
HISTORY_MIN_SCORE = 0.4
"""Cosine similarity from which a recalled incident counts as the same problem."""
_RAISES = {"P2": "P1", "P3": "P1"}
_LOWERS = {"P1": "P3", "P2": "P3"}


def classify_with_history(message: str, incidents: list[dict[str, object]]) -> tuple[str, str, str]:
    """`(class, reason, history)`: the keyword class, changed where past incidents say so.

    `incidents` are the recalled records as the request lists them, most
    similar first; the first that applies decides.
    """
    label, reason = classify(message)
    problem = topic(message)
    for incident in incidents:
        score = incident.get("score")
        if not isinstance(score, int | float) or score < HISTORY_MIN_SCORE:
            continue
        if incident.get("kind") != "incident":
            continue
        note = str(incident.get("note", "")).lower()
        key = incident.get("key")
        same = topic(str(incident.get("message", ""))) == problem
        if label in _LOWERS and incident.get("decision") == "denied" and same and FLAP_MARK in note:
            why = f"known flap: {key} was denied as one ({score:.2f} similar)"
            return _LOWERS[label], why, "downgraded"
        if label in _RAISES and incident.get("decision") == "paged" and _caused(note, problem):
            why = f"{problem} caused the outage of {key} ({score:.2f} similar)"
            return _RAISES[label], why, "escalated"
    return label, reason, "none"


def _caused(note: str, problem: str) -> bool:
    """Whether an approval's note names `problem` as the outage's cause."""
    _, mark, cause = note.partition(CAUSE_MARK)
    return bool(mark) and problem in cause


def _incidents(messages: list[str]) -> list[dict[str, object]]:
    """The recalled incidents a classification request lists (none without recall)."""
    for message in messages:
        if message.startswith(HISTORY_HEADER):
            found: list[dict[str, object]] = []
            for line in message.splitlines()[1:]:
                try:
                    item = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(item, dict):
                    found.append(item)
            return found
    return []


def _summarize(items: list[str], prior: str) -> str:
    """A bounded digest: totals per class, the most frequent topics, and the time span."""
    totals, topics, first, last = parse_summary(prior)
    for line in items:
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        totals[item.get("class", "noise")] += 1
        topics[topic(str(item.get("message", "")))] += 1
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
            text = json.dumps(_in_schema(_classification(messages), request), sort_keys=True)
        else:
            text = json.dumps(
                _in_schema({"priority": "noise", "reason": "unknown task"}, request),
                sort_keys=True,
            )
        body = text.encode()
        prompt_chars = sum(len(m) for m in messages)
        return LlmResponse(
            response=body,
            model_id=self.model_id,
            input_tokens=prompt_chars // 4,
            output_tokens=len(body) // 4,
        )


def _classification(messages: list[str]) -> dict[str, str]:
    """The rules' answer to a classification request: priority, reason and history.

    The alert is found by its prefix, not its place: a re-ask (the runtime's
    repair of an answer that missed the schema) appends the answer and its
    errors after it.
    """
    shown = next((m for m in messages if m.startswith(ALERT_HEADER)), "{}")
    alert = json.loads(shown.removeprefix(ALERT_HEADER))
    message = str(alert.get("message", ""))
    if any(m.startswith(HISTORY_HEADER) for m in messages):
        label, reason, history = classify_with_history(message, _incidents(messages))
    else:  # no recall: nothing to change the keyword class
        (label, reason), history = classify(message), "none"
    return {"priority": label, "reason": reason, "history": history}


def _in_schema(answer: dict[str, str], request: LlmRequest) -> dict[str, str]:
    """`answer` with only the fields the request's schema names, as native structured output is.

    A field the schema asks for and the rules do not know stays missing, so
    the runtime's validation says so rather than the model making one up.
    """
    if request.output_type is None:
        return answer
    properties = output_schema(request.output_type).json_schema.get("properties", {})
    return {name: value for name, value in answer.items() if name in properties}


rules_llm = RulesTriageModel()
"""The instance `--model rules` (and `py:app.triage.model:rules_llm`) selects."""
