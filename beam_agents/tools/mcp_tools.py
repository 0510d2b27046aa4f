"""`McpTools`: the tools of an MCP server, as handlers and as function schemas.

MCP is how tools are offered to agents today; this adapter lets a pipeline
call any MCP server's tools through the ledger, and hand their JSON schemas
to a model (`LlmRequest.tools_schema`). The server is a command line (a
subprocess spoken to over stdio) or an `http(s)://` URL (streamable HTTP),
through the official `mcp` SDK.

Connections. The SDK's transports are structured (anyio task groups): a
session must be opened and closed by one task. So each event loop that
uses the tools gets one connection task that opens the session, serves
every call made from that loop, and closes it when `aclose` asks; nothing
is connected until the first call. MCP has no standard idempotency key; the
intent id travels in the request's `_meta` as `idempotency_key`, for servers
that look.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from beam_agents.errors import ConfigurationError
from beam_agents.memory.stores.uri import redact_uri
from beam_agents.tools.calls import ToolCall, ToolHandler
from beam_agents.tools.errors import ToolCallError, UnknownToolError

__all__ = ["McpTool", "McpToolHandler", "McpTools"]


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool an MCP server offers."""

    name: str
    description: str
    input_schema: Mapping[str, Any]

    def function_schema(self) -> dict[str, Any]:
        """The tool as a function-calling declaration: name, description, JSON-schema parameters."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.input_schema),
        }


class _Connection:
    """One session on one loop, owned by one task (the SDK's transports require it)."""

    def __init__(self, owner: McpTools) -> None:
        self._owner = owner
        self._ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._serve(), name=f"mcp {owner!r}")

    async def session(self) -> Any:
        return await asyncio.shield(self._ready)

    async def _serve(self) -> None:
        from mcp import ClientSession

        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._owner.transport())
                session = await stack.enter_async_context(ClientSession(read, write))
                await asyncio.wait_for(session.initialize(), self._owner.timeout_s)
                self._ready.set_result(session)
                await self._stop.wait()
        except Exception as exc:
            if not self._ready.done():
                self._ready.set_exception(
                    ToolCallError(f"cannot connect to MCP server {self._owner!r}: {exc!r:.300}")
                )

    async def close(self) -> None:
        self._stop.set()
        await asyncio.wait({self._task}, timeout=self._owner.timeout_s)
        if not self._task.done():
            self._task.cancel()


class McpTools:
    """The tools of one MCP server (a command line for stdio, or a streamable-HTTP URL)."""

    def __init__(
        self,
        server: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        if isinstance(server, str):
            if not server.startswith(("http://", "https://")):
                raise ConfigurationError(
                    "McpTools.server", "a str server is an http(s):// URL; a command is a list"
                )
            self.server: str | tuple[str, ...] = server
        elif server and all(isinstance(part, str) and part for part in server):
            self.server = tuple(server)
        else:
            raise ConfigurationError("McpTools.server", "must be a URL or a non-empty command")
        if not isinstance(timeout_s, int | float) or timeout_s <= 0:
            raise ConfigurationError("McpTools.timeout_s", "must be a positive number")
        self.env = dict(env or {})
        self.timeout_s = float(timeout_s)
        self._connections: dict[asyncio.AbstractEventLoop, _Connection] = {}

    def __repr__(self) -> str:
        shown = redact_uri(self.server) if isinstance(self.server, str) else self.server[0]
        return f"McpTools({shown!r})"

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the server's address only; connections are made on the worker."""
        return {**self.__dict__, "_connections": {}}

    def transport(self) -> Any:
        """The SDK transport context for this server (stdio subprocess or streamable HTTP)."""
        if isinstance(self.server, str):
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(self.server)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        command, *args = self.server
        return stdio_client(StdioServerParameters(command=command, args=args, env=self.env))

    async def _session(self) -> Any:
        loop = asyncio.get_running_loop()
        connection = self._connections.get(loop)
        if connection is None:
            connection = self._connections[loop] = _Connection(self)
        return await connection.session()

    async def list_tools(self) -> list[McpTool]:
        """Every tool the server offers, following pagination."""
        session = await self._session()
        result = await asyncio.wait_for(session.list_tools(), self.timeout_s)
        return [
            McpTool(tool.name, tool.description or "", dict(tool.input_schema))
            for tool in result.tools
        ]

    async def tools_schema(self) -> list[dict[str, Any]]:
        """The tools as function declarations, ready for `LlmRequest.tools_schema`."""
        return [tool.function_schema() for tool in await self.list_tools()]

    def handler(self, name: str) -> McpToolHandler:
        """The handler of one tool (no I/O: the name is checked on the first call)."""
        return McpToolHandler(self, name)

    async def handlers(self) -> dict[str, ToolHandler]:
        """A handler per tool the server offers, keyed by tool name."""
        return {tool.name: self.handler(tool.name) for tool in await self.list_tools()}

    async def call(self, name: str, call: ToolCall) -> bytes:
        """Call tool `name` with the call's args; its text (or structured) content is the result."""
        session = await self._session()
        meta = {"idempotency_key": call.intent_id}
        try:
            result = await asyncio.wait_for(
                session.call_tool(name, dict(call.args), meta=meta), self.timeout_s
            )
        except TimeoutError:
            raise ToolCallError(
                f"{name}: no answer from {self!r} in {self.timeout_s:g} s"
            ) from None
        text = "\n".join(item.text for item in result.content if item.type == "text")
        if result.is_error:
            if "unknown tool" in text.lower() or "not found" in text.lower():
                raise UnknownToolError(f"{self!r} has no tool {name!r}: {text:.300}")
            raise ToolCallError(f"{name} failed on {self!r}: {text:.500}")
        if text or result.structured_content is None:
            return text.encode("utf-8")
        return json.dumps(result.structured_content, sort_keys=True).encode("utf-8")

    async def aclose(self) -> None:
        """Close this loop's session (and stop a stdio server process)."""
        connection = self._connections.pop(asyncio.get_running_loop(), None)
        if connection is not None:
            await connection.close()


@dataclass(frozen=True, slots=True)
class McpToolHandler(ToolHandler):
    """One tool of an `McpTools` server, as a `ToolHandler`."""

    tools: McpTools
    name: str

    async def __call__(self, call: ToolCall) -> bytes:
        return await self.tools.call(self.name, call)

    async def aclose(self) -> None:
        await self.tools.aclose()
