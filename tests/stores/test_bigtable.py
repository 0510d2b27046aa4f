"""Bigtable backend traps: an unambiguous, order-preserving row key; a guard and reads
that see only the latest cell while old versions linger; provisioning."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable
from typing import TypeVar

import pytest
from google.cloud.bigtable.data import BigtableDataClientAsync, SetCell
from google.cloud.bigtable_admin_v2 import types as admin
from hypothesis import given
from hypothesis import strategies as st

from beam_agents.memory.stores import (
    MemoryRecord,
    StoreNotProvisionedError,
    open_store,
)
from beam_agents.memory.stores.bigtable import (
    BigtableMemoryStore,
    _admin_client,
    entity_row_prefix,
    row_key,
    split_row_key,
)
from beam_agents.memory.stores.envelope import encode_record

T = TypeVar("T")
ENTITY = b"entity-1"
pytestmark = pytest.mark.filterwarnings("ignore:Connecting to Bigtable emulator:RuntimeWarning")
PROJECT, INSTANCE = "test-project", "test-instance"

entities = st.binary(max_size=12) | st.sampled_from([b"", b"\x00", b"\x00\x01", b"\x00\xff", b"a"])
record_keys = st.text(max_size=8) | st.sampled_from(
    ["", "\x00", "\x00\x01", "\x01", "/", "\U0010ffff"]
)


def run(awaitable: Awaitable[T]) -> T:
    async def main() -> T:
        return await awaitable

    return asyncio.run(main())


def rec(key: str, seq: int, value: bytes = b"v") -> MemoryRecord:
    return MemoryRecord(key=key, value=value + str(seq).encode(), seq=seq, updated_at_ms=seq)


@given(entities, record_keys)
def test_row_key_round_trips(entity: bytes, key: str) -> None:
    assert split_row_key(row_key(entity, key)) == (entity, key)


@given(entities, record_keys, entities, record_keys)
def test_distinct_entity_key_pairs_never_share_a_row_key(
    entity_a: bytes, key_a: str, entity_b: bytes, key_b: str
) -> None:
    if (entity_a, key_a) != (entity_b, key_b):
        assert row_key(entity_a, key_a) != row_key(entity_b, key_b)


@given(entities, record_keys, entities)
def test_no_row_of_one_entity_falls_in_another_entitys_range(
    entity_a: bytes, key: str, entity_b: bytes
) -> None:
    """Also when one entity key is a byte prefix of the other: the prefix scan stays inside."""
    if entity_a != entity_b:
        assert not row_key(entity_a, key).startswith(entity_row_prefix(entity_b))


@given(entities, st.lists(record_keys, max_size=6), record_keys)
def test_row_key_order_is_bytewise_utf8_key_order_within_an_entity(
    entity: bytes, some_keys: list[str], other: str
) -> None:
    ordered = sorted([*some_keys, other], key=lambda k: row_key(entity, k))
    assert ordered == sorted([*some_keys, other], key=str.encode)


async def _raw_writes(table_id: str, cells: list[tuple[bytes, bytes, bytes, int]]) -> None:
    """Unguarded writes straight through the data client: (row, column, value, timestamp_us)."""
    client = BigtableDataClientAsync(project=PROJECT)
    try:
        table = client.get_table(INSTANCE, table_id)
        for row, column, value, timestamp in cells:
            await table.mutate_row(row, SetCell("m", column, value, timestamp))
    finally:
        await client.close()


async def _create_table(table_id: str, families: dict[str, admin.ColumnFamily]) -> None:
    client = _admin_client()
    try:
        await client.create_table(
            parent=f"projects/{PROJECT}/instances/{INSTANCE}",
            table_id=table_id,
            table=admin.Table(column_families=families),
        )
    finally:
        await client.transport.close()


def test_guard_and_reads_see_only_the_latest_cell_while_old_versions_linger(
    bigtable_emulator_host: str,
) -> None:
    """A family without a GC rule keeps every version; only the newest may count.

    The newest `seq` cell holds 5 while an older one holds 100: a guard that
    looked at every version would see 100 and wrongly reject seq 6, and a read
    without a cell limit could return the stale seq-100 envelope.
    """
    table_id = f"t{uuid.uuid4().hex}"
    run(_create_table(table_id, {"m": admin.ColumnFamily()}))  # no GC rule at all
    row = row_key(ENTITY, "k")
    run(
        _raw_writes(
            table_id,
            [
                (row, b"seq", (100).to_bytes(8, "big"), 1_000_000),
                (row, b"rec", encode_record(rec("k", 100, b"stale")), 1_000_000),
                (row, b"seq", (5).to_bytes(8, "big"), 2_000_000),
                (row, b"rec", encode_record(rec("k", 5)), 2_000_000),
            ],
        )
    )
    store = BigtableMemoryStore(project=PROJECT, instance=INSTANCE, table=table_id)

    async def scenario() -> tuple[object, ...]:
        try:
            before = await store.load(ENTITY, "k")
            searched = await store.search(ENTITY, "k", 10)
            rejected = await store.upsert(ENTITY, rec("k", 4))
            applied = await store.upsert(ENTITY, rec("k", 6))
            after = await store.load(ENTITY, "k")
            scanned = [r async for _, r in store.scan()]
            return before, searched, rejected, applied, after, scanned
        finally:
            await store.close()

    before, searched, rejected, applied, after, scanned = run(scenario())

    assert before == rec("k", 5)
    assert searched == [rec("k", 5)]
    assert rejected is False
    assert applied is True
    assert after == rec("k", 6)
    assert scanned == [rec("k", 6)]


def test_guard_rejects_below_the_latest_cell_even_when_older_cells_are_smaller(
    bigtable_emulator_host: str,
) -> None:
    table_id = f"t{uuid.uuid4().hex}"
    run(_create_table(table_id, {"m": admin.ColumnFamily()}))
    row = row_key(ENTITY, "k")
    run(
        _raw_writes(
            table_id,
            [
                (row, b"seq", (1).to_bytes(8, "big"), 1_000_000),
                (row, b"seq", (50).to_bytes(8, "big"), 2_000_000),
                (row, b"rec", encode_record(rec("k", 50)), 2_000_000),
            ],
        )
    )
    store = BigtableMemoryStore(project=PROJECT, instance=INSTANCE, table=table_id)

    async def scenario() -> list[bool]:
        try:
            return [await store.upsert(ENTITY, rec("k", s)) for s in (10, 49, 50, 2**63 - 1)]
        finally:
            await store.close()

    assert run(scenario()) == [False, False, True, True]


def test_a_write_leaves_one_version_even_without_a_gc_rule(bigtable_emulator_host: str) -> None:
    """The guard's write deletes older cells, so versions never pile up from our own writes."""
    table_id = f"t{uuid.uuid4().hex}"
    run(_create_table(table_id, {"m": admin.ColumnFamily()}))
    store = BigtableMemoryStore(project=PROJECT, instance=INSTANCE, table=table_id)

    async def scenario() -> int:
        client = BigtableDataClientAsync(project=PROJECT)
        try:
            for seq in (1, 2, 3):
                await store.upsert(ENTITY, MemoryRecord("k", b"v", seq, 10_000 - seq))
            row = await client.get_table(INSTANCE, table_id).read_row(row_key(ENTITY, "k"))
            assert row is not None
            return len(row.cells)
        finally:
            await client.close()
            await store.close()

    assert run(scenario()) == 2  # one seq cell, one rec cell


@pytest.mark.parametrize("prefix", [".*", "a.", "\\C", "[a-z]", "a*", "%"])
def test_prefix_search_is_a_literal_byte_range(bigtable_store_uri: str, prefix: str) -> None:
    """Row filters take RE2 regexes; the prefix goes into a row range instead, never a regex."""
    stored = [".*", ".x", "a.", "ab", "\\C", "\\", "[a-z]", "b", "a*", "a", "%", "%a"]
    store = open_store(bigtable_store_uri)

    async def scenario() -> list[str]:
        try:
            await store.upsert_many(ENTITY, [rec(k, 1) for k in stored])
            return [r.key for r in await store.search(ENTITY, prefix, 100)]
        finally:
            await store.close()

    assert run(scenario()) == sorted((k for k in stored if k.startswith(prefix)), key=str.encode)


def test_missing_table_is_reported_as_not_provisioned(bigtable_emulator_host: str) -> None:
    store = open_store(f"bigtable://{PROJECT}/{INSTANCE}/absent{uuid.uuid4().hex[:8]}")

    async def scenario() -> None:
        try:
            await store.upsert(ENTITY, rec("k", 1))
        finally:
            await store.close()

    with pytest.raises(StoreNotProvisionedError, match="beam-agents provision"):
        run(scenario())


def test_provision_is_idempotent_and_adds_family_m_to_an_existing_table(
    bigtable_emulator_host: str,
) -> None:
    table_id = f"t{uuid.uuid4().hex}"
    run(_create_table(table_id, {"other": admin.ColumnFamily()}))
    store = open_store(f"bigtable://{PROJECT}/{INSTANCE}/{table_id}")

    async def scenario() -> tuple[dict[str, str], MemoryRecord | None]:
        try:
            await store.provision()
            await store.provision()
            await store.upsert(ENTITY, rec("k", 1))
            client = _admin_client()
            try:
                table = await client.get_table(
                    name=f"projects/{PROJECT}/instances/{INSTANCE}/tables/{table_id}"
                )
            finally:
                await client.transport.close()
            families = {name: str(f.gc_rule).strip() for name, f in table.column_families.items()}
            return families, await store.load(ENTITY, "k")
        finally:
            await store.close()

    families, loaded = run(scenario())

    assert families == {"other": "", "m": "max_num_versions: 1"}
    assert loaded == rec("k", 1)


def test_provision_creates_the_table_with_one_version_gc(bigtable_emulator_host: str) -> None:
    table_id = f"t{uuid.uuid4().hex}"
    store = open_store(f"bigtable://{PROJECT}/{INSTANCE}/{table_id}")

    async def scenario() -> dict[str, str]:
        try:
            await store.provision()
            await store.provision()
            client = _admin_client()
            try:
                name = f"projects/{PROJECT}/instances/{INSTANCE}/tables/{table_id}"
                table = await client.get_table(name=name)
            finally:
                await client.transport.close()
            return {n: str(f.gc_rule).strip() for n, f in table.column_families.items()}
        finally:
            await store.close()

    assert run(scenario()) == {"m": "max_num_versions: 1"}
