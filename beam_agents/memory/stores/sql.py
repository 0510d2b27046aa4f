"""The SQL backend: one table, one guarded statement, over any SQLAlchemy async engine.

Verified on PostgreSQL (asyncpg) and SQLite (aiosqlite), the two dialects
whose `INSERT ... ON CONFLICT ... DO UPDATE ... WHERE ... RETURNING` this
module relies on; other dialects parse as URIs but are refused when the store
is built, before any row could be written by an unverified statement.

The seq guard is a single statement, never read-then-write: a
`SELECT ... FOR UPDATE` cannot lock a row that does not exist yet, so two
first inserts of one key would both pass such a check. The upsert's
`DO UPDATE ... WHERE stored.seq <= excluded.seq` is decided by the database
under the row's own lock, and `RETURNING` tells us whether it applied: a
skipped update returns no row on both dialects.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Self

import sqlalchemy
import sqlalchemy.exc
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncTransaction,
    create_async_engine,
)

from beam_agents.errors import StateDecodeError
from beam_agents.memory.stores._inflight import finish_in_flight
from beam_agents.memory.stores._sql_vectors import (
    VECTORS_TABLE,
    load_sqlite_vec,
    nearest_rows,
    provision_vectors,
    sqlite_vec_loadable,
    vectors_present,
    write_vectors,
)
from beam_agents.memory.stores.base import (
    Embedding,
    MemoryRecord,
    MemoryStore,
    Neighbour,
    prefix_upper_bound,
)
from beam_agents.memory.stores.envelope import decode_record, encode_record
from beam_agents.memory.stores.errors import (
    InvalidRecordError,
    InvalidStoreURIError,
    StoreError,
    StoreNotProvisionedError,
    StoreUnavailableError,
)
from beam_agents.memory.stores.uri import SQL_DIALECTS, StoreURI, parse_store_uri, uri_secrets

if TYPE_CHECKING:
    from sqlalchemy.engine import Result

__all__ = ["DDL", "SUPPORTED_DIALECTS", "TABLE", "SqlMemoryStore", "ddl_for"]

TABLE: Final = "beam_agents_longterm"

DDL: Final = f"""\
CREATE TABLE IF NOT EXISTS {TABLE} (
  entity_key BYTEA NOT NULL,
  key TEXT COLLATE "C" NOT NULL,
  seq BIGINT NOT NULL,
  rec BYTEA NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY (entity_key, key)
)"""
"""The PostgreSQL table. `COLLATE "C"` makes key order bytewise, as on every
other backend, whatever the database's default collation; the primary key
serves both point loads and prefix range scans."""

_SQLITE_DDL: Final = f"""\
CREATE TABLE IF NOT EXISTS {TABLE} (
  entity_key BLOB NOT NULL,
  key TEXT NOT NULL,
  seq INTEGER NOT NULL,
  rec BLOB NOT NULL,
  updated_at_ms INTEGER NOT NULL,
  PRIMARY KEY (entity_key, key)
) WITHOUT ROWID"""
# SQLite's default BINARY collation compares UTF-8 text bytewise already.

SUPPORTED_DIALECTS: Final = SQL_DIALECTS

_UPSERT: Final = sqlalchemy.text(
    "INSERT INTO beam_agents_longterm (entity_key, key, seq, rec, updated_at_ms) "
    "VALUES (:entity_key, :key, :seq, :rec, :updated_at_ms) "
    "ON CONFLICT (entity_key, key) DO UPDATE SET "
    "seq = excluded.seq, rec = excluded.rec, updated_at_ms = excluded.updated_at_ms "
    "WHERE beam_agents_longterm.seq <= excluded.seq "
    "RETURNING seq"
)
"""The seq guard, one atomic statement; RETURNING yields a row iff it inserted or updated."""

_BATCH_ROWS: Final = 100
"""Rows per multi-row upsert statement: 500 bind parameters, under every SQLite's limit."""


def _upsert_statement(count: int) -> sqlalchemy.TextClause:
    """The same guarded upsert for `count` distinct keys in one statement.

    RETURNING names the keys it inserted or updated; a key the guard skipped
    is absent. Only for batches without repeated keys: PostgreSQL refuses an
    ON CONFLICT statement that would touch one row twice.
    """
    values = ", ".join(
        f"(:entity_key, :key{i}, :seq{i}, :rec{i}, :updated_at_ms{i})" for i in range(count)
    )
    return sqlalchemy.text(  # the text varies only in numbered bind parameters
        "INSERT INTO beam_agents_longterm (entity_key, key, seq, rec, updated_at_ms) "  # noqa: S608
        f"VALUES {values} "
        "ON CONFLICT (entity_key, key) DO UPDATE SET "
        "seq = excluded.seq, rec = excluded.rec, updated_at_ms = excluded.updated_at_ms "
        "WHERE beam_agents_longterm.seq <= excluded.seq "
        "RETURNING key"
    )


_LOAD: Final = sqlalchemy.text(
    "SELECT rec FROM beam_agents_longterm WHERE entity_key = :entity_key AND key = :key"
)
# A prefix search is a literal key range on the primary key, never LIKE:
# `%` and `_` are data, and SQLite's LIKE ignores case.
_SEARCH_RANGE: Final = sqlalchemy.text(
    "SELECT rec FROM beam_agents_longterm "
    "WHERE entity_key = :entity_key AND key >= :low AND key < :high "
    "ORDER BY key LIMIT :limit"
)
_SEARCH_FROM: Final = sqlalchemy.text(
    "SELECT rec FROM beam_agents_longterm "
    "WHERE entity_key = :entity_key AND key >= :low "
    "ORDER BY key LIMIT :limit"
)
_SCAN_PAGE: Final = 500
_COUNT: Final = sqlalchemy.text("SELECT count(*) FROM beam_agents_longterm")
_SCAN_FIRST: Final = sqlalchemy.text(
    "SELECT entity_key, key, rec FROM beam_agents_longterm ORDER BY entity_key, key LIMIT :page"
)
_SCAN_AFTER: Final = sqlalchemy.text(
    "SELECT entity_key, key, rec FROM beam_agents_longterm "
    "WHERE entity_key > :entity_key OR (entity_key = :entity_key AND key > :key) "
    "ORDER BY entity_key, key LIMIT :page"
)

# SQLSTATE classes worth a retry: connection exception, transaction
# rollback (serialization failure, deadlock), insufficient resources,
# operator intervention (shutdown, cannot connect now), system error.
_RETRYABLE_SQLSTATE_CLASSES: Final = frozenset({"08", "40", "53", "57", "58"})
_RETRYABLE_SQLSTATES: Final = frozenset({"55P03"})  # lock_not_available


def ddl_for(dialect_name: str) -> str:
    """The `CREATE TABLE IF NOT EXISTS` statement for a dialect this backend supports."""
    if dialect_name == "postgresql":
        return DDL
    if dialect_name == "sqlite":
        return _SQLITE_DDL
    raise InvalidStoreURIError(
        f"the SQL store supports {sorted(SUPPORTED_DIALECTS)}, not {dialect_name!r}"
    )


async def _commit(
    conn: AsyncConnection, transaction: AsyncTransaction, applied: list[bool]
) -> list[bool]:
    try:
        await transaction.commit()
    finally:
        await conn.close()
    return applied


def _write_ahead_log(dbapi_connection: Any, _record: object) -> None:
    """Put a SQLite database in WAL mode, where readers never wait on the writer.

    In its default rollback-journal mode a SQLite writer locks readers out,
    and a blocked connection retries on a sleeping back-off: the tool ledger
    and the store writing the same file from two event loops (an activation's
    and the call loop's) then spend most of their time asleep. WAL keeps
    commits durable (`synchronous` stays FULL); an in-memory database
    ignores the setting.
    """
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
    finally:
        cursor.close()


class SqlMemoryStore(MemoryStore):
    """A `MemoryStore` in one SQL table, `beam_agents_longterm` (see `DDL`)."""

    def __init__(self, url: str, *, engine_options: dict[str, Any] | None = None) -> None:
        parsed = parse_store_uri(url)
        if parsed.backend != "sql":
            raise InvalidStoreURIError(f"not a SQL URL: {parsed.redacted!r}")
        ddl_for(parsed.dialect)
        self._uri = parsed
        self._secrets = uri_secrets(url)
        self._cloudsql: Any = None
        # Creating the engine performs no I/O; the pool connects on first use.
        if parsed.driver == "cloudsql":
            from beam_agents.memory.stores.cloudsql import CloudSqlConnections

            self._cloudsql = CloudSqlConnections(parsed, engine_options)
            self._engine: AsyncEngine = self._cloudsql.engine
        else:
            self._engine = create_async_engine(url, **(engine_options or {}))
        self._sqlite_vec = False
        if parsed.dialect == "sqlite":
            sqlalchemy.event.listen(self._engine.sync_engine, "connect", _write_ahead_log)
            if sqlite_vec_loadable():
                sqlalchemy.event.listen(self._engine.sync_engine, "connect", load_sqlite_vec)
                self._sqlite_vec = True
        self._vectors: bool | None = None
        """Whether the vectors table exists: read once, on the first write or recall."""
        self._closed = False

    @classmethod
    def from_uri(cls, uri: StoreURI) -> Self:
        """The store for a parsed SQL URI (the `open_store` convention)."""
        return cls(uri.uri)

    @property
    def engine(self) -> AsyncEngine:
        """The SQLAlchemy engine, for tests and benchmarks that need the same server."""
        return self._engine

    def __repr__(self) -> str:
        return f"SqlMemoryStore({self._uri.redacted!r})"

    cross_entity_index = "pgvector HNSW (PostgreSQL), sqlite-vec or exact scan (SQLite)"

    async def provision(self) -> None:
        """Create the tables (and, where possible, the vector index); safe to run again.

        The vectors table comes with it on SQLite, and on PostgreSQL when the
        server has pgvector; without pgvector only the records table is made
        (recall across entities is then refused, everything else works).
        """
        with self._errors("provision"):
            async with self._engine.begin() as conn:
                await conn.execute(sqlalchemy.text(ddl_for(self._uri.dialect)))
                self._vectors = await provision_vectors(conn, self._uri.dialect)

    async def check_cross_entity_index(self) -> None:
        """Raise `StoreNotProvisionedError` unless recall across entities can run here.

        Not part of `check_provisioned`: a store provisioned before recall
        existed (or a PostgreSQL without pgvector) serves everything else.
        """
        if await self._vectors_present():
            return
        hint = f"run `beam-agents provision {self._uri.redacted}` once"
        if self._uri.dialect == "postgresql":
            with self._errors("check_cross_entity_index"):
                async with self._engine.connect() as conn:
                    available = await conn.execute(
                        sqlalchemy.text(
                            "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
                        )
                    )
                    if available.first() is None:
                        raise StoreNotProvisionedError(
                            f"{self._uri.redacted!r}: recall across entities needs the pgvector "
                            "extension (`vector`), which this PostgreSQL server does not have: "
                            "install pgvector on the server, then " + hint
                        )
        raise StoreNotProvisionedError(
            f"the table {VECTORS_TABLE} does not exist in {self._uri.redacted!r}: {hint}"
        )

    async def _vectors_present(self) -> bool:
        if self._vectors is None:
            with self._errors("check_provisioned"):
                async with self._engine.connect() as conn:
                    self._vectors = await vectors_present(conn, self._uri.dialect)
        return self._vectors

    async def check_provisioned(self) -> None:
        """The table exists; a SQLite file that does not exist is not opened (nor created)."""
        await self.check_table(TABLE)

    async def check_table(self, table: str) -> None:
        """Raise `StoreNotProvisionedError` unless `table` exists in this database.

        A SQLite file that does not exist is reported without being opened,
        so the check creates nothing. The tool ledger, which shares this
        store's engine, checks its own table through here too.
        """
        hint = f"run `beam-agents provision {self._uri.redacted}` once"
        database = self._engine.url.database or ""
        sqlite_file = self._uri.dialect == "sqlite" and database not in ("", ":memory:")
        # One stat of a local file, once per worker: not worth a thread.
        if sqlite_file and not database.startswith("file:") and not Path(database).is_file():  # noqa: ASYNC240
            raise StoreNotProvisionedError(f"the SQLite database {database} does not exist: {hint}")
        with self._errors("check_provisioned"):
            async with self._engine.connect() as conn:
                exists = await conn.run_sync(
                    lambda sync_conn: sqlalchemy.inspect(sync_conn).has_table(table)
                )
        if not exists:
            raise StoreNotProvisionedError(
                f"the table {table} does not exist in {self._uri.redacted!r}: {hint}"
            )

    async def _load(self, entity_key: bytes, key: str) -> MemoryRecord | None:
        envelope = await self.read_raw(entity_key, key)
        return None if envelope is None else decode_record(envelope)

    async def _search(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        return await self._range("search", entity_key, prefix, limit)

    async def _candidates(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        """Up to `limit` records under `prefix`: one range query on the primary key."""
        return await self._range("candidates", entity_key, prefix, limit)

    async def _range(
        self, operation: str, entity_key: bytes, prefix: str, limit: int
    ) -> list[MemoryRecord]:
        bound = prefix_upper_bound(prefix)
        params: dict[str, object] = {"entity_key": entity_key, "low": prefix, "limit": limit}
        statement = _SEARCH_FROM
        if bound is not None:
            statement, params["high"] = _SEARCH_RANGE, bound
        with self._errors(operation):
            async with self._engine.connect() as conn:
                envelopes = (await conn.execute(statement, params)).scalars().all()
        return [decode_record(bytes(envelope)) for envelope in envelopes]

    async def _nearest(self, query: Embedding, k: int, prefix: str) -> list[Neighbour]:
        """Across entities, through the vectors table (see `_sql_vectors`), ranked exactly."""
        await self.check_cross_entity_index()
        with self._errors("nearest"):
            async with self._engine.begin() as conn:
                return await nearest_rows(
                    conn, self._uri.dialect, query, k, prefix, sqlite_vec=self._sqlite_vec
                )

    async def _upsert_many(self, entity_key: bytes, records: list[MemoryRecord]) -> list[bool]:
        """Apply the records in order, in one transaction: all of them or, on failure, none."""
        rows = [
            {
                "entity_key": entity_key,
                "key": record.key,
                "seq": record.seq,
                "rec": encode_record(record),
                "updated_at_ms": record.updated_at_ms,
            }
            for record in records
        ]
        embeddings = [record.embedding for record in records]
        vectors = await self._vectors_present()
        with self._errors("upsert"):
            conn = await self._engine.connect()
            try:
                transaction = await conn.begin()
                applied = await self._apply(conn, entity_key, rows)
                if vectors:
                    # The last applied write of each key decides its vector.
                    final: dict[str, Embedding | None] = {
                        str(row["key"]): embedding
                        for row, embedding, ok in zip(rows, embeddings, applied, strict=True)
                        if ok
                    }
                    await write_vectors(conn, self._uri.dialect, entity_key, final)
            except BaseException:
                await conn.close()  # rolls back: nothing was committed
                raise
            # Once COMMIT is handed to the driver it lands whatever this task
            # does next: from here on the outcome is awaited, not abandoned.
            return await finish_in_flight(_commit(conn, transaction, applied))

    async def _apply(
        self, conn: AsyncConnection, entity_key: bytes, rows: list[dict[str, Any]]
    ) -> list[bool]:
        """Run the guarded upserts inside the open transaction; which rows applied."""
        applied: list[bool] = []
        if len({row["key"] for row in rows}) == len(rows):
            # The flush path: staged saves are distinct keys, so whole
            # chunks go in one statement each (one round trip each).
            for start in range(0, len(rows), _BATCH_ROWS):
                chunk = rows[start : start + _BATCH_ROWS]
                params: dict[str, Any] = {"entity_key": entity_key}
                for i, row in enumerate(chunk):
                    for name in ("key", "seq", "rec", "updated_at_ms"):
                        params[f"{name}{i}"] = row[name]
                result: Result[Any] = await conn.execute(_upsert_statement(len(chunk)), params)
                written = {key for (key,) in result}
                applied.extend(row["key"] in written for row in chunk)
        else:
            # A repeated key must apply in order, one statement at a time.
            for row in rows:
                result = await conn.execute(_UPSERT, row)
                applied.append(result.first() is not None)
        return applied

    async def read_raw(self, entity_key: bytes, key: str) -> bytes | None:
        """The stored envelope bytes for (entity_key, key) (a conformance hook)."""
        with self._errors("load"):
            async with self._engine.connect() as conn:
                result = await conn.execute(_LOAD, {"entity_key": entity_key, "key": key})
                envelope = result.scalar_one_or_none()
        return None if envelope is None else bytes(envelope)

    async def scan(self) -> AsyncIterator[tuple[bytes, MemoryRecord]]:
        """Every row, in pages by keyset: no long transaction, no server-side cursor."""
        after: tuple[bytes, str] | None = None
        while True:
            with self._errors("scan"):
                async with self._engine.connect() as conn:
                    if after is None:
                        result = await conn.execute(_SCAN_FIRST, {"page": _SCAN_PAGE})
                    else:
                        params = {"entity_key": after[0], "key": after[1], "page": _SCAN_PAGE}
                        result = await conn.execute(_SCAN_AFTER, params)
                    page = [(bytes(e), str(k), bytes(r)) for e, k, r in result.all()]
            for entity_key, _key, envelope in page:
                yield entity_key, decode_record(envelope)
            if len(page) < _SCAN_PAGE:
                return
            after = page[-1][0], page[-1][1]

    async def count_rows(self) -> int | None:
        self._check_open()
        with self._errors("count"):
            async with self._engine.connect() as conn:
                result = await conn.execute(_COUNT)
                return int(result.scalar_one())

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._cloudsql is not None:
                await self._cloudsql.close()
            else:
                await self._engine.dispose()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the SQL store for {self._uri.redacted!r} is closed")

    @contextlib.contextmanager
    def _errors(self, operation: str) -> Iterator[None]:
        """Translate driver failures into the typed store errors, without secrets."""
        self._check_open()
        try:
            yield
        except (InvalidRecordError, StateDecodeError, StoreError):
            raise
        except sqlalchemy.exc.DBAPIError as exc:
            raise self._translate(operation, exc) from None
        except (OSError, TimeoutError, sqlalchemy.exc.TimeoutError) as exc:
            raise StoreUnavailableError(self._message(operation, exc)) from None

    def _message(self, operation: str, exc: BaseException) -> str:
        cause = exc.orig if isinstance(exc, sqlalchemy.exc.DBAPIError) else exc
        detail = str(cause).strip().splitlines()[0][:300] if str(cause).strip() else ""
        for secret in self._secrets:
            detail = detail.replace(secret, "***")
        return f"{operation} on {self._uri.redacted!r} failed: {type(cause).__name__}: {detail}"

    def _translate(self, operation: str, exc: sqlalchemy.exc.DBAPIError) -> StoreError:
        message = self._message(operation, exc)
        sqlstate = str(getattr(exc.orig, "sqlstate", None) or "")
        text = str(exc.orig).lower()
        if sqlstate == "42P01" or "no such table" in text:
            return StoreNotProvisionedError(
                f"{message}; the table {TABLE} does not exist: "
                f"run `beam-agents provision {self._uri.redacted}` once"
            )
        if exc.connection_invalidated or sqlstate[:2] in _RETRYABLE_SQLSTATE_CLASSES:
            return StoreUnavailableError(message)
        if sqlstate in _RETRYABLE_SQLSTATES:
            return StoreUnavailableError(message)
        if not sqlstate and isinstance(exc, sqlalchemy.exc.OperationalError):
            # SQLite has no SQLSTATE: a locked or unopenable file is an
            # operational condition that may clear.
            return StoreUnavailableError(message)
        return StoreError(message)
