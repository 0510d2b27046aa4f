"""What working memory refuses: a write past the hard cap, the long-term tier unconfigured.

Raised by the facade (`beam_agents.memory.facade`), which also names them,
as it always has.
"""

from __future__ import annotations

from beam_agents.errors import BeamAgentsError

__all__ = ["LongtermNotConfigured", "MemoryOverflow"]


class MemoryOverflow(BeamAgentsError):
    """A write would push working memory past the hard cap, even after compaction.

    The write was not applied. Compaction that ran before the refusal stays
    staged: it was a legitimate eviction in its own right.
    """

    def __init__(self, key: str, attempted_bytes: int, cap_bytes: int) -> None:
        super().__init__(
            f"writing {key!r} would make working memory {attempted_bytes} bytes, "
            f"over the {cap_bytes}-byte cap"
        )
        self.key = key
        self.attempted_bytes = attempted_bytes
        self.cap_bytes = cap_bytes


class LongtermNotConfigured(BeamAgentsError, RuntimeError):
    """`memory.longterm` was used on a pipeline without a long-term store."""

    def __init__(self) -> None:
        super().__init__(
            "long-term memory is not configured: set AgentConfig.longterm_memory "
            "to a store URI (e.g. 'redis://host:6379/0') to use ctx.memory.longterm"
        )
