"""The activation a LangGraph run belongs to, reachable from inside the graph.

A graph is compiled once per worker, but its model, tools and checkpointer
must act through the activation running it. LangGraph runs nodes as asyncio
tasks (and sync nodes in executor threads) that copy the caller's context,
so a context variable set around the run reaches every node.
"""

from __future__ import annotations

import asyncio
import contextvars
from dataclasses import dataclass, field
from typing import Any

from beam_agents._scoped import Scoped
from beam_agents.errors import BeamAgentsError
from beam_agents.runtime.context import ActivationContext

__all__ = ["GraphRun", "NotInActivationError", "current_run", "running"]


class NotInActivationError(BeamAgentsError, RuntimeError):
    """A beam-agents LangGraph object was used outside an agent made by `graph_agent`."""


@dataclass
class Namespace:
    """The latest checkpoint of one checkpoint namespace, and the writes pending on it.

    The checkpoint is kept as LangGraph handed it over (it is not changed
    after a put) and copied through the serializer only when read back, so
    a run that reads its checkpoint once and puts once serializes nothing
    here; `fresh` marks one just decoded from working memory, which the
    first read may take as it is.
    """

    checkpoint: Any
    metadata: dict[str, Any]
    parent_id: str | None
    fresh: bool = False
    writes: dict[tuple[str, int], tuple[str, str, tuple[str, bytes], str]] = field(
        default_factory=dict
    )


@dataclass
class GraphRun:
    """One activation's run of a graph: its context, its loop and its checkpoints."""

    ctx: ActivationContext
    loop: asyncio.AbstractEventLoop
    namespaces: dict[str, Namespace] = field(default_factory=dict)
    model_calls: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    tool_turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held by each side-effecting tool call while it runs. A ToolNode starts a model
    answer's calls together, in the order listed; the lock is first come, first
    served, so they run one after another in that order, as the ledger numbers them."""


_RUN: contextvars.ContextVar[GraphRun | None] = contextvars.ContextVar(
    "beam_agents_langgraph_run", default=None
)


def current_run(what: str) -> GraphRun:
    """The run in progress, or an error naming `what` was used outside one."""
    run = _RUN.get()
    if run is None:
        raise NotInActivationError(
            f"{what} acts through the activation running the graph: run the graph with "
            "beam_agents.adapters.langgraph.graph_agent(...) under RunAgent"
        )
    return run


def running(run: GraphRun) -> Scoped[GraphRun | None]:
    """`with running(run):` makes `run` the current one for the block."""
    return Scoped(_RUN, run)
