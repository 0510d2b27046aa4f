"""Tools of a graph: side-effecting ones through `ctx.call_tool`, read-only ones in place.

`graph_agent` gives each `ToolNode` of the graph a copy whose tools are
stand-ins: a stand-in asks `ctx.call_tool(name, args)`, so the call is
claimed in the tool ledger and executed once across retries and re-runs,
and its result is replayed when the activation runs again. What executes
is the pipeline's handler for that name: `tool_handlers(tools)` makes
handlers that run the user's own LangChain tools, outside the graph.
Tools the user declares read-only stay as they are and run in place.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import hashlib
import importlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolNode

from beam_agents.adapters.langgraph._run import NotInActivationError, current_run
from beam_agents.errors import ConfigurationError
from beam_agents.tools.calls import ToolCall, ToolHandler

__all__ = ["LangChainToolHandler", "routed_builder", "tool_handlers", "tool_node_names"]


class _CallTool(BaseTool):
    """Stands in for a side-effecting tool inside a `ToolNode`: asks `ctx.call_tool`."""

    def _run(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - ainvoke is used
        raise NotImplementedError

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
        raise NotImplementedError

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        run = current_run(f"tool {self.name!r}")
        try:
            on_loop = asyncio.get_running_loop() is run.loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            raise NotInActivationError(
                f"tool {self.name!r} was invoked synchronously on the activation's loop"
            )
        return asyncio.run_coroutine_threadsafe(self.ainvoke(input, config), run.loop).result()

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        run = current_run(f"tool {self.name!r}")
        call_id: str | None = None
        args = input
        if isinstance(input, Mapping) and input.get("type") == "tool_call":
            call_id, args = input.get("id"), input.get("args", {})
        async with run.tool_turn:
            result = await run.ctx.call_tool(self.name, dict(args))
        content = result.decode("utf-8", "replace")
        if call_id is None:
            return content
        digest = hashlib.sha256(f"{call_id}\0{self.name}".encode()).hexdigest()[:32]
        return ToolMessage(
            content=content, tool_call_id=call_id, name=self.name, id=f"lc-beam-tool-{digest}"
        )


def _stand_in(tool: BaseTool) -> BaseTool:
    return _CallTool(name=tool.name, description=tool.description, args_schema=tool.args_schema)


def tool_node_names(builder: Any) -> frozenset[str]:
    """The names of the tools of the builder's ToolNodes."""
    return frozenset(
        name
        for spec in builder.nodes.values()
        if isinstance(spec.runnable, ToolNode)
        for name in spec.runnable.tools_by_name
    )


def routed_builder(builder: Any, read_only: frozenset[str]) -> Any:
    """A shallow copy of `builder` whose ToolNodes call side-effecting tools through the ledger."""
    routed = copy.copy(builder)
    routed.nodes = dict(builder.nodes)
    for name, spec in builder.nodes.items():
        node = spec.runnable
        if not isinstance(node, ToolNode):
            continue
        tools = getattr(node, "_tools_by_name", None)
        if not isinstance(tools, dict):
            raise ConfigurationError(
                f"graph node {name!r}",
                "this langgraph version's ToolNode keeps its tools where the adapter cannot "
                "reach them; install a version in the langgraph extra's range",
            )
        # A new ToolNode, not a copy: a copy's node functions stay bound to the original.
        copied = ToolNode(
            [
                tool if tool_name in read_only else _stand_in(tool)
                for tool_name, tool in tools.items()
            ],
            name=node.name,
            tags=node.tags,
            handle_tool_errors=node._handle_tool_errors,
            messages_key=node._messages_key,
            wrap_tool_call=node._wrap_tool_call,
            awrap_tool_call=node._awrap_tool_call,
        )
        routed.nodes[name] = dataclasses.replace(spec, runnable=copied)
    return routed


class LangChainToolHandler(ToolHandler):
    """Runs one LangChain tool as a pipeline tool handler (`AgentConfig.tools`).

    The tool receives the call's intent id as its tool call id, so a tool that
    declares an `InjectedToolCallId` argument gets the idempotency key. Its
    result becomes the bytes `ctx.call_tool` returns: text as UTF-8, anything
    else as canonical JSON. Pickled by reference (module and name) when the
    tool is a module-level name, as `@tool` functions usually are.
    """

    def __init__(self, tool: BaseTool) -> None:
        if not isinstance(tool, BaseTool):
            raise ConfigurationError(
                "tool_handlers", f"takes LangChain tools, got {type(tool).__name__}"
            )
        self.tool = tool

    async def __call__(self, call: ToolCall) -> bytes:
        output = await self.tool.ainvoke(
            {
                "name": self.tool.name,
                "args": dict(call.args),
                "id": call.intent_id,
                "type": "tool_call",
            }
        )
        if isinstance(output, ToolMessage):
            output = output.content
        if isinstance(output, str):
            return output.encode("utf-8")
        return json.dumps(output, sort_keys=True, separators=(",", ":"), default=str).encode()

    async def aclose(self) -> None:
        return None

    def __reduce__(self) -> tuple[Any, ...]:
        where = _module_name_of(self.tool)
        if where is not None:
            return (_handler_by_name, where)
        return (LangChainToolHandler, (self.tool,))

    def __repr__(self) -> str:
        return f"LangChainToolHandler({self.tool.name!r})"


def _module_name_of(tool: BaseTool) -> tuple[str, str] | None:
    function = getattr(tool, "coroutine", None) or getattr(tool, "func", None)
    module_name = getattr(function, "__module__", None)
    if not module_name:
        return None
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    for attribute, value in vars(module).items():
        if value is tool:
            return module_name, attribute
    return None


def _handler_by_name(module_name: str, attribute: str) -> LangChainToolHandler:
    return LangChainToolHandler(getattr(importlib.import_module(module_name), attribute))


def tool_handlers(tools: Iterable[BaseTool]) -> dict[str, ToolHandler]:
    """`AgentConfig.tools` entries that run these LangChain tools once per call, by name."""
    handlers: dict[str, ToolHandler] = {}
    for tool in tools:
        handler = LangChainToolHandler(tool)
        if tool.name in handlers:
            raise ConfigurationError("tool_handlers", f"two tools are named {tool.name!r}")
        handlers[tool.name] = handler
    return handlers
