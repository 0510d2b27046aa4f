"""How a structured request reaches a chat-completions server: natively, or by asking in words.

Native structured output (`response_format` with a JSON Schema) lets the
server constrain the answer; strict mode makes that a guarantee but accepts
only schemas where every object names all its properties as required and
allows no others. A schema is sent strict only when closing it takes
nothing the type needs: making an optional field required, or closing an
open mapping, would make the model answer something narrower than the
type asks for.

A server without structured output gets the schema as words instead (the
prompt fallback), and the answer is extracted and validated like any
other. The instruction text is a pure function of the schema, so a
re-asked or replayed call sends the same bytes.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

from beam_agents.errors import ConfigurationError

if TYPE_CHECKING:
    from beam_agents.model.structured import OutputSchema

__all__ = [
    "STRUCTURED_OUTPUT_MODES",
    "StructuredOutputMode",
    "check_structured_output",
    "requested_schema",
    "response_format",
    "schema_instruction",
    "strict_schema",
    "with_schema_instruction",
]

StructuredOutputMode = Literal["native", "prompt"]
STRUCTURED_OUTPUT_MODES: Final = ("native", "prompt")

_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME: Final = 64
_SCHEMA_MAPS: Final = ("properties", "$defs", "definitions")
_SCHEMA_LISTS: Final = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES: Final = ("items", "not", "additionalItems", "contains", "if", "then", "else")


def requested_schema(output_type: object) -> OutputSchema | None:
    """The schema a request asks for, or None for a plain request.

    Imported only here: the schema machinery needs pydantic, which a plain
    request never loads.
    """
    if output_type is None:
        return None
    from beam_agents.model.structured import output_schema

    return output_schema(output_type)


def check_structured_output(value: object) -> StructuredOutputMode:
    """`native` (ask with `response_format`) or `prompt` (ask in a system message)."""
    if value not in STRUCTURED_OUTPUT_MODES:
        raise ConfigurationError(
            "structured_output", f"must be 'native' or 'prompt', got {value!r}"
        )
    return value


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """A copy closed for strict mode, or None when strict mode would change what is valid.

    Every object gets `additionalProperties: false` where it says nothing,
    which only narrows what a model may add (a pydantic model ignores extra
    keys; it never needs them). None when an object leaves a property
    optional, allows extra properties (`additionalProperties` true or a
    schema, `patternProperties`), or declares no properties at all (an open
    mapping: closing it would allow only `{}`).
    """
    closed = copy.deepcopy(dict(schema))
    return closed if _close(closed) else None


def _close(node: object) -> bool:
    """Close every object under `node` in place; False when one cannot be closed faithfully."""
    if isinstance(node, list):
        return all(_close(item) for item in node)
    if not isinstance(node, dict):
        return True
    if _is_object(node) and not _close_object(node):
        return False
    children = [
        child
        for key in _SCHEMA_MAPS
        if isinstance(node.get(key), dict)
        for child in node[key].values()
    ]
    children += [node[key] for key in (*_SCHEMA_LISTS, *_SCHEMA_VALUES) if key in node]
    return all(_close(child) for child in children)


def _is_object(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    if isinstance(kind, list):
        return "object" in kind
    return kind == "object" or (kind is None and "properties" in node)


def _close_object(node: dict[str, Any]) -> bool:
    properties = node.get("properties")
    if not isinstance(properties, dict) or not properties or "patternProperties" in node:
        return False
    extra = node.setdefault("additionalProperties", False)
    required = node.get("required", [])
    return extra is False and isinstance(required, list) and set(required) == set(properties)


def response_format(schema: OutputSchema) -> dict[str, Any]:
    """The `response_format` of a chat-completions request asking for `schema`'s JSON.

    The name is the schema's, cut to the characters and length the API
    accepts; strict when `strict_schema` allows it.
    """
    strict = strict_schema(schema.json_schema)
    name = _NAME_CHARS.sub("_", schema.name)[:_MAX_NAME] or "output"
    return {
        "type": "json_schema",
        "json_schema": {
            "name": name,
            "schema": strict if strict is not None else dict(schema.json_schema),
            "strict": strict is not None,
        },
    }


def schema_instruction(schema: OutputSchema) -> str:
    """The words that ask for `schema`'s JSON where the server cannot be told natively."""
    return (
        f"Answer with only a JSON value matching the {schema.name} JSON Schema below: "
        f"no prose before or after it, no code fence.\n{schema.json_text}"
    )


def with_schema_instruction(
    messages: Sequence[dict[str, Any]], schema: OutputSchema
) -> list[dict[str, Any]]:
    """`messages` with the schema instruction in the system message that leads them.

    Joined to a leading text system message rather than added beside it:
    some servers' chat templates accept one system message, and only first.
    """
    instruction = schema_instruction(schema)
    first = messages[0] if messages else None
    if first is not None and first.get("role") == "system" and isinstance(first["content"], str):
        joined = {**first, "content": f"{first['content']}\n\n{instruction}"}
        return [joined, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]
