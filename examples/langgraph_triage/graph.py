"""The triage graph, written as LangGraph's documentation teaches.

A model node with tools bound, a `ToolNode`, a conditional edge, and a
review node that asks a human with `interrupt()` before anyone is paged.
The only beam-agents object here is the chat model.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

from beam_agents.adapters.langgraph import BeamAgentsChatModel

SYSTEM = "Triage the alert. Read the runbook; page the on-call engineer when it says so."


@tool
def lookup_runbook(service: str) -> str:
    """Read the runbook entry of a service."""
    if service == "checkout":
        return f"{service}: customer-facing, page the on-call engineer"
    return f"{service}: no page needed, a ticket is enough"


@tool
def page_oncall(service: str, reason: str) -> str:
    """Page the on-call engineer of a service."""
    # A real tool would call the paging service here; the pipeline runs it once per call.
    return f"paged the {service} on-call engineer: {reason}"


TOOLS = [lookup_runbook, page_oncall]
model = BeamAgentsChatModel(model_id="triage").bind_tools(TOOLS)


async def call_model(state: MessagesState) -> dict[str, Any]:
    reply = await model.ainvoke([SystemMessage(SYSTEM), *state["messages"]])
    return {"messages": [reply]}


def route(state: MessagesState) -> Literal["review", "tools", "__end__"]:
    last = state["messages"][-1]
    if not isinstance(last, AIMessage) or not last.tool_calls:
        return END
    if any(call["name"] == "page_oncall" for call in last.tool_calls):
        return "review"
    return "tools"


def review(state: MessagesState) -> Command[Literal["tools", "model"]]:
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    decision = interrupt({"question": "page the on-call engineer?", "calls": last.tool_calls})
    if str(decision).startswith("approve"):
        return Command(goto="tools")
    denied = [
        ToolMessage(content=f"not paged: {decision}", tool_call_id=call["id"])
        for call in last.tool_calls
    ]
    return Command(goto="model", update={"messages": denied})


builder = StateGraph(MessagesState)
builder.add_node("model", call_model)
builder.add_node("tools", ToolNode(TOOLS))
builder.add_node("review", review)
builder.add_edge(START, "model")
builder.add_conditional_edges("model", route)
builder.add_edge("tools", "model")
graph = builder.compile()
