"""The activation core against recording cells: what is written, and when nothing is."""

from __future__ import annotations

from dataclasses import dataclass, field

import agents

from beam_agents import AgentConfig
from beam_agents.model.replay import ReplayLimits
from beam_agents.runtime.activation import Activator, KeyCells
from beam_agents.runtime.driver import LoopDriver


@dataclass
class RecordingCell:
    value: bytes | None = None
    ops: list[str] = field(default_factory=list)

    def read(self) -> bytes | None:
        return self.value

    def write(self, value: bytes) -> None:
        self.ops.append("write")
        self.value = value

    def clear(self) -> None:
        self.ops.append("clear")
        self.value = None


@dataclass
class RecordingTimer:
    ops: list[object] = field(default_factory=list)

    def set(self, timestamp: object) -> None:
        self.ops.append(timestamp)

    def clear(self) -> None:
        self.ops.append("clear")


def _cells() -> KeyCells:
    return KeyCells(*(RecordingCell() for _ in range(5)), RecordingTimer(), RecordingTimer())  # type: ignore[arg-type]


def _activator(agent: object, **config: object) -> Activator:
    return Activator(
        agent=agent,  # type: ignore[arg-type]
        config=AgentConfig(**config),  # type: ignore[arg-type]
        token="unit",
        clock_ms=lambda: 0,
        driver=LoopDriver(),
        provider=None,
        limits=ReplayLimits(),
    )


def _ops(cells: KeyCells) -> dict[str, list[object]]:
    return {name: list(getattr(cells, name).ops) for name in KeyCells.__slots__}


def test_a_failed_activation_touches_no_cell_and_no_timer() -> None:
    activator = _activator(agents.explode_on_boom)
    cells = _cells()
    activator.on_event(b"k", b"ok", 1_000, cells)
    before = {name: getattr(cells, name).ops.copy() for name in KeyCells.__slots__}

    out = activator.on_event(b"k", b"boom", 2_000, cells)

    assert len(out) == 1
    assert _ops(cells) == before


def test_an_activation_that_only_reads_memory_writes_only_its_seq() -> None:
    activator = _activator(agents.read_only)
    cells = _cells()
    activator.on_event(b"k", b"write", 1_000, cells)
    for cell in (cells.memory, cells.seq, cells.cache, cells.continuation, cells.pending):
        cell.ops.clear()  # type: ignore[attr-defined]

    activator.on_event(b"k", b"read", 2_000, cells)

    assert cells.memory.ops == []  # type: ignore[attr-defined]
    assert cells.seq.ops == ["write"]  # type: ignore[attr-defined]
    assert cells.cache.ops == cells.continuation.ops == cells.pending.ops == []  # type: ignore[attr-defined]


def test_undecodable_state_is_reported_and_left_untouched() -> None:
    activator = _activator(agents.remember)
    cells = _cells()
    cells.memory.value = b"\xff\xff not a MemoryBlob"  # type: ignore[attr-defined]

    out = activator.on_event(b"k", b"e", 1_000, cells)
    ttl = activator.on_ttl(b"k", 5_000, cells)

    (error,) = [o.value for o in out]  # type: ignore[union-attr]
    assert error.reason == "state_decode_error"
    assert error.payload == b"e"
    assert cells.memory.value == b"\xff\xff not a MemoryBlob"  # type: ignore[attr-defined]
    assert all(getattr(cells, n).ops == [] for n in KeyCells.__slots__)
    # The TTL wipe reports what it cannot read and leaves it too.
    assert [o.value.reason for o in ttl] == ["state_decode_error"]  # type: ignore[union-attr]


def test_a_future_schema_version_in_state_is_a_decode_error() -> None:
    from beam_agents.proto.beam_agents_pb2 import SeqState

    activator = _activator(agents.remember)
    cells = _cells()
    cells.seq.value = SeqState(state_schema_version=2, seq=4).SerializeToString()  # type: ignore[attr-defined]

    (out,) = activator.on_event(b"k", b"e", 1_000, cells)

    assert out.value.reason == "state_decode_error"  # type: ignore[union-attr]
    assert "state_schema_version 2" in out.value.detail  # type: ignore[union-attr]


def test_an_undecodable_seq_at_expiry_is_reported_not_raised_out_of_the_timer() -> None:
    """With on_expire configured the wipe needs SEQ; garbage there is a dead letter,
    not an exception that would fail the timer bundle on every retry."""
    from beam_agents import FlushToLongterm
    from beam_agents.memory.stores import InMemoryMemoryStore

    store = InMemoryMemoryStore()
    activator = Activator(
        agent=agents.remember,
        config=AgentConfig(longterm_memory="memory://unused", on_expire=FlushToLongterm()),
        token="unit",
        clock_ms=lambda: 0,
        driver=LoopDriver(),
        provider=None,
        store=store,
    )
    cells = _cells()
    activator.on_event(b"k", b"e", 1_000, cells)
    cells.seq.value = b"\xff garbage"  # type: ignore[attr-defined]

    (out,) = activator.on_ttl(b"k", 5_000, cells)

    assert out.value.reason == "state_decode_error"  # type: ignore[union-attr]
    assert cells.memory.value is not None  # type: ignore[attr-defined]
    assert store.operations == []


def test_a_continuation_written_before_the_buffer_existed_buffers_and_resumes() -> None:
    """The v1 golden CONTINUATION (no `buffered` field) is a live suspension to this
    version: an event is held behind it, and nothing it carried is lost."""
    from pathlib import Path

    from beam_agents.proto.beam_agents_pb2 import Continuation

    golden = Path(__file__).parents[1] / "golden" / "v1" / "continuation.bin"
    pending = Path(__file__).parents[1] / "golden" / "v1" / "pending_intents.bin"
    activator = _activator(agents.hold_the_line)
    cells = _cells()
    cells.continuation.value = golden.read_bytes()  # type: ignore[attr-defined]
    cells.pending.value = pending.read_bytes()  # type: ignore[attr-defined]

    out = activator.on_event(b"ticket-17", b"disk 91%", 1_700_000_005_000, cells)

    assert out == []
    written = Continuation.FromString(cells.continuation.value)  # type: ignore[attr-defined]
    assert [(b.event, b.event_time_ms) for b in written.buffered] == [
        (b"disk 91%", 1_700_000_005_000)
    ]
    del written.buffered[:]
    assert written == Continuation.FromString(golden.read_bytes())

    resumed = activator.on_answer(b"ticket-17", written.intent_id, b"yes", 1_700_000_007_000, cells)

    outputs = [o[1] for o in resumed if isinstance(o, tuple)]
    assert outputs == [
        b"7|disk full|1700000004000|yes|disk full",
        b"8|disk 91%|1700000005000|-|disk full,disk 91%",
    ]
    assert cells.continuation.value is None  # type: ignore[attr-defined]


def test_the_next_activation_reuses_decoded_memory_only_for_the_exact_committed_bytes() -> None:
    """A hot key skips the decode; a cell holding other bytes (a rolled-back bundle) never does."""
    from beam_agents.coders import encode_deterministic
    from beam_agents.memory import Memory
    from beam_agents.memory.resident import shared_resident
    from beam_agents.proto import MemoryBlob

    resident = shared_resident()
    activator = _activator(agents.remember)
    cells = _cells()
    activator.on_event(b"hot", b"one", 1_000, cells)
    committed = cells.memory.value  # type: ignore[attr-defined]
    committed_seq = cells.seq.value  # type: ignore[attr-defined]
    assert committed is not None
    decoded = Memory(MemoryBlob.FromString(committed), now_ms=0)
    assert committed == encode_deterministic(decoded.to_blob())

    hits = resident.hits
    activator.on_event(b"hot", b"two", 2_000, cells)
    assert resident.hits == hits + 1

    first_try = cells.memory.value  # type: ignore[attr-defined]
    # As if that bundle failed after the commit: the runner rolls the cells back.
    cells.memory.value, cells.seq.value = committed, committed_seq  # type: ignore[attr-defined]
    misses = resident.misses
    (output,) = activator.on_event(b"hot", b"two", 2_000, cells)
    assert resident.misses == misses + 1
    assert output == (b"hot", b"2:one,two")
    assert cells.memory.value == first_try  # type: ignore[attr-defined]
