"""Run a LangGraph graph as a beam-agents agent: `RunAgent(graph_agent(builder), config)`.

The graph stays as LangGraph's documentation teaches it; its chat model is
a `BeamAgentsChatModel`, the one object of ours in it. Per activation the
graph runs once for the event, over the key's conversation:

- state: the key's latest checkpoint, in working memory under
  `__langgraph__/` (which compaction protects by default); when working
  memory has none (a new pipeline, or a key the TTL wiped under
  `on_expire=FlushToLongterm()`), the checkpoint is read back from what the
  flush wrote to the long-term tier, and restored only into allowed classes
  (signed under `AgentConfig.answer_signing_key`, when set);
- model calls: `ctx.call_model`, through the chat model;
- tools: the `ToolNode`s' tools through `ctx.call_tool` (the pipeline's
  handlers, `tool_handlers(...)`, executed once per call through the
  ledger), except tools declared read-only, which run in place;
- `interrupt()`: a `Suspend` whose prompt is the interrupt's value; the
  answer resumes the graph with `Command(resume=answer)`.

Needs the `langgraph` extra: `pip install 'beam-agents[langgraph]'`.
"""

from __future__ import annotations

from beam_agents.errors import ConfigurationError

# Checked before any private module imports LangGraph, so a missing extra is
# one message that names the fix, whichever part of the adapter is imported.
try:
    import langchain_core.messages  # noqa: F401
    import langgraph.graph.state
    import langgraph.types  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ConfigurationError(
        "beam_agents.adapters.langgraph",
        f"needs LangGraph ({exc.name} is not installed): pip install 'beam-agents[langgraph]'",
    ) from exc

from beam_agents.adapters.langgraph._agent import GraphAgent, graph_agent
from beam_agents.adapters.langgraph._checkpoint import CHECKPOINT_KEY
from beam_agents.adapters.langgraph._errors import (
    CheckpointTypeError,
    GraphInterruptError,
    GraphRunError,
)
from beam_agents.adapters.langgraph._model import BeamAgentsChatModel
from beam_agents.adapters.langgraph._run import NotInActivationError
from beam_agents.adapters.langgraph._tools import LangChainToolHandler, tool_handlers

__all__ = [
    "CHECKPOINT_KEY",
    "BeamAgentsChatModel",
    "CheckpointTypeError",
    "GraphAgent",
    "GraphInterruptError",
    "GraphRunError",
    "LangChainToolHandler",
    "NotInActivationError",
    "graph_agent",
    "tool_handlers",
]
