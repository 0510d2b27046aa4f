{%- set hitl = cookiecutter.include_hitl == "yes" -%}
"""The agent: a LangGraph ReAct graph, run once per event for an entity key.

The graph is written the way LangGraph's documentation teaches (a model node
with its tool bound, a `ToolNode`, a conditional edge{% if hitl %}, a review node
that asks a human with `interrupt()` before the tool runs{% endif %}, and a last node
that asks for a structured answer with `with_structured_output`); its chat
model, `BeamAgentsChatModel`, is the one beam-agents object in it.
`graph_agent(...)` runs it under `RunAgent`: the entity's checkpoint lives in
Beam state, every model call goes through the replay cache (the structured
one asks the provider for the `Classification` schema, and the runtime
validates the answer), and `take_action` runs once per call through the tool
ledger (in the long-term store), however often a retried bundle or a resumed
activation re-runs the graph. `agent` turns the graph's classification into
the typed `Decision` the pipeline emits (`RunAgent(..., output_type=Decision)`).
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from beam_agents import ActivationContext, Complete, LlmRequest, LlmResponse{% if hitl %}, Suspend{% endif %}
from beam_agents.adapters.langgraph import BeamAgentsChatModel, graph_agent, tool_handlers
{%- if hitl %}
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
{%- else %}
from langchain_core.messages import HumanMessage, SystemMessage
{%- endif %}
from langchain_core.tools import tool
{%- if hitl %}
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt
{%- else %}
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
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
    "take_action with the entity and the reason. Then answer with the label first: "
    "act (needs action now), reply (needs an answer) or ignore, and what was done."
)
DECIDE = "Label the latest event as you answered it, and say in a few words what was done."
{%- if hitl %}
#: How long a human has to approve an action (processing time) before it times out.
APPROVAL_TIMEOUT_MS = 15 * 60 * 1000
#: The answers that approve an action; anything else refuses it.
APPROVALS = ("yes", "approve", "approved")
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


@tool
def take_action(entity: str, reason: str) -> dict[str, Any]:
    """Act on an event that needs action now (open a case, hold a payment, page someone)."""
    # Replace with your system's call: under beam-agents it runs once per call,
    # through the tool ledger, however often the activation re-runs.
    return {"action_taken": True, "entity": entity, "reason": reason}


class TriageState(MessagesState):
    """The entity's conversation, the entity it belongs to, and its latest classification."""

    entity: str
    classification: Classification | None


model = BeamAgentsChatModel(model_id=MODEL_ID).bind_tools([take_action])
decider = BeamAgentsChatModel(model_id=MODEL_ID).with_structured_output(Classification)


async def call_model(state: TriageState) -> dict[str, Any]:
    system = SystemMessage(f"{INSTRUCTIONS}\nEntity: {state['entity']}")
    return {"messages": [await model.ainvoke([system, *state["messages"]])]}


async def decide(state: TriageState) -> dict[str, Any]:
    """The structured answer: a Classification, validated before the graph sees it."""
    return {"classification": await decider.ainvoke([SystemMessage(DECIDE), *state["messages"]])}
{%- if hitl %}


def route(state: TriageState) -> Literal["review", "decide"]:
    """Every tool call is reviewed by a human first; without one, the graph decides."""
    return "review" if tools_condition(state) == "tools" else "decide"


def review(state: TriageState) -> Command[Literal["tools", "model"]]:
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    question = {"question": "take this action?", "entity": state["entity"]}
    answer = interrupt({**question, "calls": last.tool_calls})
    if str(answer).strip().lower() in APPROVALS:
        return Command(goto="tools")
    refused = [
        ToolMessage(content=f"not approved: {answer}", tool_call_id=call["id"])
        for call in last.tool_calls
    ]
    return Command(goto="model", update={"messages": refused})
{%- endif %}


builder = StateGraph(TriageState)
builder.add_node("model", call_model)
builder.add_node("tools", ToolNode([take_action]))
builder.add_node("decide", decide)
builder.add_edge(START, "model")
{%- if hitl %}
builder.add_node("review", review)
builder.add_conditional_edges("model", route)
{%- else %}
builder.add_conditional_edges("model", tools_condition, {"tools": "tools", END: "decide"})
{%- endif %}
builder.add_edge("tools", "model")
builder.add_edge("decide", END)
graph = builder.compile()


def graph_input(ctx: ActivationContext) -> dict[str, Any]:
    """The event's text as the next human message, and the entity it is for."""
    text = ctx.event.decode("utf-8", errors="replace")
    return {"messages": [HumanMessage(text)], "entity": ctx.entity_key.decode("utf-8", "replace")}


#: `AgentConfig.tools`: the handler the tool ledger runs `take_action` with.
TOOLS = tool_handlers([take_action])
#: The graph's result is its classification (a typed value, not bytes); its checkpoint
#: holds one, so the class is allowed back out of it.
_run_graph = graph_agent(
    graph,
    input=graph_input,
    output=lambda state: state["classification"],
    checkpoint_types=[Classification],
)


async def agent(ctx: ActivationContext) -> Complete{% if hitl %} | Suspend{% endif %}:
    """Run the graph on the event; its classification becomes the typed decision."""
    result = await _run_graph(ctx)
{%- if hitl %}
    if isinstance(result, Suspend):
        # The graph interrupted for review: nothing commits until the answer resumes it.
        return Suspend(prompt=result.prompt, timeout_ms=APPROVAL_TIMEOUT_MS)
{%- else %}
    if not isinstance(result, Complete):
        return result
{%- endif %}
    classified: Classification = result.output
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
    entity's history too) gets a `take_action` call, then `act` and what the
    tool said; anything else its label and why. Asked for the
    `Classification` schema, it answers the label and the rest of its last
    answer, as JSON. A provider, and its own factory.
    """

    def __call__(self) -> ScriptedModel:
        return self

    async def complete(self, request: LlmRequest) -> LlmResponse:
        messages: list[dict[str, Any]] = list(request.messages)
        last = messages[-1]
        said = " ".join(str(m["content"]) for m in messages if m["role"] == "user")
        if request.output_type is not None:
            label, _, done = str(last["content"]).partition(":")
            answer = json.dumps({"label": label, "answer": done.strip()}).encode()
        elif last["role"] == "tool":
            taken = "action_taken" in str(last["content"])
            answer = b"act: action taken" if taken else b"act: not taken"
        elif ACT.search(said):
            system = " ".join(str(m["content"]) for m in messages if m["role"] == "system")
            entity = re.search(r"^Entity: (.*)$", system, re.M)
            reason = str(last["content"])
            arguments = {"entity": entity[1] if entity else "", "reason": reason}
            answer = _tool_call("take_action", arguments)
        else:
            answer = b"reply: needs an answer" if REPLY.search(said) else b"ignore: nothing to do"
        return LlmResponse(response=answer, model_id=MODEL_ID)


#: The scripted model (`--model py:{{ cookiecutter.package_name }}.agent:scripted_model`).
scripted_model = ScriptedModel()
