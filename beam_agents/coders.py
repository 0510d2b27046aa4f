"""Deterministic protobuf coders for Beam state and PCollections.

Beam compares encoded keys and, on some runners, encoded state to decide
what is "the same"; protobuf's default serialization does not promise a
stable byte order for map fields. Every message beam-agents persists goes
through `SerializeToString(deterministic=True)`, and the coder says so, so
Beam never warns about (or silently mis-groups) non-deterministic bytes.
Pickle is never used for state: its bytes change with the Python version.
"""

from __future__ import annotations

from typing import Any, Final, Generic, TypeVar

from apache_beam.coders.coders import Coder
from google.protobuf.message import Message

from beam_agents.errors import StateDecodeError
from beam_agents.proto.beam_agents_pb2 import (
    Continuation,
    MemoryBlob,
    MemoryDelta,
    PendingIntents,
    PendingWakes,
    ReplayCache,
    SeqState,
)

__all__ = [
    "STATE_SCHEMA_VERSION",
    "DeterministicProtoCoder",
    "ProtoRecordCoder",
    "decode_state",
    "encode_deterministic",
]

M = TypeVar("M", bound=Message)
S = TypeVar(
    "S",
    Continuation,
    MemoryBlob,
    MemoryDelta,
    PendingIntents,
    PendingWakes,
    SeqState,
    ReplayCache,
)

STATE_SCHEMA_VERSION: Final = 1
"""The `state_schema_version` every state cell is written with and read at."""


def encode_deterministic(message: Message) -> bytes:
    """The one way beam-agents turns a message into persisted bytes."""
    return message.SerializeToString(deterministic=True)


def decode_state(raw: bytes | None, message_type: type[S], what: str) -> S | None:
    """A state cell's message, None when empty; `StateDecodeError` naming `what` otherwise.

    Undecodable or future-versioned state becomes a typed error the runtime
    reports, instead of a bundle that fails forever.
    """
    if not raw:
        return None
    try:
        message = message_type.FromString(raw)
    except Exception as exc:  # protobuf raises DecodeError, or worse on garbage
        raise StateDecodeError(f"{what} cell does not decode: {exc}") from None
    version = message.state_schema_version
    if version != STATE_SCHEMA_VERSION:
        raise StateDecodeError(
            f"{what} cell has state_schema_version {version}, reads {STATE_SCHEMA_VERSION}"
        )
    return message


class DeterministicProtoCoder(Coder, Generic[M]):
    """Encodes one protobuf message type with deterministic serialization."""

    def __init__(self, message_type: type[M]) -> None:
        self._message_type = message_type

    @property
    def message_type(self) -> type[M]:
        """The message class this coder reads and writes."""
        return self._message_type

    def encode(self, value: M) -> bytes:
        return encode_deterministic(value)

    def decode(self, encoded: bytes) -> M:
        return self._message_type.FromString(encoded)

    def is_deterministic(self) -> bool:
        return True

    @classmethod
    def from_type_hint(  # type: ignore[override]
        cls, typehint: type[M], registry: object
    ) -> DeterministicProtoCoder[M]:
        """Build the coder Beam's registry asks for when a PCollection has this type."""
        return cls(typehint)

    def to_type_hint(self) -> type[M]:
        return self._message_type

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and isinstance(other, DeterministicProtoCoder)
            and other._message_type is self._message_type
        )

    def __hash__(self) -> int:
        return hash((type(self), self._message_type.DESCRIPTOR.full_name))

    def __repr__(self) -> str:
        return f"DeterministicProtoCoder({self._message_type.DESCRIPTOR.full_name})"


class ProtoRecordCoder(Coder):
    """Encodes a value type through its protobuf record, deterministically; never pickle.

    For the frozen value types the runtime emits (`ActivationError`,
    `LifecycleEvent`): each has `to_proto()` and a `from_proto` classmethod.
    Subclasses name the two types as class attributes, because Beam's coder
    registry builds a registered coder class without arguments.
    """

    value_type: Any
    """The value class: `to_proto()` on instances, `from_proto(message)` on the class."""
    message_type: type[Message]
    """Its record message."""

    def encode(self, value: Any) -> bytes:
        return encode_deterministic(value.to_proto())

    def decode(self, encoded: bytes) -> Any:
        return self.value_type.from_proto(self.message_type.FromString(encoded))

    def is_deterministic(self) -> bool:
        return True

    def to_type_hint(self) -> Any:
        return self.value_type

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))
