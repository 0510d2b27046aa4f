"""`GraphAgent`: one run of the graph per event, over the key's checkpoint.

Each activation loads the key's committed checkpoint (from working memory,
else from what the TTL flush wrote to the long-term tier), runs the graph,
turns its one `interrupt()` into a `Suspend` or resumes it with the answer,
and commits the new checkpoint to working memory.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Final

from langgraph.types import Command

from beam_agents.adapters.langgraph._checkpoint import (
    CHECKPOINT_KEY,
    WorkingMemorySaver,
    load,
    persist,
)
from beam_agents.adapters.langgraph._errors import GraphInterruptError, GraphRunError
from beam_agents.adapters.langgraph._run import GraphRun, running
from beam_agents.adapters.langgraph._serde import CheckpointSerializer
from beam_agents.adapters.langgraph._settings import GraphSettings
from beam_agents.adapters.langgraph._tools import routed_builder
from beam_agents.errors import BeamAgentsError, describe_briefly
from beam_agents.memory.expire import read_expired_memory
from beam_agents.memory.facade import Memory
from beam_agents.runtime.context import ActivationContext
from beam_agents.runtime.results import Complete, Suspend, TypedResult

__all__ = ["GraphAgent", "graph_agent"]

THREAD_ID: Final = "beam-agents"
"""The thread every run uses: working memory is per key already, so one thread per key."""


async def _invoke(graph: Any, value: Any, config: dict[str, Any]) -> Any:
    try:
        return await graph.ainvoke(value, config, version="v2", durability="exit")
    except (BeamAgentsError, TimeoutError):
        raise
    except Exception as exc:
        raise GraphRunError(f"the graph raised {describe_briefly(exc)}") from exc


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
        output: Callable[[Any], bytes | TypedResult] | None = None,
        answer: Callable[[bytes], Any] | None = None,
        expired_memory_key: str | None = "working_memory",
        recursion_limit: int = 25,
        suspend_timeout_ms: int | None = None,
        checkpoint_types: Iterable[type] = (),
    ) -> None:
        self._settings = GraphSettings.checked(
            graph,
            read_only_tools=read_only_tools,
            input=input,
            output=output,
            answer=answer,
            expired_memory_key=expired_memory_key,
            recursion_limit=recursion_limit,
            suspend_timeout_ms=suspend_timeout_ms,
            checkpoint_types=checkpoint_types,
        )
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
                builder = routed_builder(self._settings.builder, self._settings.read_only)
                saver = WorkingMemorySaver(
                    serde=CheckpointSerializer(self._settings.checkpoint_types)
                )
                self._compiled = builder.compile(checkpointer=saver, **self._settings.compiled_with)
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
                "recursion_limit": self._settings.recursion_limit,
            }
            out = await _invoke(graph, self._settings.input(ctx), config)
            answered = False
            while out.interrupts:
                if len(out.interrupts) > 1:
                    raise GraphInterruptError(
                        f"the graph interrupted in {len(out.interrupts)} places at once; "
                        "one Suspend carries one question: interrupt one node at a time"
                    )
                if ctx.answer is None:
                    return Suspend(
                        prompt=_prompt(out.interrupts[0].value),
                        timeout_ms=self._settings.suspend_timeout_ms,
                    )
                if answered:
                    raise GraphInterruptError(
                        "the graph interrupted again after its answer within one event: the "
                        "runtime keeps one answer per event, so ask one question per event"
                    )
                answered = True
                out = await _invoke(
                    graph, Command(resume=self._settings.answer(ctx.answer)), config
                )
            committed = persist(run, serde)
            if committed is not None:
                ctx.memory.set(CHECKPOINT_KEY, committed)
            return Complete(self._settings.output(out.value))

    async def _saved(self, memory: Memory) -> bytes | None:
        """The committed checkpoint: working memory's, else the long-term flush's."""
        data = memory.get(CHECKPOINT_KEY)
        if data is not None or self._settings.expired_memory_key is None:
            return data
        longterm = memory.longterm_or_none
        if longterm is None:
            return None
        blob = await read_expired_memory(longterm, self._settings.expired_memory_key)
        if blob is None:
            return None
        value = Memory(blob, now_ms=memory.now_ms).get(CHECKPOINT_KEY)
        if value is not None:
            memory.set(CHECKPOINT_KEY, value)
        return value

    def __repr__(self) -> str:
        builder = self._settings.builder
        return f"GraphAgent({getattr(builder, 'name', None) or type(builder).__name__})"


async def _run_graph(agent: GraphAgent, ctx: ActivationContext) -> Complete | Suspend:
    """`agent(ctx)`, as a module-level coroutine function: what RunAgent accepts."""
    return await agent(ctx)


def graph_agent(
    graph: Any,
    *,
    read_only_tools: Iterable[str] = (),
    input: Callable[[ActivationContext], Any] | None = None,
    output: Callable[[Any], bytes | TypedResult] | None = None,
    answer: Callable[[bytes], Any] | None = None,
    expired_memory_key: str | None = "working_memory",
    recursion_limit: int = 25,
    suspend_timeout_ms: int | None = None,
    checkpoint_types: Iterable[type] = (),
) -> functools.partial[Coroutine[Any, Any, Complete | Suspend]]:
    """An agent for `RunAgent` that runs `graph` (a `StateGraph` or its compiled graph) per event.

    - `read_only_tools`: names of ToolNode tools that run in place; every
      other ToolNode tool goes through `ctx.call_tool` (configure it with
      `AgentConfig(tools=tool_handlers([...]))`).
    - `input(ctx)`: the graph input for an event; default, the event's text
      as a new human message in `messages`.
    - `output(state)`: the `Complete` output; default, the last message's text.
      Under `RunAgent(..., output_type=T)` it may return the value itself (a
      `T`, or a mapping of its fields), such as the value a node stored from
      `model.with_structured_output(T)`.
    - `answer(bytes)`: the resume value of `Command(resume=...)`; default,
      the answer as text.
    - `expired_memory_key`: the `FlushToLongterm(key)` to read a checkpoint
      back from when working memory has none; None never reads.
    - `checkpoint_types`: classes of your own the graph's state holds (a
      pydantic model, a dataclass, an enum). A checkpoint is read back only
      into LangChain messages, LangGraph's own types, common standard
      library values and these; anything else it names is refused
      (`CheckpointTypeError`), so a planted row cannot run code.
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
            checkpoint_types=checkpoint_types,
        ),
    )
