"""`McpTools` against a real MCP server, built with the official SDK, over stdio."""

from __future__ import annotations

import asyncio
import hashlib
import os
import pickle
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from beam_agents.errors import ConfigurationError
from beam_agents.tools import ToolCall, ToolCallError, UnknownToolError
from beam_agents.tools.mcp_tools import McpTools, schema_sha256

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


@contextmanager
def _http_server(tmp_path: Path, **extra_env: str) -> Iterator[str]:
    """The tickets server over streamable HTTP on a free loopback port; yields its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "TICKETS_LOG": str(tmp_path / "tickets.jsonl"), **extra_env}
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


@pytest.fixture
def http_tickets(tmp_path: Path) -> Iterator[str]:
    """The same server over streamable HTTP on a free loopback port."""
    with _http_server(tmp_path) as url:
        yield url


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


# --- secrets: read on the worker, never in the pickled graph --------------------------------

TOKEN = "mcp-Tok3n-9f2c41"
TOKEN_SHA256 = hashlib.sha256(TOKEN.encode()).hexdigest()


def _add(tools: McpTools) -> bytes:
    async def main() -> bytes:
        try:
            return await tools.handler("add")(_call("add", a=40, b=2))
        finally:
            await tools.aclose()

    return asyncio.run(main())


def test_a_stdio_servers_secret_env_is_read_on_the_worker_and_never_pickled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server exits unless it gets the token; the pickled handler holds only `env:NAME`."""
    tools = McpTools(
        [sys.executable, str(SERVER)],
        env={"TICKETS_LOG": str(tmp_path / "t.jsonl"), "TICKETS_TOKEN_SHA256": TOKEN_SHA256},
        secret_env={"TICKETS_TOKEN": "env:WORKER_TICKETS_TOKEN"},
    )
    staged = pickle.dumps(tools.handler("add"))
    monkeypatch.setenv("WORKER_TICKETS_TOKEN", TOKEN)  # set on the worker only

    worker = pickle.loads(staged).tools
    assert _add(worker) == b"42"
    assert TOKEN.encode() not in staged
    assert TOKEN not in repr(worker)
    assert TOKEN.encode() not in pickle.dumps(worker), "a used McpTools pickles no value either"


def test_a_stdio_server_without_its_secret_cannot_be_reached(tmp_path: Path) -> None:
    tools = McpTools(
        [sys.executable, str(SERVER)],
        env={"TICKETS_LOG": str(tmp_path / "t.jsonl"), "TICKETS_TOKEN_SHA256": TOKEN_SHA256},
        secret_env={"TICKETS_TOKEN": "env:NO_SUCH_WORKER_VAR"},
    )
    with pytest.raises(ToolCallError, match="NO_SUCH_WORKER_VAR is not set"):
        _add(tools)


def test_an_http_servers_secret_header_is_sent_and_never_pickled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _http_server(tmp_path, TICKETS_TOKEN_SHA256=TOKEN_SHA256) as url:
        refused = McpTools(url, timeout_s=10)
        with pytest.raises(ToolCallError, match="cannot connect"):
            _add(refused)

        tools = McpTools(url, secret_headers={"Authorization": "env:WORKER_MCP_BEARER"})
        staged = pickle.dumps(tools)
        monkeypatch.setenv("WORKER_MCP_BEARER", f"Bearer {TOKEN}")
        assert _add(pickle.loads(staged)) == b"42"
    assert TOKEN.encode() not in staged


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"server": f"https://mcp.example.com/mcp?token={TOKEN}"}, r"McpTools\.server"),
        ({"server": f"https://{TOKEN}@mcp.example.com/mcp"}, r"McpTools\.server"),
        (
            {"server": "http://mcp.example.com/mcp", "secret_headers": {"A": "env:X"}},
            r"McpTools\.server: must be https://",
        ),
        ({"server": ["srv"], "env": {"GITHUB_TOKEN": TOKEN}}, r"McpTools\.env\['GITHUB_TOKEN'\]"),
        ({"server": ["srv"], "secret_env": {"GITHUB_TOKEN": TOKEN}}, r"McpTools\.secret_env"),
        ({"server": ["srv"], "secret_headers": {"A": "env:X"}}, r"McpTools\.secret_headers"),
        (
            {"server": "https://mcp.example.com", "secret_env": {"A": "env:X"}},
            r"McpTools\.secret_env",
        ),
        ({"server": ["srv"], "allowed_tools": {"add": "not-a-digest"}}, r"allowed_tools\['add'\]"),
    ],
)
def test_a_secret_where_it_would_be_pickled_is_refused_without_echoing_it(
    kwargs: dict[str, object], field: str
) -> None:
    with pytest.raises(ConfigurationError, match=field) as caught:
        McpTools(**kwargs)  # type: ignore[arg-type]
    assert TOKEN not in str(caught.value)


@pytest.mark.parametrize(
    "name",
    [
        "AWS_SECRET_ACCESS_KEY",
        "STRIPE_SECRET_KEY",
        "JWT_SECRET",
        "GITHUB_CLIENT_SECRET",
        "SLACK_SIGNING_SECRET",
        "NPM_AUTH",
    ],
)
def test_a_secret_looking_env_name_is_refused_pointing_to_secret_env(name: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"McpTools\.env\[{name!r}\]") as caught:
        McpTools(["srv"], env={name: TOKEN})
    assert f"secret_env={{{name!r}: 'env:NAME'" in str(caught.value)
    assert TOKEN not in str(caught.value)


def test_a_credential_in_an_env_value_is_refused_without_echoing_it() -> None:
    with pytest.raises(ConfigurationError, match=r"McpTools\.env\['DATABASE_URL'\]") as caught:
        McpTools(["srv"], env={"DATABASE_URL": f"postgres://app:{TOKEN}@db.internal/tickets"})
    assert "secret_env=" in str(caught.value)
    assert TOKEN not in str(caught.value)


def test_a_plain_env_that_names_no_secret_is_kept() -> None:
    env = {"TICKETS_LOG": "/tmp/t.jsonl", "DATABASE_URL": "postgres://app@db.internal/tickets"}
    assert McpTools(["srv"], env=env).env == env


# --- allowed_tools: only pinned tools, only with their pinned schema ---------------------------


def _schemas(tools: McpTools) -> dict[str, dict[str, object]]:
    async def main() -> list[dict[str, object]]:
        try:
            return await tools.tools_schema()
        finally:
            await tools.aclose()

    return {schema["name"]: schema["parameters"] for schema in asyncio.run(main())}  # type: ignore[misc]


def test_allowed_tools_leave_every_other_tool_out_and_refuse_to_call_it(
    tickets: McpTools,
) -> None:
    schema = _schemas(tickets)["add"]
    allowed = McpTools(
        tickets.server, env=tickets.env, allowed_tools={"add": schema_sha256(schema)}
    )

    async def main() -> tuple[set[str], bytes]:
        try:
            handlers = await allowed.handlers()
            return set(handlers), await handlers["add"](_call("add", a=1, b=2))
        finally:
            await allowed.aclose()

    assert asyncio.run(main()) == ({"add"}, b"3")
    assert set(_schemas(allowed)) == {"add"}
    with pytest.raises(ConfigurationError, match="'open_ticket' is not allowed"):
        allowed.handler("open_ticket")


def test_an_allowed_tool_whose_schema_changed_is_refused_before_it_is_called(
    tickets: McpTools, tmp_path: Path
) -> None:
    """The server now takes a `severity` the pin never saw: the call never reaches it."""
    pinned = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    allowed = McpTools(tickets.server, env=tickets.env, allowed_tools={"open_ticket": pinned})

    async def main() -> bytes:
        try:
            return await allowed.handler("open_ticket")(_call("open_ticket", title="db down"))
        finally:
            await allowed.aclose()

    with pytest.raises(ToolCallError, match="other than the one allowed_tools pins"):
        asyncio.run(main())
    assert not (tmp_path / "tickets.jsonl").exists(), "the server executed the call"
    with pytest.raises(ToolCallError, match="'open_ticket'"):
        _schemas(allowed)


def test_an_allowed_tool_pinned_by_its_schema_itself_is_called(tickets: McpTools) -> None:
    schema = _schemas(tickets)["add"]
    allowed = McpTools(tickets.server, env=tickets.env, allowed_tools={"add": schema})
    assert _add(allowed) == b"42"


def test_an_allowed_tool_the_server_does_not_offer_is_unknown(tickets: McpTools) -> None:
    allowed = McpTools(tickets.server, env=tickets.env, allowed_tools={"close_ticket": "0" * 64})

    async def main() -> bytes:
        try:
            return await allowed.handler("close_ticket")(_call("close_ticket"))
        finally:
            await allowed.aclose()

    with pytest.raises(UnknownToolError, match="close_ticket"):
        asyncio.run(main())
