"""MEMORY plus MEMORY_LOG: commits write what changed, and the fold is the whole blob.

A commit appends its delta to the log while the log stays no larger than
the base, and writes MEMORY_HEAD; the committed memory is the base with the
log folded on. These
tests hold that fold to the whole-blob encoding of a facade that ran the
same operations with no log at all, through warm (resident) and cold opens,
and check what each commit chose to write.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from beam_agents.coders import encode_deterministic
from beam_agents.errors import StateDecodeError
from beam_agents.memory import Memory
from beam_agents.memory.delta import LOG_MAX_DELTAS, decode_delta
from beam_agents.memory.resident import LOG_FROM_BYTES, ResidentMemory
from beam_agents.proto.beam_agents_pb2 import MemoryChange, MemoryDelta, MemoryHead
from tests.memory.stored import OPS, StoredMemory, apply_op

STAMPS = st.integers(0, 5)


@settings(max_examples=200, deadline=None)
@given(
    activations=st.lists(st.tuples(STAMPS, st.lists(OPS, max_size=8)), max_size=10),
    cold_every=st.integers(1, 4),
    log_from=st.sampled_from([0, 400, LOG_FROM_BYTES]),
)
def test_the_base_with_its_log_folded_on_is_the_blob_a_whole_rewrite_would_write(
    activations: list[tuple[int, list[tuple[object, ...]]]], cold_every: int, log_from: int
) -> None:
    """Warm and cold opens alike, a memory crossing into deltas and back: after every
    commit, the fold equals the whole encode."""
    resident = ResidentMemory(log_from_bytes=log_from)
    cells = StoredMemory()
    reference = Memory(now_ms=0)
    for number, (now_ms, ops) in enumerate(activations):
        if number % cold_every == 0:
            resident.forget("t", b"k")  # another worker, or a retried bundle: decode afresh
        memory = cells.open(resident, now_ms)
        reference = Memory(reference.to_blob() if len(reference) else None, now_ms=now_ms)
        for op in ops:
            apply_op(memory, op)
            apply_op(reference, op)
        expected = encode_deterministic(reference.to_blob()) if len(reference) else b""
        cells.commit(resident, memory)
        assert cells.folded_bytes() == expected


def _full_memory(entries: int, value_bytes: int) -> tuple[ResidentMemory, StoredMemory]:
    resident, cells = ResidentMemory(log_from_bytes=0), StoredMemory()
    memory = cells.open(resident, 1)
    for i in range(entries):
        memory.set(f"fact/{i:05d}", b"f" * value_bytes)
    cells.commit(resident, memory)
    return resident, cells


def test_a_commit_to_a_full_memory_appends_about_what_it_changed() -> None:
    """~900 KiB held, four 250-byte scalars rewritten: the delta is about 1 KiB, not 900."""
    resident, cells = _full_memory(3_600, 250)
    assert cells.rewrites == 1
    assert cells.memory.value is not None
    assert len(cells.memory.value) > 900_000
    memory = cells.open(resident, 2)
    for i in range(4):
        memory.set(f"fact/{i:05d}", b"u" * 250)
    cells.commit(resident, memory)
    assert cells.appends == 1
    assert 1_000 < len(cells.log.values[0]) < 4 * 250 + 200


def test_a_ring_append_writes_the_new_item_and_the_cut_not_the_ring() -> None:
    resident, cells = ResidentMemory(log_from_bytes=0), StoredMemory()
    memory = cells.open(resident, 1)
    for i in range(800):
        memory.append("history", bytes([i % 256]) * 1024, max_items=800)
    cells.commit(resident, memory)
    for now_ms in (2, 3):
        memory = cells.open(resident, now_ms)
        memory.append("history", b"n" * 1024, max_items=800)
        cells.commit(resident, memory)
    assert cells.appends == 2
    assert all(len(delta) < 1024 + 64 for delta in cells.log.values)
    (change,) = decode_delta(cells.log.values[-1]).changes
    assert change.WhichOneof("change") == "ring"
    assert change.ring.cut > 1  # the oldest item was dropped by its offset, not rewritten
    folded = cells.folded()
    assert folded is not None
    memory = Memory(folded, now_ms=4)
    ring = memory.ring("history")
    assert len(ring) == 800
    assert ring[-2:] == (b"n" * 1024, b"n" * 1024)
    assert ring[0] == bytes([2]) * 1024


def test_a_read_writes_only_the_entry_s_new_stamp() -> None:
    resident, cells = _full_memory(10, 50_000)
    memory = cells.open(resident, 9)
    assert memory.get("fact/00003") == b"f" * 50_000
    cells.commit(resident, memory)
    (change,) = decode_delta(cells.log.values[0]).changes
    assert change.WhichOneof("change") == "touched"
    assert change.last_access_ms == 9
    assert len(cells.log.values[0]) < 40


def test_a_log_that_would_outgrow_its_base_is_folded_into_a_new_base() -> None:
    """Deltas are appended while the log stays no larger than the base, then MEMORY is rewritten."""
    resident, cells = _full_memory(20, 100)  # a ~2.6 KiB base
    base_size = len(cells.memory.value or b"")
    for now_ms in range(2, 40):
        memory = cells.open(resident, now_ms)
        memory.set(f"fact/{now_ms % 20:05d}", b"x" * 100)
        cells.commit(resident, memory)
        assert sum(map(len, cells.log.values)) <= len(cells.memory.value or b"")
    assert cells.rewrites >= 2
    assert cells.appends >= 20
    assert abs(len(cells.memory.value or b"") - base_size) < 100


def test_the_log_is_folded_after_its_most_deltas_however_small_they_are() -> None:
    resident, cells = _full_memory(100, 10_000)
    for now_ms in range(2, LOG_MAX_DELTAS + 4):
        memory = cells.open(resident, now_ms)
        memory.get(f"fact/{now_ms % 100:05d}")
        cells.commit(resident, memory)
        assert len(cells.log.values) <= LOG_MAX_DELTAS
    assert cells.rewrites == 2


def test_a_snapshot_is_used_only_for_the_head_it_was_committed_with() -> None:
    """A head read back from before the commit (a rolled-back bundle) decodes afresh."""
    resident, cells = _full_memory(5, 10)
    before = (cells.head.value, list(cells.log.values))
    memory = cells.open(resident, 2)
    memory.set("late", b"kept")
    cells.commit(resident, memory)
    assert cells.appends == 1
    assert "late" in cells.open(resident, 3)
    assert resident.hits == 2
    cells.head.value, cells.log.values = before  # the bundle failed: its writes never landed
    rolled_back = cells.open(resident, 3)
    assert "late" not in rolled_back
    assert resident.misses == 1


def test_a_key_without_a_head_is_read_as_it_was_written_and_carried_forward_whole() -> None:
    """MEMORY alone, as every release before the log wrote it: its first commit rewrites it."""
    old = Memory(now_ms=1)
    old.set("profile", b"tier=gold")
    old.append("recent", b"evt-1")
    resident, cells = ResidentMemory(log_from_bytes=0), StoredMemory()
    cells.memory.value = old.to_bytes()

    memory = cells.open(resident, 2)
    assert memory.get("profile") == b"tier=gold"
    memory.append("recent", b"evt-2")
    cells.commit(resident, memory)

    assert (cells.rewrites, cells.appends) == (1, 0)
    assert cells.head.value is not None
    memory = cells.open(resident, 3)
    assert memory.ring("recent") == (b"evt-1", b"evt-2")
    memory.append("recent", b"evt-3")
    cells.commit(resident, memory)
    assert cells.appends == 1


def test_a_small_memory_is_written_whole_and_a_large_one_in_deltas() -> None:
    """Under LOG_FROM_BYTES a commit rewrites MEMORY alone, no head read or written; a memory
    that grows past it switches to deltas, and one that shrinks back clears head and log."""
    resident, cells = ResidentMemory(log_from_bytes=2_000), StoredMemory()
    memory = cells.open(resident, 1)
    memory.set("small", b"s" * 100)
    cells.commit(resident, memory)
    assert cells.head.value is None
    memory = cells.open(resident, 2)
    memory.set("small", b"t" * 100)
    cells.commit(resident, memory)
    assert (cells.rewrites, cells.appends, cells.head.value) == (2, 0, None)

    memory = cells.open(resident, 3)
    memory.set("large", b"l" * 3_000)
    cells.commit(resident, memory)
    assert cells.head.value is not None
    memory = cells.open(resident, 4)
    memory.set("small", b"u" * 100)
    cells.commit(resident, memory)
    assert (cells.rewrites, cells.appends) == (3, 1)

    memory = cells.open(resident, 5)
    memory.delete("large")
    cells.commit(resident, memory)
    assert (cells.head.value, cells.log.values) == (None, [])
    assert cells.open(resident, 6).get("small") == b"u" * 100
    assert resident.hits == 5


def _delta(*changes: MemoryChange, deleted: tuple[str, ...] = (), total: int = 0) -> bytes:
    delta = MemoryDelta(state_schema_version=1, total_value_bytes=total)
    delta.changes.extend(changes)
    delta.deleted.extend(deleted)
    return encode_deterministic(delta)


@pytest.mark.parametrize(
    ("log", "match"),
    [
        ([_delta(deleted=("absent",), total=6)], "deletes 'absent'"),
        ([_delta(MemoryChange(key="absent", touched=True), total=12)], "does not hold"),
        ([_delta(MemoryChange(key="a", value=b"\x07x"), total=8)], "no valid kind byte"),
        ([_delta(MemoryChange(key="a", last_access_ms=3), total=6)], "says nothing"),
        ([_delta(MemoryChange(key="a", touched=True), total=99)], "folds to 6"),
        ([b"\xff\xff"], "MEMORY_LOG"),
    ],
)
def test_a_log_that_does_not_fold_onto_its_base_is_a_state_decode_error(
    log: list[bytes], match: str
) -> None:
    base = Memory(now_ms=1)
    base.set("a", b"hello")
    resident, cells = ResidentMemory(log_from_bytes=0), StoredMemory()
    cells.commit(resident, base)
    cells.log.values = log
    head = MemoryHead.FromString(cells.head.value or b"")
    head.log_values = len(log)
    cells.head.value = encode_deterministic(head)
    with pytest.raises(StateDecodeError, match=match):
        cells.open(resident, 2)


def test_a_head_that_does_not_read_is_a_state_decode_error() -> None:
    cells = StoredMemory()
    base = Memory(now_ms=1)
    base.set("a", b"hello")
    cells.memory.value = base.to_bytes()
    cells.head.value = b"\x0a\x02ab"  # a two-byte digest
    with pytest.raises(StateDecodeError, match="MEMORY_HEAD"):
        cells.open(ResidentMemory(log_from_bytes=0), 1)
