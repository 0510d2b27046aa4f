"""FakeLLM answers an unscripted typed request with a valid value, a scripted one as written."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import uuid
from typing import Any, Literal, NamedTuple

import pydantic
import pytest

from beam_agents import LlmRequest
from beam_agents.model import FakeLLM, Rule
from beam_agents.model.structured import output_schema


class Inner(pydantic.BaseModel):
    count: int


class Everything(pydantic.BaseModel):
    priority: Literal["p1", "p2", "p3"]
    reason: str
    inner: Inner
    many: list[Inner]
    maybe: Inner | None
    when: datetime.datetime
    ident: uuid.UUID
    score: float
    pair: tuple[int, str]
    positive: int = pydantic.Field(gt=0)
    optional: str = "left out"


@dataclasses.dataclass(frozen=True)
class Record:
    name: str
    size: int


class Row(NamedTuple):
    name: str
    weight: float


CLOSED = {
    "type": "object",
    "properties": {
        "kind": {"const": "alert"},
        "tags": {"type": "array", "items": {"type": "string", "minLength": 2}, "minItems": 2},
        "level": {"type": "integer", "minimum": 3},
    },
    "required": ["kind", "tags", "level"],
}


def answer(fake: FakeLLM, output_type: Any, text: str = "classify") -> bytes:
    request = LlmRequest("m", [text], output_type=output_type)
    return asyncio.run(fake.complete(request)).response


@pytest.mark.parametrize(
    ("output_type", "expected"),
    [
        (
            Everything,
            {
                "priority": "p1",
                "reason": "",
                "inner": {"count": 0},
                "many": [],
                "maybe": {"count": 0},
                "when": "1970-01-01T00:00:00Z",
                "ident": "00000000-0000-0000-0000-000000000000",
                "score": 0.0,
                "pair": [0, ""],
                "positive": 1,
            },
        ),
        (Record, {"name": "", "size": 0}),
        (Row, {"name": "", "weight": 0.0}),
        (CLOSED, {"kind": "alert", "tags": ["aa", "aa"], "level": 3}),
    ],
    ids=["pydantic", "dataclass", "namedtuple", "json-schema"],
)
def test_an_unscripted_typed_request_gets_the_least_valid_value_of_its_schema(
    output_type: Any, expected: dict[str, Any]
) -> None:
    fake = FakeLLM(name="fake-least")

    raw = answer(fake, output_type)

    assert json.loads(raw) == expected
    assert raw == json.dumps(expected, sort_keys=True, separators=(",", ":")).encode()
    output_schema(output_type).read(raw)  # raises OutputInvalid if it were not valid


def test_the_least_value_is_the_same_bytes_on_every_call() -> None:
    fake = FakeLLM(name="fake-same")

    assert answer(fake, Everything, "one") == answer(fake, Everything, "two")


def test_a_default_that_is_valid_for_the_type_is_answered_as_it_is() -> None:
    default = b'Here: {"name": "disk", "size": 3}'
    fake = FakeLLM(default=default, name="fake-valid-default")

    assert answer(fake, Record) == default


def test_a_matching_rule_answers_as_written_even_when_invalid() -> None:
    """How a test scripts a wrong answer for the repair path."""
    fake = FakeLLM(rules=[Rule("classify", b'{"name": 7}')], name="fake-rule-wins")

    assert answer(fake, Record) == b'{"name": 7}'
    assert answer(fake, Record, "other") == b'{"name":"","size":0}'


def test_a_plain_request_still_gets_the_default() -> None:
    fake = FakeLLM(name="fake-plain")

    assert asyncio.run(fake.complete(LlmRequest("m", ["hi"]))).response == b"ok"


def test_a_self_requiring_schema_ends_in_null_instead_of_recursing_forever() -> None:
    schema = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"next": {"$ref": "#/$defs/Node"}},
                "required": ["next"],
            }
        },
        "$ref": "#/$defs/Node",
    }
    raw = answer(FakeLLM(name="fake-recursive"), schema)

    depth = 0
    value = json.loads(raw)
    while isinstance(value, dict):
        value, depth = value["next"], depth + 1
    assert value is None
    assert 10 < depth < 40
