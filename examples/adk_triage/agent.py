"""A small triage agent written the way ADK's documentation teaches.

Nothing here knows about Beam except the model object: swap
`BeamAgentsLlm(...)` for `"gemini-2.5-flash"` and this is an ordinary ADK
agent for `adk run`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.tools import FunctionTool

from beam_agents.adapters.adk import BeamAgentsLlm

RUNBOOKS = {
    "payments": "Restart the payments worker pool, then check the queue depth.",
    "search": "Known flapping health check; no action needed.",
    "checkout": "Fail over to the standby region.",
}


def lookup_runbook(service: str) -> dict[str, Any]:
    """Look up the runbook for a service (read-only)."""
    return {"service": service, "runbook": RUNBOOKS.get(service, "No runbook; escalate.")}


def page_oncall(service: str, summary: str) -> dict[str, Any]:
    """Page the on-call engineer for a service."""
    pager = Path(os.environ.get("ADK_TRIAGE_PAGER", "pager.jsonl"))
    with pager.open("a", encoding="utf-8") as log:
        log.write(json.dumps({"service": service, "summary": summary}, sort_keys=True) + "\n")
    return {"paged": service}


root_agent = LlmAgent(
    name="triage",
    model=BeamAgentsLlm(model="triage-model"),
    instruction=(
        "You triage alerts for one service. Look up its runbook first. "
        "Page the on-call engineer only when the service is unreachable."
    ),
    tools=[lookup_runbook, FunctionTool(page_oncall, require_confirmation=True)],
)
