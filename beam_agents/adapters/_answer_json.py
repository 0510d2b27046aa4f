"""A structured answer's value as the JSON text a framework reads back.

A structured model call returns the raw answer and its validated value. A
framework (ADK, LangChain) reads answers as text, so an adapter hands it
the value as JSON rather than the raw text: the raw text may hold prose
around the JSON (a server that ignored the schema), which the framework's
own parser would choke on. The text is a pure function of the value, and
the value of the replayed raw answer, so a re-run hands over the same text.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core

from beam_agents.model.structured import is_named_tuple

__all__ = ["answer_json"]


def answer_json(value: Any) -> str:
    """`value` (a pydantic model, dataclass, NamedTuple or plain JSON value) as compact JSON.

    Fields keep their declared order: the text reads as the schema does.
    A NamedTuple is an object with named fields, as its JSON Schema says,
    not the array pydantic would make of a tuple.
    """
    if is_named_tuple(type(value)):
        value = value._asdict()
    plain = pydantic_core.to_jsonable_python(value)
    return json.dumps(plain, separators=(",", ":"), ensure_ascii=False)
