"""Typed tool errors: a bad intent id, an unknown tool, a call that failed for good."""

from __future__ import annotations

from beam_agents.errors import BeamAgentsError

__all__ = [
    "InvalidIntentIdError",
    "ToolCallError",
    "ToolError",
    "ToolResultTooLargeError",
    "UnknownToolError",
]


class ToolError(BeamAgentsError):
    """A tool could not be executed. Messages never carry secrets."""


class InvalidIntentIdError(ToolError, ValueError):
    """An intent id that is not a canonical UUID string (the only form ledgers store)."""


class UnknownToolError(ToolError, LookupError):
    """No handler is configured under the intent's tool name."""


class ToolCallError(ToolError):
    """A handler failed after its own retries; `attempts` says how many calls were made."""

    def __init__(self, message: str, *, attempts: int = 1) -> None:
        super().__init__(message)
        self.attempts = attempts


class ToolResultTooLargeError(ToolError, ValueError):
    """A result over `MAX_RESULT_BYTES`: every ledger backend must be able to hold it."""
