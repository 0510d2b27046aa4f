"""The working-memory facade's specification, one test per scenario.

Scenarios that need the runtime or the long-term store are tested with
them (tests/runtime/, tests/memory/test_longterm*.py); docs/memory.md lists
where each one lives.
"""

from __future__ import annotations

import logging

import pytest

from beam_agents.memory import (
    HARD_CAP_BYTES,
    SOFT_CAP_BYTES,
    LongtermNotConfigured,
    Memory,
    MemoryOverflow,
)
from beam_agents.proto import MemoryBlob

NOW = 1_700_000_000_000


def _blob_with(*entries: tuple[str, bytes, int]) -> MemoryBlob:
    blob = MemoryBlob(state_schema_version=1)
    for key, value, stamp in entries:
        blob.entries.add(key=key, value=value, last_access_ms=stamp)
    blob.total_value_bytes = sum(len(v) for _, v, _ in entries)
    return blob


def _recomputed_size(memory: Memory) -> int:
    return sum(len(e.value) for e in memory.to_blob().entries)


class _RecordingCompactor:
    def __init__(self, action: object = None) -> None:
        self.calls = 0
        self.action = action

    def compact(self, memory: Memory) -> None:
        self.calls += 1
        if callable(self.action):
            self.action(memory)


# Requirement: Facade stages mutations over an in-memory MemoryBlob


def test_blob_round_trips_through_the_facade() -> None:
    blob = _blob_with(("a", b"\x00one", 10), ("b", b"\x01\x01x\x02yz", 20), ("c", b"\x00", 30))
    memory = Memory(blob, now_ms=NOW)

    out = memory.to_blob()

    assert list(out.entries) == list(blob.entries)
    assert out.total_value_bytes == blob.total_value_bytes
    assert out.state_schema_version == 1
    assert memory.dirty is False


def test_fresh_facade_produces_a_versioned_empty_blob() -> None:
    blob = Memory(now_ms=NOW).to_blob()

    assert blob.state_schema_version == 1
    assert len(blob.entries) == 0
    assert blob.total_value_bytes == 0


def test_rejected_mutation_leaves_staged_state_unchanged() -> None:
    memory = Memory(now_ms=NOW)
    memory.set("scalar", b"v")
    memory.append("log", b"1")
    memory.set("big", b"x" * (HARD_CAP_BYTES - 100))
    before = memory.to_blob()
    size_before = memory.size_bytes

    with pytest.raises(TypeError):
        memory.append("scalar", b"x")
    with pytest.raises(TypeError):
        memory.get("log")
    with pytest.raises(MemoryOverflow):
        memory.set("scalar", b"y" * 200)
    with pytest.raises(MemoryOverflow):
        memory.append("log", b"z" * 200)

    assert memory.to_blob() == before
    assert memory.size_bytes == size_before
    assert memory.ring("log") == (b"1",)


# Requirement: Scalar get/set/delete with LRU stamping


def test_set_then_get_round_trips_bytes() -> None:
    memory = Memory(now_ms=NOW)
    memory.set("k", b"v")
    memory.set("empty", b"")

    assert memory.get("k") == b"v"
    assert memory.get("empty") == b""
    assert memory.get("missing") is None


def test_access_order_is_persisted_for_lru() -> None:
    memory = Memory(_blob_with(("a", b"\x00A", 1), ("b", b"\x00B", 2)), now_ms=NOW)
    memory.set("c", b"C")

    memory.get("a")

    entries = memory.to_blob().entries
    assert [e.key for e in entries] == ["b", "c", "a"]
    assert entries[2].last_access_ms == NOW
    assert memory.dirty is True


def test_delete_removes_and_is_idempotent() -> None:
    memory = Memory(now_ms=NOW)
    memory.set("keep", b"1234")
    memory.set("k", b"v")

    memory.delete("k")
    memory.delete("k")

    assert memory.get("k") is None
    assert memory.to_blob().total_value_bytes == memory.size_bytes == 5


# Requirement: Append maintains a bounded ring per key


def test_appends_preserve_order_and_survive_blob_round_trip() -> None:
    memory = Memory(now_ms=NOW)
    for item in (b"1", b"2", b"3"):
        memory.append("log", item)

    reloaded = Memory(memory.to_blob(), now_ms=NOW + 1)

    assert reloaded.ring("log") == (b"1", b"2", b"3")
    assert reloaded.ring("absent") == ()


def test_ring_drops_oldest_at_capacity() -> None:
    memory = Memory(now_ms=NOW)
    for item in (b"first-item", b"2", b"3", b"4"):
        memory.append("log", item, max_items=3)

    assert memory.ring("log") == (b"2", b"3", b"4")
    # kind byte + three one-byte items, each with a one-byte length prefix
    assert memory.size_bytes == memory.to_blob().total_value_bytes == 1 + 3 * 2
    assert memory.size_bytes == _recomputed_size(memory)


def test_kind_mixing_raises() -> None:
    memory = Memory(now_ms=NOW)
    memory.set("k", b"v")
    memory.append("r", b"x")
    before = memory.to_blob()

    with pytest.raises(TypeError):
        memory.append("k", b"x")
    with pytest.raises(TypeError):
        memory.get("r")
    with pytest.raises(TypeError):
        memory.ring("k")

    assert memory.to_blob() == before
    memory.set("r", b"scalar now")  # set may overwrite a ring
    assert memory.get("r") == b"scalar now"


# Requirement: Soft cap warns and triggers compaction at 75%


def test_crossing_the_soft_cap_warns_once_and_compacts(caplog: pytest.LogCaptureFixture) -> None:
    compactor = _RecordingCompactor()
    memory = Memory(now_ms=NOW, compactor=compactor)
    memory.set("base", b"x" * (SOFT_CAP_BYTES - 1000))
    assert compactor.calls == 0

    with caplog.at_level(logging.WARNING, logger="beam_agents.memory"):
        memory.set("crossing", b"y" * 2000)
        for i in range(5):
            memory.set(f"more-{i}", b"z" * 1000)

    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "soft cap" in warnings[0].getMessage()
    assert compactor.calls == 1
    assert memory.get("more-4") == b"z" * 1000
    assert SOFT_CAP_BYTES <= memory.size_bytes <= HARD_CAP_BYTES


def test_no_compactor_configured_is_not_an_error(caplog: pytest.LogCaptureFixture) -> None:
    memory = Memory(now_ms=NOW)

    with caplog.at_level(logging.WARNING, logger="beam_agents.memory"):
        memory.set("big", b"x" * SOFT_CAP_BYTES)

    assert memory.get("big") == b"x" * SOFT_CAP_BYTES
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


# Requirement: Hard cap raises MemoryOverflow at 1 MiB


def test_overflowing_write_is_rejected_atomically() -> None:
    memory = Memory(now_ms=NOW)
    memory.set("filler", b"f" * (HARD_CAP_BYTES - 2000))
    memory.set("target", b"prior")
    size = memory.size_bytes

    with pytest.raises(MemoryOverflow) as raised:
        memory.set("target", b"t" * 5000)

    assert raised.value.key == "target"
    assert raised.value.cap_bytes == HARD_CAP_BYTES
    assert raised.value.attempted_bytes == size - 6 + 5001
    assert memory.get("target") == b"prior"
    assert memory.size_bytes == size


def test_compaction_that_frees_space_lets_the_write_succeed() -> None:
    def evict_all_but_target(memory: Memory) -> None:
        for key in memory.keys():
            if key != "target":
                memory.delete(key)

    compactor = _RecordingCompactor(evict_all_but_target)
    memory = Memory(now_ms=NOW, compactor=compactor)
    for i in range(4):
        memory.set(f"old-{i}", b"o" * (HARD_CAP_BYTES // 5))

    memory.set("target", b"t" * (HARD_CAP_BYTES // 4))

    assert memory.get("target") == b"t" * (HARD_CAP_BYTES // 4)
    assert memory.to_blob().entries[0].key == "target"
    assert len(memory.to_blob().entries) == 1
    assert compactor.calls >= 1


def test_compaction_that_frees_too_little_still_rejects() -> None:
    compactor = _RecordingCompactor(lambda memory: memory.delete("small"))
    memory = Memory(now_ms=NOW, compactor=compactor)
    memory.set("small", b"s" * 100)
    memory.set("big", b"b" * (HARD_CAP_BYTES - 1000))
    compactor.calls = 0

    with pytest.raises(MemoryOverflow):
        memory.set("target", b"t" * 5000)

    assert compactor.calls == 1
    assert memory.get("target") is None
    assert "small" not in memory.to_blob().entries[0].key
    assert memory.keys() == ("big",)


# Requirement: Compaction hook is a stable protocol with a safe default


def test_compactor_mutates_through_the_facade_with_correct_accounting() -> None:
    def rewrite(memory: Memory) -> None:
        memory.delete("a")
        memory.delete("b")
        memory.set("digest", b"d" * (SOFT_CAP_BYTES))  # would re-cross the soft cap

    compactor = _RecordingCompactor(rewrite)
    memory = Memory(now_ms=NOW, compactor=compactor)
    memory.set("a", b"a" * (SOFT_CAP_BYTES // 2))
    memory.set("b", b"b" * (SOFT_CAP_BYTES // 2))

    assert compactor.calls == 1
    assert memory.size_bytes == _recomputed_size(memory)
    assert memory.keys() == ("digest",)


def test_compactor_exceptions_propagate() -> None:
    class CompactionBroke(Exception):
        pass

    def explode(memory: Memory) -> None:
        raise CompactionBroke("custom")

    loaded = Memory(now_ms=NOW)
    loaded.set("filler", b"f" * (HARD_CAP_BYTES - 10))
    memory = Memory(loaded.to_blob(), now_ms=NOW, compactor=_RecordingCompactor(explode))

    with pytest.raises(CompactionBroke):
        memory.set("target", b"t" * 100)


# Requirement: Long-term store access is explicit via memory.longterm (facade half)


def test_longterm_without_a_handle_names_the_config_field() -> None:
    memory = Memory(now_ms=NOW)

    with pytest.raises(LongtermNotConfigured, match=r"AgentConfig\.longterm_memory"):
        _ = memory.longterm
    assert isinstance(LongtermNotConfigured(), RuntimeError)


# Requirement: Read-only LRU-order enumeration for compaction strategies


def test_keys_reports_lru_order_without_dirtying_the_facade() -> None:
    blob = _blob_with(("a", b"\x00A", 1), ("b", b"\x00B", 2), ("c", b"\x00C", 3))
    fresh = Memory(blob, now_ms=NOW)
    mutated = Memory(blob, now_ms=NOW)
    mutated.get("b")

    assert fresh.keys() == ("a", "b", "c")
    assert fresh.dirty is False
    assert mutated.keys() == ("a", "c", "b")
    assert fresh.keys() == ("a", "b", "c")
    assert fresh.dirty is False
    assert fresh.to_blob() == blob


def test_entry_size_does_not_perturb_eviction_order() -> None:
    from beam_agents.memory import DropOldestCompactor

    blob = _blob_with(("lru", b"\x00" + b"l" * 50, 1), ("mid", b"\x00m", 2), ("mru", b"\x00r", 3))
    memory = Memory(blob, now_ms=NOW)

    assert memory.entry_size("lru") == 51
    assert memory.keys()[0] == "lru"
    assert memory.dirty is False
    assert sum(memory.entry_size(k) for k in memory.keys()) == memory.size_bytes
    with pytest.raises(KeyError):
        memory.entry_size("absent")

    DropOldestCompactor(target_bytes=memory.size_bytes - 1).compact(memory)
    assert "lru" not in memory.keys()
    assert memory.keys() == ("mid", "mru")
