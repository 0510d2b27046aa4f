{%- set hitl = cookiecutter.include_hitl == "yes" -%}
"""The agent: a Google ADK `LlmAgent`, run once per event for an entity key.

`root_agent` is written the way ADK's documentation teaches; its model,
`BeamAgentsLlm`, is the one beam-agents object in it (give it a model name
instead and `adk run` runs the same agent). `adk_agent(...)` runs it under
`RunAgent`: the entity's ADK session lives in Beam state, every model call
goes through the replay cache, and `take_action` runs once per call through
the tool ledger (in the long-term store){% if hitl %}, only after a human confirms it{% endif %},
however often a retried bundle or a resumed activation re-runs the agent.
Its `output_schema` makes its final answer a `Classification`: with tools
beside it, ADK offers the schema as its `set_model_response` tool, whose
call the model ends with. `agent` turns that answer into the typed
`Decision` the pipeline emits (`RunAgent(..., output_type=Decision)`).
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from beam_agents import ActivationContext, Complete, LlmRequest, LlmResponse{% if hitl %}, Suspend{% endif %}
from beam_agents.adapters.adk import BeamAgentsLlm, adk_agent, adk_tools
from google.adk.agents import LlmAgent
from google.adk.agents.readonly_context import ReadonlyContext
{%- if hitl %}
from google.adk.tools import FunctionTool
{%- endif %}
from pydantic import BaseModel

#: The model every request names (the provider maps it to its own).
{%- if cookiecutter.model_provider == "openai" %}
MODEL_ID = "gpt-4o-mini"
{%- elif cookiecutter.model_provider == "gemini" %}
MODEL_ID = "gemini-2.5-flash"
{%- else %}
MODEL_ID = "fake-1"
{%- endif %}
#: What the model may answer: the schema holds it to one of these.
Label = Literal["act", "reply", "ignore"]
INSTRUCTIONS = (
    "You triage events for one entity. When an event needs action now, call "
    "take_action with the entity and the reason. Then label the latest event: "
    "act (needs action now), reply (needs an answer) or ignore, and say in a few "
    "words what was done."
)
{%- if hitl %}
#: How long a human has to confirm an action (processing time) before it times out.
APPROVAL_TIMEOUT_MS = 15 * 60 * 1000
{%- endif %}


class Classification(BaseModel):
    """The latest event's label, and what was done about it."""  # the model reads this

    label: Label
    answer: str


class Decision(BaseModel):
    """The agent's result for one event: `RunAgent(..., output_type=Decision)` emits it.

    A Beam row: downstream steps group, filter and write it by field name.
    """

    entity: str
    event_id: str
    label: Label
    answer: str


def decision_json(decision: Any) -> bytes:
    """A decision as one JSON object with sorted keys: what the outputs carry.

    It reads the fields by name, so a Beam row of the same fields serializes alike.
    """
    fields = {name: getattr(decision, name) for name in Decision.model_fields}
    return json.dumps(fields, sort_keys=True).encode()


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
    output_schema=Classification,
{%- if hitl %}
    tools=[FunctionTool(take_action, require_confirmation=True)],
{%- else %}
    tools=[take_action],
{%- endif %}
)
#: `AgentConfig.tools`: the handlers the tool ledger runs `root_agent`'s tools with.
TOOLS = adk_tools(root_agent)
_run_adk = adk_agent(root_agent)


async def agent(ctx: ActivationContext) -> Complete{% if hitl %} | Suspend{% endif %}:
    """Run the ADK agent on the event; its final answer becomes the typed decision."""
    result = await _run_adk(ctx)
{%- if hitl %}
    if isinstance(result, Suspend):
        # ADK asked to confirm take_action: nothing commits until the answer resumes it.
        return Suspend(prompt=result.prompt, timeout_ms=APPROVAL_TIMEOUT_MS)
{%- else %}
    if not isinstance(result, Complete):
        return result
{%- endif %}
    # The adapter's output is the final answer as JSON: a Classification, validated.
    classified = Classification.model_validate_json(result.output)
    decision = Decision(
        entity=ctx.entity_key.decode("utf-8", errors="replace"),
        event_id=ctx.event_id,
        **classified.model_dump(),
    )
    ctx.memory.longterm.save(f"decision/{ctx.event_id}", decision_json(decision))
    return Complete(output=decision)


ACT = re.compile(r"(?i)urgent|outage|fraud|breach")
REPLY = re.compile(r"(?i)question|help|how do")


def _tool_call(name: str, arguments: dict[str, Any]) -> bytes:
    """A tool-call answer as the providers return one: `{"tool_calls": [...]}`."""
    body = {"tool_calls": [{"name": name, "arguments": arguments}]}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


class ScriptedModel:
    """The offline model `make run`, `make eval` and the tests use: it reads the conversation.

    It answers as the instructions ask: an event that needs action (in the
    entity's history too) gets a `take_action` call; then, or for any other
    event, a call of ADK's `set_model_response` with the label and what was
    done. A provider, and its own factory.
    """

    def __call__(self) -> ScriptedModel:
        return self

    async def complete(self, request: LlmRequest) -> LlmResponse:
        messages: list[dict[str, Any]] = list(request.messages)
        last = messages[-1]
        said = " ".join(str(m["content"]) for m in messages if m["role"] == "user")
        if last["role"] == "tool":
            taken = "action_taken" in str(last["content"])
            answer = _classified("act", "action taken" if taken else "not taken")
        elif ACT.search(said):
            system = " ".join(str(m["content"]) for m in messages if m["role"] == "system")
            entity = re.search(r"^Entity: (.*)$", system, re.M)
            reason = str(last["content"])
            arguments = {"entity": entity[1] if entity else "", "reason": reason}
            answer = _tool_call("take_action", arguments)
        elif REPLY.search(said):
            answer = _classified("reply", "needs an answer")
        else:
            answer = _classified("ignore", "nothing to do")
        return LlmResponse(response=answer, model_id=MODEL_ID)


def _classified(label: str, answer: str) -> bytes:
    """The final answer, as ADK asks for it beside tools: a `set_model_response` call."""
    return _tool_call("set_model_response", {"label": label, "answer": answer})


#: The scripted model (`--model py:{{ cookiecutter.package_name }}.agent:scripted_model`).
scripted_model = ScriptedModel()
