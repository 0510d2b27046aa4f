"""The runtime: RunAgent, the activation context, results and the errors output."""

from beam_agents.runtime.context import ActivationContext
from beam_agents.runtime.errors import REASONS, ActivationError
from beam_agents.runtime.intents import intent_id
from beam_agents.runtime.results import Complete, Suspend
from beam_agents.runtime.transform import RunAgent, RunAgentResult

__all__ = [
    "REASONS",
    "ActivationContext",
    "ActivationError",
    "Complete",
    "RunAgent",
    "RunAgentResult",
    "Suspend",
    "intent_id",
]
