"""`McpTools` against a real MCP server, built with the official SDK, over stdio."""

from __future__ import annotations

import asyncio
import os
import pickle
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from beam_agents.errors import ConfigurationError
from beam_agents.tools import ToolCall, ToolCallError
from beam_agents.tools.mcp_tools import McpTools

SERVER = Path(__file__).parent / "servers" / "tickets_mcp.py"


@pytest.fixture
def tickets(tmp_path: Path) -> McpTools:
    log = tmp_path / "tickets.jsonl"
    return McpTools([sys.executable, str(SERVER)], env={"TICKETS_LOG": str(log)})


def _call(tool: str, **args: object) -> ToolCall:
    return ToolCall(str(uuid.uuid4()), tool, b"case-1", args)


def test_tools_and_their_schemas_are_listed(tickets: McpTools) -> None:
    async def main() -> list[dict[str, object]]:
        try:
            return await tickets.tools_schema()
        finally:
            await tickets.aclose()

    schemas = {schema["name"]: schema for schema in asyncio.run(main())}
    assert set(schemas) == {"open_ticket", "add", "escalate"}
    ticket = schemas["open_ticket"]
    assert ticket["description"] == "Open a ticket and answer its id."
    assert ticket["parameters"]["required"] == ["title"]  # type: ignore[index]
    assert set(ticket["parameters"]["properties"]) == {"title", "severity"}  # type: ignore[index]


def test_handlers_call_the_server_and_return_its_answer(tickets: McpTools, tmp_path: Path) -> None:
    async def main() -> list[bytes]:
        try:
            handlers = await tickets.handlers()
            return [
                await handlers["open_ticket"](_call("open_ticket", title="db down")),
                await handlers["open_ticket"](_call("open_ticket", title="disk", severity="P1")),
                await handlers["add"](_call("add", a=2, b=40)),
            ]
        finally:
            await tickets.aclose()

    assert asyncio.run(main()) == [b"T-1", b"T-2", b"42"]
    assert len((tmp_path / "tickets.jsonl").read_text().splitlines()) == 2


def test_a_tool_error_is_a_tool_call_error_with_the_servers_message(tickets: McpTools) -> None:
    async def main() -> bytes:
        try:
            return await tickets.handler("escalate")(_call("escalate", reason="no on-call"))
        finally:
            await tickets.aclose()

    with pytest.raises(ToolCallError, match="cannot escalate: no on-call"):
        asyncio.run(main())


def test_a_server_that_cannot_start_is_a_tool_call_error(tmp_path: Path) -> None:
    broken = McpTools([sys.executable, str(tmp_path / "missing.py")], timeout_s=10)

    async def main() -> bytes:
        try:
            return await broken.handler("add")(_call("add", a=1, b=2))
        finally:
            await broken.aclose()

    with pytest.raises(ToolCallError, match="cannot connect to MCP server"):
        asyncio.run(main())


def test_handlers_pickle_without_a_connection(tickets: McpTools) -> None:
    handler = pickle.loads(pickle.dumps(tickets.handler("add")))

    async def main() -> bytes:
        try:
            return await handler(_call("add", a=1, b=1))
        finally:
            await handler.aclose()

    assert asyncio.run(main()) == b"2"


@pytest.mark.parametrize("server", ["tickets.py", [], ["python", ""]])
def test_a_server_that_is_neither_url_nor_command_is_refused(server: object) -> None:
    with pytest.raises(ConfigurationError, match=r"McpTools\.server"):
        McpTools(server)  # type: ignore[arg-type]


@pytest.fixture
def http_tickets(tmp_path: Path) -> Iterator[str]:
    """The same server over streamable HTTP on a free loopback port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "TICKETS_LOG": str(tmp_path / "tickets.jsonl")}
    server = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the MCP HTTP server did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_tools_are_listed_and_called_over_streamable_http(http_tickets: str) -> None:
    tools = McpTools(http_tickets)

    async def main() -> tuple[list[str], bytes]:
        try:
            names = [tool.name for tool in await tools.list_tools()]
            return names, await tools.handler("add")(_call("add", a=20, b=22))
        finally:
            await tools.aclose()

    names, answer = asyncio.run(main())
    assert sorted(names) == ["add", "escalate", "open_ticket"]
    assert answer == b"42"
