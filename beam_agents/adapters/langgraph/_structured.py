"""`with_structured_output` for `BeamAgentsChatModel`: the schema goes as the output type.

LangChain's default makes a structured call a forced tool call, which the
providers here do not offer (they let the model choose). The schema goes
instead as `LlmRequest.output_type`: the provider asks for it natively
(or by its documented prompt-and-extract fallback), and the runtime
validates the answer, re-asks with the errors, and dead-letters the
activation `output_invalid` when the repairs are spent, so the graph only
ever sees a valid value. The chat model's message holds that value as
JSON, which the parser here reads back into the schema's type.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableLambda, RunnableMap, RunnablePassthrough
from langchain_core.utils.function_calling import convert_to_json_schema

from beam_agents.model.structured import OutputSchema

__all__ = ["output_type_of", "structured_runnable"]


def output_type_of(schema: Any) -> Any:
    """LangChain's structured-output schema as an `LlmRequest.output_type`.

    A pydantic model, a dataclass or a NamedTuple stays itself (the value
    comes back as one); a TypedDict, a JSON Schema or an OpenAI function
    schema becomes a JSON Schema (the value comes back as a dict, as
    LangChain returns it for those).
    """
    if isinstance(schema, type) and typing.is_typeddict(schema):
        converted = convert_to_json_schema(schema)
        if converted.get("description") == dict.__doc__:
            # A TypedDict without a docstring inherits dict's: no description for a model.
            del converted["description"]
        return converted
    if isinstance(schema, Mapping):
        return convert_to_json_schema(dict(schema))
    return schema


def structured_runnable(bound: Any, schema: OutputSchema, *, include_raw: bool) -> Any:
    """`bound` (the model, bound to the output type) followed by the parser of its answer."""
    parse = RunnableLambda(lambda message: _value(schema, message))
    if not include_raw:
        return bound | parse
    # The runtime has validated the answer before the parser sees it: nothing is left to fail.
    return RunnableMap(raw=bound) | RunnablePassthrough.assign(
        parsed=lambda fields: _value(schema, fields["raw"]), parsing_error=lambda _: None
    )


def _value(schema: OutputSchema, message: BaseMessage) -> Any:
    """The validated value the chat model put in `message`, as the schema's type."""
    content = message.content
    text = content if isinstance(content, str) else ""
    return schema.read(text.encode("utf-8"))
