"""Splicing commits and resident snapshots: byte-identical to a full encode, never stale.

The facade re-encodes only the entries an activation changed, and a DoFn
instance reuses the decoded entries of the blob it last committed for a key.
Both are pure optimizations: these tests prove the bytes are exactly those
of `to_blob()` serialized deterministically, across activations, and that a
snapshot is used only for the very bytes it came from.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from beam_agents.coders import encode_deterministic
from beam_agents.errors import StateDecodeError
from beam_agents.memory import DropOldestCompactor, Memory, MemoryOverflow
from beam_agents.memory.resident import ResidentMemory
from beam_agents.proto import MemoryBlob

KEYS = st.sampled_from(["a", "b", "c", "log", "é/ü", "", "k" * 200])
STAMPS = st.sampled_from([0, 1, 5, 127, 128, 1_700_000_000_000, -1, -9_223_372_036_854_775])
OPS = st.one_of(
    st.tuples(st.just("set"), KEYS, st.integers(0, 300)),
    st.tuples(st.just("append"), KEYS, st.integers(0, 300), st.integers(1, 4)),
    st.tuples(st.just("delete"), KEYS),
    st.tuples(st.just("get"), KEYS),
    st.tuples(st.just("ring"), KEYS),
)


def _apply(memory: Memory, op: tuple[object, ...]) -> None:
    kind, key = op[0], str(op[1])
    try:
        if kind == "set":
            memory.set(key, b"s" * int(str(op[2])))
        elif kind == "append":
            memory.append(key, b"i" * int(str(op[2])), max_items=int(str(op[3])))
        elif kind == "delete":
            memory.delete(key)
        elif kind == "get":
            memory.get(key)
        else:
            memory.ring(key)
    except (TypeError, MemoryOverflow):
        pass


@settings(max_examples=150, deadline=None)
@given(activations=st.lists(st.tuples(STAMPS, st.lists(OPS, max_size=12)), max_size=6))
def test_spliced_bytes_equal_a_full_deterministic_encode_across_activations(
    activations: list[tuple[int, list[tuple[object, ...]]]],
) -> None:
    """Through the resident cache and a cold decode alike, every commit is byte-identical."""
    resident = ResidentMemory()
    raw: bytes | None = None
    for now_ms, ops in activations:
        warm = resident.open("t", b"k", raw, now_ms=now_ms)
        cold = Memory(MemoryBlob.FromString(raw) if raw else None, now_ms=now_ms)
        for op in ops:
            _apply(warm, op)
            _apply(cold, op)
        expected = encode_deterministic(cold.to_blob())
        assert cold.to_bytes() == expected
        assert warm.to_bytes() == expected
        assert warm.dirty == cold.dirty
        raw = resident.commit("t", b"k", warm)
        assert raw == expected
        # Decoded independently, the committed bytes hold what the facade served.
        fresh = Memory(MemoryBlob.FromString(raw), now_ms=0)
        assert fresh.keys() == cold.keys()
        for key in cold.keys():
            try:
                assert fresh.ring(key) == cold.ring(key)
            except TypeError:
                assert fresh.get(key) == cold.get(key)


def test_a_failed_activation_leaves_the_resident_snapshot_as_committed() -> None:
    """Mutations of a discarded facade never reach the snapshot the next one starts from."""
    resident = ResidentMemory()
    first = resident.open("t", b"k", None, now_ms=1)
    first.set("fact", b"kept")
    first.append("log", b"one")
    raw = resident.commit("t", b"k", first)

    failed = resident.open("t", b"k", raw, now_ms=2)
    failed.set("fact", b"discarded")
    failed.append("log", b"discarded")
    failed.ring("log")
    failed.delete("fact")
    # The activation failed: nothing is committed and the cell still holds `raw`.

    retry = resident.open("t", b"k", raw, now_ms=2)
    assert resident.hits == 2
    assert retry.to_bytes() == raw
    assert retry.get("fact") == b"kept"
    assert retry.ring("log") == (b"one",)


def test_a_snapshot_is_used_only_for_the_bytes_it_was_committed_as() -> None:
    """Other bytes in the cell (a rolled-back bundle, another worker's commit) decode afresh."""
    resident = ResidentMemory()
    memory = resident.open("t", b"k", None, now_ms=1)
    memory.set("a", b"from this worker")
    resident.commit("t", b"k", memory)

    elsewhere = Memory(now_ms=1)
    elsewhere.set("a", b"from another worker")
    other_raw = elsewhere.to_bytes()
    reopened = resident.open("t", b"k", other_raw, now_ms=2)
    assert reopened.get("a") == b"from another worker"
    assert resident.misses == 1  # the empty cell at first was no miss: nothing to decode

    assert len(resident.open("t", b"k", None, now_ms=3)) == 0
    assert len(resident.open("t", b"k", b"", now_ms=3)) == 0


def test_the_snapshot_reused_equals_a_fresh_decode_of_the_same_bytes() -> None:
    resident = ResidentMemory()
    memory = resident.open("t", b"k", None, now_ms=10)
    for i in range(50):
        memory.set(f"fact/{i}", bytes([i]) * i)
    memory.append("log", b"x")
    raw = resident.commit("t", b"k", memory)
    warm = resident.open("t", b"k", bytes(bytearray(raw)), now_ms=11)  # equal, not identical
    cold = Memory(MemoryBlob.FromString(raw), now_ms=11)
    assert resident.hits == 1
    assert warm.keys() == cold.keys()
    assert warm.size_bytes == cold.size_bytes
    assert all(warm.entry_size(k) == cold.entry_size(k) for k in cold.keys())
    assert warm.to_blob() == cold.to_blob()
    assert not warm.dirty


def test_undecodable_bytes_raise_state_decode_error() -> None:
    with pytest.raises(StateDecodeError, match="MEMORY"):
        ResidentMemory().open("t", b"k", b"\xff\xff\xff", now_ms=1)
    wrong_version = MemoryBlob(state_schema_version=2).SerializeToString()
    with pytest.raises(StateDecodeError, match="state_schema_version 2"):
        ResidentMemory().open("t", b"k", wrong_version, now_ms=1)


def test_two_transforms_with_the_same_entity_key_keep_their_own_snapshots() -> None:
    resident = ResidentMemory()
    raws = {}
    for scope in ("first", "second"):
        memory = resident.open(scope, b"k", None, now_ms=1)
        memory.set("owner", scope.encode())
        raws[scope] = resident.commit(scope, b"k", memory)
    assert resident.open("first", b"k", raws["first"], now_ms=2).get("owner") == b"first"
    assert resident.open("second", b"k", raws["second"], now_ms=2).get("owner") == b"second"
    assert resident.hits == 2


def test_resident_bytes_stay_within_the_budget_evicting_the_least_recent_key() -> None:
    resident = ResidentMemory(max_bytes=3_000)
    raws = {}
    for name in (b"a", b"b", b"c"):
        memory = resident.open("t", name, None, now_ms=1)
        memory.set("v", b"x" * 1_200)
        raws[name] = resident.commit("t", name, memory)
    assert len(resident) == 2
    resident.open("t", b"a", raws[b"a"], now_ms=2)
    assert resident.hits == 0  # "a" was evicted
    resident.open("t", b"c", raws[b"c"], now_ms=2)
    assert resident.hits == 1


def test_compaction_through_a_resident_facade_keeps_accounting_exact() -> None:
    resident = ResidentMemory()
    compactor = DropOldestCompactor(target_bytes=2_000)
    memory = resident.open("t", b"k", None, now_ms=1, compactor=compactor)
    for i in range(20):
        memory.set(f"f{i}", b"x" * 100)
    raw = resident.commit("t", b"k", memory)
    again = resident.open("t", b"k", raw, now_ms=2, compactor=compactor)
    recompute: Callable[[Memory], int] = lambda m: sum(m.entry_size(k) for k in m.keys())  # noqa: E731
    again.set("big", b"y" * 800_000)
    assert again.size_bytes == recompute(again)
    assert again.to_bytes() == encode_deterministic(again.to_blob())
