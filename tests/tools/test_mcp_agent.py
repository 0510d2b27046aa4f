"""An agent offered a real MCP server's tools: it lists them, the model picks, the runtime calls."""

from __future__ import annotations

import asyncio
import functools
import json
import sys
import uuid
from pathlib import Path

import pytest

from beam_agents import AgentConfig
from beam_agents.model import FakeLLM
from beam_agents.model.fake import Rule
from beam_agents.testing.streaming import Script, run_script
from beam_agents.tools import McpTools
from tests.tools import agents

pytestmark = pytest.mark.pipeline

SERVER = Path(__file__).parent / "servers" / "tickets_mcp.py"

_CHOOSE = {"tool_calls": [{"name": "open_ticket", "arguments": {"title": "db down"}}]}


def _listed(tickets: McpTools) -> list[dict[str, object]]:
    """What the pipeline's author does once, where the pipeline is built."""

    async def main() -> list[dict[str, object]]:
        try:
            return await tickets.tools_schema()
        finally:
            await tickets.aclose()

    return asyncio.run(main())


def test_an_agent_lists_and_calls_the_tools_of_an_mcp_server_over_stdio(
    tmp_path: Path, ledger_uri: str
) -> None:
    log = tmp_path / "tickets.jsonl"
    tickets = McpTools([sys.executable, str(SERVER)], env={"TICKETS_LOG": str(log)})
    schema = _listed(tickets)
    model = FakeLLM(
        name=f"mcp-react-{uuid.uuid4().hex}",
        # The model's second turn sees the tool's answer and closes the loop.
        rules=[Rule(r'"role":"tool"', b"filed")],
        default=json.dumps(_CHOOSE).encode(),
    )
    model.reset()
    config = AgentConfig(
        provider_factory=model,
        tools={tool["name"]: tickets.handler(str(tool["name"])) for tool in schema},
        tool_ledger=ledger_uri,
    )
    events = [(f"svc-{i}", b"database down", 1_000 * (i + 1)) for i in range(3)]

    run = run_script(functools.partial(agents.react, schema), config, Script().events(*events))

    assert {name for name in config.tools} == {"open_ticket", "add", "escalate"}
    assert sorted(value for _key, value in run.outputs) == [b"filed"] * 3
    assert run.errors == []
    # The server executed one ticket per event, and each answer reached the model.
    opened = [json.loads(line) for line in log.read_text().splitlines()]
    assert opened == [{"title": "db down", "severity": "P3"}] * 3
    calls = model.calls()
    assert all(call.tools_schema == schema for call in calls)
    answers = sorted(
        message["content"]
        for call in calls
        for message in call.messages
        if isinstance(message, dict) and message.get("role") == "tool"
    )
    assert answers == ["T-1", "T-2", "T-3"]
