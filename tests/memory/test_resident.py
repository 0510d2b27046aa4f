"""Splicing commits and resident snapshots: byte-identical to a full encode, never stale.

The facade re-encodes only the entries an activation changed, and a DoFn
instance reuses the decoded entries of the blob it last committed for a key.
Both are pure optimizations: these tests prove the committed memory is
exactly `to_blob()` serialized deterministically, across activations, and
that a snapshot is used only for the very head it was committed with.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from beam_agents.coders import encode_deterministic
from beam_agents.errors import StateDecodeError
from beam_agents.memory import DropOldestCompactor, Memory
from beam_agents.memory.resident import ResidentMemory
from beam_agents.proto import MemoryBlob
from tests.memory.stored import OPS, StoredMemory, apply_op

STAMPS = st.sampled_from([0, 1, 5, 127, 128, 1_700_000_000_000, -1, -9_223_372_036_854_775])


@settings(max_examples=150, deadline=None)
@given(activations=st.lists(st.tuples(STAMPS, st.lists(OPS, max_size=12)), max_size=6))
def test_spliced_bytes_equal_a_full_deterministic_encode_across_activations(
    activations: list[tuple[int, list[tuple[object, ...]]]],
) -> None:
    """Through the resident cache and a cold decode alike, every commit is byte-identical."""
    resident = ResidentMemory()
    cells = StoredMemory()
    for now_ms, ops in activations:
        warm = cells.open(resident, now_ms)
        committed = cells.folded()
        cold = Memory(committed, now_ms=now_ms)
        for op in ops:
            apply_op(warm, op)
            apply_op(cold, op)
        expected = encode_deterministic(cold.to_blob())
        assert cold.to_bytes() == expected
        assert warm.dirty == cold.dirty
        cells.commit(resident, warm)
        if cold.dirty:
            assert cells.folded_bytes() == (expected if len(cold) else b"")
        # Decoded independently, the committed memory holds what the facade served.
        fresh = Memory(cells.folded(), now_ms=0)
        assert fresh.keys() == cold.keys()
        for key in cold.keys():
            try:
                assert fresh.ring(key) == cold.ring(key)
            except TypeError:
                assert fresh.get(key) == cold.get(key)


def test_a_rewrite_is_the_spliced_encode_of_every_entry() -> None:
    """A commit that writes MEMORY whole splices unchanged entries' bytes: equal to protobuf's."""
    resident, cells = ResidentMemory(), StoredMemory()
    memory = cells.open(resident, 1)
    for i in range(50):
        memory.set(f"fact/{i}", bytes([i]) * i)
    memory.append("log", b"x")
    expected = encode_deterministic(memory.to_blob())
    cells.commit(resident, memory)
    assert cells.memory.value == expected


def test_a_failed_activation_leaves_the_resident_snapshot_as_committed() -> None:
    """Mutations of a facade given back never reach the snapshot the next one starts from."""
    resident, cells = ResidentMemory(), StoredMemory()
    first = cells.open(resident, 1)
    first.set("fact", b"kept")
    first.append("log", b"one")
    cells.commit(resident, first)
    committed = cells.folded_bytes()

    failed = cells.open(resident, 2)
    failed.set("fact", b"discarded")
    failed.append("log", b"discarded")
    failed.ring("log")
    failed.delete("fact")
    # The activation failed: nothing is committed and the cells still hold what they held.
    cells.give_back(resident, failed)

    retry = cells.open(resident, 2)
    assert resident.hits == 2
    assert retry.to_bytes() == committed
    assert retry.get("fact") == b"kept"
    assert retry.ring("log") == (b"one",)


def test_a_facade_never_given_back_costs_a_decode_not_a_wrong_memory() -> None:
    """The snapshot is out of the cache while lent: a path that drops the facade decodes next."""
    resident, cells = ResidentMemory(), StoredMemory()
    first = cells.open(resident, 1)
    first.set("fact", b"kept")
    cells.commit(resident, first)
    committed = cells.folded_bytes()

    dropped = cells.open(resident, 2)
    dropped.set("fact", b"changed in place")
    assert len(resident) == 0

    again = cells.open(resident, 3)
    assert (resident.hits, resident.misses) == (1, 1)
    assert again.to_bytes() == committed
    assert again.get("fact") == b"kept"


def test_reads_alone_leave_the_borrowed_entries_untouched_until_a_write() -> None:
    """A parked activation that only read gives back the very dict it borrowed, in its order."""
    resident, cells = ResidentMemory(), StoredMemory()
    first = cells.open(resident, 1)
    for key in ("a", "b", "c"):
        first.set(key, key.encode())
    cells.commit(resident, first)

    reader = cells.open(resident, 2)
    assert reader.get("a") == b"a"
    assert reader.get("b") == b"b"
    assert reader.keys() == ("c", "a", "b")  # the reads' order, before anything moved
    assert reader.dirty
    cells.give_back(resident, reader)

    again = cells.open(resident, 3)
    assert resident.hits == 2
    assert again.keys() == ("a", "b", "c")
    assert again.to_blob() == Memory(cells.folded(), now_ms=1).to_blob()


@settings(max_examples=150, deadline=None)
@given(
    committed=st.lists(OPS, min_size=1, max_size=12),
    discarded=st.lists(OPS, max_size=12),
    blob_after=st.none() | st.integers(0, 12),
    commit_after=st.booleans(),
)
def test_a_borrowed_dict_given_back_is_the_committed_memory_in_its_order(
    committed: list[tuple[object, ...]],
    discarded: list[tuple[object, ...]],
    blob_after: int | None,
    commit_after: bool,
) -> None:
    """Whatever a parked attempt did to the dict it borrowed, the re-run opens the committed memory.

    `blob_after`: the attempt asks for its blob after that many operations,
    which settles its order before it parks.
    """
    resident, cells = ResidentMemory(), StoredMemory()
    first = cells.open(resident, 1)
    for op in committed:
        apply_op(first, op)
    cells.commit(resident, first)
    expected = cells.folded_bytes()

    attempt = cells.open(resident, 2)
    for done, op in enumerate(discarded):
        if done == blob_after:
            attempt.to_blob()
        apply_op(attempt, op)
    cells.give_back(resident, attempt)

    rerun = cells.open(resident, 2)
    cold = Memory(cells.folded(), now_ms=2)
    assert rerun.keys() == cold.keys()
    if len(cold):
        assert resident.hits == 2
        assert rerun.to_bytes() == expected
    for key in cold.keys():  # a ring's items too, which its encoding may not show
        try:
            items = cold.ring(key)
        except TypeError:
            continue  # a scalar: in the bytes above
        assert rerun.ring(key) == items
    if commit_after:  # and the re-run's own changes commit as a cold decode's would
        for op in discarded:
            apply_op(rerun, op)
            apply_op(cold, op)
        cells.commit(resident, rerun)
        if cold.dirty:
            expected = encode_deterministic(cold.to_blob()) if len(cold) else b""
        assert cells.folded_bytes() == expected


def test_a_snapshot_is_used_only_for_the_head_it_was_committed_with() -> None:
    """Another head in the cell (a rolled-back bundle, another worker's commit) decodes afresh."""
    resident, cells = ResidentMemory(), StoredMemory()
    memory = cells.open(resident, 1)
    memory.set("a", b"from this worker")
    cells.commit(resident, memory)

    elsewhere, other = ResidentMemory(), StoredMemory()
    written = other.open(elsewhere, 1)
    written.set("a", b"from another worker")
    other.commit(elsewhere, written)
    reopened = other.open(resident, 2)
    assert reopened.get("a") == b"from another worker"
    assert resident.misses == 1  # the empty cells at first were no miss: nothing to decode

    assert len(StoredMemory().open(resident, 3)) == 0


def test_the_snapshot_reused_equals_a_fresh_decode_of_the_same_memory() -> None:
    resident, cells = ResidentMemory(), StoredMemory()
    memory = cells.open(resident, 10)
    for i in range(50):
        memory.set(f"fact/{i}", bytes([i]) * i)
    memory.append("log", b"x")
    cells.commit(resident, memory)
    cells.head.value = bytes(bytearray(cells.head.value or b""))  # equal, not identical
    warm = cells.open(resident, 11)
    cold = Memory(cells.folded(), now_ms=11)
    assert resident.hits == 1
    assert warm.keys() == cold.keys()
    assert warm.size_bytes == cold.size_bytes
    assert all(warm.entry_size(k) == cold.entry_size(k) for k in cold.keys())
    assert warm.to_blob() == cold.to_blob()
    assert not warm.dirty


def test_undecodable_bytes_raise_state_decode_error() -> None:
    cells = StoredMemory()
    cells.memory.value = b"\xff\xff\xff"
    with pytest.raises(StateDecodeError, match="MEMORY"):
        cells.open(ResidentMemory(), 1)
    cells.memory.value = MemoryBlob(state_schema_version=2).SerializeToString()
    with pytest.raises(StateDecodeError, match="state_schema_version 2"):
        cells.open(ResidentMemory(), 1)


def test_two_transforms_with_the_same_entity_key_keep_their_own_snapshots() -> None:
    resident = ResidentMemory()
    stored = {}
    for scope in ("first", "second"):
        cells = StoredMemory(scope=scope)
        memory = cells.open(resident, 1)
        memory.set("owner", scope.encode())
        cells.commit(resident, memory)
        stored[scope] = cells
    assert stored["first"].open(resident, 2).get("owner") == b"first"
    assert stored["second"].open(resident, 2).get("owner") == b"second"
    assert resident.hits == 2


def test_resident_bytes_stay_within_the_budget_evicting_the_least_recent_key() -> None:
    resident = ResidentMemory(max_bytes=3_000)
    stored = {}
    for name in (b"a", b"b", b"c"):
        cells = StoredMemory(key=name)
        memory = cells.open(resident, 1)
        memory.set("v", b"x" * 1_200)
        cells.commit(resident, memory)
        stored[name] = cells
    assert len(resident) == 2
    stored[b"a"].open(resident, 2)
    assert resident.hits == 0  # "a" was evicted
    stored[b"c"].open(resident, 2)
    assert resident.hits == 1


def test_compaction_through_a_resident_facade_keeps_accounting_exact() -> None:
    resident, cells = ResidentMemory(), StoredMemory()
    compactor = DropOldestCompactor(target_bytes=2_000)
    memory = cells.open(resident, 1, compactor)
    for i in range(20):
        memory.set(f"f{i}", b"x" * 100)
    cells.commit(resident, memory)
    again = cells.open(resident, 2, compactor)
    recompute: Callable[[Memory], int] = lambda m: sum(m.entry_size(k) for k in m.keys())  # noqa: E731
    again.set("big", b"y" * 800_000)
    assert again.size_bytes == recompute(again)
    assert again.to_bytes() == encode_deterministic(again.to_blob())


def test_a_ring_appended_to_at_every_event_holds_no_copies_of_earlier_activations() -> None:
    """The memory a hot key keeps resident stays the memory's, however many events ran."""
    resident, cells = ResidentMemory(), StoredMemory()
    fill = cells.open(resident, 0)
    for i in range(500):
        fill.append("history", b"%04d" % i, max_items=500)
    cells.commit(resident, fill)

    def events(first: int, count: int) -> None:
        for now_ms in range(first, first + count):
            memory = cells.open(resident, now_ms)
            memory.append("history", b"e%03d" % (now_ms % 1000), max_items=500)
            cells.commit(resident, memory)

    events(1, 50)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        events(51, 200)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert resident.hits == 250
    # Each event's copy of a 500-item ring is about 4.5 KB: 200 of them kept would be ~0.9 MB.
    assert grown < 100_000
