{%- set hitl = cookiecutter.include_hitl == "yes" -%}
"""The agent: a LangGraph ReAct graph, run once per event for an entity key.

The graph is written the way LangGraph's documentation teaches (a model node
with its tool bound, a `ToolNode`, a conditional edge{% if hitl %}, and a review node
that asks a human with `interrupt()` before the tool runs{% endif %}); its chat model,
`BeamAgentsChatModel`, is the one beam-agents object in it. `graph_agent(...)`
runs it under `RunAgent`: the entity's checkpoint lives in Beam state, every
model call goes through the replay cache, and `take_action` runs once per call
through the tool ledger (in the long-term store), however often a retried
bundle or a resumed activation re-runs the graph. `agent` turns the graph's
final answer into the project's decision record.
"""

from __future__ import annotations

import json
import re
from typing import Any{% if hitl %}, Literal{% endif %}

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
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
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
#: How long a human has to approve an action (processing time) before it times out.
APPROVAL_TIMEOUT_MS = 15 * 60 * 1000
#: The answers that approve an action; anything else refuses it.
APPROVALS = ("yes", "approve", "approved")
{%- endif %}


@tool
def take_action(entity: str, reason: str) -> dict[str, Any]:
    """Act on an event that needs action now (open a case, hold a payment, page someone)."""
    # Replace with your system's call: under beam-agents it runs once per call,
    # through the tool ledger, however often the activation re-runs.
    return {"action_taken": True, "entity": entity, "reason": reason}


class TriageState(MessagesState):
    """The entity's conversation, and the entity it belongs to."""

    entity: str


model = BeamAgentsChatModel(model_id=MODEL_ID).bind_tools([take_action])


async def call_model(state: TriageState) -> dict[str, Any]:
    system = SystemMessage(f"{INSTRUCTIONS}\nEntity: {state['entity']}")
    return {"messages": [await model.ainvoke([system, *state["messages"]])]}
{%- if hitl %}


def route(state: TriageState) -> Literal["review", "__end__"]:
    """Every tool call is reviewed by a human first."""
    return "review" if tools_condition(state) == "tools" else END


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
builder.add_edge(START, "model")
{%- if hitl %}
builder.add_node("review", review)
builder.add_conditional_edges("model", route)
{%- else %}
builder.add_conditional_edges("model", tools_condition)
{%- endif %}
builder.add_edge("tools", "model")
graph = builder.compile()


def graph_input(ctx: ActivationContext) -> dict[str, Any]:
    """The event's text as the next human message, and the entity it is for."""
    text = ctx.event.decode("utf-8", errors="replace")
    return {"messages": [HumanMessage(text)], "entity": ctx.entity_key.decode("utf-8", "replace")}


#: `AgentConfig.tools`: the handler the tool ledger runs `take_action` with.
TOOLS = tool_handlers([take_action])
_run_graph = graph_agent(graph, input=graph_input)


def label_of(response: bytes) -> str:
    """The model's answer as one of LABELS: real models add punctuation and case."""
    words = response.decode("utf-8", errors="replace").strip().lower().split()
    word = words[0].strip(".,:;!\"'") if words else ""
    return word if word in LABELS else "ignore"


async def agent(ctx: ActivationContext) -> Complete{% if hitl %} | Suspend{% endif %}:
    """Run the graph on the event; its final answer becomes the decision record."""
    result = await _run_graph(ctx)
{%- if hitl %}
    if isinstance(result, Suspend):
        # The graph interrupted for review: nothing commits until the answer resumes it.
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
