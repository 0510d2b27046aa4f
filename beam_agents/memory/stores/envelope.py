"""The one byte format every backend stores: a deterministic `LongTermRecord`.

Backends differ in how they key and guard rows, never in what a row holds,
so `beam-agents migrate-store` is a verbatim copy between any pair of them
and a row written by one version is readable by the next (additive proto
changes only; an unknown schema version is refused, never guessed at).
"""

from __future__ import annotations

from typing import Final

from google.protobuf.message import DecodeError

from beam_agents.errors import StateDecodeError
from beam_agents.memory.stores.base import Embedding, MemoryRecord
from beam_agents.proto import LongTermRecord
from beam_agents.proto.beam_agents_pb2 import Embedding as EmbeddingMessage

__all__ = ["STATE_SCHEMA_VERSION", "decode_record", "encode_record"]

STATE_SCHEMA_VERSION: Final = 1
"""The envelope version this release writes and the only one it reads."""


def encode_record(record: MemoryRecord) -> bytes:
    """The envelope bytes of `record`, identical on every backend and every run."""
    message = LongTermRecord(
        state_schema_version=STATE_SCHEMA_VERSION,
        key=record.key,
        value=record.value,
        seq=record.seq,
        updated_at_ms=record.updated_at_ms,
    )
    if record.embedding is not None:
        embedding = record.embedding
        message.embedding.CopyFrom(
            EmbeddingMessage(
                model_id=embedding.model_id,
                dimensions=embedding.dimensions,
                vector=embedding.vector,
            )
        )
    # Deterministic serialization, as for all persisted state (see beam_agents.coders),
    # without importing Beam into the store layer.
    return message.SerializeToString(deterministic=True)


def decode_record(data: bytes) -> MemoryRecord:
    """The record inside an envelope; `StateDecodeError` for bytes this version cannot read."""
    try:
        message = LongTermRecord.FromString(data)
    except (DecodeError, TypeError) as exc:
        raise StateDecodeError(f"long-term row is not a LongTermRecord: {exc}") from None
    if message.state_schema_version != STATE_SCHEMA_VERSION:
        raise StateDecodeError(
            f"long-term row has state_schema_version {message.state_schema_version}; "
            f"this version of beam-agents reads only {STATE_SCHEMA_VERSION}"
        )
    embedding = None
    if message.HasField("embedding"):
        found = message.embedding
        embedding = Embedding(found.model_id, found.dimensions, found.vector)
    return MemoryRecord(
        key=message.key,
        value=message.value,
        seq=message.seq,
        updated_at_ms=message.updated_at_ms,
        embedding=embedding,
    )
