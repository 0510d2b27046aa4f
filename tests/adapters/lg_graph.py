"""A ReAct triage graph written as LangGraph's documentation teaches, and its scripted model.

Nothing in the graph is ours but the chat model. `lookup_runbook` only
reads; `page_oncall` pages someone, so a node asks for approval first, with
`interrupt()`. Module level: RunAgent pickles the agent, and the tool
handlers pickle by reference to these names.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

from beam_agents.adapters.langgraph import BeamAgentsChatModel

SYSTEM = "You triage alerts. Look up the runbook; page the on-call engineer when it says so."

pages: list[dict[str, str]] = []
"""Every execution of `page_oncall`, in this process: the side effect a retry must not repeat."""
_pages_lock = threading.Lock()
slow: dict[str, float] = {}
"""Seconds `page_oncall` waits before paging a service: a test makes the first of two
parallel pages the slower one, so their order shows whether they ran one after another."""


@tool
def lookup_runbook(service: str) -> str:
    """Read the runbook entry of a service."""
    return f"{service}: page the on-call engineer when it is unreachable"


@tool
def page_oncall(service: str, reason: str) -> str:
    """Page the on-call engineer of a service."""
    time.sleep(slow.get(service, 0.0))
    with _pages_lock:
        pages.append({"service": service, "reason": reason})
        return f"paged {service} (page {len(pages)})"


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
    decision = interrupt(
        {"question": "page the on-call engineer?", "calls": [c["args"] for c in last.tool_calls]}
    )
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


def script(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The model's next turn, a function of the conversation it is sent.

    An alert that says `unreachable` gets a runbook lookup, then a page,
    then a summary; anything else a one-line acknowledgement that counts
    the user turns it has seen (so a test can tell the conversation grew).
    """
    users = [m["content"] for m in messages if m["role"] == "user"]
    last = messages[-1]
    if last["role"] == "user":
        if last["content"].startswith("page both"):
            services = last["content"].split()[2:]
            return _calls(*(("page_oncall", {"service": s, "reason": "both"}) for s in services))
        if "unreachable" in last["content"]:
            service = last["content"].split(":")[0]
            return _calls(("lookup_runbook", {"service": service}))
        return _text(f"noted {len(users)}: {last['content']}")
    if last["role"] == "tool" and last.get("name") == "lookup_runbook":
        service = last["content"].split(":")[0]
        return _calls(("page_oncall", {"service": service, "reason": "unreachable"}))
    return _text(f"done: {last['content']}")


def _calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"srv-{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(calls)
        ],
    }


def _text(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def _refuse(state: MessagesState) -> dict[str, Any]:
    raise ValueError(f"cannot triage {state['messages'][-1].content!r}")


failing_builder = StateGraph(MessagesState)
failing_builder.add_node("refuse", _refuse)
failing_builder.add_edge(START, "refuse")


chat = BeamAgentsChatModel(model_id="chat")


def sync_chat(state: MessagesState) -> dict[str, Any]:
    """A sync node, as many examples write it: LangGraph runs it in an executor thread."""
    return {"messages": [chat.invoke(state["messages"])]}


sync_builder = StateGraph(MessagesState)
sync_builder.add_node("chat", sync_chat)
sync_builder.add_edge(START, "chat")


class Counted(TypedDict):
    """A graph state without messages: the output is the state as JSON."""

    seen: list[str]
    tags: Any


def _count(state: Counted) -> dict[str, Any]:
    return {"seen": [*state.get("seen", []), "event"]}


def _tag(state: Counted) -> dict[str, Any]:
    return {"tags": {"not", "json"}}


counting_builder = StateGraph(Counted)
counting_builder.add_node("count", _count)
counting_builder.add_edge(START, "count")

tagging_builder = StateGraph(Counted)
tagging_builder.add_node("tag", _tag)
tagging_builder.add_edge(START, "tag")


@dataclass(frozen=True)
class Ticket:
    """A class of the graph's own in its state: a checkpoint restores it once the graph names it."""

    service: str
    number: int


class Ticketed(TypedDict):
    tickets: list[Ticket]


def _open_ticket(state: Ticketed) -> dict[str, Any]:
    tickets = state.get("tickets", [])
    return {"tickets": [*tickets, Ticket("db", len(tickets) + 1)]}


def ticket_count(state: Any) -> bytes:
    """The output of the ticket graph: how many tickets its state holds, and their types."""
    tickets = state["tickets"]
    return f"{len(tickets)} {sorted({type(t).__name__ for t in tickets})}".encode()


ticket_builder = StateGraph(Ticketed)
ticket_builder.add_node("open", _open_ticket)
ticket_builder.add_edge(START, "open")
