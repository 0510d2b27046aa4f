"""A key's state cells and timers, as the activation lifecycle sees them.

The runtime reads and writes each cell through a small `Cell`/`Timer`
protocol that Beam's runtime state objects satisfy as they are, which keeps
the lifecycle testable and benchmarkable without a runner. Every cell holds
the deterministic protobuf bytes of one message, parsed here so undecodable
state becomes a typed `StateDecodeError` instead of a bundle failing forever.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, NamedTuple, Protocol, TypeVar

from beam_agents.coders import STATE_SCHEMA_VERSION, decode_state, encode_deterministic
from beam_agents.memory.resident import EMPTY_DIGEST, decode_head, fold_stored
from beam_agents.memory.ring import varint
from beam_agents.proto.beam_agents_pb2 import (
    Continuation,
    MemoryBlob,
    PendingIntents,
    PendingWakes,
    ReplayCache,
    SeqState,
)

__all__ = [
    "SCHEMA_VERSION",
    "Bag",
    "Cell",
    "KeyCells",
    "KnownCell",
    "StoredMemory",
    "Timer",
    "committed_size",
    "encode_seq",
    "encode_ttl_at",
    "later_ttl",
    "read_memory",
    "read_message",
    "write_seq",
]

SCHEMA_VERSION: Final = STATE_SCHEMA_VERSION
"""The `state_schema_version` every cell is written with and read at."""

M = TypeVar("M", Continuation, MemoryBlob, PendingIntents, PendingWakes, SeqState, ReplayCache)


class Cell(Protocol):
    """One keyed state cell holding deterministic protobuf bytes."""

    def read(self) -> bytes | None: ...

    def write(self, value: bytes) -> None: ...

    def clear(self) -> None: ...


class Bag(Protocol):
    """One keyed bag of byte values, read whole in the order they were added."""

    def read(self) -> Iterable[bytes]: ...

    def add(self, value: bytes) -> None: ...

    def clear(self) -> None: ...


class Timer(Protocol):
    """One keyed timer; `set` takes a Beam Timestamp."""

    def set(self, timestamp: object) -> None: ...

    def clear(self) -> None: ...


class KeyCells(NamedTuple):
    """The seven cells, one bag and four timers of one key.

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
    wakes: Cell
    """Pending follow-ups (`beam_agents.runtime._wake_book`)."""
    wake_timer: Timer
    """The earliest event-time follow-up not yet handed to a run."""
    wake_clock: Timer
    """The earliest processing-time follow-up not yet handed to a run."""
    memory_log: Bag
    """What commits changed since MEMORY was last written whole (`beam_agents.memory.delta`)."""
    memory_head: Cell
    """What MEMORY and MEMORY_LOG hold (`beam_agents.memory.resident`)."""


class KnownCell:
    """A cell whose bytes the caller already knows: reads skip the runner, writes go through.

    On a portable runner a read the state cache has not seen is a fetch, and
    the harness sizes what it fetched (about 0.3 ms whatever the value). A
    caller that can tell from another cell what this one holds (a park that
    kept no answer says in CONTINUATION that it left LLM_CACHE empty) hands
    the activation this instead. After a write or a clear it
    answers with what was written, so later activations on the same cells
    see their predecessor's commit.
    """

    __slots__ = ("cell", "value")

    def __init__(self, cell: Cell, value: bytes | None) -> None:
        self.cell = cell
        self.value = value

    def read(self) -> bytes | None:
        return self.value

    def write(self, value: bytes) -> None:
        self.cell.write(value)
        self.value = value

    def clear(self) -> None:
        self.cell.clear()
        self.value = None


def read_message(cell: Cell, message_type: type[M], what: str) -> M | None:
    """The cell's message, None when empty; `StateDecodeError` naming `what` otherwise."""
    return decode_state(cell.read(), message_type, what)


class StoredMemory(NamedTuple):
    """The committed working memory as one blob, and which of its cells hold it."""

    blob: MemoryBlob | None
    head: bool
    """MEMORY_HEAD is set (every commit since the log exists writes it)."""
    logged: bool
    """MEMORY_LOG holds deltas of `blob`."""


def read_memory(cells: KeyCells, *, entries: bool = True, digest: bytes = b"") -> StoredMemory:
    """The committed working memory, folded into one blob, for readers outside an activation.

    The TTL and the records read it; an activation opens its facade through
    `ResidentMemory` instead. `StateDecodeError` for cells that do not read.
    `entries=False` is for a reader that needs only which cells hold memory
    and its size (a wipe with no `on_expire` flush): a memory with a head is
    then neither read nor folded, and its blob carries only its size.
    `digest` is SEQ's `memory_digest`: set, the memory is written whole (no
    head to read; without `entries`, MEMORY is not read either, and the
    blob stands for it without its size), and the empty digest says there
    is none to read at all.
    """
    if digest == EMPTY_DIGEST:
        return StoredMemory(None, False, False)
    if digest:
        if not entries:
            return StoredMemory(MemoryBlob(), False, False)
        blob = decode_state(cells.memory.read(), MemoryBlob, "MEMORY")
        return StoredMemory(blob, False, False)
    head = decode_head(cells.memory_head.read())
    if head is not None and not entries:
        sized = MemoryBlob(total_value_bytes=head.total_value_bytes)
        return StoredMemory(sized, True, head.log_values > 0)
    blob = fold_stored(cells.memory.read(), head, cells.memory_log)
    return StoredMemory(blob, head is not None, head is not None and head.log_values > 0)


def committed_size(cells: KeyCells) -> int:
    """The committed memory's value bytes: the head says, or (a key written before it) MEMORY."""
    head = decode_head(cells.memory_head.read())
    if head is not None:
        return head.total_value_bytes
    blob = decode_state(cells.memory.read(), MemoryBlob, "MEMORY")
    return blob.total_value_bytes if blob is not None else 0


def write_seq(
    cells: KeyCells,
    seq: int,
    *,
    continuation_clear: bool,
    spend: bytes = b"",
    ttl_at_ms: int = 0,
    memory_digest: bytes = b"",
) -> None:
    """Commit `seq` as the key's last activation.

    `continuation_clear` says this commit leaves CONTINUATION empty, which
    spares the key's next event a state read (on a production runner, a
    fetch). Only a commit that also clears CONTINUATION, or that ran because
    it was empty, may say so; a suspension's commit never does. `spend` is
    `SeqState.spend`'s bytes (`beam_agents.budget.Meter.encoded`), which
    follow the fields written here in field order. `ttl_at_ms` is where the
    commit sets the TTL timer (`SeqState.ttl_at_ms`; 0 leaves it unknown).
    `memory_digest` is the committed memory's 16-byte `whole_digest`
    (`SeqState.memory_digest`; empty leaves it unknown).
    """
    raw = encode_seq(seq, continuation_clear)
    if spend:
        raw += spend
    if ttl_at_ms:
        raw += encode_ttl_at(ttl_at_ms)
    if memory_digest:
        raw += _DIGEST_HEAD + memory_digest
    cells.seq.write(raw)


def later_ttl(
    cells: KeyCells, ttl_at_ms: int, parked: Continuation | None, held_ms: int | None = None
) -> int:
    """`ttl_at_ms`, or the later TTL time the key holds: a commit never brings the TTL earlier.

    A suspension sets the TTL past its own timeout; a commit that runs while it
    is live (a follow-up's run) must not bring it back, or when the key is
    wiped would depend on which setting of the timer the runner kept, and
    that differed between a run that parked its calls and one that did not.
    The time is in SEQ, or, for the re-run of a parked activation, in its
    parked record (a poll whose key parks again does not rewrite SEQ).
    `held_ms` is SEQ's time where the caller decoded SEQ already.
    """
    if held_ms is None:
        held = decode_state(cells.seq.read(), SeqState, "SEQ")
        held_ms = held.ttl_at_ms if held is not None else 0
    kept = max(ttl_at_ms, held_ms)
    return max(kept, parked.parked.ttl_at_ms) if parked is not None else kept


def encode_ttl_at(ttl_at_ms: int) -> bytes:
    """Field 6 (`ttl_at_ms`) in protobuf's own bytes; it follows every field written before it."""
    if ttl_at_ms > 0:
        return b"\x30" + varint(ttl_at_ms)
    return encode_deterministic(SeqState(ttl_at_ms=ttl_at_ms))


def encode_seq(seq: int, continuation_clear: bool) -> bytes:
    """`SeqState`'s deterministic wire bytes, written out rather than built.

    One SEQ write per activation: building the message and serializing it
    cost twice as long as this. The bytes are protobuf's own (field
    order, varint, proto3 defaults omitted); a test holds them equal to
    `SerializeToString(deterministic=True)` over the range, and a seq the
    shortcut does not cover (not positive, or past 2**56) is serialized by
    protobuf.
    """
    if 0 < seq < 1 << 56:
        varint = bytearray()
        while seq >= 0x80:
            varint.append((seq & 0x7F) | 0x80)
            seq >>= 7
        varint.append(seq)
        head = _SEQ_HEAD + varint
    else:
        return encode_deterministic(
            SeqState(
                state_schema_version=SCHEMA_VERSION,
                seq=seq,
                continuation_clear=continuation_clear,
            )
        )
    return head + _CLEAR_TAIL if continuation_clear else head


_DIGEST_HEAD: Final = b"\x3a\x10"
"""Field 7 (`memory_digest`, length-delimited) and a digest's 16-byte length: it follows
every field written before it."""


_SEQ_HEAD: Final = bytes((0x08, SCHEMA_VERSION, 0x10))
"""Field 1 (`state_schema_version`, varint) and its value, then field 2's (`seq`) tag."""
_CLEAR_TAIL: Final = bytes((0x18, 0x01))
"""Field 3 (`continuation_clear`) set; proto3 omits it when false."""
