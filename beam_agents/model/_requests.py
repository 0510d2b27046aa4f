"""The provider-neutral reading of an `LlmRequest`, and the canonical tool-call answer.

Both real providers accept the same request shapes and answer tool calls
with the same bytes, so an agent can switch providers with one `--model`
flag and a recorded answer replays byte-identically whatever produced it.

- messages: a `str` is a user turn; a mapping with `role` (system, user,
  assistant, tool) and `content` passes through (a provider may read more
  keys, e.g. `tool_call_id` for OpenAI, `name` for Gemini tool results);
- tools_schema: a sequence of function declarations `{"name", "description",
  "parameters"}` (`parameters` a JSON Schema), OpenAI-style
  `{"type": "function", "function": {...}}` entries, or a mapping from tool
  name to `{"description", "parameters"}`;
- sampling_params: `temperature`, `top_p`, `max_output_tokens`, `stop`,
  `seed`; anything else is refused by name.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from beam_agents.errors import ConfigurationError

__all__ = [
    "ROLES",
    "FunctionDeclaration",
    "Sampling",
    "function_declarations",
    "normalize_messages",
    "read_sampling",
    "tool_calls_answer",
]

ROLES: Final = frozenset({"system", "user", "assistant", "tool"})
SAMPLING_KEYS: Final = ("max_output_tokens", "seed", "stop", "temperature", "top_p")


def normalize_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Messages as `{"role", "content", ...}` dicts; raises ValueError naming a bad one."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise ConfigurationError("messages", "must be a sequence of messages")
    normalized: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if isinstance(message, str):
            normalized.append({"role": "user", "content": message})
            continue
        if not isinstance(message, Mapping):
            raise ConfigurationError(
                f"messages[{index}]",
                f"must be a str or a {{role, content}} mapping, got {type(message).__name__}",
            )
        role = message.get("role")
        if role not in ROLES:
            raise ConfigurationError(
                f"messages[{index}].role", f"must be one of {sorted(ROLES)}, got {role!r}"
            )
        if "content" not in message:
            raise ConfigurationError(f"messages[{index}]", "has no content")
        normalized.append(dict(message))
    if not normalized:
        raise ConfigurationError("messages", "is empty")
    return normalized


@dataclass(frozen=True, slots=True)
class FunctionDeclaration:
    """One tool the model may ask for."""

    name: str
    description: str | None
    parameters: Mapping[str, Any] | None


def _declaration(where: str, name: object, body: Mapping[str, Any]) -> FunctionDeclaration:
    if type(name) is not str or not name:
        raise ConfigurationError(f"{where}.name", f"must be a non-empty str, got {name!r}")
    description = body.get("description")
    parameters = body.get("parameters")
    if description is not None and type(description) is not str:
        raise ConfigurationError(f"{where}.description", "must be a str")
    if parameters is not None and not isinstance(parameters, Mapping):
        raise ConfigurationError(f"{where}.parameters", "must be a JSON Schema object")
    return FunctionDeclaration(name, description, parameters)


def function_declarations(tools_schema: object) -> list[FunctionDeclaration]:
    """The request's tools as declarations; empty when it has none."""
    if tools_schema is None:
        return []
    if isinstance(tools_schema, Mapping):
        declarations = []
        for name, body in tools_schema.items():
            if not isinstance(body, Mapping):
                raise ConfigurationError(f"tools_schema[{name!r}]", "must be a mapping")
            declarations.append(_declaration(f"tools_schema[{name!r}]", name, body))
        return declarations
    if isinstance(tools_schema, str | bytes) or not isinstance(tools_schema, Sequence):
        raise ConfigurationError("tools_schema", "must be a sequence or mapping of tools")
    declarations = []
    for index, tool in enumerate(tools_schema):
        where = f"tools_schema[{index}]"
        if not isinstance(tool, Mapping):
            raise ConfigurationError(where, "must be a function declaration mapping")
        if tool.get("type") == "function" and isinstance(tool.get("function"), Mapping):
            tool = tool["function"]
        declarations.append(_declaration(where, tool.get("name"), tool))
    return declarations


@dataclass(frozen=True, slots=True)
class Sampling:
    """Validated sampling parameters; None means the server's default."""

    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None
    stop: tuple[str, ...] | None = None
    seed: int | None = None


def _number(key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigurationError(f"sampling_params.{key}", f"must be a number, got {value!r}")
    return float(value)


def _integer(key: str, value: object, minimum: int) -> int:
    if type(value) is not int or value < minimum:
        raise ConfigurationError(
            f"sampling_params.{key}", f"must be an int >= {minimum}, got {value!r}"
        )
    return value


def read_sampling(params: Mapping[str, Any] | None) -> Sampling:
    """Sampling parameters, refusing unknown keys and ill-typed values by name."""
    if params is None:
        return Sampling()
    if not isinstance(params, Mapping):
        raise ConfigurationError("sampling_params", "must be a mapping")
    for key in params:
        if key not in SAMPLING_KEYS:
            raise ConfigurationError(
                f"sampling_params.{key}",
                f"is not a sampling parameter; known: {', '.join(SAMPLING_KEYS)}",
            )
    stop = params.get("stop")
    if isinstance(stop, str):
        stop = (stop,)
    elif stop is not None:
        if isinstance(stop, bytes) or not isinstance(stop, Sequence):
            raise ConfigurationError("sampling_params.stop", "must be a str or a list of str")
        if not all(type(item) is str for item in stop):
            raise ConfigurationError("sampling_params.stop", "must be a str or a list of str")
        stop = tuple(stop)
    return Sampling(
        temperature=None
        if params.get("temperature") is None
        else _number("temperature", params["temperature"]),
        top_p=None if params.get("top_p") is None else _number("top_p", params["top_p"]),
        max_output_tokens=None
        if params.get("max_output_tokens") is None
        else _integer("max_output_tokens", params["max_output_tokens"], 1),
        stop=stop,
        seed=None if params.get("seed") is None else _integer("seed", params["seed"], -(2**63)),
    )


def tool_calls_answer(calls: Sequence[tuple[str, Mapping[str, Any]]]) -> bytes:
    """`{"tool_calls": [{"name", "arguments"}]}` as canonical JSON (sorted, compact, UTF-8).

    Canonical bytes make a replayed answer identical to the recorded one,
    whatever order or spacing the server used.
    """
    body = {"tool_calls": [{"name": name, "arguments": dict(args)} for name, args in calls]}
    try:
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except RecursionError:
        raise ValueError("tool call arguments are nested too deeply for JSON") from None
    return text.encode("utf-8")
