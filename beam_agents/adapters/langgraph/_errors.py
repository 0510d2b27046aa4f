"""The LangGraph adapter's failures: a graph that raised, asked more than a `Suspend` holds,
or kept (or was handed) a checkpoint naming a type the adapter does not restore."""

from __future__ import annotations

from beam_agents.errors import BeamAgentsError, StateDecodeError

__all__ = ["CheckpointTypeError", "GraphInterruptError", "GraphRunError"]


class GraphInterruptError(BeamAgentsError):
    """A graph interrupted in a way one `Suspend` cannot carry (fails as `activation_error`)."""


class GraphRunError(BeamAgentsError):
    """The graph raised (a node, a reducer, LangGraph itself); the cause is chained.

    Fails the activation as `activation_error`. What the runtime raised inside
    the graph (a model or tool failure, a long-term read, a budget, memory
    overflow, a timeout) passes through unwrapped and keeps its own reason.
    """


class CheckpointTypeError(StateDecodeError):
    """A checkpoint names a type outside the allow-list; `type_name` says which.

    Raised before the named type is imported, constructed or called, when a
    checkpoint is read back (a row someone else wrote), or when the graph's
    own state would commit one that could not be read back. A
    `StateDecodeError`: the activation fails as `state_decode_error` and the
    stored checkpoint is left as it was.
    """

    def __init__(self, type_name: str, detail: str) -> None:
        super().__init__(detail)
        self.type_name = type_name
