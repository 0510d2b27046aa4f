"""Run a Google ADK agent under RunAgent: keyed memory, tools once, approvals that survive.

    from google.adk.agents import LlmAgent
    from beam_agents.adapters.adk import BeamAgentsLlm, adk_agent, adk_tools

    root_agent = LlmAgent(name="triage", model=BeamAgentsLlm(), tools=[page_oncall])
    config = AgentConfig(provider_factory=..., tools=adk_tools(root_agent), tool_ledger=...)
    results = events | RunAgent(adk_agent(root_agent), config, answers=answers)

Each event of an entity key is one ADK invocation in that key's session:

- the session lives in working memory (and comes back from the long-term
  tier after `on_expire=FlushToLongterm()`), so the key's next event sees
  this one's conversation;
- `BeamAgentsLlm` asks the model through `ctx.call_model`: replay-cached,
  parked when slow, counted and budgeted;
- function tools run through `ctx.call_tool` and the tool ledger, once per
  call across retries (`adk_tools` gives `AgentConfig.tools` their handlers);
- a tool confirmation or a long-running tool ends the activation in a
  `Suspend`; the answer resumes the agent where ADK paused;
- ADK's memory service is the long-term tier.

An activation re-runs from its start (a park, a retried bundle, a resume):
ADK runs again from the committed session, its clock, ids and randomness
bound to the activation, and the cached answers bring it to the same place.
"""

from __future__ import annotations

from beam_agents.errors import ConfigurationError

# Checked before any private module imports ADK, so a missing extra is one
# message that names the fix, whichever part of the adapter is imported.
try:
    import google.adk
    import google.genai  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ConfigurationError(
        "beam_agents.adapters.adk",
        f"needs Google ADK, which is not installed ({exc}): pip install 'beam-agents[adk]'",
    ) from exc

from beam_agents.adapters.adk._agent import adk_agent
from beam_agents.adapters.adk._binding import AdkAdapterError
from beam_agents.adapters.adk._llm import BeamAgentsLlm
from beam_agents.adapters.adk._tools import adk_tools

__all__ = ["AdkAdapterError", "BeamAgentsLlm", "adk_agent", "adk_tools"]
