"""JSON lines for everything the pipeline emits, and their deterministic order.

The same encoders feed the local files (`out/triage/*.jsonl`) and any
message sink (Pub/Sub), so a record looks the same wherever it lands. Sort
keys order the local files by event time, then entity, then seq, so two
runs of the demo write byte-identical files whatever order the runner
emitted them in.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from app.triage.alerts import canonical_json
from app.triage.decision import Decision, decision_json
from beam_agents import ActivationError, LifecycleEvent
from beam_agents.proto import ToolIntent

__all__ = [
    "error_json",
    "intent_json",
    "lifecycle_json",
    "output_json",
    "sort_key",
]


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _payload(data: bytes) -> dict[str, str]:
    """The payload verbatim: as text when it is UTF-8, else base64, never lossy."""
    try:
        return {"payload": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"payload_b64": base64.b64encode(data).decode()}


def output_json(element: tuple[bytes, Decision]) -> bytes:
    """An agent output: its `Decision` as the canonical JSON line it names its service in."""
    _, decision = element
    return decision_json(decision)


def intent_json(intent: ToolIntent) -> bytes:
    """A side-effect request, with its args as JSON and its deterministic id."""
    record: dict[str, Any] = {
        "intent_id": intent.intent_id,
        "service": _text(intent.entity_key),
        "seq": intent.seq,
        "index": intent.index,
        "tool": intent.tool,
        "args": json.loads(intent.args_json or b"{}"),
        "event_time_ms": intent.event_time_ms,
    }
    if intent.awaits_answer:
        record["awaits_answer"] = True
        record["prompt"] = json.loads(intent.prompt) if intent.prompt else None
    return canonical_json(record)


def error_json(error: ActivationError) -> bytes:
    """A dead letter, with its payload kept so it can be replayed."""
    return canonical_json(
        {
            "service": _text(error.entity_key),
            "reason": error.reason,
            "detail": error.detail,
            "event_time_ms": error.event_time_ms,
            **_payload(error.payload),
        }
    )


def lifecycle_json(event: LifecycleEvent) -> bytes:
    """One lifecycle record of one service."""
    return canonical_json(
        {
            "service": _text(event.entity_key),
            "kind": event.kind,
            "event_time_ms": event.event_time_ms,
            "seq": event.seq,
            "memory_bytes": event.memory_bytes,
            "detail": event.detail,
        }
    )


_KIND_ORDER = {
    kind: rank
    for rank, kind in enumerate(
        (
            "buffered",
            "activated",
            "suspended",
            "resumed",
            "compacted",
            "soft_cap",
            "summarized",
            "longterm_flushed",
            "completed",
            "failed",
            "wake_fired",
            "wake_cancelled",
            "wake_scheduled",
            "expire_flushed",
            "ttl_expired",
        )
    )
}


def sort_key(line: bytes) -> tuple[int, str, int, int, bytes]:
    """Order of the local files: event time, service, seq, lifecycle step, then the bytes.

    Within one activation, lifecycle records follow the order things happen
    (activated, suspended, resumed, compacted, soft_cap, summarized, flushed, completed,
    then the follow-ups its commit ran, cancelled and scheduled), as docs/lifecycle.md
    lists them.
    """
    record = json.loads(line)
    return (
        int(record.get("event_time_ms", 0)),
        str(record.get("service", "")),
        int(record.get("seq", 0)),
        _KIND_ORDER.get(str(record.get("kind", "")), -1),
        line,
    )
