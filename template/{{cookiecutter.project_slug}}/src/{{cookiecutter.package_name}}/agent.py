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

from beam_agents import ActivationContext, Complete, LlmRequest{% if hitl %}, Suspend{% endif %}
from beam_agents.model import FakeLLM, Rule

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
#: What the model may answer; anything else counts as "ignore".
LABELS = ("act", "reply", "ignore")
INSTRUCTIONS = (
    "You triage events for one entity. Answer with exactly one word: "
    "act (needs action now), reply (needs an answer) or ignore."
)
{%- if hitl %}
#: How long a human has to approve an action (processing time) before it times out.
APPROVAL_TIMEOUT_MS = 15 * 60 * 1000
{%- endif %}

#: The scripted model `make run` and the tests use (`--model py:<package>.agent:scripted_model`).
scripted_model = FakeLLM(
    rules=[
        Rule(pattern=r"(?i)urgent|outage|fraud|breach", response=b"act"),
        Rule(pattern=r"(?i)question|help|how do", response=b"reply"),
    ],
    default=b"ignore",
    name="{{ cookiecutter.package_name }}",
    model_id=MODEL_ID,
)


def label_of(response: bytes) -> str:
    """The model's answer as one of LABELS: real models add punctuation and case."""
    words = response.decode("utf-8", errors="replace").strip().lower().split()
    word = words[0].strip(".,:;!\"'") if words else ""
    return word if word in LABELS else "ignore"


async def agent(ctx: ActivationContext) -> Complete{% if hitl %} | Suspend{% endif %}:
    """Classify the event with the entity's recent history, then act on the label."""
    ctx.memory.append(RECENT, ctx.event, max_items=RECENT_MAX_ITEMS)
    history = [item.decode("utf-8", errors="replace") for item in ctx.memory.ring(RECENT)]
    answer = await ctx.call_model(LlmRequest(model_id=MODEL_ID, messages=[INSTRUCTIONS, *history]))
    label = label_of(answer.response)
    entity = ctx.entity_key.decode("utf-8", errors="replace")
    decision = {"entity": entity, "event_id": ctx.event_id, "label": label}
{%- if hitl %}
    if label == "act":
        if ctx.answer is None:
            # Nothing of this activation commits until the answer resumes it.
            prompt = f"approve action for {entity}? event: {ctx.event.decode('utf-8', 'replace')}"
            return Suspend(prompt=prompt.encode(), timeout_ms=APPROVAL_TIMEOUT_MS)
        approved = ctx.answer.strip().lower() in (b"yes", b"approve", b"approved")
        decision["approved"] = approved
        if approved:
            decision["intent_id"] = ctx.emit_intent(
                "act", {"entity": entity, "event": ctx.event_id}
            )
{%- else %}
    if label == "act":
        decision["intent_id"] = ctx.emit_intent("act", {"entity": entity, "event": ctx.event_id})
{%- endif %}
    output = json.dumps(decision, sort_keys=True).encode()
{%- if store %}
    ctx.memory.longterm.save(f"decision/{ctx.event_id}", output)
{%- endif %}
    return Complete(output=output)
