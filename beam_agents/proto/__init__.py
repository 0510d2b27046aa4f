"""Generated protobuf messages: the persisted forms of state and long-term rows.

The module `beam_agents_pb2` is generated from `beam_agents.proto` by
`make proto` and committed; a test regenerates it and fails on drift.
"""

from beam_agents.proto.beam_agents_pb2 import LongTermRecord, MemoryBlob, ToolIntent

__all__ = ["LongTermRecord", "MemoryBlob", "ToolIntent"]
