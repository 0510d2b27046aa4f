"""The smallest JSON value a JSON Schema accepts, found without search, for a scripted model.

FakeLLM answers a structured request nobody scripted with this value, so a
test or the offline demo that asks for a type gets one back without
writing a rule per schema. It is a single deterministic walk, not a
solver: the first of every choice, the least of every bound. A schema
whose constraints that walk cannot meet (a `pattern`, a `multipleOf`)
still gets its value, and validation names what is wrong with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["minimal_value"]

_MAX_DEPTH: Final = 32
"""Deeper than this is a schema that requires itself; it ends in null."""

_FORMATS: Final = {
    "date-time": "1970-01-01T00:00:00Z",
    "date": "1970-01-01",
    "time": "00:00:00Z",
    "duration": "P0D",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "email": "a@example.com",
    "uri": "https://example.com",
}


def minimal_value(schema: Mapping[str, Any]) -> Any:
    """The first enum or const value, `""`, 0, false, [] or an object of its required properties.

    `$ref`s resolve within `schema` (`#/$defs/...`, `#/definitions/...`);
    `anyOf`, `oneOf` and `allOf` take their first branch; a `type` list
    its first type.
    """
    return _value(schema, schema, 0)


def _value(node: object, root: Mapping[str, Any], depth: int) -> Any:
    if not isinstance(node, Mapping) or depth > _MAX_DEPTH:
        return None
    if "const" in node:
        return node["const"]
    enum = node.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    ref = node.get("$ref")
    if isinstance(ref, str):
        return _value(_resolve(ref, root), root, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        branches = node.get(key)
        if isinstance(branches, list) and branches:
            return _value(branches[0], root, depth + 1)
    kind = node.get("type")
    if isinstance(kind, list):
        kind = kind[0] if kind else None
    if kind is None and "properties" in node:
        kind = "object"
    return _typed(kind, node, root, depth)


def _typed(kind: object, node: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> Any:
    if kind == "string":
        fixed = _FORMATS.get(str(node.get("format")))
        return fixed if fixed is not None else "a" * _bound(node.get("minLength"))
    if kind in ("integer", "number"):
        return _least_number(node, integer=kind == "integer")
    if kind == "boolean":
        return False
    if kind == "array":
        prefix = node.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        items = [_value(item, root, depth + 1) for item in prefix]
        while len(items) < _bound(node.get("minItems")):
            items.append(_value(node.get("items"), root, depth + 1))
        return items
    if kind == "object":
        properties = node.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        required = node.get("required")
        required = required if isinstance(required, list) else []
        return {
            name: _value(properties.get(name, {}), root, depth + 1)
            for name in required
            if isinstance(name, str)
        }
    return None


def _least_number(node: Mapping[str, Any], *, integer: bool) -> int | float:
    least: float = 0.0
    minimum, above, maximum = (
        _number(node.get(key)) for key in ("minimum", "exclusiveMinimum", "maximum")
    )
    if minimum is not None and minimum > least:
        least = minimum
    if above is not None and above >= least:
        least = float(int(above) + 1) if integer else above + 1
    if maximum is not None and maximum < least:
        least = maximum
    if integer:
        return int(least) if least.is_integer() else int(least) + 1
    return float(least)


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _bound(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _resolve(ref: str, root: Mapping[str, Any]) -> object:
    """A local `#/a/b` reference within `root`; None for any other."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: object = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node
