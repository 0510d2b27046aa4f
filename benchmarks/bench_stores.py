"""Long-term stores: the seq guard's cost against the raw client's unguarded write.

For each backend, on the same server in one run, this measures a
`MemoryStore` (validation, envelope encoding, the guarded upsert, decoding)
against the backend's own client doing the equivalent unguarded write and
the same range read, with pre-encoded envelope bytes. It prints each ratio
so that higher is better for the store: throughput store/raw, latency
raw/store. Target: every ratio >= 0.7.

Backends are entries in BACKENDS; each starts its own server with the
`beam_agents.testing.services` helpers, and is skipped (with the reason) when
that server is not available here.

    python benchmarks/bench_stores.py            # full run (make bench)
    python benchmarks/bench_stores.py --quick    # one short pass (the test suite)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import tempfile
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import sqlalchemy
from sqlalchemy.ext.asyncio import create_async_engine

from beam_agents.memory.stores import MemoryRecord, MemoryStore, open_store
from beam_agents.memory.stores.base import prefix_upper_bound
from beam_agents.memory.stores.bigtable import row_key
from beam_agents.memory.stores.envelope import encode_record
from beam_agents.memory.stores.firestore import document_id
from beam_agents.testing.services import ServiceUnavailableError
from beam_agents.testing.services.bigtable import BigtableEmulator
from beam_agents.testing.services.firestore import FirestoreEmulator
from beam_agents.testing.services.postgres import start_postgres
from beam_agents.testing.services.redis import RedisServer

TARGET_RATIO = 0.7
FLUSH_SIZE = 10
SEARCH_LIMIT = 20
VALUE = b"s" * 512


class RawClient(Protocol):
    """The backend's own client doing what a store call does, minus the guard."""

    async def upsert(self, entity_key: bytes, record: MemoryRecord, envelope: bytes) -> None: ...

    async def flush(self, entity_key: bytes, rows: list[tuple[MemoryRecord, bytes]]) -> None:
        """All rows in one atomic unit, as the store's upsert_many does where it can."""

    async def search(self, entity_key: bytes, prefix: str, limit: int) -> list[bytes]: ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class BackendEntry:
    """One backend under test."""

    name: str
    start: Callable[[contextlib.ExitStack], str]
    """Start the server (cleanup registered on the stack) and return a store URI."""
    raw_client: Callable[[str], RawClient]
    """Open the raw client on the same server, from the same URI."""
    raw_description: str
    """What "raw" means for this backend, printed with the results."""


class _RawSql:
    """Plain SQLAlchemy Core on its own engine: `INSERT ... ON CONFLICT DO UPDATE`, no
    seq predicate, no RETURNING, each write in its own transaction (a flush as one
    executemany)."""

    UPSERT = sqlalchemy.text(
        "INSERT INTO beam_agents_longterm (entity_key, key, seq, rec, updated_at_ms) "
        "VALUES (:entity_key, :key, :seq, :rec, :updated_at_ms) "
        "ON CONFLICT (entity_key, key) DO UPDATE SET "
        "seq = excluded.seq, rec = excluded.rec, updated_at_ms = excluded.updated_at_ms"
    )
    SEARCH = sqlalchemy.text(
        "SELECT rec FROM beam_agents_longterm WHERE entity_key = :entity_key "
        "AND key >= :low AND key < :high ORDER BY key LIMIT :limit"
    )

    def __init__(self, uri: str) -> None:
        self.engine = create_async_engine(uri)

    @staticmethod
    def _params(entity_key: bytes, record: MemoryRecord, envelope: bytes) -> dict[str, object]:
        return {
            "entity_key": entity_key,
            "key": record.key,
            "seq": record.seq,
            "rec": envelope,
            "updated_at_ms": record.updated_at_ms,
        }

    async def upsert(self, entity_key: bytes, record: MemoryRecord, envelope: bytes) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(self.UPSERT, self._params(entity_key, record, envelope))

    async def flush(self, entity_key: bytes, rows: list[tuple[MemoryRecord, bytes]]) -> None:
        # executemany: the driver's own bulk path, the fastest unguarded batch it has.
        params = [self._params(entity_key, record, envelope) for record, envelope in rows]
        async with self.engine.begin() as conn:
            await conn.execute(self.UPSERT, params)

    async def search(self, entity_key: bytes, prefix: str, limit: int) -> list[bytes]:
        params = {
            "entity_key": entity_key,
            "low": prefix,
            "high": prefix_upper_bound(prefix),
            "limit": limit,
        }
        async with self.engine.connect() as conn:
            return [bytes(r) for r in (await conn.execute(self.SEARCH, params)).scalars()]

    async def close(self) -> None:
        await self.engine.dispose()


def _start_postgres(stack: contextlib.ExitStack) -> str:
    server = start_postgres()
    stack.callback(server.stop)
    return server.create_database("bench")


def _start_sqlite(stack: contextlib.ExitStack) -> str:
    directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-sqlite-"))
    return f"sqlite+aiosqlite:///{Path(directory) / 'bench.db'}"


def _set_env(stack: contextlib.ExitStack, name: str, value: str) -> None:
    """Point a client library at an emulator for this backend's run only."""
    previous = os.environ.get(name)
    os.environ[name] = value
    stack.callback(
        lambda: (
            os.environ.pop(name, None) if previous is None else os.environ.update({name: previous})
        )
    )


def _start_redis(stack: contextlib.ExitStack) -> str:
    directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-redis-")))
    server = stack.enter_context(RedisServer(directory))
    return f"{server.url}?namespace=bench"


class _RawRedis:
    """redis.asyncio on the store's own key layout: HSET + ZADD in a pipeline, no guard;
    a flush is one MULTI/EXEC; a search is ZRANGEBYLEX then HMGET."""

    def __init__(self, uri: str) -> None:
        import redis.asyncio as aioredis

        self.client = aioredis.Redis.from_url(uri.partition("?")[0])
        self.namespace = uri.partition("namespace=")[2]

    def _keys(self, entity_key: bytes) -> tuple[bytes, bytes]:
        stem = f"{self.namespace}:{{e{entity_key.hex()}}}:".encode()
        return stem + b"r", stem + b"i"

    async def upsert(self, entity_key: bytes, record: MemoryRecord, envelope: bytes) -> None:
        await self.flush(entity_key, [(record, envelope)], transaction=False)

    async def flush(
        self, entity_key: bytes, rows: list[tuple[MemoryRecord, bytes]], transaction: bool = True
    ) -> None:
        records, index = self._keys(entity_key)
        async with self.client.pipeline(transaction=transaction) as pipe:
            for record, envelope in rows:
                pipe.hset(records, record.key, envelope)
                pipe.zadd(index, {record.key: 0})
            await pipe.execute()

    async def search(self, entity_key: bytes, prefix: str, limit: int) -> list[bytes]:
        records, index = self._keys(entity_key)
        raw = prefix.encode()
        keys = await self.client.zrangebylex(index, b"[" + raw, b"(" + raw + b"\xff", 0, limit)
        return list(await self.client.hmget(records, keys)) if keys else []

    async def close(self) -> None:
        await self.client.aclose()


def _start_bigtable(stack: contextlib.ExitStack) -> str:
    directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-bt-")))
    emulator = stack.enter_context(BigtableEmulator(directory))
    _set_env(stack, "BIGTABLE_EMULATOR_HOST", emulator.host)
    return "bigtable://bench-project/bench-instance/bench"


class _RawBigtable:
    """The async data client: plain mutate_row (no CheckAndMutateRow), a flush as one
    bulk_mutate_rows, a search as the same row range read."""

    def __init__(self, uri: str) -> None:
        self.project, self.instance, self.table_id = uri.removeprefix("bigtable://").split("/")
        self.client: Any = None
        self.table: Any = None

    def _table(self) -> Any:
        from google.cloud.bigtable.data import BigtableDataClientAsync

        if self.table is None:
            with warnings.catch_warnings():  # "Connecting to Bigtable emulator at ..."
                warnings.simplefilter("ignore", RuntimeWarning)
                self.client = BigtableDataClientAsync(project=self.project)
            self.table = self.client.get_table(self.instance, self.table_id)
        return self.table

    @staticmethod
    def _cells(record: MemoryRecord, envelope: bytes) -> list[Any]:
        from google.cloud.bigtable.data import SetCell

        at = record.updated_at_ms * 1000
        return [
            SetCell("m", b"seq", record.seq.to_bytes(8, "big"), at),
            SetCell("m", b"rec", envelope, at),
        ]

    async def upsert(self, entity_key: bytes, record: MemoryRecord, envelope: bytes) -> None:
        await self._table().mutate_row(
            row_key(entity_key, record.key), self._cells(record, envelope)
        )

    async def flush(self, entity_key: bytes, rows: list[tuple[MemoryRecord, bytes]]) -> None:
        from google.cloud.bigtable.data import RowMutationEntry

        entries = [
            RowMutationEntry(row_key(entity_key, r.key), self._cells(r, envelope))
            for r, envelope in rows
        ]
        await self._table().bulk_mutate_rows(entries)

    async def search(self, entity_key: bytes, prefix: str, limit: int) -> list[bytes]:
        from google.cloud.bigtable.data import ReadRowsQuery, RowRange

        start = row_key(entity_key, prefix)
        query = ReadRowsQuery(row_ranges=RowRange(start, start + b"\xff"), limit=limit)
        rows = await self._table().read_rows(query)
        return [row.get_cells("m", b"rec")[0].value for row in rows]

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()


def _start_firestore(stack: contextlib.ExitStack) -> str:
    directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-fs-")))
    emulator = stack.enter_context(FirestoreEmulator(directory))
    _set_env(stack, "FIRESTORE_EMULATOR_HOST", emulator.host)
    return "firestore://bench-project/bench"


class _RawFirestore:
    """AsyncClient with plain `set` (no transaction, no read), a flush as one atomic
    WriteBatch, a search as the same query."""

    def __init__(self, uri: str) -> None:
        self.project, self.collection_id = uri.removeprefix("firestore://").split("/")
        self.client: Any = None

    def _collection(self) -> Any:
        from google.cloud.firestore_v1 import AsyncClient

        if self.client is None:
            self.client = AsyncClient(project=self.project)
        return self.client.collection(self.collection_id)

    @staticmethod
    def _fields(entity_key: bytes, record: MemoryRecord, envelope: bytes) -> dict[str, Any]:
        return {"entity": entity_key, "key": record.key, "seq": record.seq, "rec": envelope}

    async def upsert(self, entity_key: bytes, record: MemoryRecord, envelope: bytes) -> None:
        doc = self._collection().document(document_id(entity_key, record.key))
        await doc.set(self._fields(entity_key, record, envelope))

    async def flush(self, entity_key: bytes, rows: list[tuple[MemoryRecord, bytes]]) -> None:
        collection = self._collection()
        batch = self.client.batch()
        for record, envelope in rows:
            doc = collection.document(document_id(entity_key, record.key))
            batch.set(doc, self._fields(entity_key, record, envelope))
        await batch.commit()

    async def search(self, entity_key: bytes, prefix: str, limit: int) -> list[bytes]:
        from google.cloud.firestore_v1 import FieldFilter

        query = self._collection().where(filter=FieldFilter("entity", "==", entity_key))
        query = query.where(filter=FieldFilter("key", ">=", prefix))
        upper = prefix_upper_bound(prefix)
        if upper is not None:
            query = query.where(filter=FieldFilter("key", "<", upper))
        query = query.order_by("key").limit(limit)
        return [snapshot.get("rec") async for snapshot in query.stream()]

    async def close(self) -> None:
        self.client = None


_RAW_SQL = "SQLAlchemy Core INSERT ... ON CONFLICT DO UPDATE without the seq predicate"

BACKENDS: list[BackendEntry] = [
    BackendEntry("postgresql", _start_postgres, _RawSql, _RAW_SQL + " (asyncpg)"),
    BackendEntry("sqlite", _start_sqlite, _RawSql, _RAW_SQL + " (aiosqlite)"),
    BackendEntry(
        "redis", _start_redis, _RawRedis, "redis.asyncio HSET+ZADD pipeline, no Lua guard"
    ),
    BackendEntry(
        "bigtable",
        _start_bigtable,
        _RawBigtable,
        "async data client mutate_row / bulk_mutate_rows, no CheckAndMutateRow (emulator)",
    ),
    BackendEntry(
        "firestore",
        _start_firestore,
        _RawFirestore,
        "AsyncClient set / WriteBatch, no transaction (emulator)",
    ),
]


@dataclass(frozen=True)
class Result:
    backend: str
    op: str
    unit: str
    store: float
    raw: float
    ratio: float


@dataclass(frozen=True)
class Sizes:
    upserts: int
    flushes: int
    searches: int
    rounds: int


async def _pair(
    calls: int,
    store_call: Callable[[int], Awaitable[object]],
    raw_call: Callable[[int], Awaitable[object]],
) -> tuple[list[float], list[float]]:
    """Seconds per call for store and raw, alternating call by call so drift hits both."""
    store_samples, raw_samples = [], []
    for i in range(calls):
        start = time.perf_counter()
        await store_call(i)
        middle = time.perf_counter()
        await raw_call(i)
        raw_samples.append(time.perf_counter() - middle)
        store_samples.append(middle - start)
    return store_samples, raw_samples


def _records(keys: list[str], first_seq: int, count: int) -> list[MemoryRecord]:
    return [
        MemoryRecord(keys[i % 50], VALUE, first_seq + i, 1_700_000_000_000 + i)
        for i in range(count)
    ]


Samples = dict[tuple[str, str], list[float]]
"""Seconds per call (or per round, for writes), by `(operation, "store" | "raw")`."""


async def _measure(entry: BackendEntry, uri: str, sizes: Sizes) -> list[Result]:
    store: MemoryStore = open_store(uri)
    await store.provision()
    raw = entry.raw_client(uri)
    keys = [f"case/{i:04d}" for i in range(500)]
    samples: Samples = {}
    try:
        # Warm both pools and fill the entity the searches read.
        seed = [MemoryRecord(k, VALUE, 0, 0) for k in keys]
        for start in range(0, len(seed), 100):
            await store.upsert_many(b"search", seed[start : start + 100])
        await raw.search(b"search", "case/", SEARCH_LIMIT)
        seq = 1
        for _ in range(sizes.rounds):
            seq = await _round(store, raw, keys, seq, sizes, samples)
    finally:
        await raw.close()
        await store.close()
    return _results(entry.name, samples, sizes)


def _add(samples: Samples, op: str, pair: tuple[list[float], list[float]], *, total: bool) -> None:
    for side, values in zip(("store", "raw"), pair, strict=True):
        bucket = samples.setdefault((op, side), [])
        bucket.extend([sum(values)] if total else values)


async def _round(
    store: MemoryStore, raw: RawClient, keys: list[str], seq: int, sizes: Sizes, samples: Samples
) -> int:
    """One round of upserts, flushes and searches on each side; returns the next free seq."""
    # Each side writes its own entity, so neither waits on the other's row locks.
    rows = _records(keys, seq, sizes.upserts)
    envelopes = [(r, encode_record(r)) for r in rows]
    pair = await _pair(
        sizes.upserts,
        lambda i, rows=rows: store.upsert(b"w-store", rows[i]),
        lambda i, env=envelopes: raw.upsert(b"w-raw", *env[i]),
    )
    _add(samples, "upsert", pair, total=True)
    seq += sizes.upserts

    flat = _records(keys, seq, sizes.flushes * FLUSH_SIZE)
    batches = [flat[b : b + FLUSH_SIZE] for b in range(0, len(flat), FLUSH_SIZE)]
    encoded = [[(r, encode_record(r)) for r in batch] for batch in batches]
    pair = await _pair(
        sizes.flushes,
        lambda i, batches=batches: store.upsert_many(b"w-store", batches[i]),
        lambda i, encoded=encoded: raw.flush(b"w-raw", encoded[i]),
    )
    _add(samples, "flush", pair, total=True)
    seq += len(flat)

    prefixes = [f"case/{i % 40:02d}" for i in range(sizes.searches)]
    pair = await _pair(
        sizes.searches,
        lambda i, p=prefixes: store.search(b"search", p[i], SEARCH_LIMIT),
        lambda i, p=prefixes: raw.search(b"search", p[i], SEARCH_LIMIT),
    )
    _add(samples, "search", pair, total=False)
    return seq


def _results(name: str, samples: Samples, sizes: Sizes) -> list[Result]:
    """The medians (and the search p99) of each operation, store against raw."""
    upsert_store = sizes.upserts / statistics.median(samples[("upsert", "store")])
    upsert_raw = sizes.upserts / statistics.median(samples[("upsert", "raw")])
    flush_store = sizes.flushes * FLUSH_SIZE / statistics.median(samples[("flush", "store")])
    flush_raw = sizes.flushes * FLUSH_SIZE / statistics.median(samples[("flush", "raw")])
    search_store = statistics.median(samples[("search", "store")]) * 1e3
    search_raw = statistics.median(samples[("search", "raw")]) * 1e3
    p99_store = _p99(samples[("search", "store")]) * 1e3
    p99_raw = _p99(samples[("search", "raw")]) * 1e3
    return [
        Result(name, "upsert", "rows/s", upsert_store, upsert_raw, upsert_store / upsert_raw),
        Result(name, f"flush x{FLUSH_SIZE}", "rows/s", flush_store, flush_raw,
               flush_store / flush_raw),
        Result(name, f"search({SEARCH_LIMIT}) p50", "ms", search_store, search_raw,
               search_raw / search_store),
        Result(name, f"search({SEARCH_LIMIT}) p99", "ms", p99_store, p99_raw,
               p99_raw / p99_store),
    ]  # fmt: skip


def _p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def run(quick: bool, only: list[str] | None = None) -> tuple[list[Result], list[str]]:
    """Measure every available backend; also return the notes (what raw is, what was skipped)."""
    sizes = Sizes(30, 5, 40, 1) if quick else Sizes(1000, 100, 1000, 5)
    results: list[Result] = []
    notes: list[str] = []
    for entry in BACKENDS:
        if only and entry.name not in only:
            continue
        with contextlib.ExitStack() as stack:
            try:
                uri = entry.start(stack)
            except ServiceUnavailableError as exc:
                notes.append(f"{entry.name}: skipped ({exc})")
                continue
            results.extend(asyncio.run(_measure(entry, uri, sizes)))
            notes.append(f"{entry.name}: raw = {entry.raw_description}")
    return results, notes


def report(results: list[Result], notes: list[str]) -> str:
    lines = [f"{'backend':<12}{'operation':<18}{'store':>14}{'raw':>14}{'ratio':>8}  unit"]
    for r in results:
        lines.append(
            f"{r.backend:<12}{r.op:<18}{r.store:>14.2f}{r.raw:>14.2f}{r.ratio:>8.2f}  {r.unit}"
        )
    lines.append("")
    lines.extend(notes)
    worst = min((r.ratio for r in results), default=float("nan"))
    lines.append(
        f"worst store/raw ratio: {worst:.2f} (target >= {TARGET_RATIO}; "
        "throughput store/raw, latency raw/store)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[Result]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short pass, for the tests")
    parser.add_argument(
        "--backend",
        action="append",
        choices=[entry.name for entry in BACKENDS],
        help="measure only this backend (repeatable; default: all)",
    )
    args = parser.parse_args(argv)
    results, notes = run(args.quick, args.backend)
    print(report(results, notes))
    return results


if __name__ == "__main__":
    main()
