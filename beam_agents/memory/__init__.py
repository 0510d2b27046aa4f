"""Working memory: the per-key facade, its caps and tier-1 compaction."""

from beam_agents.memory.compaction import Compactor, DropOldestCompactor
from beam_agents.memory.facade import (
    HARD_CAP_BYTES,
    SOFT_CAP_BYTES,
    LongtermNotConfigured,
    Memory,
    MemoryOverflow,
)
from beam_agents.memory.summarize import SummarizeCompactor

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
