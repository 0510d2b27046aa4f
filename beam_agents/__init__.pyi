"""The public names of `beam_agents`: the one list (see `beam_agents._lazy`)."""

from beam_agents.budget import TokenBudget as TokenBudget
from beam_agents.config import AgentConfig as AgentConfig
from beam_agents.memory.expire import FlushToLongterm as FlushToLongterm
from beam_agents.model.flow.rate_limit import RateLimit as RateLimit
from beam_agents.model.messages import LlmRequest as LlmRequest
from beam_agents.model.messages import LlmResponse as LlmResponse
from beam_agents.runtime.agent import Agent as Agent
from beam_agents.runtime.context import ActivationContext as ActivationContext
from beam_agents.runtime.errors import ActivationError as ActivationError
from beam_agents.runtime.intents import intent_id as intent_id
from beam_agents.runtime.lifecycle import LifecycleEvent as LifecycleEvent
from beam_agents.runtime.results import Complete as Complete
from beam_agents.runtime.results import Suspend as Suspend
from beam_agents.runtime.transform import RunAgent as RunAgent
from beam_agents.runtime.wakes import Wake as Wake
from beam_agents.runtime.wakes import WakeLimitError as WakeLimitError
from beam_agents.telemetry_options import TelemetryOptions as TelemetryOptions

__version__: str
