"""What an agent sends to a model and gets back.

Requests are plain data so they can be hashed canonically: the replay cache
keys every call by the content of its request, which only works if the same
request always serializes to the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "STOP_LENGTH",
    "STOP_REFUSED",
    "EmbedRequest",
    "LlmRequest",
    "LlmResponse",
    "canonical_request_bytes",
]

STOP_LENGTH: Final = "length"
"""The answer was cut off at the output token limit: what it holds is a fragment."""
STOP_REFUSED: Final = "refused"
"""The model declined to answer (a refusal, a safety or content filter): the text says why."""


@dataclass(frozen=True, slots=True)
class LlmRequest:
    """One model call: JSON-serializable messages, tools and sampling parameters.

    `output_type` asks for a structured answer: a pydantic model, a dataclass,
    a `typing.NamedTuple` or a JSON Schema mapping. The provider asks for it
    natively where it can; the runtime validates the answer, re-asks with the
    errors, and hands the validated value back as `LlmResponse.parsed`.
    """

    model_id: str
    messages: Sequence[Any]
    tools_schema: Mapping[str, Any] | Sequence[Any] | None = None
    sampling_params: Mapping[str, Any] | None = None
    output_type: Any = None


@dataclass(frozen=True, slots=True)
class EmbedRequest(LlmRequest):
    """An embedding call: `messages` are the texts, `model_id` the embedder's.

    A kind of model request, so an embedding is replay-cached, parked,
    counted and budgeted by the same path as a chat call. Its answer is an
    `LlmResponse` whose bytes are the float32 vectors, one after another.
    """


@dataclass(frozen=True, slots=True)
class LlmResponse:
    """A model's answer: the raw response bytes plus token accounting.

    `stop_reason` is "" for an answer the model finished, `STOP_LENGTH` or
    `STOP_REFUSED` otherwise; it is replayed with the answer. `parsed` is the
    validated value of a structured call (see `LlmRequest.output_type`),
    never stored: the runtime validates the replayed bytes again, which is
    deterministic, so a re-run sees the same value.
    """

    response: bytes
    model_id: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str = ""
    parsed: Any = field(default=None, compare=False)


def canonical_request_bytes(request: LlmRequest) -> bytes:
    """Deterministic bytes of a request: sorted keys, no insignificant whitespace.

    Raises TypeError naming the problem when the request holds something JSON
    cannot represent: such a request could not be hashed stably, so it could
    never be replayed from the cache.
    """
    if not isinstance(request, LlmRequest):
        raise TypeError(f"call_model takes an LlmRequest, got {type(request).__name__}")
    body: dict[str, Any] = {
        "model_id": request.model_id,
        "messages": list(request.messages),
        "tools_schema": request.tools_schema,
        "sampling_params": request.sampling_params,
    }
    if isinstance(request, EmbedRequest):
        # Only here: a chat request's bytes (and so its replay key) stay as they were.
        body["kind"] = "embed"
    if request.output_type is not None:
        # Imported here: the schema module needs pydantic, which plain calls never load.
        from beam_agents.model.structured import output_schema

        body["output_schema"] = output_schema(request.output_type).wire()
    try:
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"LlmRequest is not JSON-serializable: {exc}") from None
    except RecursionError:
        raise TypeError("LlmRequest is not JSON-serializable: nested too deeply") from None
    return text.encode("utf-8")
