"""A scripted model, so the example runs offline: it answers from the conversation alone.

A new alert gets a runbook lookup; a runbook that says to page gets a page;
anything after a tool result or a refusal gets a one-line summary.
"""

from __future__ import annotations

import json
from typing import Any

from beam_agents import LlmRequest, LlmResponse


def tool_calls_answer(calls: list[tuple[str, dict[str, Any]]]) -> bytes:
    """A tool-call answer as the providers return one: `{"tool_calls": [...]}`, canonical JSON."""
    body = {"tool_calls": [{"name": name, "arguments": args} for name, args in calls]}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


class ScriptedTriageModel:
    """A provider, and its own picklable factory (`AgentConfig(provider_factory=...)`)."""

    def __call__(self) -> ScriptedTriageModel:
        return self

    async def complete(self, request: LlmRequest) -> LlmResponse:
        last: dict[str, Any] = request.messages[-1]
        if last["role"] == "user":
            service = last["content"].split(":")[0]
            answer = tool_calls_answer([("lookup_runbook", {"service": service})])
        elif last.get("name") == "lookup_runbook" and "page the on-call" in last["content"]:
            service = last["content"].split(":")[0]
            answer = tool_calls_answer([("page_oncall", {"service": service, "reason": "down"})])
        elif last.get("name") == "lookup_runbook":
            answer = f"ticket only: {last['content']}".encode()
        else:
            answer = f"done: {last['content']}".encode()
        return LlmResponse(
            response=answer,
            model_id="scripted",
            input_tokens=len(json.dumps(request.messages)) // 4,
            output_tokens=len(answer) // 4,
        )
