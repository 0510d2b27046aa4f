"""The contract every `MemoryStore` must keep, as a pytest suite you can run on yours.

Every backend shipped with beam-agents runs this same suite against a real
server or the official emulator; a store you write yourself can run it too::

    import pytest
    from beam_agents.testing.store_conformance import ConformanceTarget, StoreConformance

    @pytest.fixture
    def store_target(tmp_path):
        async def open_store():
            return MyMemoryStore(...)    # a NEW instance over the same rows
        return ConformanceTarget(open_store=open_store)

    class TestMyStore(StoreConformance):
        pass

`store_target` must give each test an empty store (a fresh database,
namespace or table, or one cleared before the test) and may be parametrized
to run the suite over several backends. Each test's docstring is the one
contract it proves. Tests run on plain pytest (no async plugin): each one
drives its own event loop under `ConformanceTarget.timeout_s`, and issues
its calls in a few batched or concurrent round trips, so even a slow server
gets through the whole suite in seconds.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from beam_agents.memory.stores.base import (
    MAX_ENTITY_KEY_BYTES,
    MAX_KEY_BYTES,
    MAX_SEARCH_LIMIT,
    MAX_VALUE_BYTES,
    MemoryRecord,
    MemoryStore,
)
from beam_agents.memory.stores.envelope import encode_record
from beam_agents.memory.stores.errors import InvalidRecordError

__all__ = ["ConformanceTarget", "StoreConformance", "race_concurrent_upserts"]

RawReader = Callable[[MemoryStore, bytes, str], Awaitable[bytes | None]]
Body = Callable[..., Awaitable[None]]


@dataclass(frozen=True)
class ConformanceTarget:
    """How the suite reaches one backend for one test."""

    open_store: Callable[[], Awaitable[MemoryStore]]
    """Open a new store instance; every instance of one test sees the same rows."""
    read_raw: RawReader | None = None
    """Optional: the bytes the backend stored for (entity, key), to prove they are
    exactly the shared envelope. Without it the suite checks a round trip instead."""
    timeout_s: float = 30.0
    """Upper bound on one test, so a hung server fails the test instead of the run."""


def _contract(body: Body) -> Callable[..., None]:
    """Turn `async def test_x(self, store, target, **params)` into a sync pytest test.

    The test opens one store from the `store_target` fixture, runs the body
    on a fresh event loop under the target's timeout, and closes the store.
    pytest sees `(self, store_target, **params)`, so `parametrize` still works.
    """
    signature = inspect.signature(body)
    kept = [p for name, p in signature.parameters.items() if name not in ("store", "target")]
    target_param = inspect.Parameter("store_target", inspect.Parameter.POSITIONAL_OR_KEYWORD)

    def test(self: object, store_target: ConformanceTarget, **params: Any) -> None:
        async def main() -> None:
            async with await store_target.open_store() as store:
                await asyncio.wait_for(
                    body(self, store, store_target, **params), store_target.timeout_s
                )

        asyncio.run(main())

    test.__name__ = body.__name__
    test.__qualname__ = body.__qualname__
    test.__doc__ = body.__doc__
    test.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[kept[0], target_param, *kept[1:]]
    )
    test.pytestmark = getattr(body, "pytestmark", [])  # type: ignore[attr-defined]
    return test


def _rec(key: str, seq: int = 1, value: bytes | None = None, at: int = 1000) -> MemoryRecord:
    return MemoryRecord(
        key=key, value=f"v:{key}".encode() if value is None else value, seq=seq, updated_at_ms=at
    )


async def _keys(store: MemoryStore, entity: bytes, prefix: str = "") -> list[str]:
    return [r.key for r in await store.search(entity, prefix, MAX_SEARCH_LIMIT)]


async def _check_stored(
    store: MemoryStore, target: ConformanceTarget, entity: bytes, record: MemoryRecord
) -> None:
    """The row holds exactly `record`, as the shared envelope bytes."""
    assert await store.load(entity, record.key) == record
    if target.read_raw is not None:
        assert await target.read_raw(store, entity, record.key) == encode_record(record)


ORDERING_KEYS = [
    "b",
    "B",
    "a",
    "A",
    "ab",
    "aB",
    "a b",
    "a-b",
    "0",
    "~",
    "é",
    "z",
    "\u00ff",
    "\uffff",
    "\ue000",
    "\U0001f600",
    "a\U0001f600",
    "a\uffff",
    "\U0010ffff",
]
WILDCARDS = ["%", "_", "*", "[", "]", "?", "\\", ".", "^", "$", "(", "|", "+", "'", '"']
ENTITY_PAIRS = [
    (b"a", b"a/"),
    (b"a", b"ab"),
    (b"a", b"a\x00"),
    (b"", b"\x00"),
    (b"a:b", b"a"),
    (b"a%", b"ab"),
    (b"a_", b"ab"),
    (b"a*", b"ab"),
    (b"..", b"."),
    (b"__x__", b"x"),
    (b"a/b", b"a/c"),
    (b"a#", b"a"),
    (b"\xff", b"\xff\xff"),
    (b"x" * MAX_ENTITY_KEY_BYTES, b"x" * (MAX_ENTITY_KEY_BYTES - 1)),
]
# (entity, key) pairs that collide if a backend joins them with a separator.
SEPARATOR_ROWS = [
    (b"a", "b/c"),
    (b"a/b", "c"),
    (b"a", ":b"),
    (b"a:", "b"),
    (b"a", "#b"),
    (b"a#", "b"),
    (b"a\x00", "b"),
    (b"a", "\x01b"),
    (b"a", "..b"),
    (b"a.", ".b"),
    (b"a", "__x__"),
    (b"a__x_", "_"),
    (b"a", "%b"),
    (b"a%", "b"),
    (b"a", "*c"),
    (b"a*", "c"),
    (b"a", "/"),
]
BAD_LIMITS = [0, -1, MAX_SEARCH_LIMIT + 1, True, 1.5, "3", None]


INVALID_CALLS: dict[str, Callable[[MemoryStore], Awaitable[object]]] = {
    "entity-key-too-long": lambda s: s.load(b"e" * (MAX_ENTITY_KEY_BYTES + 1), "k"),
    "key-too-long": lambda s: s.upsert(b"e", _rec("k" * (MAX_KEY_BYTES + 1))),
    "prefix-too-long": lambda s: s.search(b"e", "é" * (MAX_KEY_BYTES // 2 + 1), 1),
    "value-too-long": lambda s: s.upsert(b"e", _rec("k", value=b"v" * (MAX_VALUE_BYTES + 1))),
    "negative-seq": lambda s: s.upsert(b"e", _rec("k", seq=-1)),
    "seq-beyond-int64": lambda s: s.upsert(b"e", _rec("k", seq=2**63)),
    "negative-updated-at": lambda s: s.upsert(b"e", _rec("k", at=-1)),
    "str-entity-key": lambda s: s.upsert("e", _rec("k")),  # type: ignore[arg-type]
    "bytes-key": lambda s: s.load(b"e", b"k"),  # type: ignore[arg-type]
    "nul-in-key": lambda s: s.upsert(b"e", _rec("a\x00b")),
    "lone-surrogate-key": lambda s: s.upsert(b"e", _rec("a\ud800", value=b"v")),
    "str-value": lambda s: s.upsert(b"e", _rec("k", value="v")),  # type: ignore[arg-type]
}


RACE_WRITERS = 20
"""Concurrent upserts of one record in `race_concurrent_upserts`, seqs 1..RACE_WRITERS."""
RACE_INSTANCES = 4
"""Store instances the racing upserts are spread over (plus calls sharing one instance)."""


async def race_concurrent_upserts(
    target: ConformanceTarget, entity: bytes, key: str, writers: int = RACE_WRITERS
) -> None:
    """Race `writers` upserts of one record, seqs 1..writers, and prove seq `writers` wins.

    The calls start together from several store instances (so from several
    connections, as several workers would) and several calls share each
    instance, in an order that interleaves low and high seqs. Contention is
    expected; every call must still answer within the target's timeout, the
    highest seq must report applied, and the stored row must be exactly it.
    """
    stores = [await target.open_store() for _ in range(RACE_INSTANCES)]
    try:
        order = sorted(range(1, writers + 1), key=lambda s: ((s * 7) % writers, s))
        records = {
            seq: MemoryRecord(key=key, value=f"seq-{seq}".encode(), seq=seq, updated_at_ms=seq)
            for seq in order
        }
        results = await asyncio.gather(
            *(stores[i % len(stores)].upsert(entity, records[seq]) for i, seq in enumerate(order))
        )
        outcome = dict(zip(order, results, strict=True))
        assert outcome[writers] is True, "the highest seq must always apply"
        for store in stores:
            assert await store.load(entity, key) == records[writers]
    finally:
        for store in stores:
            await store.close()


class StoreConformance:
    """The shared contract suite; subclass it where a `store_target` fixture is defined."""

    @_contract
    async def test_load_of_unwritten_key_returns_none(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """load returns None for a key that was never written."""
        assert await store.load(b"entity", "missing") is None

    @pytest.mark.parametrize(
        "record",
        [
            _rec("profile", seq=3, value=b"\x00\xffbinary", at=1_700_000_000_000),
            _rec("empty", seq=0, value=b"", at=0),
            _rec("extremes", seq=2**63 - 1, at=2**63 - 1),
            _rec("\x01", seq=1),
        ],
        ids=["ordinary", "empty-value-seq-0", "int64-extremes", "lowest-key"],
    )
    @_contract
    async def test_upsert_then_load_returns_the_record(
        self, store: MemoryStore, target: ConformanceTarget, record: MemoryRecord
    ) -> None:
        """A first upsert applies (True) and load returns exactly the record written."""
        assert await store.upsert(b"entity", record) is True
        await _check_stored(store, target, b"entity", record)

    @_contract
    async def test_search_orders_keys_bytewise(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """search orders by UTF-8 bytes: case-sensitive, BMP before astral, no locale collation."""
        await store.upsert_many(b"e", [_rec(k) for k in ORDERING_KEYS])
        expected = sorted(ORDERING_KEYS, key=lambda k: k.encode("utf-8"))
        assert await _keys(store, b"e") == expected

    @_contract
    async def test_search_matches_exactly_the_keys_with_the_prefix(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """search returns every key starting with the prefix, and no other."""
        keys = ["cas", "case", "case/1", "case/2", "case/\U0001f600", "case0", "casf", "Case/1"]
        await store.upsert_many(b"e", [_rec(k) for k in keys])
        assert await _keys(store, b"e", "case/") == ["case/1", "case/2", "case/\U0001f600"]
        assert await _keys(store, b"e", "case") == [
            "case",
            "case/1",
            "case/2",
            "case/\U0001f600",
            "case0",
        ]
        assert await _keys(store, b"e", "nothing") == []

    @_contract
    async def test_search_is_case_sensitive(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """A prefix never matches keys that differ from it only in case."""
        await store.upsert_many(b"e", [_rec(k) for k in ["Abc", "abc", "ABC", "aBc"]])
        assert await _keys(store, b"e", "a") == ["aBc", "abc"]
        assert await _keys(store, b"e", "AB") == ["ABC"]

    @pytest.mark.parametrize("char", WILDCARDS)
    @_contract
    async def test_search_treats_pattern_characters_literally(
        self, store: MemoryStore, target: ConformanceTarget, char: str
    ) -> None:
        """Wildcard and escape characters in a prefix are data, never a pattern."""
        keys = [f"a{char}", f"a{char}b", "axb", "ab", "aXb", f"A{char}b", "a", f"{char}"]
        await store.upsert_many(b"e", [_rec(k) for k in keys])
        assert await _keys(store, b"e", f"a{char}") == sorted([f"a{char}", f"a{char}b"])
        assert await _keys(store, b"e", char) == [char]

    @_contract
    async def test_search_prefix_range_is_exact_at_code_point_edges(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """Prefixes ending in U+10FFFF, U+D7FF or U+FFFF match exactly their keys."""
        keys = [
            "x\U0010ffff",
            "x\U0010ffffz",
            "y",
            "\ud7ff",
            "\ud7ffa",
            "\ue000",
            "\uffff",
            "\uffff\U0001f600",
            "\U00010000",
            "\U0010ffff",
            "\U0010ffff\U0010ffff",
        ]
        await store.upsert_many(b"e", [_rec(k) for k in keys])
        assert await _keys(store, b"e", "x\U0010ffff") == ["x\U0010ffff", "x\U0010ffffz"]
        assert await _keys(store, b"e", "\ud7ff") == ["\ud7ff", "\ud7ffa"]
        assert await _keys(store, b"e", "\uffff") == ["\uffff", "\uffff\U0001f600"]
        assert await _keys(store, b"e", "\U0010ffff") == ["\U0010ffff", "\U0010ffff\U0010ffff"]

    @pytest.mark.parametrize("limit", [1, 3, 12, MAX_SEARCH_LIMIT])
    @_contract
    async def test_search_returns_at_most_limit_records(
        self, store: MemoryStore, target: ConformanceTarget, limit: int
    ) -> None:
        """search returns the first `limit` matching records in key order, never more."""
        keys = [f"k{i:02d}" for i in range(12)]
        await store.upsert_many(b"e", [_rec(k) for k in reversed(keys)])
        found = await store.search(b"e", "k", limit)
        assert [r.key for r in found] == keys[:limit]
        assert found[0] == _rec("k00")

    @pytest.mark.parametrize("limit", BAD_LIMITS, ids=repr)
    @_contract
    async def test_search_limit_outside_bounds_is_rejected(
        self, store: MemoryStore, target: ConformanceTarget, limit: Any
    ) -> None:
        """A limit that is not an int in [1, MAX_SEARCH_LIMIT] raises InvalidRecordError."""
        with pytest.raises(InvalidRecordError):
            await store.search(b"e", "", limit)

    @_contract
    async def test_search_of_an_unknown_entity_is_empty(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """An entity with no rows has nothing to find, whatever the prefix."""
        await store.upsert(b"other", _rec("k"))
        assert await store.search(b"nobody", "", MAX_SEARCH_LIMIT) == []

    @pytest.mark.parametrize("pair", ENTITY_PAIRS, ids=lambda p: f"{p[0][:8]!r}-vs-{p[1][:8]!r}")
    @_contract
    async def test_entities_never_see_each_others_rows(
        self, store: MemoryStore, target: ConformanceTarget, pair: tuple[bytes, bytes]
    ) -> None:
        """Entity keys that prefix, extend or mimic each other touch only their own rows."""
        keys = ["\x01", "k", "k/1", "k:2"]
        writes = [
            store.upsert_many(e, [_rec(k, value=e + b"|" + k.encode()) for k in keys]) for e in pair
        ]
        await asyncio.gather(*writes)
        for entity in pair:
            found = await store.search(entity, "", MAX_SEARCH_LIMIT)
            assert [(r.key, r.value) for r in found] == [
                (k, entity + b"|" + k.encode()) for k in keys
            ]
            loaded = await store.load(entity, "k")
            assert loaded is not None
            assert loaded.value == entity + b"|k"

    @_contract
    async def test_separators_in_entity_and_record_keys_never_collide(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """(entity, key) pairs that would join to the same string stay distinct rows."""
        by_entity: dict[bytes, list[MemoryRecord]] = {}
        for entity, key in SEPARATOR_ROWS:
            by_entity.setdefault(entity, []).append(_rec(key, value=entity + b"|" + key.encode()))
        await asyncio.gather(*(store.upsert_many(e, rs) for e, rs in by_entity.items()))
        for entity, records in by_entity.items():
            assert await store.search(entity, "", MAX_SEARCH_LIMIT) == sorted(
                records, key=lambda r: r.key.encode()
            )
        loads = await asyncio.gather(*(store.load(e, k) for e, k in SEPARATOR_ROWS))
        for (entity, key), loaded in zip(SEPARATOR_ROWS, loads, strict=True):
            assert loaded is not None
            assert loaded.value == entity + b"|" + key.encode()

    @_contract
    async def test_maximum_length_keys_round_trip(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """Entity keys of MAX_ENTITY_KEY_BYTES (every byte value) and keys of MAX_KEY_BYTES work."""
        entity = bytes(range(256)) * (MAX_ENTITY_KEY_BYTES // 256)
        assert len(entity) == MAX_ENTITY_KEY_BYTES
        two_byte, four_byte = "é" * (MAX_KEY_BYTES // 2), "\U0001f600" * (MAX_KEY_BYTES // 4)
        records = [_rec(two_byte), _rec(four_byte), _rec("k" * MAX_KEY_BYTES)]
        assert await store.upsert_many(entity, records) == [True, True, True]
        for record in records:
            await _check_stored(store, target, entity, record)
        assert await _keys(store, entity, two_byte) == [two_byte]
        assert await _keys(store, entity[:-1], "") == []

    @_contract
    async def test_lower_seq_is_rejected_and_leaves_the_row_unchanged(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """An upsert with a lower seq returns False and changes nothing, not even updated_at_ms."""
        stored = _rec("k", seq=5, value=b"new", at=5000)
        await store.upsert(b"e", stored)
        assert await store.upsert(b"e", _rec("k", seq=4, value=b"stale", at=9000)) is False
        await _check_stored(store, target, b"e", stored)

    @_contract
    async def test_equal_seq_reapplies_byte_identically(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """A replayed upsert (same seq, same bytes) applies again and leaves identical bytes."""
        record = _rec("k", seq=7, value=b"replayed", at=7000)
        assert await store.upsert(b"e", record) is True
        assert await store.upsert(b"e", record) is True
        await _check_stored(store, target, b"e", record)

    @_contract
    async def test_equal_seq_with_different_bytes_applies(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """The guard is >=: an equal seq overwrites, so a replayed activation rewrites its row."""
        await store.upsert(b"e", _rec("k", seq=7, value=b"first"))
        second = _rec("k", seq=7, value=b"second", at=7001)
        assert await store.upsert(b"e", second) is True
        await _check_stored(store, target, b"e", second)

    @_contract
    async def test_higher_seq_applies(self, store: MemoryStore, target: ConformanceTarget) -> None:
        """An upsert with a higher seq replaces the row."""
        await store.upsert(b"e", _rec("k", seq=1, value=b"old"))
        newer = _rec("k", seq=2, value=b"new", at=2000)
        assert await store.upsert(b"e", newer) is True
        await _check_stored(store, target, b"e", newer)

    @_contract
    async def test_upsert_many_reports_each_record_in_order(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """upsert_many returns one bool per record: the guard decides each record on its own."""
        await store.upsert_many(b"e", [_rec("a", seq=5), _rec("b", seq=5), _rec("c", seq=5)])
        batch = [
            _rec("a", seq=4, value=b"stale"),
            _rec("b", seq=5, value=b"same-seq"),
            _rec("c", seq=6, value=b"newer"),
            _rec("d", seq=1, value=b"fresh"),
        ]
        assert await store.upsert_many(b"e", batch) == [False, True, True, True]
        found = await store.search(b"e", "", 10)
        assert found == [_rec("a", seq=5), *batch[1:]]

    @_contract
    async def test_upsert_many_applies_a_repeated_key_in_order(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """A batch that stages one key several times applies them as if one at a time."""
        batch = [
            _rec("k", seq=5, value=b"a"),
            _rec("k", seq=3, value=b"b"),
            _rec("k", seq=6, value=b"c"),
            _rec("k", seq=6, value=b"d"),
        ]
        assert await store.upsert_many(b"e", batch) == [True, False, True, True]
        await _check_stored(store, target, b"e", batch[-1])

    @_contract
    async def test_upsert_many_of_nothing_is_a_no_op(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """An empty batch returns [] and writes nothing."""
        assert await store.upsert_many(b"e", []) == []
        assert await store.search(b"e", "", 10) == []

    @_contract
    async def test_invalid_record_in_a_batch_applies_none_of_it(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """A batch with one invalid record raises InvalidRecordError before writing any record."""
        batch = [_rec("a"), _rec("b"), _rec("c", value=b"v" * (MAX_VALUE_BYTES + 1))]
        with pytest.raises(InvalidRecordError):
            await store.upsert_many(b"e", batch)
        assert await store.search(b"e", "", 10) == []

    @_contract
    async def test_racing_first_inserts_converge_on_the_highest_seq(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """Two store instances inserting the same new keys at once leave the higher seq."""
        async with await target.open_store() as other:
            keys = [f"k{i}" for i in range(8)]
            low = [_rec(k, seq=10, value=b"low") for k in keys]
            high = [_rec(k, seq=11, value=b"high") for k in keys]
            calls = []
            for i in range(len(keys)):
                first, second = (store, other) if i % 2 else (other, store)
                calls.append(first.upsert(b"e", low[i]))
                calls.append(second.upsert(b"e", high[i]))
            results = await asyncio.gather(*calls)
            assert all(results[1::2]), "the higher seq must always apply"
            assert await store.search(b"e", "k", 100) == high

    @_contract
    async def test_racing_updates_converge_on_the_highest_seq(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """Concurrent guarded updates of an existing row from two instances never regress it."""
        async with await target.open_store() as other:
            await store.upsert(b"e", _rec("k", seq=1))
            for seq in range(2, 12, 2):
                older, newer = _rec("k", seq=seq, value=b"older"), _rec("k", seq=seq + 1)
                await asyncio.gather(other.upsert(b"e", newer), store.upsert(b"e", older))
                assert await other.load(b"e", "k") == newer

    @_contract
    async def test_twenty_concurrent_upserts_of_one_record_converge_on_the_highest_seq(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """Twenty upserts of one record (seqs 1..20) racing from several instances leave seq 20."""
        await race_concurrent_upserts(target, b"e", "contended")
        await store.upsert(b"e", _rec("existing", seq=0))
        await race_concurrent_upserts(target, b"e", "existing")

    @_contract
    async def test_largest_value_round_trips(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """A value of MAX_VALUE_BYTES (a whole working-memory blob) is stored intact."""
        record = _rec("blob", value=bytes(range(256)) * (MAX_VALUE_BYTES // 256))
        assert len(record.value) == MAX_VALUE_BYTES
        assert await store.upsert(b"e", record) is True
        await _check_stored(store, target, b"e", record)
        assert await store.search(b"e", "bl", 1) == [record]

    @pytest.mark.parametrize("call", list(INVALID_CALLS.values()), ids=list(INVALID_CALLS))
    @_contract
    async def test_inputs_outside_the_contract_are_rejected(
        self,
        store: MemoryStore,
        target: ConformanceTarget,
        call: Callable[[MemoryStore], Awaitable[object]],
    ) -> None:
        """Over-limit or mistyped inputs raise InvalidRecordError and write nothing."""
        with pytest.raises(InvalidRecordError):
            await call(store)
        assert [row async for row in store.scan()] == []

    @_contract
    async def test_empty_record_key_is_rejected_before_any_write(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """A record under the empty key raises InvalidRecordError, alone or in a batch, and
        writes nothing; the empty prefix still searches everything."""
        with pytest.raises(InvalidRecordError, match="must not be empty"):
            await store.upsert(b"e", _rec(""))
        with pytest.raises(InvalidRecordError, match="must not be empty"):
            await store.upsert_many(b"e", [_rec("a"), _rec("", seq=2)])
        assert [row async for row in store.scan()] == []
        await store.upsert(b"e", _rec("a"))
        assert await _keys(store, b"e", "") == ["a"]

    @_contract
    async def test_a_read_of_the_empty_record_key_is_refused_before_any_io(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """load(entity, "") raises InvalidRecordError as a write under "" does, even once the
        store is closed: the key is refused before any I/O could fail or answer."""
        with pytest.raises(InvalidRecordError, match="must not be empty"):
            await store.load(b"e", "")
        await store.close()
        with pytest.raises(InvalidRecordError, match="must not be empty"):
            await store.load(b"e", "")

    @_contract
    async def test_scan_yields_every_row_of_every_entity_exactly_once(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """scan yields each stored (entity, record) once, across entities and past any page size."""
        entities = [b"", b"\x00", b"a", b"a/", b"\xff" * 64] + [
            f"bulk-{i}".encode() for i in range(8)
        ]
        written = {
            entity: [_rec(f"r{j:03d}", seq=j) for j in range(90 if b"bulk" in entity else 3)]
            for entity in entities
        }
        await asyncio.gather(*(store.upsert_many(e, rs) for e, rs in written.items()))
        scanned = [row async for row in store.scan()]
        expected = [(e, r) for e, rs in written.items() for r in rs]
        key = lambda row: (row[0], row[1].key.encode())  # noqa: E731
        assert sorted(scanned, key=key) == sorted(expected, key=key)

    @_contract
    async def test_stored_bytes_are_the_shared_envelope(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """Every read returns records whose encode_record bytes equal those written."""
        records = [_rec("a", seq=3, value=b"\x00\x01"), _rec("b/\U0001f600", seq=2**40, at=9)]
        await store.upsert_many(b"e", records)
        for record in records:
            await _check_stored(store, target, b"e", record)
        scanned = {r.key: encode_record(r) async for _, r in store.scan()}
        assert scanned == {r.key: encode_record(r) for r in records}

    @_contract
    async def test_rows_outlive_the_store_instance(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """Rows written by one instance are read by a new instance after the first is closed."""
        record = _rec("durable", seq=9)
        await store.upsert(b"e", record)
        await store.close()
        async with await target.open_store() as reopened:
            assert await reopened.load(b"e", "durable") == record

    @_contract
    async def test_close_is_idempotent(self, store: MemoryStore, target: ConformanceTarget) -> None:
        """close may be called more than once."""
        await store.load(b"e", "k")
        await store.close()
        await store.close()
