{%- set store = cookiecutter.longterm_backend != "none" -%}
{%- set hitl = cookiecutter.include_hitl == "yes" -%}
"""The agent: what runs once per event for an entity key.

It is defined at module level because the runner pickles it by reference.
Everything it does goes through the activation context, so a retried bundle
or a resumed suspension recomputes the same result: working memory lives in
Beam state, the model call is recorded in the replay cache{% if store %}, and
long-term saves are staged and flushed only when the activation commits{% endif %}.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from beam_agents import ActivationContext, Complete, LlmRequest{% if hitl %}, Suspend{% endif %}
from beam_agents.model import FakeLLM, Rule
from pydantic import BaseModel

#: Working-memory ring of the entity's most recent events (the model's context).
RECENT = "recent"
RECENT_MAX_ITEMS = 20
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
    "You triage events for one entity. Label the latest event: "
    "act (needs action now), reply (needs an answer) or ignore."
)
{%- if hitl %}
#: How long a human has to approve an action (processing time) before it times out.
APPROVAL_TIMEOUT_MS = 15 * 60 * 1000
{%- endif %}


class Classification(BaseModel):
    """The latest event's label."""  # the schema's description: the model reads it

    label: Label


class Decision(BaseModel):
    """The agent's result for one event: `RunAgent(..., output_type=Decision)` emits it.

    A Beam row: downstream steps group, filter and write it by field name.
    """

    entity: str
    event_id: str
    label: Label
{%- if hitl %}
    approved: bool | None = None
    """Set once a human answered the approval an `act` waits for."""
{%- endif %}
    intent_id: str | None = None
    """The `act` intent emitted for it, if any."""


def decision_json(decision: Any) -> bytes:
    """A decision as one JSON object, sorted keys, unset fields left out: what the outputs carry.

    It reads the fields by name, so a Beam row of the same fields serializes alike.
    """
    fields = {name: getattr(decision, name) for name in Decision.model_fields}
    return json.dumps({k: v for k, v in fields.items() if v is not None}, sort_keys=True).encode()


#: The scripted model `make run` and the tests use (`--model py:<package>.agent:scripted_model`).
scripted_model = FakeLLM(
    rules=[
        Rule(pattern=r"(?i)urgent|outage|fraud|breach", response=b'{"label": "act"}'),
        Rule(pattern=r"(?i)question|help|how do", response=b'{"label": "reply"}'),
    ],
    default=b'{"label": "ignore"}',
    name="{{ cookiecutter.package_name }}",
    model_id=MODEL_ID,
)


async def agent(ctx: ActivationContext) -> Complete{% if hitl %} | Suspend{% endif %}:
    """Classify the event with the entity's recent history, then act on the label."""
    ctx.memory.append(RECENT, ctx.event, max_items=RECENT_MAX_ITEMS)
    history = [item.decode("utf-8", errors="replace") for item in ctx.memory.ring(RECENT)]
    request = LlmRequest(
        model_id=MODEL_ID, messages=[INSTRUCTIONS, *history], output_type=Classification
    )
    label = (await ctx.call_model(request)).parsed.label
    entity = ctx.entity_key.decode("utf-8", errors="replace")
    done: dict[str, Any] = {}
{%- if hitl %}
    if label == "act":
        if ctx.answer is None:
            # Nothing of this activation commits until the answer resumes it.
            prompt = f"approve action for {entity}? event: {ctx.event.decode('utf-8', 'replace')}"
            return Suspend(prompt=prompt.encode(), timeout_ms=APPROVAL_TIMEOUT_MS)
        done["approved"] = ctx.answer.strip().lower() in (b"yes", b"approve", b"approved")
        if done["approved"]:
            done["intent_id"] = ctx.emit_intent("act", {"entity": entity, "event": ctx.event_id})
{%- else %}
    if label == "act":
        done["intent_id"] = ctx.emit_intent("act", {"entity": entity, "event": ctx.event_id})
{%- endif %}
    decision = Decision(entity=entity, event_id=ctx.event_id, label=label, **done)
{%- if store %}
    ctx.memory.longterm.save(f"decision/{ctx.event_id}", decision_json(decision))
{%- endif %}
    return Complete(output=decision)
