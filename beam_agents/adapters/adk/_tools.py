"""ADK function tools run once: through `ctx.call_tool` and the tool ledger.

A plugin answers each ADK function-tool call before ADK runs the function:
it calls `ctx.call_tool(name, args)`, whose handler (`adk_tools(...)` in
`AgentConfig.tools`) runs the user's function once per call id, across
retries, re-runs and workers. Tools the user declares read-only, and tools
that are not plain functions, run in place as ADK runs them.

A tool that requires confirmation is left to ADK until it is confirmed:
ADK asks (the adapter turns the question into a `Suspend`), and only a
confirmed call reaches the ledger.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from google.adk.agents.base_agent import BaseAgent
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext

from beam_agents.adapters.adk._binding import bound
from beam_agents.errors import ConfigurationError
from beam_agents.tools.calls import ToolCall, ToolHandler

__all__ = ["AdkFunctionHandler", "LedgerToolsPlugin", "adk_tools", "function_tools"]

_CONTEXT_PARAMETERS = ("tool_context",)


@dataclass(frozen=True, slots=True)
class AdkFunctionHandler(ToolHandler):
    """Runs an ADK tool's Python function with the call's args; the result as canonical JSON.

    A plain function runs in a worker thread, so a blocking one does not
    hold up the call loop's other calls.
    """

    function: Callable[..., Any]

    async def __call__(self, call: ToolCall) -> bytes:
        if inspect.iscoroutinefunction(self.function):
            result = await self.function(**call.args)
        else:
            result = await asyncio.to_thread(self.function, **call.args)
        return json.dumps(
            result, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode()


class LedgerToolsPlugin(BasePlugin):
    """Routes side-effecting function-tool calls to `ctx.call_tool`."""

    def __init__(self) -> None:
        super().__init__(name="beam_agents_tool_ledger")

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        binding = bound()
        if tool.name in binding.read_only_tools or not isinstance(tool, FunctionTool):
            return None
        if _missing_arguments(tool, tool_args):
            return None  # ADK answers the model with what is missing
        if await tool.check_require_confirmation(tool_args, tool_context):
            confirmation = tool_context.tool_confirmation
            if confirmation is None or not confirmation.confirmed:
                return None  # ADK asks, or answers the rejection
        result = json.loads(await binding.ctx.call_tool(tool.name, tool_args))
        return result if isinstance(result, dict) else {"result": result}


def _missing_arguments(tool: FunctionTool, args: dict[str, Any]) -> bool:
    signature = inspect.signature(tool.func)
    return any(
        parameter.default is inspect.Parameter.empty
        and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
        and name not in _CONTEXT_PARAMETERS
        and name not in args
        for name, parameter in signature.parameters.items()
    )


def _tools_of(agent: BaseAgent) -> Iterator[tuple[str, Any]]:
    for tool in getattr(agent, "tools", ()) or ():
        yield agent.name, tool
    for sub in agent.sub_agents:
        yield from _tools_of(sub)


def function_tools(
    root_agent: BaseAgent, read_only_tools: frozenset[str]
) -> dict[str, FunctionTool]:
    """The agent tree's side-effecting function tools by name; refuses what cannot run once.

    A plain function in `tools=[...]` is wrapped as ADK wraps it. A tool
    that is not a function (a toolset, an agent as a tool, a built-in) must
    be declared read-only: the adapter cannot route it through the ledger.
    A function that takes `tool_context` must be too: its context cannot
    travel to the handler that runs it once.
    """
    found: dict[str, FunctionTool] = {}
    for agent_name, tool in _tools_of(root_agent):
        if callable(tool) and not isinstance(tool, BaseTool):
            tool = FunctionTool(tool)
        name = getattr(tool, "name", type(tool).__name__)
        if name in read_only_tools:
            continue
        where = f"{agent_name}.tools[{name!r}]"
        if not isinstance(tool, FunctionTool):
            raise ConfigurationError(
                where,
                f"is a {type(tool).__name__}, which the adapter cannot run once through the "
                "tool ledger: declare it in read_only_tools if it has no side effects",
            )
        if "tool_context" in inspect.signature(tool.func).parameters:
            raise ConfigurationError(
                where,
                "takes tool_context, which cannot reach the ledger's handler: declare it in "
                "read_only_tools, or ask for confirmation with "
                "FunctionTool(func, require_confirmation=True)",
            )
        other = found.get(name)
        if other is not None and other.func is not tool.func:
            raise ConfigurationError(where, "names two different functions in one agent tree")
        found[name] = tool
    return found


def adk_tools(
    root_agent: BaseAgent, *, read_only_tools: Sequence[str] = ()
) -> dict[str, ToolHandler]:
    """`AgentConfig.tools` for an ADK agent: one handler per side-effecting function tool."""
    tools = function_tools(root_agent, frozenset(read_only_tools))
    return {name: AdkFunctionHandler(tool.func) for name, tool in sorted(tools.items())}
