"""Kept for compatibility: `RateLimit` lives in `beam_agents.model.flow.rate_limit`."""

from beam_agents.model.flow.rate_limit import PROCESS_SCOPE, RateLimit, redact_scope

__all__ = ["PROCESS_SCOPE", "RateLimit", "redact_scope"]
