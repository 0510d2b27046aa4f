"""A key's state cells and timers, as the activation lifecycle sees them.

The runtime reads and writes each cell through a small `Cell`/`Timer`
protocol that Beam's runtime state objects satisfy as they are, which keeps
the lifecycle testable and benchmarkable without a runner. Every cell holds
the deterministic protobuf bytes of one message, parsed here so undecodable
state becomes a typed `StateDecodeError` instead of a bundle failing forever.
"""

from __future__ import annotations

from typing import Final, NamedTuple, Protocol, TypeVar

from beam_agents.coders import STATE_SCHEMA_VERSION, decode_state, encode_deterministic
from beam_agents.proto.beam_agents_pb2 import (
    Continuation,
    MemoryBlob,
    PendingIntents,
    ReplayCache,
    SeqState,
)

__all__ = ["SCHEMA_VERSION", "Cell", "KeyCells", "Timer", "read_message", "write_seq"]

SCHEMA_VERSION: Final = STATE_SCHEMA_VERSION
"""The `state_schema_version` every cell is written with and read at."""

M = TypeVar("M", Continuation, MemoryBlob, PendingIntents, SeqState, ReplayCache)


class Cell(Protocol):
    """One keyed state cell holding deterministic protobuf bytes."""

    def read(self) -> bytes | None: ...

    def write(self, value: bytes) -> None: ...

    def clear(self) -> None: ...


class Timer(Protocol):
    """One keyed timer; `set` takes a Beam Timestamp."""

    def set(self, timestamp: object) -> None: ...

    def clear(self) -> None: ...


class KeyCells(NamedTuple):
    """The five cells and two timers of one key (DESIGN section 7).

    A named tuple: one is built per element, and a frozen dataclass costs
    four times as much to build.
    """

    memory: Cell
    seq: Cell
    cache: Cell
    continuation: Cell
    pending: Cell
    ttl_timer: Timer
    hitl_timer: Timer


def read_message(cell: Cell, message_type: type[M], what: str) -> M | None:
    """The cell's message, None when empty; `StateDecodeError` naming `what` otherwise."""
    return decode_state(cell.read(), message_type, what)


def write_seq(cells: KeyCells, seq: int, *, continuation_clear: bool) -> None:
    """Commit `seq` as the key's last activation.

    `continuation_clear` says this commit leaves CONTINUATION empty, which
    spares the key's next event a state read (on a production runner, a
    fetch). Only a commit that also clears CONTINUATION, or that ran because
    it was empty, may say so; a suspension's commit never does.
    """
    cells.seq.write(
        encode_deterministic(
            SeqState(
                state_schema_version=SCHEMA_VERSION,
                seq=seq,
                continuation_clear=continuation_clear,
            )
        )
    )
