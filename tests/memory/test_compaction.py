"""Tier-1 compaction: DropOldestCompactor."""

from __future__ import annotations

import pytest

from beam_agents.memory import (
    HARD_CAP_BYTES,
    SOFT_CAP_BYTES,
    Compactor,
    DropOldestCompactor,
    Memory,
    MemoryOverflow,
)

NOW = 42
KIB = 1024


def _filled(compactor: Compactor | None, sizes: dict[str, int]) -> Memory:
    """A facade loaded with the given entries in LRU order, without triggering compaction."""
    staging = Memory(now_ms=NOW)
    for key, size in sizes.items():
        staging.set(key, b"v" * size)
    return Memory(staging.to_blob(), now_ms=NOW, compactor=compactor)


def test_default_configuration_matches_the_seed() -> None:
    compactor = DropOldestCompactor()

    assert compactor.target_bytes == 524_288
    assert compactor.protected_prefixes == ("__langgraph__/",)
    assert isinstance(compactor, Compactor)


def test_evicts_least_recently_used_entries_down_to_the_target() -> None:
    sizes = {f"k{i}": 100 * KIB for i in range(7)}  # ~700 KiB, under the soft cap
    # Three entries of 100 KiB plus their kind bytes fit the target exactly.
    memory = _filled(DropOldestCompactor(target_bytes=3 * (100 * KIB + 1)), sizes)
    memory.get("k0")  # k0 becomes most recently used

    memory.set("crossing", b"c" * (100 * KIB))  # lands above the soft cap

    assert memory.size_bytes == 3 * (100 * KIB + 1)
    assert memory.keys() == ("k6", "k0", "crossing")


def test_soft_cap_compaction_keeps_the_value_just_written() -> None:
    memory = _filled(DropOldestCompactor(), {"old": 300 * KIB})

    memory.set("huge", b"h" * (600 * KIB))

    assert memory.get("huge") == b"h" * (600 * KIB)
    assert memory.keys() == ("huge",)


def test_protected_prefixes_are_never_evicted() -> None:
    sizes = {"__langgraph__/resume": 200 * KIB, "a": 200 * KIB, "b": 200 * KIB}
    memory = _filled(DropOldestCompactor(target_bytes=250 * KIB), sizes)

    memory.set("c", b"c" * (200 * KIB))

    assert "__langgraph__/resume" in memory.keys()
    assert memory.keys() == ("__langgraph__/resume", "c")


def test_only_protected_entries_left_over_the_hard_cap_rejects_the_write() -> None:
    sizes = {"x": 10 * KIB, "__langgraph__/a": 500 * KIB, "__langgraph__/b": 500 * KIB}
    memory = _filled(DropOldestCompactor(), sizes)
    memory.get("__langgraph__/b")

    with pytest.raises(MemoryOverflow) as raised:
        memory.set("new", b"n" * (100 * KIB))

    assert raised.value.cap_bytes == HARD_CAP_BYTES
    assert memory.get("new") is None
    assert memory.keys() == ("__langgraph__/a", "__langgraph__/b")


def test_hard_cap_write_succeeds_after_eviction_by_default() -> None:
    sizes = {f"k{i}": 100 * KIB for i in range(10)}  # ~1000 KiB, loaded above the soft cap
    memory = _filled(DropOldestCompactor(), sizes)

    memory.set("new", b"n" * (100 * KIB))

    assert memory.get("new") == b"n" * (100 * KIB)
    assert memory.size_bytes < SOFT_CAP_BYTES
    assert memory.keys()[-1] == "new"


def test_same_staged_state_and_config_evict_the_same_set() -> None:
    sizes = {f"k{i:02d}": (i % 7 + 1) * 5 * KIB for i in range(30)}  # ~600 KiB

    def survivors() -> tuple[str, ...]:
        memory = _filled(DropOldestCompactor(target_bytes=150 * KIB), sizes)
        memory.get("k03")
        memory.append("log", b"x" * (50 * KIB))
        memory.set("trigger", b"t" * (300 * KIB))
        return memory.keys()

    first = survivors()
    assert first == survivors()
    assert first[-1] == "trigger"
    assert len(first) < 30


def test_compaction_does_not_run_below_the_target() -> None:
    memory = _filled(None, {"a": 10, "b": 10})

    DropOldestCompactor(target_bytes=1000).compact(memory)

    assert memory.keys() == ("a", "b")
    assert memory.dirty is False


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"target_bytes": -1}, "target_bytes"),
        ({"target_bytes": 1.5}, "target_bytes"),
        ({"protected_prefixes": "__langgraph__/"}, "protected_prefixes"),
        ({"protected_prefixes": (1,)}, "protected_prefixes"),
    ],
)
def test_invalid_configuration_names_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        DropOldestCompactor(**kwargs)  # type: ignore[arg-type]
