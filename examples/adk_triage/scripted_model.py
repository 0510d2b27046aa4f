"""A scripted model for running the example offline: it reads the conversation, not the web.

It answers like a careful model would: look up the runbook, page when the
alert says unreachable, then summarize; a repeated alert notes how many
alerts the session has seen.
"""

from __future__ import annotations

import json
from typing import Any

from beam_agents import LlmRequest, LlmResponse


def _calls(*calls: tuple[str, dict[str, Any]]) -> bytes:
    body = {"tool_calls": [{"name": name, "arguments": args} for name, args in calls]}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


class ScriptedTriageModel:
    """A provider (`complete`) and its own factory (calling it returns itself)."""

    def __call__(self) -> ScriptedTriageModel:
        return self

    async def complete(self, request: LlmRequest) -> LlmResponse:
        messages = list(request.messages)
        alerts = [m["content"] for m in messages if m["role"] == "user"]
        alert = alerts[-1]
        service = alert.split(":", 1)[0]
        last = messages[-1]
        if last["role"] == "user":
            answer = _calls(("lookup_runbook", {"service": service}))
        elif last.get("name") == "lookup_runbook" and "unreachable" in alert:
            answer = _calls(("page_oncall", {"service": service, "summary": alert}))
        else:
            result = json.loads(last["content"])
            done = "paged the on-call" if "paged" in result else result.get("runbook", result)
            answer = f"{service}: {done} (alert {len(alerts)} of this session)".encode()
        return LlmResponse(response=answer, model_id="triage-model")
