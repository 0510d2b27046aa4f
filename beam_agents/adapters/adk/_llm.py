"""`BeamAgentsLlm`: ADK's model, answered through `ctx.call_model`.

ADK hands a model google.genai contents, a config with the system
instruction, tools, sampling and, for an agent with an `output_schema`, the
response schema; the runtime's providers take the provider-neutral
`LlmRequest` (messages, tools_schema, sampling_params, output_type) and
answer text or the canonical `{"tool_calls": [...]}`. The translation is a
pure function of ADK's request, so a re-run asks with the same bytes and
the replay cache answers it.

A response schema becomes the request's `output_type`, so the provider
asks for it natively and the runtime validates (and repairs) the answer
before ADK sees it; ADK then reads the validated value as JSON.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import pydantic
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest as AdkRequest
from google.adk.models.llm_response import LlmResponse as AdkResponse
from google.genai import types

from beam_agents.adapters.adk._binding import AdkAdapterError, bound
from beam_agents.model._requests import tool_calls_answer
from beam_agents.model.messages import LlmRequest, LlmResponse
from beam_agents.model.structured import value_json

__all__ = ["BeamAgentsLlm", "to_adk_response", "to_request"]

_SAMPLING = (
    ("temperature", "temperature"),
    ("top_p", "top_p"),
    ("max_output_tokens", "max_output_tokens"),
    ("stop_sequences", "stop"),
    ("seed", "seed"),
)


class BeamAgentsLlm(BaseLlm):
    """The model an ADK agent names to run under RunAgent: `LlmAgent(model=BeamAgentsLlm())`.

    `model` is the `model_id` of the requests (what the pipeline's provider
    is asked for); `sampling` overrides the sampling the agent's
    `generate_content_config` sets, with the runtime's keys (temperature,
    top_p, max_output_tokens, stop, seed). Streaming is not offered: a
    model call is one replayable answer.
    """

    model: str = "beam-agents"
    sampling: dict[str, Any] | None = None

    @property
    def capabilities(self) -> Any:
        """No output schema beside tools: ADK then offers the schema as its own tool.

        The runtime validates every answer of a structured request against
        its schema, so a request carrying tools too could not be answered
        with a tool call. Declared here, not guessed from the model's name
        (ADK's fallback, which says yes to Gemini names on Vertex AI).
        """
        from google.adk.models import LlmCapabilities

        return LlmCapabilities(output_schema_and_tools=False)

    async def generate_content_async(
        self, llm_request: AdkRequest, stream: bool = False
    ) -> AsyncGenerator[AdkResponse, None]:
        ctx = bound().ctx
        answer = await ctx.call_model(to_request(llm_request, self.model, self.sampling))
        yield to_adk_response(answer)


def to_request(
    request: AdkRequest, model_id: str, sampling: Mapping[str, Any] | None = None
) -> LlmRequest:
    """ADK's request as the runtime's: deterministic, JSON-only, ids left out."""
    config = request.config
    messages: list[dict[str, Any]] = []
    system = _system_text(config.system_instruction if config is not None else None)
    if system:
        messages.append({"role": "system", "content": system})
    for index, content in enumerate(request.contents):
        messages.extend(_messages(index, content))
    tools = _tools_schema(config.tools if config is not None else None)
    params = _sampling(config)
    params.update(sampling or {})
    output_type = _output_type(config)
    if output_type is not None and tools:
        raise AdkAdapterError(
            "the request carries a response schema and tools together: a structured answer "
            "cannot be a tool call. This ADK decides by the model's name whether a model "
            "takes both; name a model that is not a Gemini model on Vertex AI, or upgrade ADK"
        )
    return LlmRequest(
        model_id=model_id,
        messages=messages,
        tools_schema=tools or None,
        sampling_params=params or None,
        output_type=output_type,
    )


def to_adk_response(answer: LlmResponse) -> AdkResponse:
    """The runtime's answer as ADK's: function calls for a tool-call answer, else text.

    A structured answer's text is its validated value as JSON, which ADK's
    own `output_schema` handling parses.
    """
    if answer.parsed is not None:
        text, calls = value_json(answer.parsed), None
    else:
        text = answer.response.decode("utf-8", errors="replace")
        calls = _tool_calls(text)
    if calls is None:
        parts = [types.Part(text=text)]
    else:
        parts = [
            types.Part(function_call=types.FunctionCall(name=name, args=args))
            for name, args in calls
        ]
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=answer.input_tokens,
        candidates_token_count=answer.output_tokens,
        total_token_count=answer.input_tokens + answer.output_tokens,
    )
    return AdkResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage)


def _system_text(instruction: object) -> str:
    if instruction is None:
        return ""
    if isinstance(instruction, str):
        return instruction
    if isinstance(instruction, types.Content):
        return "".join(part.text or "" for part in instruction.parts or [])
    if isinstance(instruction, types.Part):
        return instruction.text or ""
    if isinstance(instruction, list):
        return "".join(_system_text(item) for item in instruction)
    raise AdkAdapterError(f"system instruction of type {type(instruction).__name__} is not text")


def _messages(index: int, content: types.Content) -> list[dict[str, Any]]:
    """One ADK content as runtime messages: text turns, a tool-call turn, tool results."""
    texts: list[str] = []
    calls: list[tuple[str, dict[str, Any]]] = []
    results: list[dict[str, Any]] = []
    for number, part in enumerate(content.parts or []):
        if part.thought:
            continue
        if part.function_call is not None:
            calls.append((part.function_call.name or "", dict(part.function_call.args or {})))
        elif part.function_response is not None:
            response = part.function_response
            results.append(
                {
                    "role": "tool",
                    "name": response.name or "",
                    "tool_call_id": f"call_{len(results)}",
                    "content": _canonical(response.response or {}),
                }
            )
        elif part.text is not None:
            texts.append(part.text)
        else:
            kinds = sorted(
                key for key, value in part.model_dump(exclude_none=True).items() if value
            )
            raise AdkAdapterError(
                f"contents[{index}].parts[{number}] holds {kinds}: only text, function calls "
                "and function responses reach a model through the runtime"
            )
    role = "assistant" if content.role == "model" else "user"
    if calls:
        answer = tool_calls_answer(calls).decode("utf-8")
        return [
            {
                "role": "assistant",
                "content": answer,
                "tool_calls": [
                    {
                        "id": f"call_{n}",
                        "type": "function",
                        "function": {"name": name, "arguments": _canonical(args)},
                    }
                    for n, (name, args) in enumerate(calls)
                ],
            },
            *results,
        ]
    messages: list[dict[str, Any]] = []
    if texts:
        messages.append({"role": role, "content": "".join(texts)})
    messages.extend(results)
    return messages


def _tools_schema(tools: object) -> list[dict[str, Any]]:
    declarations: list[dict[str, Any]] = []
    for tool in tools or []:  # type: ignore[attr-defined]
        if not isinstance(tool, types.Tool):
            raise AdkAdapterError(f"a tool of type {type(tool).__name__} cannot be declared")
        for declaration in tool.function_declarations or []:
            body: dict[str, Any] = {"name": declaration.name}
            if declaration.description:
                body["description"] = declaration.description
            if declaration.parameters_json_schema is not None:
                body["parameters"] = declaration.parameters_json_schema
            elif declaration.parameters is not None:
                body["parameters"] = _json_schema(
                    declaration.parameters.model_dump(mode="json", exclude_none=True)
                )
            declarations.append(body)
    return declarations


def _json_schema(schema: Any) -> Any:
    """A genai `Schema` dump as JSON Schema: its types are upper-case names there."""
    if isinstance(schema, dict):
        return {
            key: value.lower() if key == "type" and isinstance(value, str) else _json_schema(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [_json_schema(item) for item in schema]
    return schema


def _output_type(config: types.GenerateContentConfig | None) -> Any:
    """The response schema ADK set (from `LlmAgent.output_schema`) as an `output_type`.

    A pydantic model (or dataclass) is passed as it is, so the answer comes
    back as one; a genai `Schema`, a raw JSON Schema or a list type become
    a JSON Schema, and the answer comes back as plain JSON values.
    """
    if config is None:
        return None
    if config.response_json_schema is not None:
        return _schema_mapping(config.response_json_schema)
    schema = config.response_schema
    if schema is None:
        return None
    if isinstance(schema, types.Schema):
        return schema.json_schema.model_dump(mode="json", exclude_none=True, by_alias=True)
    if isinstance(schema, type):
        return schema
    if isinstance(schema, Mapping):
        return _schema_mapping(schema)
    generic: Any = schema  # a list type (`list[Model]`, `list[str]`), which has no class
    try:
        return pydantic.TypeAdapter(generic).json_schema()
    except (TypeError, pydantic.PydanticSchemaGenerationError) as exc:
        raise AdkAdapterError(f"output_schema {schema!r:.80} has no JSON Schema: {exc}") from None


def _schema_mapping(schema: object) -> dict[str, Any]:
    if not isinstance(schema, Mapping):
        raise AdkAdapterError(
            f"response_json_schema must be a JSON Schema object, got {type(schema).__name__}"
        )
    converted: dict[str, Any] = _json_schema(dict(schema))
    return converted


def _sampling(config: types.GenerateContentConfig | None) -> dict[str, Any]:
    if config is None:
        return {}
    params: dict[str, Any] = {}
    for theirs, ours in _SAMPLING:
        value = getattr(config, theirs)
        if value is not None:
            params[ours] = list(value) if isinstance(value, list) else value
    return params


def _tool_calls(text: str) -> list[tuple[str, dict[str, Any]]] | None:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or set(data) != {"tool_calls"}:
        return None
    calls = data["tool_calls"]
    if not isinstance(calls, list) or not calls:
        return None
    parsed: list[tuple[str, dict[str, Any]]] = []
    for call in calls:
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            return None
        args = call.get("arguments", {})
        if not isinstance(args, dict):
            return None
        parsed.append((call["name"], args))
    return parsed


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
