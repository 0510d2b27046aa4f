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
from collections.abc import Awaitable, Callable
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
from beam_agents.testing._recall_contract import RecallContract
from beam_agents.testing._store_contract import (
    BAD_LIMITS,
    ENTITY_PAIRS,
    INVALID_CALLS,
    ORDERING_KEYS,
    SEPARATOR_ROWS,
    WILDCARDS,
    ConformanceTarget,
    check_stored,
    contract,
    keys_of,
    race_concurrent_upserts,
    rec,
)

__all__ = [
    "BoundaryContract",
    "ConformanceTarget",
    "ReadContract",
    "RecallContract",
    "StoreConformance",
    "WriteContract",
    "race_concurrent_upserts",
]


class ReadContract:
    """Reads: load, prefix search and the isolation of entities and keys."""

    @contract
    async def test_load_of_unwritten_key_returns_none(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """load returns None for a key that was never written."""
        assert await store.load(b"entity", "missing") is None

    @pytest.mark.parametrize(
        "record",
        [
            rec("profile", seq=3, value=b"\x00\xffbinary", at=1_700_000_000_000),
            rec("empty", seq=0, value=b"", at=0),
            rec("extremes", seq=2**63 - 1, at=2**63 - 1),
            rec("\x01", seq=1),
        ],
        ids=["ordinary", "empty-value-seq-0", "int64-extremes", "lowest-key"],
    )
    @contract
    async def test_upsert_then_load_returns_the_record(
        self, store: MemoryStore, target: ConformanceTarget, record: MemoryRecord
    ) -> None:
        """A first upsert applies (True) and load returns exactly the record written."""
        assert await store.upsert(b"entity", record) is True
        await check_stored(store, target, b"entity", record)

    @contract
    async def test_search_orders_keys_bytewise(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """search orders by UTF-8 bytes: case-sensitive, BMP before astral, no locale collation."""
        await store.upsert_many(b"e", [rec(k) for k in ORDERING_KEYS])
        expected = sorted(ORDERING_KEYS, key=lambda k: k.encode("utf-8"))
        assert await keys_of(store, b"e") == expected

    @contract
    async def test_search_matches_exactly_the_keys_with_the_prefix(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """search returns every key starting with the prefix, and no other."""
        keys = ["cas", "case", "case/1", "case/2", "case/\U0001f600", "case0", "casf", "Case/1"]
        await store.upsert_many(b"e", [rec(k) for k in keys])
        assert await keys_of(store, b"e", "case/") == ["case/1", "case/2", "case/\U0001f600"]
        assert await keys_of(store, b"e", "case") == [
            "case",
            "case/1",
            "case/2",
            "case/\U0001f600",
            "case0",
        ]
        assert await keys_of(store, b"e", "nothing") == []

    @contract
    async def test_search_is_case_sensitive(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """A prefix never matches keys that differ from it only in case."""
        await store.upsert_many(b"e", [rec(k) for k in ["Abc", "abc", "ABC", "aBc"]])
        assert await keys_of(store, b"e", "a") == ["aBc", "abc"]
        assert await keys_of(store, b"e", "AB") == ["ABC"]

    @pytest.mark.parametrize("char", WILDCARDS)
    @contract
    async def test_search_treats_pattern_characters_literally(
        self, store: MemoryStore, target: ConformanceTarget, char: str
    ) -> None:
        """Wildcard and escape characters in a prefix are data, never a pattern."""
        keys = [f"a{char}", f"a{char}b", "axb", "ab", "aXb", f"A{char}b", "a", f"{char}"]
        await store.upsert_many(b"e", [rec(k) for k in keys])
        assert await keys_of(store, b"e", f"a{char}") == sorted([f"a{char}", f"a{char}b"])
        assert await keys_of(store, b"e", char) == [char]

    @contract
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
        await store.upsert_many(b"e", [rec(k) for k in keys])
        assert await keys_of(store, b"e", "x\U0010ffff") == ["x\U0010ffff", "x\U0010ffffz"]
        assert await keys_of(store, b"e", "\ud7ff") == ["\ud7ff", "\ud7ffa"]
        assert await keys_of(store, b"e", "\uffff") == ["\uffff", "\uffff\U0001f600"]
        assert await keys_of(store, b"e", "\U0010ffff") == ["\U0010ffff", "\U0010ffff\U0010ffff"]

    @pytest.mark.parametrize("limit", [1, 3, 12, MAX_SEARCH_LIMIT])
    @contract
    async def test_search_returns_at_most_limit_records(
        self, store: MemoryStore, target: ConformanceTarget, limit: int
    ) -> None:
        """search returns the first `limit` matching records in key order, never more."""
        keys = [f"k{i:02d}" for i in range(12)]
        await store.upsert_many(b"e", [rec(k) for k in reversed(keys)])
        found = await store.search(b"e", "k", limit)
        assert [r.key for r in found] == keys[:limit]
        assert found[0] == rec("k00")

    @pytest.mark.parametrize("limit", BAD_LIMITS, ids=repr)
    @contract
    async def test_search_limit_outside_bounds_is_rejected(
        self, store: MemoryStore, target: ConformanceTarget, limit: Any
    ) -> None:
        """A limit that is not an int in [1, MAX_SEARCH_LIMIT] raises InvalidRecordError."""
        with pytest.raises(InvalidRecordError):
            await store.search(b"e", "", limit)

    @contract
    async def test_search_of_an_unknown_entity_is_empty(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """An entity with no rows has nothing to find, whatever the prefix."""
        await store.upsert(b"other", rec("k"))
        assert await store.search(b"nobody", "", MAX_SEARCH_LIMIT) == []

    @pytest.mark.parametrize("pair", ENTITY_PAIRS, ids=lambda p: f"{p[0][:8]!r}-vs-{p[1][:8]!r}")
    @contract
    async def test_entities_never_see_each_others_rows(
        self, store: MemoryStore, target: ConformanceTarget, pair: tuple[bytes, bytes]
    ) -> None:
        """Entity keys that prefix, extend or mimic each other touch only their own rows."""
        keys = ["\x01", "k", "k/1", "k:2"]
        writes = [
            store.upsert_many(e, [rec(k, value=e + b"|" + k.encode()) for k in keys]) for e in pair
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

    @contract
    async def test_separators_in_entity_and_record_keys_never_collide(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """(entity, key) pairs that would join to the same string stay distinct rows."""
        by_entity: dict[bytes, list[MemoryRecord]] = {}
        for entity, key in SEPARATOR_ROWS:
            by_entity.setdefault(entity, []).append(rec(key, value=entity + b"|" + key.encode()))
        await asyncio.gather(*(store.upsert_many(e, rs) for e, rs in by_entity.items()))
        for entity, records in by_entity.items():
            assert await store.search(entity, "", MAX_SEARCH_LIMIT) == sorted(
                records, key=lambda r: r.key.encode()
            )
        loads = await asyncio.gather(*(store.load(e, k) for e, k in SEPARATOR_ROWS))
        for (entity, key), loaded in zip(SEPARATOR_ROWS, loads, strict=True):
            assert loaded is not None
            assert loaded.value == entity + b"|" + key.encode()

    @contract
    async def test_maximum_length_keys_round_trip(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """Entity keys of MAX_ENTITY_KEY_BYTES (every byte value) and keys of MAX_KEY_BYTES work."""
        entity = bytes(range(256)) * (MAX_ENTITY_KEY_BYTES // 256)
        assert len(entity) == MAX_ENTITY_KEY_BYTES
        two_byte, four_byte = "é" * (MAX_KEY_BYTES // 2), "\U0001f600" * (MAX_KEY_BYTES // 4)
        records = [rec(two_byte), rec(four_byte), rec("k" * MAX_KEY_BYTES)]
        assert await store.upsert_many(entity, records) == [True, True, True]
        for record in records:
            await check_stored(store, target, entity, record)
        assert await keys_of(store, entity, two_byte) == [two_byte]
        assert await keys_of(store, entity[:-1], "") == []


class WriteContract:
    """Writes: the seq guard, batches and racing writers."""

    @contract
    async def test_lower_seq_is_rejected_and_leaves_the_row_unchanged(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """An upsert with a lower seq returns False and changes nothing, not even updated_at_ms."""
        stored = rec("k", seq=5, value=b"new", at=5000)
        await store.upsert(b"e", stored)
        assert await store.upsert(b"e", rec("k", seq=4, value=b"stale", at=9000)) is False
        await check_stored(store, target, b"e", stored)

    @contract
    async def test_equal_seq_reapplies_byte_identically(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """A replayed upsert (same seq, same bytes) applies again and leaves identical bytes."""
        record = rec("k", seq=7, value=b"replayed", at=7000)
        assert await store.upsert(b"e", record) is True
        assert await store.upsert(b"e", record) is True
        await check_stored(store, target, b"e", record)

    @contract
    async def test_equal_seq_with_different_bytes_applies(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """The guard is >=: an equal seq overwrites, so a replayed activation rewrites its row."""
        await store.upsert(b"e", rec("k", seq=7, value=b"first"))
        second = rec("k", seq=7, value=b"second", at=7001)
        assert await store.upsert(b"e", second) is True
        await check_stored(store, target, b"e", second)

    @contract
    async def test_higher_seq_applies(self, store: MemoryStore, target: ConformanceTarget) -> None:
        """An upsert with a higher seq replaces the row."""
        await store.upsert(b"e", rec("k", seq=1, value=b"old"))
        newer = rec("k", seq=2, value=b"new", at=2000)
        assert await store.upsert(b"e", newer) is True
        await check_stored(store, target, b"e", newer)

    @contract
    async def test_upsert_many_reports_each_record_in_order(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """upsert_many returns one bool per record: the guard decides each record on its own."""
        await store.upsert_many(b"e", [rec("a", seq=5), rec("b", seq=5), rec("c", seq=5)])
        batch = [
            rec("a", seq=4, value=b"stale"),
            rec("b", seq=5, value=b"same-seq"),
            rec("c", seq=6, value=b"newer"),
            rec("d", seq=1, value=b"fresh"),
        ]
        assert await store.upsert_many(b"e", batch) == [False, True, True, True]
        found = await store.search(b"e", "", 10)
        assert found == [rec("a", seq=5), *batch[1:]]

    @contract
    async def test_upsert_many_applies_a_repeated_key_in_order(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """A batch that stages one key several times applies them as if one at a time."""
        batch = [
            rec("k", seq=5, value=b"a"),
            rec("k", seq=3, value=b"b"),
            rec("k", seq=6, value=b"c"),
            rec("k", seq=6, value=b"d"),
        ]
        assert await store.upsert_many(b"e", batch) == [True, False, True, True]
        await check_stored(store, target, b"e", batch[-1])

    @contract
    async def test_upsert_many_of_nothing_is_a_no_op(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """An empty batch returns [] and writes nothing."""
        assert await store.upsert_many(b"e", []) == []
        assert await store.search(b"e", "", 10) == []

    @contract
    async def test_invalid_record_in_a_batch_applies_none_of_it(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """A batch with one invalid record raises InvalidRecordError before writing any record."""
        batch = [rec("a"), rec("b"), rec("c", value=b"v" * (MAX_VALUE_BYTES + 1))]
        with pytest.raises(InvalidRecordError):
            await store.upsert_many(b"e", batch)
        assert await store.search(b"e", "", 10) == []

    @contract
    async def test_racing_first_inserts_converge_on_the_highest_seq(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """Two store instances inserting the same new keys at once leave the higher seq."""
        async with await target.open_store() as other:
            keys = [f"k{i}" for i in range(8)]
            low = [rec(k, seq=10, value=b"low") for k in keys]
            high = [rec(k, seq=11, value=b"high") for k in keys]
            calls = []
            for i in range(len(keys)):
                first, second = (store, other) if i % 2 else (other, store)
                calls.append(first.upsert(b"e", low[i]))
                calls.append(second.upsert(b"e", high[i]))
            results = await asyncio.gather(*calls)
            assert all(results[1::2]), "the higher seq must always apply"
            assert await store.search(b"e", "k", 100) == high

    @contract
    async def test_racing_updates_converge_on_the_highest_seq(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """Concurrent guarded updates of an existing row from two instances never regress it."""
        async with await target.open_store() as other:
            await store.upsert(b"e", rec("k", seq=1))
            for seq in range(2, 12, 2):
                older, newer = rec("k", seq=seq, value=b"older"), rec("k", seq=seq + 1)
                await asyncio.gather(other.upsert(b"e", newer), store.upsert(b"e", older))
                assert await other.load(b"e", "k") == newer

    @contract
    async def test_twenty_concurrent_upserts_of_one_record_converge_on_the_highest_seq(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """Twenty upserts of one record (seqs 1..20) racing from several instances leave seq 20."""
        await race_concurrent_upserts(target, b"e", "contended")
        await store.upsert(b"e", rec("existing", seq=0))
        await race_concurrent_upserts(target, b"e", "existing")

    @contract
    async def test_largest_value_round_trips(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """A value of MAX_VALUE_BYTES (a whole working-memory blob) is stored intact."""
        record = rec("blob", value=bytes(range(256)) * (MAX_VALUE_BYTES // 256))
        assert len(record.value) == MAX_VALUE_BYTES
        assert await store.upsert(b"e", record) is True
        await check_stored(store, target, b"e", record)
        assert await store.search(b"e", "bl", 1) == [record]


class BoundaryContract:
    """The edges: refused inputs, scans, the stored bytes, durability and close."""

    @pytest.mark.parametrize("call", list(INVALID_CALLS.values()), ids=list(INVALID_CALLS))
    @contract
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

    @contract
    async def test_empty_record_key_is_rejected_before_any_write(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """A record under the empty key raises InvalidRecordError, alone or in a batch, and
        writes nothing; the empty prefix still searches everything."""
        with pytest.raises(InvalidRecordError, match="must not be empty"):
            await store.upsert(b"e", rec(""))
        with pytest.raises(InvalidRecordError, match="must not be empty"):
            await store.upsert_many(b"e", [rec("a"), rec("", seq=2)])
        assert [row async for row in store.scan()] == []
        await store.upsert(b"e", rec("a"))
        assert await keys_of(store, b"e", "") == ["a"]

    @contract
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

    @contract
    async def test_scan_yields_every_row_of_every_entity_exactly_once(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """scan yields each stored (entity, record) once, across entities and past any page size."""
        entities = [b"", b"\x00", b"a", b"a/", b"\xff" * 64] + [
            f"bulk-{i}".encode() for i in range(8)
        ]
        written = {
            entity: [rec(f"r{j:03d}", seq=j) for j in range(90 if b"bulk" in entity else 3)]
            for entity in entities
        }
        await asyncio.gather(*(store.upsert_many(e, rs) for e, rs in written.items()))
        scanned = [row async for row in store.scan()]
        expected = [(e, r) for e, rs in written.items() for r in rs]
        key = lambda row: (row[0], row[1].key.encode())  # noqa: E731
        assert sorted(scanned, key=key) == sorted(expected, key=key)

    @contract
    async def test_stored_bytes_are_the_shared_envelope(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """Every read returns records whose encode_record bytes equal those written."""
        records = [rec("a", seq=3, value=b"\x00\x01"), rec("b/\U0001f600", seq=2**40, at=9)]
        await store.upsert_many(b"e", records)
        for record in records:
            await check_stored(store, target, b"e", record)
        scanned = {r.key: encode_record(r) async for _, r in store.scan()}
        assert scanned == {r.key: encode_record(r) for r in records}

    @contract
    async def test_rows_outlive_the_store_instance(
        self, store: MemoryStore, target: ConformanceTarget
    ) -> None:
        """Rows written by one instance are read by a new instance after the first is closed."""
        record = rec("durable", seq=9)
        await store.upsert(b"e", record)
        await store.close()
        async with await target.open_store() as reopened:
            assert await reopened.load(b"e", "durable") == record

    @contract
    async def test_close_is_idempotent(self, store: MemoryStore, target: ConformanceTarget) -> None:
        """close may be called more than once."""
        await store.load(b"e", "k")
        await store.close()
        await store.close()


class StoreConformance(ReadContract, WriteContract, BoundaryContract, RecallContract):
    """The shared contract suite; subclass it where a `store_target` fixture is defined.

    Each capability is a class of its own, so a backend that is still
    growing can run one of them alone.
    """
