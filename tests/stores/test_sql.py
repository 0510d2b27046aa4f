"""SQL-specific guarantees: one guarded statement, one transaction per flush, typed errors.

The shared contract lives in test_conformance.py; these tests cover what only
the SQL backend can get wrong: its statement, its transaction boundary, its
collation, and how driver failures surface (never with the password).
"""

from __future__ import annotations

import asyncio
import traceback
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy
from sqlalchemy import event
from sqlalchemy.ext.asyncio import create_async_engine

from beam_agents.memory.stores import (
    InvalidStoreURIError,
    MemoryRecord,
    StoreError,
    StoreNotProvisionedError,
    StoreUnavailableError,
    open_store,
)
from beam_agents.memory.stores.sql import DDL, SqlMemoryStore, ddl_for
from beam_agents.testing.services import free_port
from beam_agents.testing.services.postgres import PostgresServer

PASSWORD = "s3cret-Pa55word"


def _rec(key: str, seq: int = 1, value: bytes = b"v") -> MemoryRecord:
    return MemoryRecord(key=key, value=value, seq=seq, updated_at_ms=1000)


def _run(body: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(body(), 30))


def _sql_store(url: str) -> SqlMemoryStore:
    store = open_store(url)
    assert isinstance(store, SqlMemoryStore)
    return store


async def _execute(store: SqlMemoryStore, *statements: str) -> None:
    async with store.engine.begin() as conn:
        for statement in statements:
            await conn.execute(sqlalchemy.text(statement))


def _all_text(exc: BaseException) -> str:
    return str(exc) + repr(exc) + "".join(traceback.format_exception(exc))


@pytest.fixture(params=["sqlite", "postgres"])
def sql_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An unprovisioned SQL database; the PostgreSQL URL carries a password (trust auth)."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    name = f"t_{uuid.uuid4().hex}"
    server.create_database(name)
    return server.url(name, password=PASSWORD)


@pytest.fixture
def provisioned_url(sql_url: str) -> str:
    async def provision() -> None:
        store = _sql_store(sql_url)
        await store.provision()
        await store.close()

    _run(provision)
    return sql_url


def test_shipped_ddl_is_the_documented_table_with_bytewise_keys() -> None:
    assert ddl_for("postgresql") == DDL
    for column in ("entity_key BYTEA", 'key TEXT COLLATE "C"', "seq BIGINT", "rec BYTEA"):
        assert column in DDL
    assert "updated_at_ms BIGINT" in DDL
    assert "PRIMARY KEY (entity_key, key)" in DDL
    assert "CREATE TABLE IF NOT EXISTS beam_agents_longterm" in ddl_for("sqlite")


def test_provision_is_idempotent_and_keeps_rows(sql_url: str) -> None:
    async def body() -> None:
        store = _sql_store(sql_url)
        await store.provision()
        await store.upsert(b"e", _rec("k"))
        await store.provision()
        assert await store.load(b"e", "k") == _rec("k")
        await store.close()

    _run(body)


@pytest.mark.parametrize(
    ("batch", "expected", "statement_count"),
    [
        (("a", "b", "c"), [False, True, True], 1),  # distinct keys: one multi-row statement
        (("a", "b", "b"), [False, True, True], 3),  # a repeated key: in order, one by one
    ],
    ids=["distinct-keys", "repeated-key"],
)
def test_guard_is_single_upsert_statements_in_one_transaction(
    provisioned_url: str, batch: tuple[str, ...], expected: list[bool], statement_count: int
) -> None:
    """No read-then-write: records go through INSERT ... ON CONFLICT ... WHERE seq <= only."""
    statements: list[str] = []
    transactions: list[str] = []

    async def body() -> None:
        store = _sql_store(provisioned_url)
        sync_engine = store.engine.sync_engine
        event.listen(sync_engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
        event.listen(sync_engine, "begin", lambda conn: transactions.append("begin"))
        event.listen(sync_engine, "commit", lambda conn: transactions.append("commit"))
        await store.upsert(b"e", _rec("a", seq=5))
        statements.clear()
        transactions.clear()
        records = [_rec(key, seq=4 if key == "a" else 6 + i) for i, key in enumerate(batch)]
        assert await store.upsert_many(b"e", records) == expected
        await store.close()

    _run(body)
    assert transactions == ["begin", "commit"]
    # The vectors table is kept in step inside the same transaction, by writes only.
    vectors = [s for s in statements if "beam_agents_longterm_vectors" in s]
    assert all(s.startswith(("INSERT INTO", "DELETE FROM")) for s in vectors)
    statements = [s for s in statements if s not in vectors]
    assert len(statements) == statement_count
    for statement in statements:
        assert statement.startswith("INSERT INTO beam_agents_longterm")
        assert "ON CONFLICT (entity_key, key) DO UPDATE" in statement
        assert "WHERE beam_agents_longterm.seq <= excluded.seq" in statement
        assert "RETURNING" in statement
        assert "FOR UPDATE" not in statement


def test_postgres_key_order_is_bytewise_even_in_a_natural_language_database(
    postgres_server: PostgresServer,
) -> None:
    """COLLATE "C" on the key column beats an ICU database collation that sorts 'a' < 'B'."""
    name = f"t_{uuid.uuid4().hex}"

    async def create() -> None:
        engine = create_async_engine(postgres_server.url(), isolation_level="AUTOCOMMIT")
        try:
            async with engine.connect() as conn:
                await conn.execute(
                    sqlalchemy.text(
                        f'CREATE DATABASE "{name}" TEMPLATE template0 '
                        "LOCALE_PROVIDER icu ICU_LOCALE 'en'"
                    )
                )
        finally:
            await engine.dispose()

    try:
        _run(create)
    except sqlalchemy.exc.DBAPIError as exc:
        pytest.skip(f"this PostgreSQL has no ICU collations: {exc.orig}")
    keys = ["b", "B", "a", "A", "é", "e", "_x", "-x"]

    async def body() -> list[str]:
        store = _sql_store(postgres_server.url(name))
        await store.provision()
        await store.upsert_many(b"e", [_rec(k) for k in keys])
        found = [r.key for r in await store.search(b"e", "", 100)]
        await store.close()
        return found

    assert _run(body) == sorted(keys, key=str.encode)


@pytest.fixture
def poisoned_url(provisioned_url: str) -> str:
    """A provisioned table that refuses key 'poison' inside the database itself."""
    if provisioned_url.startswith("sqlite"):
        statement = (
            "CREATE TRIGGER no_poison BEFORE INSERT ON beam_agents_longterm "
            "WHEN NEW.key = 'poison' BEGIN SELECT RAISE(ABORT, 'poison'); END"
        )
    else:
        statement = (
            "ALTER TABLE beam_agents_longterm ADD CONSTRAINT no_poison CHECK (key <> 'poison')"
        )

    async def poison() -> None:
        store = _sql_store(provisioned_url)
        await _execute(store, statement)
        await store.close()

    _run(poison)
    return provisioned_url


def test_flush_failing_mid_transaction_leaves_none_of_its_rows(poisoned_url: str) -> None:
    """A batch whose last record the database rejects applies none of the earlier ones."""

    async def body() -> None:
        store = _sql_store(poisoned_url)
        await store.upsert(b"e", _rec("a", seq=1, value=b"before"))
        batch = [_rec("a", seq=2, value=b"after"), _rec("b", seq=2), _rec("poison", seq=2)]
        with pytest.raises(StoreError) as caught:
            await store.upsert_many(b"e", batch)
        assert not isinstance(caught.value, StoreUnavailableError)
        assert PASSWORD not in _all_text(caught.value)
        assert await store.search(b"e", "", 10) == [_rec("a", seq=1, value=b"before")]
        assert await store.upsert(b"e", _rec("b", seq=3)) is True
        await store.close()

    _run(body)


def test_timed_out_flush_leaves_none_of_its_rows(postgres_server: PostgresServer) -> None:
    """A flush cancelled by its timeout while blocked on a row lock commits nothing."""
    url = postgres_server.create_database()

    async def body() -> None:
        store, blocker = _sql_store(url), _sql_store(url)
        await store.provision()
        await store.upsert(b"e", _rec("last", seq=1, value=b"before"))
        async with blocker.engine.connect() as held:
            await held.execute(
                sqlalchemy.text("UPDATE beam_agents_longterm SET seq = seq WHERE key = 'last'")
            )
            batch = [_rec("a", seq=2), _rec("b", seq=2), _rec("last", seq=2, value=b"after")]
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(store.upsert_many(b"e", batch), 0.5)
            await held.rollback()
        assert await store.search(b"e", "", 10) == [_rec("last", seq=1, value=b"before")]
        assert await store.upsert_many(b"e", batch) == [True, True, True]
        await store.close()
        await blocker.close()

    _run(body)


@pytest.mark.parametrize(
    "operation",
    ["load", "search", "upsert", "scan"],
)
def test_missing_table_raises_not_provisioned_naming_the_command(
    sql_url: str, operation: str
) -> None:
    async def body() -> StoreNotProvisionedError:
        store = _sql_store(sql_url)
        calls = {
            "load": lambda: store.load(b"e", "k"),
            "search": lambda: store.search(b"e", "", 5),
            "upsert": lambda: store.upsert(b"e", _rec("k")),
            "scan": lambda: anext(aiter(store.scan())),
        }
        try:
            with pytest.raises(StoreNotProvisionedError) as caught:
                await calls[operation]()
        finally:
            await store.close()
        return caught.value

    error = _run(body)
    assert "beam-agents provision" in str(error)
    assert "beam_agents_longterm" in str(error)
    assert PASSWORD not in _all_text(error)


def test_unreachable_server_raises_unavailable_without_the_password() -> None:
    url = f"postgresql+asyncpg://app:{PASSWORD}@127.0.0.1:{free_port()}/db"

    async def body() -> StoreUnavailableError:
        async with _sql_store(url) as store:
            with pytest.raises(StoreUnavailableError) as caught:
                await store.load(b"e", "k")
        return caught.value

    error = _run(body)
    assert PASSWORD not in _all_text(error)
    assert "app:***@127.0.0.1" in str(error)


def test_unknown_role_is_a_store_error_that_retrying_will_not_fix(
    postgres_server: PostgresServer,
) -> None:
    url = f"postgresql+asyncpg://nobody:{PASSWORD}@127.0.0.1:{postgres_server.port}/postgres"

    async def body() -> StoreError:
        async with _sql_store(url) as store:
            with pytest.raises(StoreError) as caught:
                await store.load(b"e", "k")
        return caught.value

    error = _run(body)
    assert not isinstance(error, StoreUnavailableError)
    assert "nobody" in str(error)
    assert PASSWORD not in _all_text(error)


def test_unverified_dialect_is_refused_at_config_time() -> None:
    with pytest.raises(InvalidStoreURIError) as caught:
        open_store(f"mysql+aiomysql://app:{PASSWORD}@127.0.0.1:1/db")
    assert "postgresql" in str(caught.value)
    assert PASSWORD not in _all_text(caught.value)


def test_repr_hides_the_password(postgres_server: PostgresServer) -> None:
    store = _sql_store(postgres_server.url(password=PASSWORD))
    assert PASSWORD not in repr(store)
    assert PASSWORD not in repr(store.engine)
    _run(store.close)


def test_closed_store_refuses_further_calls(provisioned_url: str) -> None:
    async def body() -> None:
        store = _sql_store(provisioned_url)
        await store.close()
        with pytest.raises(StoreError, match="closed"):
            await store.load(b"e", "k")

    _run(body)
