"""The runtime: RunAgent, the activation context, results, errors and lifecycle records.

Names are imported lazily (PEP 562, as in `beam_agents`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from beam_agents import _lazy_attribute

_LAZY: Final[dict[str, str]] = {
    "KINDS": "beam_agents.runtime.lifecycle",
    "REASONS": "beam_agents.runtime.errors",
    "ActivationContext": "beam_agents.runtime.context",
    "ActivationError": "beam_agents.runtime.errors",
    "Complete": "beam_agents.runtime.results",
    "LifecycleEvent": "beam_agents.runtime.lifecycle",
    "RunAgent": "beam_agents.runtime.transform",
    "RunAgentResult": "beam_agents.runtime.transform",
    "Suspend": "beam_agents.runtime.results",
    "intent_id": "beam_agents.runtime.intents",
}

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

if TYPE_CHECKING:
    from beam_agents.runtime.context import ActivationContext
    from beam_agents.runtime.errors import REASONS, ActivationError
    from beam_agents.runtime.intents import intent_id
    from beam_agents.runtime.lifecycle import KINDS, LifecycleEvent
    from beam_agents.runtime.results import Complete, Suspend
    from beam_agents.runtime.transform import RunAgent, RunAgentResult


def __getattr__(name: str) -> object:
    return _lazy_attribute(__name__, _LAZY, globals(), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
