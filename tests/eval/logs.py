"""The recorded log the evaluation tests replay, and its hand-written labels.

Key `a` has an urgent alert, a CPU alert that looks an account up with a
tool, then (after the 10-minute TTL wiped and flushed its memory) a late
alert; key `b` waits for an approval that arrives a step later; key `c`
trips a model error; key `d` waits for an approval that never comes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from beam_agents.runtime.intents import event_id_for, intent_id

TOOL_LINE = {"kind": "tool", "tool": "lookup", "args": {"id": "7"}, "result": "account 7"}


def _event(key: str, body: dict[str, Any], time_ms: int, event_id: str) -> dict[str, Any]:
    return {"key": key, "payload": json.dumps(body), "time_ms": time_ms, "id": event_id}


EVENTS = [
    _event("a", {"text": "disk urgent"}, 1_000, "a1"),
    _event("a", {"text": "cpu routine", "lookup": "7"}, 2_000, "a2"),
    _event("b", {"text": "needs approval urgent", "approve": True}, 1_000, "b1"),
    # b's first activation suspends at seq 1; its approval request is intent 0.
    {
        "key": "b",
        "payload": "yes",
        "time_ms": 65_000,
        "answer_to": "b1",
        "intent_id": intent_id(b"b", 1, 0),
    },
    _event("c", {"text": "explode now"}, 1_000, "c1"),
    _event("a", {"text": "late routine"}, 1_000_000, "a3"),
    _event("d", {"text": "approve me", "approve": True}, 1_000, "d1"),
]

LABELS = [
    {
        "id": "a1",
        "expected": {"priority": "high"},
        "expected_intents": [{"tool": "page"}],
        "expected_tool_calls": [],
        "class_field": "priority",
    },
    {
        "id": "a2",
        "expected": {"priority": "low"},
        "expected_intents": [],
        "expected_tool_calls": [{"tool": "lookup", "args": {"id": "7"}}],
    },
    {
        "id": "b1",
        "expected": {"priority": "high"},
        "expected_intents": [{"tool": "page", "args": {"team": "oncall"}}],
    },
    {"id": "c1", "expected": {"priority": "low"}, "expected_intents": []},
    # The label says high; the agent says low: scored 0, by design.
    {"id": "a3", "expected": {"priority": "high"}},
    {"id": "d1", "expected": {"priority": "low"}},
]


def runtime_id(key: str, payload: str, time_ms: int) -> str:
    """The id the runtime gives an event (what a label may name instead of `id`)."""
    return event_id_for(key.encode(), time_ms, payload.encode())


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    """`records` as JSON lines at `path`."""
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def write_log(directory: Path) -> tuple[Path, Path, Path]:
    """The events, the labels and a recording holding the lookup tool's result."""
    events = write_jsonl(directory / "events.jsonl", EVENTS)
    labels = write_jsonl(directory / "labels.jsonl", LABELS)
    recording = write_jsonl(directory / "recording.jsonl", [TOOL_LINE])
    return events, labels, recording
