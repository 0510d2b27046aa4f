"""Run a LangGraph graph as a beam-agents agent: `RunAgent(graph_agent(builder), config)`.

The graph stays as LangGraph's documentation teaches it; its chat model is
a `BeamAgentsChatModel`, the one object of ours in it. Per activation the
graph runs once for the event, over the key's conversation:

- state: the key's latest checkpoint, in working memory under
  `__langgraph__/` (which compaction protects by default); when working
  memory has none (a new pipeline, or a key the TTL wiped under
  `on_expire=FlushToLongterm()`), the checkpoint is read back from what the
  flush wrote to the long-term tier;
- model calls: `ctx.call_model`, through the chat model;
- tools: the `ToolNode`s' tools through `ctx.call_tool` (the pipeline's
  handlers, `tool_handlers(...)`, executed once per call through the
  ledger), except tools declared read-only, which run in place;
- `interrupt()`: a `Suspend` whose prompt is the interrupt's value; the
  answer resumes the graph with `Command(resume=answer)`.

Needs the `langgraph` extra: `pip install 'beam-agents[langgraph]'`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Final

from beam_agents.errors import BeamAgentsError, ConfigurationError, describe_briefly

try:
    from langchain_core.messages import BaseMessage, HumanMessage
    from langgraph.graph.state import CompiledStateGraph, StateGraph
    from langgraph.types import Command
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ConfigurationError(
        "beam_agents.adapters.langgraph",
        f"needs LangGraph ({exc.name} is not installed): pip install 'beam-agents[langgraph]'",
    ) from exc

from beam_agents.adapters._lg_checkpoint import (
    CHECKPOINT_KEY,
    WorkingMemorySaver,
    load,
    persist,
)
from beam_agents.adapters._lg_model import BeamAgentsChatModel
from beam_agents.adapters._lg_run import GraphRun, NotInActivationError, running
from beam_agents.adapters._lg_tools import (
    LangChainToolHandler,
    routed_builder,
    tool_handlers,
    tool_node_names,
)
from beam_agents.memory.expire import read_expired_memory
from beam_agents.memory.facade import Memory
from beam_agents.runtime.context import ActivationContext
from beam_agents.runtime.results import Complete, Suspend

__all__ = [
    "CHECKPOINT_KEY",
    "BeamAgentsChatModel",
    "GraphAgent",
    "GraphInterruptError",
    "GraphRunError",
    "LangChainToolHandler",
    "NotInActivationError",
    "graph_agent",
    "tool_handlers",
]

THREAD_ID: Final = "beam-agents"
"""The thread every run uses: working memory is per key already, so one thread per key."""


class GraphInterruptError(BeamAgentsError):
    """A graph interrupted in a way one `Suspend` cannot carry (fails as `activation_error`)."""


class GraphRunError(BeamAgentsError):
    """The graph raised (a node, a reducer, LangGraph itself); the cause is chained.

    Fails the activation as `activation_error`. What the runtime raised inside
    the graph (a model or tool failure, a long-term read, a budget, memory
    overflow, a timeout) passes through unwrapped and keeps its own reason.
    """


async def _invoke(graph: Any, value: Any, config: dict[str, Any]) -> Any:
    try:
        return await graph.ainvoke(value, config, version="v2", durability="exit")
    except (BeamAgentsError, TimeoutError):
        raise
    except Exception as exc:
        raise GraphRunError(f"the graph raised {describe_briefly(exc)}") from exc


def _messages_input(ctx: ActivationContext) -> dict[str, Any]:
    """The event as the next human turn of the conversation, with an id of its own."""
    text = ctx.event.decode("utf-8", "replace")
    return {"messages": [HumanMessage(content=text, id=f"lc-beam-event-{ctx.event_id}")]}


def _last_message_text(state: Any) -> bytes:
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


def _text_answer(answer: bytes) -> str:
    """The answer as the resume value: its text."""
    return answer.decode("utf-8", "replace")


def _prompt(value: Any) -> bytes:
    """An interrupt's value as the approval prompt: text as UTF-8, else canonical JSON."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise GraphInterruptError(
            f"interrupt() value must be text or JSON to become an approval prompt: {exc}"
        ) from exc
    return text.encode("utf-8")


class GraphAgent:
    """The agent `graph_agent` returns: call it with an `ActivationContext`.

    Picklable as the graph it was given (RunAgent ships the agent to the
    workers); each process compiles the graph once, on first use, with the
    working-memory checkpointer.
    """

    def __init__(
        self,
        graph: Any,
        *,
        read_only_tools: Iterable[str] = (),
        input: Callable[[ActivationContext], Any] | None = None,
        output: Callable[[Any], bytes] | None = None,
        answer: Callable[[bytes], Any] | None = None,
        expired_memory_key: str | None = "working_memory",
        recursion_limit: int = 25,
        suspend_timeout_ms: int | None = None,
    ) -> None:
        if isinstance(graph, CompiledStateGraph):
            if graph.interrupt_before_nodes or graph.interrupt_after_nodes:
                raise ConfigurationError(
                    "graph_agent(graph)",
                    "static breakpoints (interrupt_before/interrupt_after) are not supported: "
                    "call interrupt() in the node that needs an answer",
                )
            builder = graph.builder
            # What the graph was compiled with, but its checkpointer, which ours replaces.
            compiled_with = {"store": graph.store, "cache": graph.cache, "name": graph.name}
        elif isinstance(graph, StateGraph):
            builder = graph
            compiled_with = {}
        else:
            raise ConfigurationError(
                "graph_agent(graph)",
                f"takes a langgraph StateGraph or its compiled graph, got {type(graph).__name__}",
            )
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
        if type(recursion_limit) is not int or recursion_limit < 1:
            raise ConfigurationError(
                "graph_agent(recursion_limit)", f"must be an int >= 1, got {recursion_limit!r}"
            )
        if expired_memory_key is not None and (
            type(expired_memory_key) is not str or not expired_memory_key
        ):
            raise ConfigurationError(
                "graph_agent(expired_memory_key)",
                "must be a FlushToLongterm key (a non-empty str) or None, "
                f"got {expired_memory_key!r}",
            )
        try:
            Suspend(prompt=b"", timeout_ms=suspend_timeout_ms)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError("graph_agent(suspend_timeout_ms)", str(exc)) from None
        self._builder = builder
        self._compiled_with = compiled_with
        self._read_only = read_only
        self._input = input or _messages_input
        self._output = output or _last_message_text
        self._answer = answer or _text_answer
        self._expired_memory_key = expired_memory_key
        self._recursion_limit = recursion_limit
        self._suspend_timeout_ms = suspend_timeout_ms
        self._compiled: Any = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_compiled"] = None
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def graph(self) -> Any:
        """The graph as this agent runs it: ToolNodes routed, the checkpointer ours."""
        with self._lock:
            if self._compiled is None:
                builder = routed_builder(self._builder, self._read_only)
                self._compiled = builder.compile(
                    checkpointer=WorkingMemorySaver(), **self._compiled_with
                )
            return self._compiled

    async def __call__(self, ctx: ActivationContext) -> Complete | Suspend:
        graph = self.graph
        run = GraphRun(ctx=ctx, loop=asyncio.get_running_loop())
        with running(run):
            serde = graph.checkpointer.serde
            data = await self._saved(ctx.memory)
            if data is not None:
                load(run, serde, data, THREAD_ID)
            config = {
                "configurable": {"thread_id": THREAD_ID},
                "recursion_limit": self._recursion_limit,
            }
            out = await _invoke(graph, self._input(ctx), config)
            answered = False
            while out.interrupts:
                if len(out.interrupts) > 1:
                    raise GraphInterruptError(
                        f"the graph interrupted in {len(out.interrupts)} places at once; "
                        "one Suspend carries one question: interrupt one node at a time"
                    )
                if ctx.answer is None:
                    return Suspend(
                        prompt=_prompt(out.interrupts[0].value), timeout_ms=self._suspend_timeout_ms
                    )
                if answered:
                    raise GraphInterruptError(
                        "the graph interrupted again after its answer within one event: the "
                        "runtime keeps one answer per event, so ask one question per event"
                    )
                answered = True
                out = await _invoke(graph, Command(resume=self._answer(ctx.answer)), config)
            committed = persist(run, serde)
            if committed is not None:
                ctx.memory.set(CHECKPOINT_KEY, committed)
            return Complete(self._output(out.value))

    async def _saved(self, memory: Memory) -> bytes | None:
        """The committed checkpoint: working memory's, else the long-term flush's."""
        data = memory.get(CHECKPOINT_KEY)
        if data is not None or self._expired_memory_key is None:
            return data
        longterm = memory.longterm_or_none
        if longterm is None:
            return None
        blob = await read_expired_memory(longterm, self._expired_memory_key)
        if blob is None:
            return None
        value = Memory(blob, now_ms=memory.now_ms).get(CHECKPOINT_KEY)
        if value is not None:
            memory.set(CHECKPOINT_KEY, value)
        return value

    def __repr__(self) -> str:
        return f"GraphAgent({getattr(self._builder, 'name', None) or type(self._builder).__name__})"


async def _run_graph(agent: GraphAgent, ctx: ActivationContext) -> Complete | Suspend:
    """`agent(ctx)`, as a module-level coroutine function: what RunAgent accepts."""
    return await agent(ctx)


def graph_agent(
    graph: Any,
    *,
    read_only_tools: Iterable[str] = (),
    input: Callable[[ActivationContext], Any] | None = None,
    output: Callable[[Any], bytes] | None = None,
    answer: Callable[[bytes], Any] | None = None,
    expired_memory_key: str | None = "working_memory",
    recursion_limit: int = 25,
    suspend_timeout_ms: int | None = None,
) -> functools.partial[Coroutine[Any, Any, Complete | Suspend]]:
    """An agent for `RunAgent` that runs `graph` (a `StateGraph` or its compiled graph) per event.

    - `read_only_tools`: names of ToolNode tools that run in place; every
      other ToolNode tool goes through `ctx.call_tool` (configure it with
      `AgentConfig(tools=tool_handlers([...]))`).
    - `input(ctx)`: the graph input for an event; default, the event's text
      as a new human message in `messages`.
    - `output(state)`: the `Complete` bytes; default, the last message's text.
    - `answer(bytes)`: the resume value of `Command(resume=...)`; default,
      the answer as text.
    - `expired_memory_key`: the `FlushToLongterm(key)` to read a checkpoint
      back from when working memory has none; None never reads.
    """
    return functools.partial(
        _run_graph,
        GraphAgent(
            graph,
            read_only_tools=read_only_tools,
            input=input,
            output=output,
            answer=answer,
            expired_memory_key=expired_memory_key,
            recursion_limit=recursion_limit,
            suspend_timeout_ms=suspend_timeout_ms,
        ),
    )
