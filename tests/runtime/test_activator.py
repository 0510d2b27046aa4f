"""The activation core against recording cells: what is written, and when nothing is."""

from __future__ import annotations

from beam_agents import AgentConfig
from beam_agents.model.replay import ReplayLimits
from beam_agents.runtime._calls.driver import LoopDriver
from beam_agents.runtime._cells import encode_seq
from beam_agents.runtime._paths.activator import Activator, KeyCells, Setup
from tests.runtime import agents
from tests.runtime.recording import recording_cells


def _activator(agent: object, **config: object) -> Activator:
    return Activator(
        Setup(
            agent=agent,  # type: ignore[arg-type]
            config=AgentConfig(**config),  # type: ignore[arg-type]
            token="unit",
            clock_ms=lambda: 0,
            driver=LoopDriver(),
            provider=None,
            limits=ReplayLimits(),
        )
    )


def _ops(cells: KeyCells) -> dict[str, list[object]]:
    return {name: list(getattr(cells, name).ops) for name in KeyCells._fields}


def test_a_failed_activation_touches_no_cell_and_no_timer() -> None:
    activator = _activator(agents.explode_on_boom)
    cells = recording_cells()
    activator.on_event(b"k", b"ok", 1_000, cells)
    before = {name: getattr(cells, name).ops.copy() for name in KeyCells._fields}

    out = activator.on_event(b"k", b"boom", 2_000, cells)

    assert len(out) == 1
    assert _ops(cells) == before


def test_an_activation_that_only_reads_memory_writes_only_its_seq() -> None:
    activator = _activator(agents.read_only)
    cells = recording_cells()
    activator.on_event(b"k", b"write", 1_000, cells)
    for cell in (cells.memory, cells.seq, cells.cache, cells.continuation, cells.pending):
        cell.ops.clear()  # type: ignore[attr-defined]

    activator.on_event(b"k", b"read", 2_000, cells)

    assert cells.memory.ops == []  # type: ignore[attr-defined]
    assert cells.seq.ops == ["write"]  # type: ignore[attr-defined]
    assert cells.cache.ops == cells.continuation.ops == cells.pending.ops == []  # type: ignore[attr-defined]


def test_undecodable_state_is_reported_and_left_untouched() -> None:
    activator = _activator(agents.remember)
    cells = recording_cells()
    cells.memory.value = b"\xff\xff not a MemoryBlob"  # type: ignore[attr-defined]
    cells.seq.value = encode_seq(3, True)  # type: ignore[attr-defined]  # a key that committed

    out = activator.on_event(b"k", b"e", 1_000, cells)
    ttl = activator.on_ttl(b"k", 5_000, cells)

    (error,) = [o.value for o in out]  # type: ignore[union-attr]
    assert error.reason == "state_decode_error"
    assert error.payload == b"e"
    assert cells.memory.value == b"\xff\xff not a MemoryBlob"  # type: ignore[attr-defined]
    assert all(getattr(cells, n).ops == [] for n in KeyCells._fields)
    # The TTL wipe reports what it cannot read and leaves it too.
    assert [o.value.reason for o in ttl] == ["state_decode_error"]  # type: ignore[union-attr]


def test_a_future_schema_version_in_state_is_a_decode_error() -> None:
    from beam_agents.proto.beam_agents_pb2 import SeqState

    activator = _activator(agents.remember)
    cells = recording_cells()
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
        Setup(
            agent=agents.remember,
            config=AgentConfig(longterm_memory="memory://unused", on_expire=FlushToLongterm()),
            token="unit",
            clock_ms=lambda: 0,
            driver=LoopDriver(),
            provider=None,
            store=store,
        )
    )
    cells = recording_cells()
    activator.on_event(b"k", b"e", 1_000, cells)
    cells.seq.value = b"\xff garbage"  # type: ignore[attr-defined]

    (out,) = activator.on_ttl(b"k", 5_000, cells)

    assert out.value.reason == "state_decode_error"  # type: ignore[union-attr]
    assert cells.memory.value is not None  # type: ignore[attr-defined]
    assert store.operations == []


def test_a_continuation_written_before_the_buffer_existed_buffers_and_resumes() -> None:
    """The v1 golden CONTINUATION (no `buffered` field) beside the v1 SEQ of the same
    seq 7 (no `continuation_clear` flag), as that version committed them together,
    is a live suspension to this version: an event is held behind it, and
    nothing it carried is lost."""
    from pathlib import Path

    from beam_agents.proto.beam_agents_pb2 import Continuation

    golden = Path(__file__).parents[1] / "golden" / "v1" / "continuation.bin"
    pending = Path(__file__).parents[1] / "golden" / "v1" / "pending_intents.bin"
    seq = Path(__file__).parents[1] / "golden" / "v1" / "seq_state.bin"
    activator = _activator(agents.hold_the_line)
    cells = recording_cells()
    cells.continuation.value = golden.read_bytes()  # type: ignore[attr-defined]
    cells.pending.value = pending.read_bytes()  # type: ignore[attr-defined]
    cells.seq.value = seq.read_bytes()  # type: ignore[attr-defined]

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


def test_the_next_activation_reuses_decoded_memory_only_for_the_exact_committed_head() -> None:
    """A hot key skips the decode; cells holding another head (a rolled-back bundle) never do."""
    from beam_agents.coders import encode_deterministic
    from beam_agents.memory import Memory
    from beam_agents.memory.resident import shared_resident
    from beam_agents.proto import MemoryBlob

    resident = shared_resident()
    activator = _activator(agents.remember)
    cells = recording_cells()
    activator.on_event(b"hot", b"one", 1_000, cells)

    def held() -> tuple[object, ...]:
        return (
            cells.memory.value,  # type: ignore[attr-defined]
            list(cells.memory_log.values),  # type: ignore[attr-defined]
            cells.memory_head.value,  # type: ignore[attr-defined]
            cells.seq.value,  # type: ignore[attr-defined]
        )

    committed = held()
    assert committed[0] is not None
    decoded = Memory(MemoryBlob.FromString(committed[0]), now_ms=0)  # type: ignore[arg-type]
    assert committed[0] == encode_deterministic(decoded.to_blob())

    hits = resident.hits
    activator.on_event(b"hot", b"two", 2_000, cells)
    assert resident.hits == hits + 1
    first_try = held()

    # As if that bundle failed after the commit: the runner rolls the cells back.
    memory, log, head, seq = committed
    cells.memory.value, cells.memory_head.value, cells.seq.value = memory, head, seq  # type: ignore[attr-defined]
    cells.memory_log.values = list(log)  # type: ignore[arg-type, attr-defined]
    misses = resident.misses
    (output,) = activator.on_event(b"hot", b"two", 2_000, cells)
    assert resident.misses == misses + 1
    assert output == (b"hot", b"2:one,two")
    assert held() == first_try


def _ttl_due(cells: KeyCells) -> int:
    """Where the last commit set the TTL timer: when the runner fires it."""
    from beam_agents.runtime._timestamps import millis

    return millis(cells.ttl_timer.ops[-1])  # type: ignore[attr-defined]


def test_a_ttl_firing_a_later_commit_replaced_wipes_nothing() -> None:
    """Runners deliver a TTL firing that a later commit re-armed past (the streaming
    DirectRunner and the FnApiRunner both have): a key active within the TTL of the
    firing keeps its memory, and the timer the later commit set expires it."""
    activator = _activator(agents.remember)
    cells = recording_cells()
    activator.on_event(b"k", b"one", 1_000, cells)
    stale = _ttl_due(cells)
    activator.on_event(b"k", b"two", 2_000_000, cells)
    before = _ops(cells)

    assert activator.on_ttl(b"k", stale, cells) == []
    assert _ops(cells) == before
    assert activator.on_event(b"k", b"three", 2_000_001, cells)[0] == (b"k", b"3:one,two,three")

    activator.on_ttl(b"k", _ttl_due(cells), cells)
    assert cells.memory.value is None  # type: ignore[attr-defined]


def test_a_commit_during_a_suspension_never_brings_its_ttl_earlier() -> None:
    """A suspension sets the TTL past its timeout; a later commit on the key (a follow-up's
    run) keeps the later time, so the key's wipe does not depend on which setting of the
    timer the runner delivered."""
    from beam_agents.proto.beam_agents_pb2 import SeqState

    activator = _activator(agents.hold_the_line)
    cells = recording_cells()
    activator.on_event(b"k", b"ask once", 1_000, cells)
    suspended_until = _ttl_due(cells)
    assert SeqState.FromString(cells.seq.value).ttl_at_ms == suspended_until  # type: ignore[attr-defined]

    cells.continuation.value = None  # as if the key ran again with nothing live (a drain)
    activator.on_event(b"k", b"calm", 2_000, cells)

    assert _ttl_due(cells) == suspended_until > 2_000 + AgentConfig().ttl_ms
    assert SeqState.FromString(cells.seq.value).ttl_at_ms == suspended_until  # type: ignore[attr-defined]


def _seq_flag(cells: KeyCells) -> tuple[int, bool]:
    from beam_agents.proto.beam_agents_pb2 import SeqState

    state = SeqState.FromString(cells.seq.value)  # type: ignore[attr-defined]
    return state.seq, state.continuation_clear


def _continuation_reads(activator: Activator, cells: KeyCells, event: bytes, at_ms: int) -> int:
    before = cells.continuation.reads  # type: ignore[attr-defined]
    activator.on_event(b"k", event, at_ms, cells)
    return cells.continuation.reads - before  # type: ignore[attr-defined,no-any-return]


def test_an_idle_key_does_not_read_its_continuation_cell() -> None:
    """SEQ says the last commit left no suspension: the event reads SEQ and MEMORY only."""
    activator = _activator(agents.remember)
    cells = recording_cells()

    assert _continuation_reads(activator, cells, b"first", 1_000) == 0  # never committed
    assert _seq_flag(cells) == (1, True)
    assert _continuation_reads(activator, cells, b"second", 2_000) == 0
    assert _seq_flag(cells) == (2, True)
    assert cells.cache.reads == cells.pending.reads == 0  # type: ignore[attr-defined]


def test_the_continuation_flag_is_exact_through_suspend_hold_resume_timeout_and_wipe() -> None:
    """Every path that writes CONTINUATION leaves the flag false, so the next event
    reads the cell and finds the suspension; the flag turns true only with a
    commit that leaves the cell empty."""
    from beam_agents.proto.beam_agents_pb2 import Continuation

    activator = _activator(agents.hold_the_line)
    cells = recording_cells()
    activator.on_event(b"k", b"calm", 1_000, cells)
    assert _seq_flag(cells) == (1, True)

    # Suspend: the flag is false, so the next event reads the cell and is held.
    (approval,) = activator.on_event(b"k", b"ask once", 2_000, cells)
    assert _seq_flag(cells) == (2, False)
    assert _continuation_reads(activator, cells, b"held", 3_000) == 1
    assert [b.event for b in Continuation.FromString(cells.continuation.value).buffered] == [  # type: ignore[attr-defined]
        b"held"
    ]

    # Resume, and drain the held event: the cell is cleared, the flag true.
    resumed = activator.on_answer(b"k", approval.value.intent_id, b"yes", 4_000, cells)  # type: ignore[union-attr]
    assert [o[1].split(b"|")[:2] for o in resumed if isinstance(o, tuple)] == [
        [b"2", b"ask once"],
        [b"3", b"held"],
    ]
    assert cells.continuation.value is None  # type: ignore[attr-defined]
    assert _seq_flag(cells) == (3, True)
    assert _continuation_reads(activator, cells, b"after", 5_000) == 0

    # Timeout: the cell is cleared but SEQ not rewritten; the next event reads
    # the (empty) cell once, runs at the next seq, and turns the flag true.
    activator.on_event(b"k", b"ask twice", 6_000, cells)
    assert _seq_flag(cells) == (5, False)
    (timeout,) = activator.on_hitl(b"k", cells)
    assert timeout.value.reason == "suspension_timeout"  # type: ignore[union-attr]
    assert _continuation_reads(activator, cells, b"later", 7_000) == 1
    assert _seq_flag(cells) == (6, True)

    # A TTL wipe of a live suspension: SEQ carries on, marked wiped and clear,
    # so the next event does not read the (empty) cell.
    activator.on_event(b"k", b"ask thrice", 8_000, cells)
    assert _seq_flag(cells) == (7, False)
    (wiped,) = activator.on_ttl(b"k", _ttl_due(cells), cells)
    assert wiped.value.reason == "ttl_wiped_suspension"  # type: ignore[union-attr]
    assert cells.continuation.value is None  # type: ignore[attr-defined]
    assert cells.pending.value is None  # type: ignore[attr-defined]
    assert _seq_flag(cells) == (7, True)
    assert _continuation_reads(activator, cells, b"fresh", 10_000) == 0
    assert _seq_flag(cells) == (8, True)


def test_an_idle_key_expires_without_reading_the_suspensionrecording_cells() -> None:
    """SEQ says no suspension is live, and PENDING and LLM_CACHE are only ever
    written beside a CONTINUATION: the TTL wipe of an idle key reads none of
    the three (each read is a state fetch)."""
    activator = _activator(agents.remember)
    cells = recording_cells()
    activator.on_event(b"k", b"e", 1_000, cells)

    activator.on_ttl(b"k", _ttl_due(cells), cells)

    assert cells.continuation.reads == cells.pending.reads == cells.cache.reads == 0  # type: ignore[attr-defined]
    assert cells.memory.value is None  # type: ignore[attr-defined]
    assert _seq_flag(cells) == (1, True)


def test_a_ttl_timer_fired_twice_wipes_the_key_and_records_it_once() -> None:
    """A runner may deliver one TTL timer twice (the FnApiRunner does, for a
    timer set in two bundles): the second firing finds the key already wiped
    and emits nothing, and the next event runs at the next seq as usual."""
    from beam_agents.proto.beam_agents_pb2 import SeqState

    activator = Activator(
        Setup(
            agent=agents.remember,
            config=AgentConfig(),
            token="unit",
            clock_ms=lambda: 0,
            driver=LoopDriver(),
            provider=None,
            lifecycle=True,
        )
    )
    cells = recording_cells()
    activator.on_event(b"k", b"e", 1_000, cells)

    due = _ttl_due(cells)
    first = activator.on_ttl(b"k", due, cells)
    writes = {name: list(getattr(cells, name).ops) for name in KeyCells._fields}
    second = activator.on_ttl(b"k", due, cells)

    assert [o.value.kind for o in first] == ["ttl_expired"]  # type: ignore[union-attr]
    assert second == []
    assert _ops(cells) == writes  # the second firing writes nothing
    assert SeqState.FromString(cells.seq.value).expired  # type: ignore[attr-defined]
    activator.on_event(b"k", b"back", due + 1_000, cells)
    assert _seq_flag(cells) == (2, True)
    assert not SeqState.FromString(cells.seq.value).expired  # type: ignore[attr-defined]
