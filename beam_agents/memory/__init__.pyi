"""The public names of `beam_agents.memory`: the one list (see `beam_agents._lazy`)."""

from beam_agents.memory.compaction import Compactor as Compactor
from beam_agents.memory.compaction import DropOldestCompactor as DropOldestCompactor
from beam_agents.memory.facade import HARD_CAP_BYTES as HARD_CAP_BYTES
from beam_agents.memory.facade import SOFT_CAP_BYTES as SOFT_CAP_BYTES
from beam_agents.memory.facade import LongtermNotConfigured as LongtermNotConfigured
from beam_agents.memory.facade import Memory as Memory
from beam_agents.memory.facade import MemoryOverflow as MemoryOverflow
from beam_agents.memory.longterm import (
    CrossEntityRecallNotConfigured as CrossEntityRecallNotConfigured,
)
from beam_agents.memory.longterm import EmbedderNotConfigured as EmbedderNotConfigured
from beam_agents.memory.recall import MAX_RECALL_K as MAX_RECALL_K
from beam_agents.memory.recall import Recalled as Recalled
from beam_agents.memory.recall import RecallTooLargeError as RecallTooLargeError
from beam_agents.memory.summarize import SummarizeCompactor as SummarizeCompactor
