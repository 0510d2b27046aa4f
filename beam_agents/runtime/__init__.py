"""The runtime: RunAgent, the activation context, results, errors and lifecycle records."""

from beam_agents.runtime.context import ActivationContext
from beam_agents.runtime.errors import REASONS, ActivationError
from beam_agents.runtime.intents import intent_id
from beam_agents.runtime.lifecycle import KINDS, LifecycleEvent
from beam_agents.runtime.results import Complete, Suspend
from beam_agents.runtime.transform import RunAgent, RunAgentResult

__all__ = [
    "KINDS",
    "REASONS",
    "ActivationContext",
    "ActivationError",
    "Complete",
    "LifecycleEvent",
    "RunAgent",
    "RunAgentResult",
    "Suspend",
    "intent_id",
]
