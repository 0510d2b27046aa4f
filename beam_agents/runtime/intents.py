"""Side-effect intents and their deterministic ids.

An agent never performs a side effect itself: it stages an intent, which is
emitted on the `.intents` output only when the activation commits. The id is
a UUIDv5 an external system can recompute and deduplicate on:

    uuid5(INTENT_NAMESPACE, f"{entity_key.hex()}/{seq}/{index}")

where `index` counts the activation's intents from 0, a Suspend's approval
request included.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from typing import Any, Final

from beam_agents.proto.beam_agents_pb2 import ToolIntent

__all__ = ["INTENT_NAMESPACE", "canonical_json", "event_id_for", "intent_id", "make_intent"]

INTENT_NAMESPACE: Final = uuid.UUID("6f1d3b52-2c5e-5b8e-9a41-0d7c5e3b2a10")
_EVENT_NAMESPACE: Final = uuid.UUID("0b6a7f0e-4f8e-5d43-8e57-3f7c1a9d2b64")


def event_id_for(entity_key: bytes, event_time_ms: int, event: bytes) -> str:
    """Deterministic id of one event: a retried element keeps it, different events differ."""
    digest = hashlib.sha256(event).hexdigest()
    return str(uuid.uuid5(_EVENT_NAMESPACE, f"{entity_key.hex()}/{event_time_ms}/{digest}"))


def intent_id(entity_key: bytes, seq: int, index: int) -> str:
    """The deterministic id of intent `index` of activation `seq` of `entity_key`."""
    if type(entity_key) is not bytes:
        raise TypeError(f"entity_key must be bytes, got {type(entity_key).__name__}")
    return str(uuid.uuid5(INTENT_NAMESPACE, f"{entity_key.hex()}/{seq}/{index}"))


def canonical_json(value: Mapping[str, Any]) -> bytes:
    """Sorted-key, compact JSON: equal args always give equal bytes."""
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"intent args must be JSON-serializable: {exc}") from None
    except RecursionError:
        raise TypeError("intent args must be JSON-serializable: nested too deeply") from None
    return text.encode("utf-8")


def make_intent(
    *,
    entity_key: bytes,
    seq: int,
    index: int,
    tool: str,
    args_json: bytes,
    event_time_ms: int,
    awaits_answer: bool = False,
) -> ToolIntent:
    """Build the wire form of one intent."""
    return ToolIntent(
        state_schema_version=1,
        intent_id=intent_id(entity_key, seq, index),
        entity_key=entity_key,
        seq=seq,
        index=index,
        tool=tool,
        args_json=args_json,
        event_time_ms=event_time_ms,
        awaits_answer=awaits_answer,
    )
