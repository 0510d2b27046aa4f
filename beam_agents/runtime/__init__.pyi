"""The public names of `beam_agents.runtime`: the one list (see `beam_agents._lazy`)."""

from beam_agents.runtime.agent import Agent as Agent
from beam_agents.runtime.context import ActivationContext as ActivationContext
from beam_agents.runtime.errors import REASONS as REASONS
from beam_agents.runtime.errors import ActivationError as ActivationError
from beam_agents.runtime.intents import intent_id as intent_id
from beam_agents.runtime.lifecycle import KINDS as KINDS
from beam_agents.runtime.lifecycle import LifecycleEvent as LifecycleEvent
from beam_agents.runtime.results import Complete as Complete
from beam_agents.runtime.results import Suspend as Suspend
from beam_agents.runtime.transform import RunAgent as RunAgent
from beam_agents.runtime.transform import RunAgentResult as RunAgentResult
from beam_agents.runtime.wakes import Wake as Wake
from beam_agents.runtime.wakes import WakeLimitError as WakeLimitError
