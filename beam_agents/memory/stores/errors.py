"""Typed store errors: what a caller may retry, apart from what it may not.

The runtime maps them onto the errors output (`longterm_read_failed`,
`longterm_flush_failed`); an operator's retry policy keys off the class.
"""

from __future__ import annotations

from beam_agents.errors import BeamAgentsError, ConfigurationError

__all__ = [
    "InvalidRecordError",
    "InvalidStoreURIError",
    "StoreContentionError",
    "StoreError",
    "StoreNotProvisionedError",
    "StoreUnavailableError",
]


class StoreError(BeamAgentsError):
    """A long-term store operation failed. Messages never carry credentials."""


class StoreUnavailableError(StoreError):
    """The store could not be reached or timed out; retrying later may succeed."""


class StoreContentionError(StoreUnavailableError):
    """The store answered, but concurrent writers of the same rows kept winning.

    Not an outage: every attempt reached the server and lost a race for the
    same record(s) until the deadline. Retrying later succeeds once the
    writers thin out, so it is a `StoreUnavailableError` to every retry
    policy, but the message (and the class) say what actually happened.
    """


class StoreNotProvisionedError(StoreError):
    """The table, family or index the store needs does not exist.

    Nothing is created at runtime: run `beam-agents provision URI` once.
    """


class InvalidRecordError(StoreError, ValueError):
    """A key, entity key or value the store contract does not admit (too long, wrong type)."""


class InvalidStoreURIError(ConfigurationError):
    """`AgentConfig.longterm_memory` is not a store URI this version understands."""

    def __init__(self, message: str) -> None:
        super().__init__("AgentConfig.longterm_memory", message)
