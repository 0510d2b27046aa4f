"""The LangGraph adapter's failures: a graph that raised, or asked more than a `Suspend` holds."""

from __future__ import annotations

from beam_agents.errors import BeamAgentsError

__all__ = ["GraphInterruptError", "GraphRunError"]


class GraphInterruptError(BeamAgentsError):
    """A graph interrupted in a way one `Suspend` cannot carry (fails as `activation_error`)."""


class GraphRunError(BeamAgentsError):
    """The graph raised (a node, a reducer, LangGraph itself); the cause is chained.

    Fails the activation as `activation_error`. What the runtime raised inside
    the graph (a model or tool failure, a long-term read, a budget, memory
    overflow, a timeout) passes through unwrapped and keeps its own reason.
    """
