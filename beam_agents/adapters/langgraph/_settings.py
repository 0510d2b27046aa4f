"""`GraphSettings`: what `graph_agent(...)` was given, checked once at construction.

A mistake in the graph or the options is a `ConfigurationError` while the
pipeline is being built, not a failed activation on a worker; the checked
settings are what the agent ships to the workers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.graph.state import CompiledStateGraph, StateGraph

from beam_agents.adapters.langgraph._errors import GraphRunError
from beam_agents.adapters.langgraph._tools import tool_node_names
from beam_agents.errors import ConfigurationError
from beam_agents.runtime.context import ActivationContext
from beam_agents.runtime.results import Suspend, TypedResult

__all__ = ["GraphSettings", "last_message_text", "messages_input", "text_answer"]


@dataclass(frozen=True)
class GraphSettings:
    """The graph's builder, how it was compiled, the read-only tools, the hooks and limits."""

    builder: Any
    compiled_with: Mapping[str, Any]
    """What the graph was compiled with, but its checkpointer, which ours replaces."""
    read_only: frozenset[str]
    input: Callable[[ActivationContext], Any]
    output: Callable[[Any], bytes | TypedResult]
    answer: Callable[[bytes], Any]
    expired_memory_key: str | None
    recursion_limit: int
    suspend_timeout_ms: int | None
    checkpoint_types: tuple[type, ...] = ()
    """Classes of the graph's own a checkpoint may be read back into (`_serde`)."""

    @classmethod
    def checked(
        cls,
        graph: Any,
        *,
        read_only_tools: Iterable[str],
        input: Callable[[ActivationContext], Any] | None,
        output: Callable[[Any], bytes | TypedResult] | None,
        answer: Callable[[bytes], Any] | None,
        expired_memory_key: str | None,
        recursion_limit: int,
        suspend_timeout_ms: int | None,
        checkpoint_types: Iterable[type] = (),
    ) -> GraphSettings:
        """The settings of `graph_agent(graph, ...)`, or the `ConfigurationError` naming one."""
        builder, compiled_with = _builder_of(graph)
        return cls(
            builder=builder,
            compiled_with=compiled_with,
            read_only=_read_only(read_only_tools, builder),
            recursion_limit=_recursion_limit(recursion_limit),
            expired_memory_key=_expired_memory_key(expired_memory_key),
            suspend_timeout_ms=_suspend_timeout_ms(suspend_timeout_ms),
            checkpoint_types=_checkpoint_types(checkpoint_types),
            input=input or messages_input,
            output=output or last_message_text,
            answer=answer or text_answer,
        )


def _builder_of(graph: Any) -> tuple[Any, dict[str, Any]]:
    """The graph's builder, and what a compiled graph was compiled with."""
    if isinstance(graph, CompiledStateGraph):
        if graph.interrupt_before_nodes or graph.interrupt_after_nodes:
            raise ConfigurationError(
                "graph_agent(graph)",
                "static breakpoints (interrupt_before/interrupt_after) are not supported: "
                "call interrupt() in the node that needs an answer",
            )
        return graph.builder, {"store": graph.store, "cache": graph.cache, "name": graph.name}
    if isinstance(graph, StateGraph):
        return graph, {}
    raise ConfigurationError(
        "graph_agent(graph)",
        f"takes a langgraph StateGraph or its compiled graph, got {type(graph).__name__}",
    )


def _read_only(read_only_tools: Iterable[str], builder: Any) -> frozenset[str]:
    """The read-only tool names, each one a tool of the graph's ToolNodes."""
    if isinstance(read_only_tools, str):
        raise ConfigurationError(
            "graph_agent(read_only_tools)", "must be a collection of tool names"
        )
    read_only = frozenset(read_only_tools)
    unknown = sorted(read_only - tool_node_names(builder))
    if unknown:
        raise ConfigurationError(
            "graph_agent(read_only_tools)",
            f"names no tool of the graph's ToolNodes: {', '.join(map(repr, unknown))}",
        )
    return read_only


def _recursion_limit(recursion_limit: int) -> int:
    if type(recursion_limit) is not int or recursion_limit < 1:
        raise ConfigurationError(
            "graph_agent(recursion_limit)", f"must be an int >= 1, got {recursion_limit!r}"
        )
    return recursion_limit


def _expired_memory_key(expired_memory_key: str | None) -> str | None:
    if expired_memory_key is not None and (
        type(expired_memory_key) is not str or not expired_memory_key
    ):
        raise ConfigurationError(
            "graph_agent(expired_memory_key)",
            f"must be a FlushToLongterm key (a non-empty str) or None, got {expired_memory_key!r}",
        )
    return expired_memory_key


def _suspend_timeout_ms(suspend_timeout_ms: int | None) -> int | None:
    """Checked by the `Suspend` it will become, so the two never disagree."""
    try:
        Suspend(prompt=b"", timeout_ms=suspend_timeout_ms)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError("graph_agent(suspend_timeout_ms)", str(exc)) from None
    return suspend_timeout_ms


def _checkpoint_types(checkpoint_types: Iterable[type]) -> tuple[type, ...]:
    """Classes only: a function named here would be a callable a checkpoint could invoke."""
    if isinstance(checkpoint_types, str | bytes) or not isinstance(checkpoint_types, Iterable):
        raise ConfigurationError("graph_agent(checkpoint_types)", "must be a collection of classes")
    named = tuple(checkpoint_types)
    for cls in named:
        if not isinstance(cls, type):
            raise ConfigurationError(
                "graph_agent(checkpoint_types)",
                f"must hold classes, got {type(cls).__name__} {cls!r:.80}",
            )
    return named


def messages_input(ctx: ActivationContext) -> dict[str, Any]:
    """The event as the next human turn of the conversation, with an id of its own."""
    text = ctx.event.decode("utf-8", "replace")
    return {"messages": [HumanMessage(content=text, id=f"lc-beam-event-{ctx.event_id}")]}


def last_message_text(state: Any) -> bytes:
    """The final state's last message text, or the state as canonical JSON."""
    messages = state.get("messages") if isinstance(state, dict) else None
    if messages and isinstance(messages[-1], BaseMessage):
        content = messages[-1].content
        text = content if isinstance(content, str) else json.dumps(content, sort_keys=True)
        return text.encode("utf-8")
    try:
        text = json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise GraphRunError(
            f"the graph's final state is not JSON ({exc}): pass graph_agent(output=...) "
            "to turn it into the output bytes"
        ) from exc
    return text.encode("utf-8")


def text_answer(answer: bytes) -> str:
    """The answer as the resume value: its text."""
    return answer.decode("utf-8", "replace")
