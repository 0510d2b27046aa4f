"""A typed result in an evaluation: its JSON, and its fields read by name.

A candidate run with an `output_type` completes with instances of that
type, not bytes. The results file and the report show each as the JSON its
schema describes (a pydantic model's fields under their JSON names, a
NamedTuple as an object), so a typed candidate's row reads like a bytes
candidate's JSON row and the two compare field by field. Scorers read the
instance itself: a field is found by its Python name (`priority`) or by
its JSON name (`class`), so a label written against the JSON keeps
working when the agent's result becomes typed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic
import pydantic_core

from beam_agents.model.structured import field_names, value_json

__all__ = ["field_names", "json_names", "read_expected", "read_field", "value_json"]

_MISSING: Any = object()


def json_names(output_type: type) -> dict[str, str]:
    """Python name -> JSON name of each field whose JSON name differs (a pydantic alias)."""
    if not issubclass(output_type, pydantic.BaseModel):
        return {}
    names = {}
    for name, info in output_type.model_fields.items():
        shown = info.serialization_alias or info.alias
        if shown and shown != name:
            names[name] = shown
    return names


def read_field(value: Any, output_json: Any, name: str) -> tuple[bool, Any]:
    """`(found, value)` of field `name`: the typed value's own field, else its JSON's.

    The field's value is returned as JSON would carry it (an enum as its
    value, a tuple as a list), so it compares with a label's JSON value.
    Only declared fields are read from a typed value, never a method or
    a property that merely shares the name.
    """
    if value is not None and name in field_names(type(value)):
        found = getattr(value, name, _MISSING)
        if found is not _MISSING:
            return True, pydantic_core.to_jsonable_python(found, by_alias=True)
    if isinstance(output_json, Mapping) and name in output_json:
        return True, output_json[name]
    return False, None


def read_expected(
    expected: Mapping[str, Any], output_type: type | None, name: str
) -> tuple[bool, Any]:
    """`(found, value)` of field `name` in a label's `expected`, which JSON names write.

    A scorer naming a field of `output_type` by its Python name (`priority`)
    finds the label's value under the field's JSON name (`class`) too.
    """
    if name in expected:
        return True, expected[name]
    if output_type is not None:
        shown = json_names(output_type).get(name)
        if shown is not None and shown in expected:
            return True, expected[shown]
    return False, None
