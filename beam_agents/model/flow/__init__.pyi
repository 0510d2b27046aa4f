"""The names of `beam_agents.model.flow`: the one list (see `beam_agents._lazy`)."""

from beam_agents.model.flow._control import FlowControl as FlowControl
from beam_agents.model.flow._control import flow_control as flow_control
from beam_agents.model.flow._control import forget_flow_control as forget_flow_control
from beam_agents.model.flow._provider import FlowCallStats as FlowCallStats
from beam_agents.model.flow._provider import FlowControlledProvider as FlowControlledProvider
from beam_agents.model.flow._provider import estimate_tokens as estimate_tokens
from beam_agents.model.flow._provider import observe_flow as observe_flow
from beam_agents.model.flow._ticket import Ticket as Ticket
from beam_agents.model.flow._ticket import call_ticket as call_ticket
from beam_agents.model.flow.rate_limit import RateLimit as RateLimit
