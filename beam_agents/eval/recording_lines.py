"""What each line of a recording file must hold, checked before an evaluation runs.

A line that only fails when it is used fails inside the replay, where it
is a dead letter on every event that asks for it and a failed gate at the
end: indistinguishable, in CI, from a candidate that decides worse. So the
whole file is checked as it is loaded, and the first wrong line is named
by file, line number and field, as a usage error.

A recording is written by `beam-agents eval` itself, except tool lines,
which people write by hand: so a field the kind does not have is refused
too (a misspelt `reslt` would otherwise leave the line without its result).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Mapping
from typing import Any, Final

from beam_agents.eval.errors import RecordingError
from beam_agents.model.messages import STOP_LENGTH, STOP_REFUSED

__all__ = ["check_recording_line"]

Check = Callable[[object], str | None]
"""A field's check: None when the value will do, else what it must be."""


def _text(value: object) -> str | None:
    return None if type(value) is str else "must be a string"


def _name(value: object) -> str | None:
    return None if type(value) is str and value else "must be a non-empty string"


def _count(value: object) -> str | None:
    ok = type(value) is int and value >= 0
    return None if ok else "must be an int >= 0"


def _millis(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "must be a number >= 0"
    return None if math.isfinite(value) and value >= 0 else "must be a number >= 0"


def _object(value: object) -> str | None:
    return None if isinstance(value, dict) else "must be a JSON object"


def _answer_bytes(value: object) -> str | None:
    if type(value) is str:
        return None
    if isinstance(value, dict) and set(value) == {"b64"} and type(value["b64"]) is str:
        try:
            base64.b64decode(value["b64"], validate=True)
        except ValueError:
            return "has a b64 that is not base64"
        return None
    return 'must be a string, or {"b64": "..."} for bytes that are not UTF-8'


def _texts(value: object) -> str | None:
    ok = isinstance(value, list) and all(type(text) is str for text in value)
    return None if ok else "must be a list of strings"


def _vectors(value: object) -> str | None:
    ok = isinstance(value, list) and all(
        isinstance(vector, list)
        and all(type(x) in (int, float) and math.isfinite(x) for x in vector)
        for vector in value
    )
    return None if ok else "must be a list of lists of finite numbers"


def _request(value: object) -> str | None:
    if not isinstance(value, dict):
        return "must be a JSON object (the request, as canonical_request_bytes writes it)"
    if value.get("kind") == "embed":
        return "is an embedding request: an embedding is written as a line of kind embed"
    fields = {"model_id", "messages", "tools_schema", "sampling_params"}
    if set(value) - {"output_schema"} != fields:
        return (
            f"must have exactly the fields {', '.join(sorted(fields))} "
            "(and output_schema, for a structured request)"
        )
    schema = value.get("output_schema", {"name": "", "schema": {}})
    if not isinstance(schema, dict) or set(schema) != {"name", "schema"}:
        return "must have an output_schema that is an object of name and schema"
    if type(value["model_id"]) is not str or not isinstance(value["messages"], list):
        return "must have a string model_id and a list of messages"
    if not isinstance(value["tools_schema"], dict | list | None):
        return "must have a tools_schema that is an object, a list or null"
    if not isinstance(value["sampling_params"], dict | None):
        return "must have a sampling_params that is an object or null"
    return None


_MODEL_ANSWER: Final[Mapping[str, Check]] = {
    "request": _request,
    "response": _answer_bytes,
    "model_id": _text,
    "input_tokens": _count,
    "output_tokens": _count,
}
_MODEL_ERROR: Final[Mapping[str, Check]] = {"request": _request, "error": _text}
_EMBED: Final[Mapping[str, Check]] = {
    "model_id": _name,
    "texts": _texts,
    "vectors": _vectors,
    "input_tokens": _count,
}
_TOOL: Final[Mapping[str, Check]] = {
    "tool": _name,
    "args": _object,
    "result": _answer_bytes,
}
_OPTIONAL: Final[Mapping[str, Check]] = {"latency_ms": _millis}
"""Fields a line of any kind but tool may carry; read as 0 when absent."""


def _stop_reason(value: object) -> str | None:
    ok = value in (STOP_LENGTH, STOP_REFUSED)
    return None if ok else f"must be {STOP_LENGTH!r} or {STOP_REFUSED!r}"


_MODEL_OPTIONAL: Final[Mapping[str, Check]] = {**_OPTIONAL, "stop_reason": _stop_reason}
"""A model line's stop reason is written only for an answer the model did not finish."""


def _fields_of(entry: Mapping[str, Any]) -> tuple[str, Mapping[str, Check], Mapping[str, Check]]:
    """The kind's name as a message says it, its required fields and its optional ones."""
    kind = entry.get("kind")
    if kind == "model":
        if "error" in entry:
            return "a model error line", _MODEL_ERROR, {}
        return "a model line", _MODEL_ANSWER, _MODEL_OPTIONAL
    if kind == "embed":
        return "an embed line", _EMBED, _OPTIONAL
    if kind == "tool":
        return "a tool line", _TOOL, {}
    raise RecordingError(f"kind must be model, embed or tool, got {kind!r:.60}")


def _check(entry: Mapping[str, Any]) -> None:
    what, required, optional = _fields_of(entry)
    for name, check in required.items():
        if name not in entry:
            raise RecordingError(f"{what} needs {name} ({', '.join(required)} are required)")
        wrong = check(entry[name])
        if wrong is not None:
            raise RecordingError(f"{what}'s {name} {wrong}, got {entry[name]!r:.60}")
    for name, check in optional.items():
        wrong = check(entry[name]) if name in entry else None
        if wrong is not None:
            raise RecordingError(f"{what}'s {name} {wrong}, got {entry[name]!r:.60}")
    unknown = sorted(set(entry) - {"kind", *required, *optional})
    if unknown:
        known = ", ".join(["kind", *required, *optional])
        raise RecordingError(f"{what} has no field {unknown[0]!r} (its fields: {known})")
    if what == "an embed line" and len(entry["vectors"]) != len(entry["texts"]):
        raise RecordingError(
            f"an embed line needs one vector per text: {len(entry['texts'])} texts, "
            f"{len(entry['vectors'])} vectors"
        )


def check_recording_line(entry: Mapping[str, Any], where: str) -> None:
    """Raise RecordingError naming `where` (`path:line`) and the field, unless `entry` will do."""
    try:
        _check(entry)
    except RecordingError as exc:
        raise RecordingError(f"{where}: {exc}") from None
