"""Working memory: the per-key facade, its caps and tier-1 compaction.

Names are imported lazily (PEP 562, as in `beam_agents`): the facade
imports Apache Beam's metrics, and `beam_agents.memory.stores` (which the
CLI uses) must not pay for that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from beam_agents import _lazy_attribute

_LAZY: Final[dict[str, str]] = {
    "HARD_CAP_BYTES": "beam_agents.memory.facade",
    "SOFT_CAP_BYTES": "beam_agents.memory.facade",
    "Compactor": "beam_agents.memory.compaction",
    "DropOldestCompactor": "beam_agents.memory.compaction",
    "LongtermNotConfigured": "beam_agents.memory.facade",
    "Memory": "beam_agents.memory.facade",
    "MemoryOverflow": "beam_agents.memory.facade",
    "SummarizeCompactor": "beam_agents.memory.summarize",
}

__all__ = [
    "HARD_CAP_BYTES",
    "SOFT_CAP_BYTES",
    "Compactor",
    "DropOldestCompactor",
    "LongtermNotConfigured",
    "Memory",
    "MemoryOverflow",
    "SummarizeCompactor",
]

if TYPE_CHECKING:
    from beam_agents.memory.compaction import Compactor, DropOldestCompactor
    from beam_agents.memory.facade import (
        HARD_CAP_BYTES,
        SOFT_CAP_BYTES,
        LongtermNotConfigured,
        Memory,
        MemoryOverflow,
    )
    from beam_agents.memory.summarize import SummarizeCompactor


def __getattr__(name: str) -> object:
    return _lazy_attribute(__name__, _LAZY, globals(), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
