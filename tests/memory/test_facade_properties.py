"""Property tests: accounting, encodings and the facade against a reference model."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from beam_agents.memory import HARD_CAP_BYTES, DropOldestCompactor, Memory, MemoryOverflow
from beam_agents.memory.ring import decode_ring, encode_ring, item_cost, varint_size

KEYS = st.sampled_from(["a", "b", "c", "log", "__langgraph__/s", "é/ü", ""])
SMALL = st.integers(min_value=0, max_value=300)
# A few sizes large enough to cross the soft and hard caps within one example.
LARGE = st.sampled_from([150_000, 300_000, 500_000, 900_000])

OPS = st.one_of(
    st.tuples(st.just("set"), KEYS, st.one_of(SMALL, LARGE)),
    st.tuples(st.just("append"), KEYS, st.one_of(SMALL, LARGE), st.integers(1, 5)),
    st.tuples(st.just("delete"), KEYS),
    st.tuples(st.just("get"), KEYS),
)


def _sum_of_values(memory: Memory) -> int:
    return sum(len(e.value) for e in memory.to_blob().entries)


@settings(max_examples=150, deadline=None)
@given(ops=st.lists(OPS, max_size=40), compact=st.booleans())
def test_accounting_matches_recomputation_under_mixed_operations(
    ops: list[tuple[object, ...]], compact: bool
) -> None:
    """After every set/delete/append, size_bytes equals the sum of stored value lengths."""
    memory = Memory(now_ms=5, compactor=DropOldestCompactor() if compact else None)
    for op in ops:
        try:
            if op[0] == "set":
                memory.set(str(op[1]), b"s" * int(str(op[2])))
            elif op[0] == "append":
                memory.append(str(op[1]), b"i" * int(str(op[2])), max_items=int(str(op[3])))
            elif op[0] == "delete":
                memory.delete(str(op[1]))
            else:
                memory.get(str(op[1]))
        except (TypeError, MemoryOverflow):
            pass
        assert memory.size_bytes == _sum_of_values(memory)
        assert memory.to_blob().total_value_bytes == memory.size_bytes
        assert sum(memory.entry_size(k) for k in memory.keys()) == memory.size_bytes
        assert memory.size_bytes <= HARD_CAP_BYTES


@settings(max_examples=100, deadline=None)
@given(ops=st.lists(OPS, max_size=30))
def test_facade_agrees_with_a_plain_dict_model_and_survives_reload(
    ops: list[tuple[object, ...]],
) -> None:
    """Without caps in play, the facade behaves like a dict of scalars and bounded lists."""
    memory = Memory(now_ms=1)
    model: dict[str, bytes | list[bytes]] = {}
    for op in ops:
        key = str(op[1])
        if op[0] in ("set", "append") and int(str(op[2])) > 300:
            continue
        if op[0] == "set":
            value = b"s" * int(str(op[2]))
            memory.set(key, value)
            model[key] = value
        elif op[0] == "append":
            item = bytes([65 + len(model) % 26]) * int(str(op[2]))
            bound = int(str(op[3]))
            current = model.get(key, [])
            if isinstance(current, bytes):
                continue
            memory.append(key, item, max_items=bound)
            model[key] = ([*current, item])[-bound:]
        elif op[0] == "delete":
            memory.delete(key)
            model.pop(key, None)
    reloaded = Memory(memory.to_blob(), now_ms=2)
    for key, expected in model.items():
        if isinstance(expected, bytes):
            assert reloaded.get(key) == expected
        else:
            assert reloaded.ring(key) == tuple(expected)
    assert set(reloaded.keys()) == set(model)


@given(items=st.lists(st.binary(max_size=300), max_size=20))
def test_ring_encoding_round_trips_and_costs_add_up(items: list[bytes]) -> None:
    encoded = encode_ring(items)

    assert tuple(decode_ring("k", encoded)) == tuple(items)
    assert len(encoded) == 1 + sum(item_cost(i) for i in items)


@given(n=st.integers(min_value=0, max_value=300_000))
def test_varint_size_matches_the_encoding(n: int) -> None:
    item = bytes(n)

    assert len(encode_ring([item])) == 1 + varint_size(n) + n == 1 + item_cost(item)
