{%- set hitl = cookiecutter.include_hitl == "yes" -%}
"""The agent: a Google ADK `LlmAgent`, run once per event for an entity key.

`root_agent` is written the way ADK's documentation teaches; its model,
`BeamAgentsLlm`, is the one beam-agents object in it (give it a model name
instead and `adk run` runs the same agent). `adk_agent(...)` runs it under
`RunAgent`: the entity's ADK session lives in Beam state, every model call
goes through the replay cache, and `take_action` runs once per call through
the tool ledger (in the long-term store){% if hitl %}, only after a human confirms it{% endif %},
however often a retried bundle or a resumed activation re-runs the agent.
`agent` turns ADK's final answer into the project's decision record.
"""

from __future__ import annotations

import json
import re
from typing import Any

from beam_agents import ActivationContext, Complete, LlmRequest, LlmResponse{% if hitl %}, Suspend{% endif %}
from beam_agents.adapters.adk import BeamAgentsLlm, adk_agent, adk_tools
from google.adk.agents import LlmAgent
from google.adk.agents.readonly_context import ReadonlyContext
{%- if hitl %}
from google.adk.tools import FunctionTool
{%- endif %}

#: The model every request names (the provider maps it to its own).
{%- if cookiecutter.model_provider == "openai" %}
MODEL_ID = "gpt-4o-mini"
{%- elif cookiecutter.model_provider == "gemini" %}
MODEL_ID = "gemini-2.5-flash"
{%- else %}
MODEL_ID = "fake-1"
{%- endif %}
#: What the model may answer; anything else counts as "ignore".
LABELS = ("act", "reply", "ignore")
INSTRUCTIONS = (
    "You triage events for one entity. When an event needs action now, call "
    "take_action with the entity and the reason. Then answer with one word first: "
    "act (needs action now), reply (needs an answer) or ignore."
)
{%- if hitl %}
#: How long a human has to confirm an action (processing time) before it times out.
APPROVAL_TIMEOUT_MS = 15 * 60 * 1000
{%- endif %}


def take_action(entity: str, reason: str) -> dict[str, Any]:
    """Act on an event that needs action now (open a case, hold a payment, page someone).

    Replace the body with your system's call: under beam-agents it runs once
    per call, through the tool ledger, however often the activation re-runs.
    """
    return {"action_taken": True, "entity": entity, "reason": reason}


def instruction(context: ReadonlyContext) -> str:
    """The instructions, naming the entity: ADK's user id is the event's entity key."""
    return f"{INSTRUCTIONS}\nEntity: {context.user_id}"


root_agent = LlmAgent(
    name="{{ cookiecutter.package_name }}",
    model=BeamAgentsLlm(model=MODEL_ID),
    instruction=instruction,
{%- if hitl %}
    tools=[FunctionTool(take_action, require_confirmation=True)],
{%- else %}
    tools=[take_action],
{%- endif %}
)
#: `AgentConfig.tools`: the handlers the tool ledger runs `root_agent`'s tools with.
TOOLS = adk_tools(root_agent)
_run_adk = adk_agent(root_agent)


def label_of(response: bytes) -> str:
    """The model's answer as one of LABELS: real models add punctuation and case."""
    words = response.decode("utf-8", errors="replace").strip().lower().split()
    word = words[0].strip(".,:;!\"'") if words else ""
    return word if word in LABELS else "ignore"


async def agent(ctx: ActivationContext) -> Complete{% if hitl %} | Suspend{% endif %}:
    """Run the ADK agent on the event; its final answer becomes the decision record."""
    result = await _run_adk(ctx)
{%- if hitl %}
    if isinstance(result, Suspend):
        # ADK asked to confirm take_action: nothing commits until the answer resumes it.
        return Suspend(prompt=result.prompt, timeout_ms=APPROVAL_TIMEOUT_MS)
{%- else %}
    if not isinstance(result, Complete):
        return result
{%- endif %}
    decision = {
        "answer": result.output.decode("utf-8", errors="replace"),
        "entity": ctx.entity_key.decode("utf-8", errors="replace"),
        "event_id": ctx.event_id,
        "label": label_of(result.output),
    }
    output = json.dumps(decision, sort_keys=True).encode()
    ctx.memory.longterm.save(f"decision/{ctx.event_id}", output)
    return Complete(output=output)


ACT = re.compile(r"(?i)urgent|outage|fraud|breach")
REPLY = re.compile(r"(?i)question|help|how do")


def _tool_call(name: str, arguments: dict[str, Any]) -> bytes:
    """A tool-call answer as the providers return one: `{"tool_calls": [...]}`."""
    body = {"tool_calls": [{"name": name, "arguments": arguments}]}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


class ScriptedModel:
    """The offline model `make run`, `make eval` and the tests use: it reads the conversation.

    It answers as the instructions ask: an event that needs action (in the
    entity's history too) gets a `take_action` call, then `act` and what the
    tool said; anything else one word. A provider, and its own factory.
    """

    def __call__(self) -> ScriptedModel:
        return self

    async def complete(self, request: LlmRequest) -> LlmResponse:
        messages: list[dict[str, Any]] = list(request.messages)
        last = messages[-1]
        said = " ".join(str(m["content"]) for m in messages if m["role"] == "user")
        if last["role"] == "tool":
            taken = "action_taken" in str(last["content"])
            answer = b"act: action taken" if taken else b"act: not taken"
        elif ACT.search(said):
            system = " ".join(str(m["content"]) for m in messages if m["role"] == "system")
            entity = re.search(r"^Entity: (.*)$", system, re.M)
            reason = str(last["content"])
            arguments = {"entity": entity[1] if entity else "", "reason": reason}
            answer = _tool_call("take_action", arguments)
        else:
            answer = b"reply" if REPLY.search(said) else b"ignore"
        return LlmResponse(response=answer, model_id=MODEL_ID)


#: The scripted model (`--model py:{{ cookiecutter.package_name }}.agent:scripted_model`).
scripted_model = ScriptedModel()
