"""Run the ADK triage agent on Beam's streaming DirectRunner, offline.

    .venv/bin/python examples/adk_triage/run.py

Four alerts for three services; the unreachable one asks for approval
before paging, and a scripted approver answers it on the answers input.
Prints each output, the approval and the pages sent.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent import root_agent
from scripted_model import ScriptedTriageModel

from beam_agents import AgentConfig, intent_id
from beam_agents.adapters.adk import adk_agent, adk_tools
from beam_agents.local import Script, run_agent

READ_ONLY = ["lookup_runbook"]


def main() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="adk-triage-"))
    os.environ["ADK_TRIAGE_PAGER"] = str(workdir / "pager.jsonl")
    config = AgentConfig(
        provider_factory=ScriptedTriageModel(),
        tools=adk_tools(root_agent, read_only_tools=READ_ONLY),
        tool_ledger=f"sqlite+aiosqlite:///{workdir / 'ledger.db'}",
    )
    _provision(config.tool_ledger)
    approval = intent_id(b"checkout", 1, 0)  # the first approval of checkout's first alert
    script = (
        Script()
        .events(
            ("payments", b"payments: error rate 7%", 1_000),
            ("search", b"search: health check flapping", 1_000),
            ("checkout", b"checkout: unreachable from eu-west", 1_000),
        )
        .watermark(2_000)
        .events(("payments", b"payments: error rate 9%", 3_000))
        .answers(("checkout", approval, b"approve: confirmed outage", 4_000))
    )
    run = run_agent(adk_agent(root_agent, read_only_tools=READ_ONLY), config, script)
    for key, output in sorted(run.outputs):
        print(f"output  {key.decode()}: {output.decode()}")
    for intent in run.intents:
        print(f"approval {intent.entity_key.decode()}: {json.loads(intent.prompt)['tool']}")
    for line in (workdir / "pager.jsonl").read_text().splitlines():
        print(f"paged   {json.loads(line)['service']}")
    for error in run.errors:
        print(f"error   {error.entity_key.decode()}: {error.reason}: {error.detail}")


def _provision(uri: str | None) -> None:
    import asyncio

    from beam_agents.tools import open_ledger

    async def provision() -> None:
        async with open_ledger(str(uri)) as ledger:
            await ledger.provision()

    asyncio.run(provision())


if __name__ == "__main__":
    main()
