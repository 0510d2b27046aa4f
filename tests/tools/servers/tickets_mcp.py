"""A real MCP server for the tests, built with the official SDK.

It serves stdio, or streamable HTTP on loopback with `--http PORT`.

`open_ticket` appends each call to the file named by TICKETS_LOG, so a test
can count what the server actually executed.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys

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


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
