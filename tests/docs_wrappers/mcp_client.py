"""An MCP client's calls, run beside a real MCP server over stdio.

`<!-- fragment: mcp_client -->`: the fragment is the body of `async def main()`, run by
`asyncio.run`, in a directory holding `tickets_server.py`: the tests' own MCP server
(built with the official SDK), which offers `open_ticket`. The clients it makes are
closed after.
"""

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

import tests
from beam_agents.tools import McpTools

SERVER = Path(tests.__file__).parent / "tools" / "servers" / "tickets_mcp.py"


async def main() -> None:
    # <fragment>
    for made in [value for value in locals().values() if isinstance(value, McpTools)]:
        await made.aclose()  # each client keeps its server running until closed


shutil.copyfile(SERVER, "tickets_server.py")
os.environ["TICKETS_LOG"] = os.path.join(tempfile.mkdtemp(), "tickets.jsonl")
asyncio.run(main())
