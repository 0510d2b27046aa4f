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

Secrets. `McpTools` is pickled into the job graph, so it holds where each
secret lives (`env:NAME` or a Secret Manager version), never a value: a
stdio server's secret environment (`secret_env`) and an HTTP server's secret
headers (`secret_headers`) are read on the worker when it connects. A token
in the URL is refused, and so is a plain `env` setting whose name says it is
a secret or whose value carries a credential (the shared rule of
`_connections.plain_settings`).

Trust. A server offers whatever tools it likes and may change them between
deploys. `allowed_tools` pins the tools a pipeline may call, each to its
input schema (the schema or the SHA-256 of its canonical JSON, see
`McpTool.schema_sha256`): any other tool is left out of `list_tools`,
`handlers` and `tools_schema`, and an allowed tool whose schema changed is
refused, not called.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from beam_agents._connections.plain_settings import check_plain_settings
from beam_agents._connections.secret_sources import check_secret_source, read_secret
from beam_agents._connections.url_credentials import check_url_credentials, redact_uri
from beam_agents.errors import ConfigurationError
from beam_agents.tools.calls import ToolCall, ToolHandler
from beam_agents.tools.errors import ToolCallError, UnknownToolError

__all__ = ["McpTool", "McpToolHandler", "McpTools"]


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool an MCP server offers."""

    name: str
    description: str
    input_schema: Mapping[str, Any]

    @property
    def schema_sha256(self) -> str:
        """SHA-256 of the input schema's canonical JSON: the pin for `allowed_tools`."""
        return schema_sha256(self.input_schema)

    def function_schema(self) -> dict[str, Any]:
        """The tool as a function-calling declaration: name, description, JSON-schema parameters."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.input_schema),
        }


def schema_sha256(schema: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of a JSON schema as canonical JSON: sorted keys, no spaces."""
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def _check_allowed(allowed: object) -> dict[str, str] | None:
    """`allowed_tools` as name -> pinned schema digest."""
    if allowed is None:
        return None
    if not isinstance(allowed, Mapping):
        raise ConfigurationError(
            "McpTools.allowed_tools",
            f"must map tool name to its schema or schema SHA-256, got {type(allowed).__name__}",
        )
    pins: dict[str, str] = {}
    for name, pin in allowed.items():
        field = f"McpTools.allowed_tools[{name!r}]"
        if type(name) is not str or not name:
            raise ConfigurationError(
                "McpTools.allowed_tools", "a tool name must be a non-empty str"
            )
        if isinstance(pin, Mapping):
            pins[name] = schema_sha256(pin)
        elif isinstance(pin, str) and _SHA256_HEX.fullmatch(pin):
            pins[name] = pin
        else:
            raise ConfigurationError(
                field, "must be the tool's input schema (a mapping) or its SHA-256 in hex"
            )
    return pins


class _Connection:
    """One session on one loop, owned by one task (the SDK's transports require it)."""

    def __init__(self, owner: McpTools) -> None:
        self._owner = owner
        self._ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.checked: set[str] = set()
        """Tools whose schema was checked against `allowed_tools` on this connection."""
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._serve(), name=f"mcp {owner!r}")

    async def session(self) -> Any:
        return await asyncio.shield(self._ready)

    async def _serve(self) -> None:
        from mcp import ClientSession

        try:
            async with AsyncExitStack() as stack:
                await self._owner.read_secrets()
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
        secret_env: Mapping[str, str] | None = None,
        secret_headers: Mapping[str, str] | None = None,
        allowed_tools: Mapping[str, str | Mapping[str, Any]] | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self._secret_env = {
            name: check_secret_source(f"McpTools.secret_env[{name!r}]", source)
            for name, source in (secret_env or {}).items()
        }
        self._secret_headers = {
            name: check_secret_source(f"McpTools.secret_headers[{name!r}]", source)
            for name, source in (secret_headers or {}).items()
        }
        if isinstance(server, str):
            if not server.startswith(("http://", "https://")):
                raise ConfigurationError(
                    "McpTools.server", "a str server is an http(s):// URL; a command is a list"
                )
            check_url_credentials(
                "McpTools.server",
                server,
                secret_rides=bool(self._secret_headers),
                hint="use secret_headers",
            )
            if self._secret_env:
                raise ConfigurationError(
                    "McpTools.secret_env",
                    "is for a stdio server; an HTTP server takes secret_headers",
                )
            self.server: str | tuple[str, ...] = server
        elif server and all(isinstance(part, str) and part for part in server):
            self.server = tuple(server)
        else:
            raise ConfigurationError("McpTools.server", "must be a URL or a non-empty command")
        if isinstance(self.server, tuple) and self._secret_headers:
            raise ConfigurationError(
                "McpTools.secret_headers", "is for an HTTP server; a stdio server takes secret_env"
            )
        if not isinstance(timeout_s, int | float) or timeout_s <= 0:
            raise ConfigurationError("McpTools.timeout_s", "must be a positive number")
        self.env = check_plain_settings("McpTools.env", env, twin="secret_env")
        self.allowed_tools = _check_allowed(allowed_tools)
        self.timeout_s = float(timeout_s)
        self._secret_values: dict[str, dict[str, str]] | None = None
        self._connections: dict[asyncio.AbstractEventLoop, _Connection] = {}

    def __repr__(self) -> str:
        shown = redact_uri(self.server) if isinstance(self.server, str) else self.server[0]
        return f"McpTools({shown!r})"

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the server's address and secret sources only; no value read here."""
        return {**self.__dict__, "_connections": {}, "_secret_values": None}

    async def read_secrets(self) -> None:
        """Read the secret env and headers where the server is reached (once per process)."""
        if self._secret_values is None:
            self._secret_values = {
                "env": {
                    name: await read_secret(f"McpTools.secret_env[{name!r}]", source)
                    for name, source in self._secret_env.items()
                },
                "headers": {
                    name: await read_secret(f"McpTools.secret_headers[{name!r}]", source)
                    for name, source in self._secret_headers.items()
                },
            }

    def transport(self) -> Any:
        """The SDK transport context for this server (stdio subprocess or streamable HTTP).

        Secrets must have been read (`read_secrets`) when there are any.
        """
        secrets = self._secret_values or {"env": {}, "headers": {}}
        if isinstance(self.server, str):
            return _http_transport(self.server, secrets["headers"])
        from mcp.client.stdio import StdioServerParameters, stdio_client

        command, *args = self.server
        env = {**self.env, **secrets["env"]}
        return stdio_client(StdioServerParameters(command=command, args=args, env=env))

    async def _session(self) -> Any:
        loop = asyncio.get_running_loop()
        connection = self._connections.get(loop)
        if connection is None:
            connection = self._connections[loop] = _Connection(self)
        return await connection.session()

    async def list_tools(self) -> list[McpTool]:
        """Every tool the server offers and `allowed_tools` allows, schemas checked.

        Raises `ToolCallError` when an allowed tool's schema is not the pinned one.
        """
        session = await self._session()
        result = await asyncio.wait_for(session.list_tools(), self.timeout_s)
        offered = [
            McpTool(tool.name, tool.description or "", dict(tool.input_schema))
            for tool in result.tools
        ]
        if self.allowed_tools is None:
            return offered
        allowed = [tool for tool in offered if tool.name in self.allowed_tools]
        for tool in allowed:
            self._check_schema(tool)
        return allowed

    def _check_schema(self, tool: McpTool) -> None:
        pinned = (self.allowed_tools or {}).get(tool.name)
        if pinned is not None and tool.schema_sha256 != pinned:
            raise ToolCallError(
                f"{self!r} offers {tool.name!r} with an input schema other than the one "
                f"allowed_tools pins (sha256 {tool.schema_sha256[:16]}..., pinned "
                f"{pinned[:16]}...): refusing to call it; review the change and update the pin"
            )

    async def _checked(self, name: str) -> None:
        """Before calling `name`: the server's schema for it is the pinned one (once per loop)."""
        connection = self._connections[asyncio.get_running_loop()]
        if name in connection.checked:
            return
        for tool in await self.list_tools():
            if tool.name == name:
                connection.checked.add(name)
                return
        raise UnknownToolError(f"{self!r} offers no tool {name!r}")

    async def tools_schema(self) -> list[dict[str, Any]]:
        """The tools as function declarations, ready for `LlmRequest.tools_schema`."""
        return [tool.function_schema() for tool in await self.list_tools()]

    def handler(self, name: str) -> McpToolHandler:
        """The handler of one tool (no I/O: the name is checked on the first call)."""
        self._refuse_unlisted(name)
        return McpToolHandler(self, name)

    def _refuse_unlisted(self, name: str) -> None:
        if self.allowed_tools is not None and name not in self.allowed_tools:
            raise ConfigurationError(
                "McpTools.allowed_tools",
                f"{name!r} is not allowed on {self!r} (allowed: {sorted(self.allowed_tools)})",
            )

    async def handlers(self) -> dict[str, ToolHandler]:
        """A handler per tool the server offers, keyed by tool name."""
        return {tool.name: self.handler(tool.name) for tool in await self.list_tools()}

    async def call(self, name: str, call: ToolCall) -> bytes:
        """Call tool `name` with the call's args; its text (or structured) content is the result."""
        self._refuse_unlisted(name)
        session = await self._session()
        if self.allowed_tools is not None:
            await self._checked(name)
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


@asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """Streamable HTTP with the secret headers on every request, over a client it closes."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=headers or None) as client,
        streamable_http_client(url, http_client=client) as streams,
    ):
        yield streams


@dataclass(frozen=True, slots=True)
class McpToolHandler(ToolHandler):
    """One tool of an `McpTools` server, as a `ToolHandler`."""

    tools: McpTools
    name: str

    async def __call__(self, call: ToolCall) -> bytes:
        return await self.tools.call(self.name, call)

    async def aclose(self) -> None:
        await self.tools.aclose()
