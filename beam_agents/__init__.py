"""beam-agents: LLM agents as first-class citizens of Apache Beam pipelines.

`events | RunAgent(agent, AgentConfig(...))` runs `agent` once per event,
keyed by entity, inside one stateful DoFn. The names below are the public
surface (DESIGN section 3); code outside this repository relies on them.
"""

from beam_agents.config import AgentConfig
from beam_agents.memory.expire import FlushToLongterm
from beam_agents.model.messages import LlmRequest, LlmResponse
from beam_agents.runtime import (
    ActivationContext,
    ActivationError,
    Complete,
    LifecycleEvent,
    RunAgent,
    Suspend,
    intent_id,
)

__version__ = "0.1.0"

__all__ = [
    "ActivationContext",
    "ActivationError",
    "AgentConfig",
    "Complete",
    "FlushToLongterm",
    "LifecycleEvent",
    "LlmRequest",
    "LlmResponse",
    "RunAgent",
    "Suspend",
    "__version__",
    "intent_id",
]
