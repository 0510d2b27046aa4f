"""A real MCP server for the tests, built with the official SDK.

It serves stdio, or streamable HTTP on loopback with `--http PORT`.

`open_ticket` appends each call to the file named by TICKETS_LOG, so a test
can count what the server actually executed.

With TICKETS_TOKEN_SHA256 set (a digest, never the token itself), the
server demands the token whose SHA-256 it is: over stdio in its environment
as TICKETS_TOKEN (or it exits at once), over HTTP as `Authorization: Bearer`
on every request (or it answers 401).
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("tickets")


@server.tool()
def open_ticket(title: str, severity: str = "P3") -> str:
    """Open a ticket and answer its id."""
    # The SDK may run calls at once, and tests may start several servers on one
    # log: the append and the count that numbers the ticket hold one file lock.
    with open(os.environ["TICKETS_LOG"], "a+", encoding="utf-8") as log:
        fcntl.flock(log, fcntl.LOCK_EX)
        log.write(json.dumps({"title": title, "severity": severity}) + "\n")
        log.flush()
        log.seek(0)
        return f"T-{sum(1 for _ in log)}"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def escalate(reason: str) -> str:
    """Always refuses, to prove tool errors surface."""
    raise ToolError(f"cannot escalate: {reason}")


def _holds_token(token: str) -> bool:
    digest = hashlib.sha256(token.encode()).hexdigest()
    return hmac.compare_digest(digest, os.environ["TICKETS_TOKEN_SHA256"])


def _bearer_only(app: Any) -> Any:
    """The ASGI app behind a check of the bearer token on every HTTP request."""

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            scheme, _, token = headers.get(b"authorization", b"").decode().partition(" ")
            if scheme.lower() != "bearer" or not _holds_token(token):
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"no token"})
                return
        await app(scope, receive, send)

    return guarded


if __name__ == "__main__":
    guarded = "TICKETS_TOKEN_SHA256" in os.environ
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        if guarded:
            import uvicorn

            app = _bearer_only(server.streamable_http_app(host="127.0.0.1"))
            uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
        else:
            server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        if guarded and not _holds_token(os.environ.get("TICKETS_TOKEN", "")):
            sys.exit("TICKETS_TOKEN is missing or wrong")
        server.run()
