"""Tier-1 compaction: DropOldestCompactor."""

from __future__ import annotations

import pytest

from beam_agents import LlmRequest
from beam_agents.errors import ConfigurationError
from beam_agents.memory import (
    HARD_CAP_BYTES,
    SOFT_CAP_BYTES,
    Compactor,
    DropOldestCompactor,
    Memory,
    MemoryOverflow,
    SummarizeCompactor,
)
from beam_agents.memory.compaction import check_compactor
from beam_agents.memory.summarize import check_summarizer

NOW = 42
KIB = 1024


def _filled(compactor: Compactor | None, sizes: dict[str, int]) -> Memory:
    """A facade loaded with the given entries in LRU order, without triggering compaction."""
    staging = Memory(now_ms=NOW)
    for key, size in sizes.items():
        staging.set(key, b"v" * size)
    return Memory(staging.to_blob(), now_ms=NOW, compactor=compactor)


def test_the_default_evicts_to_half_the_hard_cap_and_protects_langgraph_checkpoints() -> None:
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
    sizes = {"profile/resume": 200 * KIB, "a": 200 * KIB, "b": 200 * KIB}
    memory = _filled(
        DropOldestCompactor(target_bytes=250 * KIB, protected_prefixes=("profile/",)), sizes
    )

    memory.set("c", b"c" * (200 * KIB))

    assert "profile/resume" in memory.keys()
    assert memory.keys() == ("profile/resume", "c")


def test_the_default_never_evicts_a_langgraph_checkpoint() -> None:
    """A suspended graph's checkpoint, the oldest entry, outlives compaction by default."""
    sizes = {"__langgraph__/checkpoint": 200 * KIB, "a": 200 * KIB, "b": 200 * KIB}
    memory = _filled(DropOldestCompactor(target_bytes=250 * KIB), sizes)

    memory.set("c", b"c" * (200 * KIB))

    assert memory.keys() == ("__langgraph__/checkpoint", "c")


def test_only_protected_entries_left_over_the_hard_cap_rejects_the_write() -> None:
    sizes = {"x": 10 * KIB, "profile/a": 500 * KIB, "profile/b": 500 * KIB}
    memory = _filled(DropOldestCompactor(protected_prefixes=("profile/",)), sizes)
    memory.get("profile/b")

    with pytest.raises(MemoryOverflow) as raised:
        memory.set("new", b"n" * (100 * KIB))

    assert raised.value.cap_bytes == HARD_CAP_BYTES
    assert memory.get("new") is None
    assert memory.keys() == ("profile/a", "profile/b")


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
        ({"protected_prefixes": "profile/"}, "protected_prefixes"),
        ({"protected_prefixes": (1,)}, "protected_prefixes"),
    ],
)
def test_invalid_configuration_names_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        DropOldestCompactor(**kwargs)  # type: ignore[arg-type]


def test_a_summarizer_given_as_compactor_is_refused_naming_the_field_it_belongs_in() -> None:
    summarizer = SummarizeCompactor(
        build_request=_summary_request, extract_summary=bytes, source_keys=("log",)
    )

    with pytest.raises(ConfigurationError, match=r"AgentConfig\.compactor") as raised:
        check_compactor(summarizer)

    assert "pass it as AgentConfig.summarizer" in str(raised.value)
    assert "tier-2" in str(raised.value)


def test_a_compactor_given_as_summarizer_is_refused_naming_the_field_it_belongs_in() -> None:
    with pytest.raises(ConfigurationError, match=r"AgentConfig\.summarizer") as raised:
        check_summarizer(DropOldestCompactor())

    assert "pass it as AgentConfig.compactor" in str(raised.value)
    assert "tier-1" in str(raised.value)


@pytest.mark.parametrize("check", [check_compactor, check_summarizer])
def test_something_that_is_neither_tier_is_refused_by_type(check: object) -> None:
    with pytest.raises(ConfigurationError, match="got str"):
        check("drop oldest")  # type: ignore[operator]


def test_each_tier_and_none_are_accepted_where_they_belong() -> None:
    summarizer = SummarizeCompactor(
        build_request=_summary_request, extract_summary=bytes, source_keys=("log",)
    )

    check_compactor(DropOldestCompactor())
    check_compactor(None)
    check_summarizer(summarizer)
    check_summarizer(None)


def _summary_request(items: tuple[bytes, ...], prior: bytes | None) -> LlmRequest:
    return LlmRequest(model_id="m", messages=[b"".join(items).decode()])
