"""BeamAgentsChatModel: a LangChain chat model whose every call is `ctx.call_model`.

The graph's model node calls it like any chat model (`invoke`, `ainvoke`,
`bind_tools`, `with_structured_output`); each call becomes one `LlmRequest`
to the pipeline's provider, so it is replay-cached, parked when slow,
counted and budgeted.

Messages map onto the provider-neutral request shapes: a tool-call turn is
the canonical `{"tool_calls": [...]}` answer (which Gemini reads back as
function calls) and also carries OpenAI's `tool_calls` with their ids; a
tool result names its tool (Gemini) and its call id (OpenAI). Providers
answer tool calls without ids, so the ids are derived from the request and
the answer: a replayed answer gets the same ids, which keeps the
checkpoint, and the requests that follow, byte-identical across re-runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

from beam_agents.adapters.langgraph._run import NotInActivationError, current_run
from beam_agents.adapters.langgraph._structured import output_type_of, structured_runnable
from beam_agents.model._requests import tool_calls_answer
from beam_agents.model.messages import LlmRequest, LlmResponse, canonical_request_bytes
from beam_agents.model.structured import output_schema, value_json

__all__ = ["BeamAgentsChatModel", "to_request_messages"]

_SAMPLING = {"temperature": "temperature", "top_p": "top_p", "max_tokens": "max_output_tokens"}


class BeamAgentsChatModel(BaseChatModel):
    """The chat model of a graph run by `graph_agent`: it asks through `ctx.call_model`.

    `model_id` names the model in the request (spans, counters, replay keys);
    which model answers is the pipeline's `AgentConfig.provider_factory`.
    """

    model_id: str = "langgraph"
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None

    @property
    def _llm_type(self) -> str:
        return "beam-agents"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_id": self.model_id}

    def bind_tools(
        self,
        tools: Sequence[Any],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """Offer `tools` (LangChain tools, functions or schemas) to the model on every call."""
        if tool_choice not in (None, "auto"):
            raise ValueError(
                f"BeamAgentsChatModel.bind_tools: tool_choice={tool_choice!r} is not supported "
                "(the providers let the model choose)"
            )
        schema = [convert_to_openai_tool(tool)["function"] for tool in tools]
        return self.bind(tools_schema=schema, **kwargs)

    def with_structured_output(
        self,
        schema: Any,
        *,
        include_raw: bool = False,
        method: str | None = None,
        strict: bool | None = None,
    ) -> Any:
        """A runnable whose answer is a value of `schema`, asked for as the request's output type.

        `schema`: a pydantic model, a dataclass or a NamedTuple (the value
        is one), a TypedDict, a JSON Schema or an OpenAI function schema
        (the value is a dict). The provider asks for the schema natively
        where it can, whatever `method` says; `strict` is the runtime's
        always: an answer that does not validate is re-asked, then fails
        the activation as `output_invalid`, never reaching the graph.
        With `include_raw`, `{"raw", "parsed", "parsing_error"}` as
        LangChain gives it (`parsing_error` is always None).
        """
        output_type = output_type_of(schema)
        structured = output_schema(output_type)  # an unusable schema fails here, not per call
        return structured_runnable(
            self.bind(output_type=output_type), structured, include_raw=include_raw
        )

    async def ainvoke(
        self, input: Any, config: Any = None, *, stop: list[str] | None = None, **kwargs: Any
    ) -> AIMessage:
        """Ask the model once, straight to `_agenerate`.

        LangChain's own path gathers calls with `return_exceptions=True` and
        then reads anything not an `Exception` as a result: the runtime's
        park signal (a `BaseException`, which agent code must not swallow)
        would surface as an `AttributeError`. Callbacks do not see these calls.
        """
        messages = self._convert_input(input).to_messages()
        result = await self._agenerate(messages, stop=stop, **kwargs)
        message: AIMessage = result.generations[0].message
        return message

    def invoke(
        self, input: Any, config: Any = None, *, stop: list[str] | None = None, **kwargs: Any
    ) -> AIMessage:
        """The sync `ainvoke` (a sync node, run in an executor thread)."""
        messages = self._convert_input(input).to_messages()
        message: AIMessage = self._generate(messages, stop=stop, **kwargs).generations[0].message
        return message

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        """The sync path (a sync node, run in an executor thread): the call runs on the
        activation's loop, which waits for the node meanwhile."""
        run = current_run("BeamAgentsChatModel")
        try:
            on_loop = asyncio.get_running_loop() is run.loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            raise NotInActivationError(
                "BeamAgentsChatModel.invoke was called on the activation's event loop: "
                "use `await model.ainvoke(...)` in an async node"
            )
        future = asyncio.run_coroutine_threadsafe(
            self._agenerate(messages, stop=stop, **kwargs), run.loop
        )
        result: ChatResult = future.result()
        return result

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        run = current_run("BeamAgentsChatModel")
        request = LlmRequest(
            model_id=self.model_id,
            messages=to_request_messages(messages),
            tools_schema=kwargs.get("tools_schema") or None,
            sampling_params=self._sampling(stop) or None,
            output_type=kwargs.get("output_type"),
        )
        response = await run.ctx.call_model(request)
        run.model_calls += 1
        digest = hashlib.sha256(
            canonical_request_bytes(request) + b"\0" + response.response
        ).hexdigest()
        return ChatResult(generations=[ChatGeneration(message=_to_message(response, digest))])

    def _sampling(self, stop: list[str] | None) -> dict[str, Any]:
        params: dict[str, Any] = {
            ours: getattr(self, field)
            for field, ours in _SAMPLING.items()
            if getattr(self, field) is not None
        }
        if self.seed is not None:
            params["seed"] = self.seed
        if stop:
            params["stop"] = list(stop)
        return params


def _text(content: Any) -> str:
    """A message's text: a str, or the text blocks of a content list, joined."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or ():
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            kind = block.get("type") if isinstance(block, Mapping) else type(block).__name__
            raise ValueError(f"BeamAgentsChatModel sends text only; got a {kind!r} content block")
    return "".join(parts)


def to_request_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as the provider-neutral `{"role", "content", ...}` dicts."""
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            out.append({"role": "system", "content": _text(message.content)})
        elif isinstance(message, HumanMessage):
            out.append({"role": "user", "content": _text(message.content)})
        elif isinstance(message, AIMessage) and message.tool_calls:
            calls = [(call["name"], call["args"]) for call in message.tool_calls]
            for call in message.tool_calls:
                names[str(call["id"])] = call["name"]
            out.append(
                {
                    "role": "assistant",
                    "content": tool_calls_answer(calls).decode("utf-8"),
                    "tool_calls": [
                        {
                            "id": call["id"],
                            "type": "function",
                            "function": {
                                "name": call["name"],
                                "arguments": json.dumps(
                                    call["args"], sort_keys=True, separators=(",", ":")
                                ),
                            },
                        }
                        for call in message.tool_calls
                    ],
                }
            )
        elif isinstance(message, AIMessage):
            out.append({"role": "assistant", "content": _text(message.content)})
        elif isinstance(message, ToolMessage):
            name = message.name or names.get(message.tool_call_id, "")
            out.append(
                {
                    "role": "tool",
                    "name": name,
                    "tool_call_id": message.tool_call_id,
                    "content": _text(message.content),
                }
            )
        else:
            raise ValueError(
                f"BeamAgentsChatModel cannot send a {type(message).__name__} "
                "(system, human, AI and tool messages only)"
            )
    return out


def _tool_calls(response: bytes) -> list[tuple[str, dict[str, Any]]] | None:
    """The calls of a canonical tool-call answer, or None for a text answer."""
    if not response.startswith(b'{"tool_calls":'):
        return None
    try:
        body = json.loads(response)
    except ValueError:
        return None
    if not isinstance(body, dict) or set(body) != {"tool_calls"}:
        return None
    calls = body["tool_calls"]
    if not isinstance(calls, list):
        return None
    return [(str(call["name"]), dict(call["arguments"])) for call in calls]


def _to_message(response: LlmResponse, digest: str) -> AIMessage:
    """The provider's answer as an AIMessage whose ids derive from `digest`."""
    usage = {
        "input_tokens": response.input_tokens,
        "output_tokens": response.output_tokens,
        "total_tokens": response.input_tokens + response.output_tokens,
    }
    metadata = {"model_id": response.model_id}
    if response.parsed is not None:
        # The validated value, not the raw text (which may wrap it in prose).
        return AIMessage(
            content=value_json(response.parsed),
            id=f"lc-beam-{digest[:32]}",
            usage_metadata=usage,
            response_metadata=metadata,
        )
    calls = _tool_calls(response.response)
    if calls is None:
        return AIMessage(
            content=response.response.decode("utf-8", "replace"),
            id=f"lc-beam-{digest[:32]}",
            usage_metadata=usage,
            response_metadata=metadata,
        )
    return AIMessage(
        content="",
        id=f"lc-beam-{digest[:32]}",
        tool_calls=[
            {"name": name, "args": args, "id": f"call_{digest[:20]}_{index}", "type": "tool_call"}
            for index, (name, args) in enumerate(calls)
        ],
        usage_metadata=usage,
        response_metadata=metadata,
    )
