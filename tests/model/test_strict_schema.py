"""Which schemas go out in strict mode: only those strict mode cannot narrow."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from beam_agents.model._structured_wire import strict_schema
from beam_agents.model.structured import output_schema


class Leaf(pydantic.BaseModel):
    value: int


class Tree(pydantic.BaseModel):
    leaves: list[Leaf]
    best: Leaf | None


class WithDefault(pydantic.BaseModel):
    name: str
    note: str = ""


class WithMapping(pydantic.BaseModel):
    counts: dict[str, int]


def object_of(**extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], **extra}


def test_every_object_of_a_fully_required_model_is_closed() -> None:
    schema = output_schema(Tree).json_schema

    strict = strict_schema(schema)

    assert strict is not None
    assert strict["additionalProperties"] is False
    assert strict["$defs"]["Leaf"]["additionalProperties"] is False
    assert "additionalProperties" not in schema  # the type's own schema is left as it was


def test_objects_nested_in_items_and_any_of_are_closed() -> None:
    schema = {
        "type": "object",
        "properties": {
            "rows": {"type": "array", "items": object_of()},
            "either": {"anyOf": [object_of(), {"type": "null"}]},
        },
        "required": ["rows", "either"],
    }

    strict = strict_schema(schema)

    assert strict is not None
    assert strict["properties"]["rows"]["items"]["additionalProperties"] is False
    assert strict["properties"]["either"]["anyOf"][0]["additionalProperties"] is False


@pytest.mark.parametrize(
    "schema",
    [
        output_schema(WithDefault).json_schema,
        output_schema(WithMapping).json_schema,
        object_of(additionalProperties=True),
        object_of(additionalProperties={"type": "string"}),
        object_of(patternProperties={"^x-": {"type": "string"}}),
        {"type": "object"},
        {"type": "array", "items": object_of(required=[])},
    ],
    ids=[
        "optional-field",
        "mapping",
        "open",
        "extra-schema",
        "pattern-properties",
        "bare-object",
        "nested-optional",
    ],
)
def test_a_schema_strict_mode_would_narrow_is_not_sent_strict(schema: dict[str, Any]) -> None:
    assert strict_schema(schema) is None


def test_a_closed_object_stays_strict() -> None:
    assert strict_schema(object_of(additionalProperties=False)) == object_of(
        additionalProperties=False
    )
