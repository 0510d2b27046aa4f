"""The SQL backend's cross-entity index: a vectors table beside the records table.

`beam_agents_longterm_vectors` holds one row per record that carries an
embedding: its (entity, key), its *space* (a 63-bit hash of the embedder's
model id and width, so vectors of two embedders are never compared) and the
vector. The upsert maintains it in the same transaction as the guarded
write, for the rows that applied; a rewrite without an embedding deletes the
row. It is a side table, not a column, so a store provisioned before recall
existed keeps working untouched until `beam-agents provision` runs again.

- PostgreSQL with pgvector: the vector is a `vector` column, and `provision`
  builds one HNSW index (`vector_cosine_ops`) per space already present, as a
  partial expression index `(embedding::vector(N)) WHERE space = S`, since
  pgvector indexes only fixed-width columns. Rows of a space with no index
  yet are still found, by an exact scan; rerun `provision` once an
  embedder's first rows have landed to index them. `provision` then
  analyzes the table, so the planner uses the index it just built.
- SQLite: the vector is the record's float32 bytes in a BLOB. With the
  `sqlite-vec` extension loadable, the database orders candidates by
  `vec_distance_cosine`; where Python's `sqlite3` cannot load extensions,
  the rows of the space are read and ranked in process. Both are exact.

Either way the index only chooses candidates; their scores come from the
records' own envelopes (see `_nearest`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import sqlite3
from collections.abc import Mapping
from typing import Any, Final

import sqlalchemy
from sqlalchemy.ext.asyncio import AsyncConnection

from beam_agents.memory.stores._nearest import rank_neighbours
from beam_agents.memory.stores.base import Embedding, Neighbour, prefix_upper_bound
from beam_agents.memory.stores.envelope import decode_record

__all__ = [
    "VECTORS_TABLE",
    "nearest_rows",
    "pgvector_available",
    "provision_vectors",
    "space_of",
    "sqlite_vec_loadable",
    "vectors_present",
    "write_vectors",
]

VECTORS_TABLE: Final = "beam_agents_longterm_vectors"

_PG_TABLE: Final = f"""\
CREATE TABLE IF NOT EXISTS {VECTORS_TABLE} (
  entity_key BYTEA NOT NULL,
  key TEXT COLLATE "C" NOT NULL,
  space BIGINT NOT NULL,
  embedding vector NOT NULL,
  PRIMARY KEY (entity_key, key)
)"""
_SQLITE_TABLE: Final = f"""\
CREATE TABLE IF NOT EXISTS {VECTORS_TABLE} (
  entity_key BLOB NOT NULL,
  key TEXT NOT NULL,
  space INTEGER NOT NULL,
  embedding BLOB NOT NULL,
  PRIMARY KEY (entity_key, key)
) WITHOUT ROWID"""
_SPACE_INDEX: Final = (
    f"CREATE INDEX IF NOT EXISTS {VECTORS_TABLE}_space ON {VECTORS_TABLE} (space, key)"
)
_BATCH: Final = 100
_HNSW_EF_SEARCH: Final = 100
"""Candidates an HNSW scan keeps (pgvector's default is 40): recall@10 above 0.9."""


def space_of(model_id: str, dimensions: int) -> int:
    """The space of an embedder: a signed 63-bit hash of its model id and width."""
    digest = hashlib.sha256(model_id.encode("utf-8", "surrogatepass") + b"\x00")
    digest.update(str(dimensions).encode())
    return int.from_bytes(digest.digest()[:8], "big") >> 1


def sqlite_vec_loadable() -> bool:
    """Whether this Python can load the sqlite-vec extension into its `sqlite3`."""
    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        return False
    return importlib.util.find_spec("sqlite_vec") is not None


def load_sqlite_vec(dbapi_connection: Any, _record: object) -> None:
    """Load sqlite-vec into a new aiosqlite connection (a pool `connect` listener)."""
    import sqlite_vec  # type: ignore[import-untyped]

    path = sqlite_vec.loadable_path()
    dbapi_connection.run_async(lambda conn: conn.enable_load_extension(True))
    try:
        dbapi_connection.run_async(lambda conn: conn.load_extension(path))
    finally:
        dbapi_connection.run_async(lambda conn: conn.enable_load_extension(False))


async def pgvector_available(conn: AsyncConnection) -> bool:
    """Whether the server can create (or has) the `vector` extension."""
    found = await conn.execute(
        sqlalchemy.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
    )
    return found.first() is not None


async def vectors_present(conn: AsyncConnection, dialect: str) -> bool:
    """Whether the vectors table exists (a store provisioned before recall has none)."""
    if dialect == "postgresql":
        found = await conn.execute(
            sqlalchemy.text("SELECT to_regclass(:name) IS NOT NULL"), {"name": VECTORS_TABLE}
        )
        return bool(found.scalar_one())
    found = await conn.execute(
        sqlalchemy.text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name"),
        {"name": VECTORS_TABLE},
    )
    return found.first() is not None


async def provision_vectors(conn: AsyncConnection, dialect: str) -> bool:
    """Create the vectors table and its indexes (HNSW per space); False without pgvector.

    Records written before the table existed are indexed here too, so
    running `provision` again on an older store makes all of its embedded
    rows recallable across entities.
    """
    if dialect == "postgresql":
        if not await pgvector_available(conn):
            return False
        await conn.execute(sqlalchemy.text("CREATE EXTENSION IF NOT EXISTS vector"))
        await conn.execute(sqlalchemy.text(_PG_TABLE))
    else:
        await conn.execute(sqlalchemy.text(_SQLITE_TABLE))
    await conn.execute(sqlalchemy.text(_SPACE_INDEX))
    await _backfill(conn, dialect)
    if dialect == "postgresql":
        spaces = await conn.execute(
            sqlalchemy.text(
                f"SELECT DISTINCT space, vector_dims(embedding) FROM {VECTORS_TABLE}"  # noqa: S608
            )
        )
        present = spaces.all()
        for space, dimensions in present:
            await conn.execute(sqlalchemy.text(_hnsw_index(int(space), int(dimensions))))
        if present:
            # Column statistics now, not at autovacuum's next pass: without them
            # the planner guesses a prefix matches a couple of rows and sorts the
            # whole space by distance instead of walking the index just built.
            await conn.execute(sqlalchemy.text(f"ANALYZE {VECTORS_TABLE}"))
    return True


def _hnsw_index(space: int, dimensions: int) -> str:
    # Both are ints computed here, never user text: safe to inline, and the
    # partial index's predicate must be a literal for the planner to use it.
    name = f"{VECTORS_TABLE}_hnsw_{space:x}"
    return (
        f"CREATE INDEX IF NOT EXISTS {name} ON {VECTORS_TABLE} USING hnsw "
        f"((embedding::vector({int(dimensions)})) vector_cosine_ops) WHERE space = {int(space)}"
    )


async def _backfill(conn: AsyncConnection, dialect: str) -> None:
    """Index every embedded record that has no vectors row yet."""
    result = await conn.execute(
        sqlalchemy.text(
            "SELECT l.entity_key, l.rec FROM beam_agents_longterm l "  # noqa: S608
            f"LEFT JOIN {VECTORS_TABLE} v ON v.entity_key = l.entity_key AND v.key = l.key "
            "WHERE v.key IS NULL"
        )
    )
    by_entity: dict[bytes, dict[str, Embedding | None]] = {}
    for entity_key, envelope in result.all():
        record = decode_record(bytes(envelope))
        if record.embedding is not None:
            by_entity.setdefault(bytes(entity_key), {})[record.key] = record.embedding
    for entity_key, final in by_entity.items():
        await write_vectors(conn, dialect, entity_key, final)


async def write_vectors(
    conn: AsyncConnection, dialect: str, entity_key: bytes, final: Mapping[str, Embedding | None]
) -> None:
    """Make the vectors rows of `entity_key` match `final` (key -> embedding, None: no vector)."""
    puts = [(key, embedding) for key, embedding in final.items() if embedding is not None]
    drops = [key for key, embedding in final.items() if embedding is None]
    for start in range(0, len(puts), _BATCH):
        chunk = puts[start : start + _BATCH]
        params: dict[str, Any] = {"entity_key": entity_key}
        values = []
        for i, (key, embedding) in enumerate(chunk):
            params[f"k{i}"], params[f"s{i}"] = (
                key,
                space_of(embedding.model_id, embedding.dimensions),
            )
            if dialect == "postgresql":
                params[f"v{i}"] = _pg_vector_text(embedding)
                values.append(f"(:entity_key, :k{i}, :s{i}, CAST(:v{i} AS vector))")
            else:
                params[f"v{i}"] = embedding.vector
                values.append(f"(:entity_key, :k{i}, :s{i}, :v{i})")
        await conn.execute(
            sqlalchemy.text(  # the text varies only in numbered bind parameters
                f"INSERT INTO {VECTORS_TABLE} (entity_key, key, space, embedding) "  # noqa: S608
                f"VALUES {', '.join(values)} ON CONFLICT (entity_key, key) DO UPDATE SET "
                "space = excluded.space, embedding = excluded.embedding"
            ),
            params,
        )
    for start in range(0, len(drops), _BATCH):
        statement = sqlalchemy.text(
            f"DELETE FROM {VECTORS_TABLE} WHERE entity_key = :entity_key AND key IN :keys"  # noqa: S608
        ).bindparams(sqlalchemy.bindparam("keys", expanding=True))
        await conn.execute(
            statement, {"entity_key": entity_key, "keys": drops[start : start + _BATCH]}
        )


def _pg_vector_text(embedding: Embedding) -> str:
    """pgvector's text form; `repr` of a float32 value read back by strtof is that value."""
    return "[" + ",".join(map(repr, embedding.values())) + "]"


async def nearest_rows(
    conn: AsyncConnection,
    dialect: str,
    query: Embedding,
    k: int,
    prefix: str,
    *,
    sqlite_vec: bool,
) -> list[Neighbour]:
    """Candidates from the index (HNSW, sqlite-vec or the space's rows), ranked exactly."""
    space = space_of(query.model_id, query.dimensions)
    bound = prefix_upper_bound(prefix)
    params: dict[str, Any] = {"low": prefix, "k": k}
    where = f"v.space = {space} AND v.key >= :low"
    if bound is not None:
        where, params["high"] = where + " AND v.key < :high", bound
    join = (
        f"SELECT v.entity_key, l.rec FROM {VECTORS_TABLE} v JOIN beam_agents_longterm l "  # noqa: S608
        f"ON l.entity_key = v.entity_key AND l.key = v.key WHERE {where}"
    )
    if dialect == "postgresql":
        dims = int(query.dimensions)
        params["q"] = _pg_vector_text(query)
        await conn.execute(sqlalchemy.text(f"SET LOCAL hnsw.ef_search = {max(_HNSW_EF_SEARCH, k)}"))
        # pgvector 0.8+: keep scanning the graph when the prefix filters hits out.
        await conn.execute(sqlalchemy.text("SET LOCAL hnsw.iterative_scan = relaxed_order"))
        order = f" ORDER BY v.embedding::vector({dims}) <=> CAST(:q AS vector({dims})) LIMIT :k"
    elif sqlite_vec:
        params["q"] = query.vector
        order = " ORDER BY vec_distance_cosine(v.embedding, :q) LIMIT :k"
    else:
        order = ""  # every row of the space under the prefix, ranked below
    result = await conn.execute(sqlalchemy.text(join + order), params)
    found = [(bytes(entity_key), decode_record(bytes(rec))) for entity_key, rec in result.all()]
    return rank_neighbours(query, found, k, prefix)
