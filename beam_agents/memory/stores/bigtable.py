"""Bigtable backend: one row per (entity, key), guarded by CheckAndMutateRow.

Row key. `escape(entity_key) + b"\\x00\\x01" + key.encode("utf-8")`, where
`escape` doubles every 0x00 byte as `0x00 0xFF`. In the escaped entity every
0x00 is followed by 0xFF, so the first `0x00 0x01` in a row key is the
terminator and the split back into (entity, key) is unique: no entity key and
no record key (not even one containing NUL bytes) can produce another
entity's row key. An entity key that is a byte prefix of another cannot
collide either: where the shorter one ends, its row keys continue with
`0x00 0x01` while the longer one continues with its own next byte, escaped as
`0x00 0xFF` if it is NUL. The record key follows the terminator as raw UTF-8,
so a prefix search is the literal byte range `[base + prefix, base + prefix +
b"\\xff")` (UTF-8 never contains 0xFF) and Bigtable returns it in bytewise key
order with no filtering or scanning of the entity's other rows.

Cells. Family `m`: `seq` is the 8-byte big-endian seq (unsigned big-endian
bytes compare like the integers they encode), `rec` the envelope. GC is lazy
and a table may lack the max-1-version rule, so old cells can linger: the
guard's predicate and every read take only the latest cell of a column
(`CellsColumnLimitFilter(1)` after the column filter, before the value
test). A write also deletes the columns' older cells in the same atomic
mutation, so the latest cell never depends on cell timestamps (which are the
record's `updated_at_ms`, and event time is not monotonic in seq).

Atomicity is per row only: `upsert_many` guards and applies the records one
by one, so a failed flush can leave some of an activation's rows applied. A
retry converges (the guard admits the same seq again), but readers may see
the partial state in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import warnings
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Final, Self

from google.api_core import exceptions as api_errors
from google.cloud.bigtable.data import (
    BigtableDataClientAsync,
    DeleteRangeFromColumn,
    ReadRowsQuery,
    RowRange,
    SetCell,
    TableAsync,
)
from google.cloud.bigtable.data import row_filters as rf
from google.cloud.bigtable.data.exceptions import RetryExceptionGroup
from google.cloud.bigtable.data.row import Row

from beam_agents.memory.stores.base import (
    MemoryRecord,
    MemoryStore,
)
from beam_agents.memory.stores.envelope import decode_record, encode_record
from beam_agents.memory.stores.errors import (
    InvalidStoreURIError,
    StoreError,
    StoreNotProvisionedError,
    StoreUnavailableError,
)
from beam_agents.memory.stores.google_errors import RETRYABLE_GOOGLE_ERRORS
from beam_agents.memory.stores.uri import StoreURI

if TYPE_CHECKING:
    from google.cloud.bigtable_admin_v2 import BigtableTableAdminAsyncClient

__all__ = ["FAMILY", "BigtableMemoryStore", "entity_row_prefix", "row_key", "split_row_key"]

# The data client wraps exhausted retries of several RPCs in an exception group.
_RETRYABLE: Final[tuple[type[BaseException], ...]] = (
    *RETRYABLE_GOOGLE_ERRORS,
    RetryExceptionGroup,
)

FAMILY: Final = "m"
SEQ_COLUMN: Final = b"seq"
REC_COLUMN: Final = b"rec"
_TERMINATOR: Final = b"\x00\x01"
_EMULATOR_ENV: Final = "BIGTABLE_EMULATOR_HOST"
# Cell timestamps are int64 microseconds at millisecond granularity; a record's
# updated_at_ms may go to 2**63 - 1, so it is clamped (correctness never reads
# timestamps: every write deletes the older cells).
_MAX_CELL_MS: Final = (2**63 - 1) // 1000
FLUSH_CONCURRENCY: Final = 16
"""CheckAndMutateRow calls one flush keeps in flight (measured: see docs/stores.md)."""


def entity_row_prefix(entity_key: bytes) -> bytes:
    """The row-key prefix every row of `entity_key` starts with (escaped entity + terminator)."""
    return entity_key.replace(b"\x00", b"\x00\xff") + _TERMINATOR


def row_key(entity_key: bytes, key: str) -> bytes:
    """The row key of one record."""
    return entity_row_prefix(entity_key) + key.encode("utf-8")


def split_row_key(raw: bytes) -> tuple[bytes, str] | None:
    """Invert `row_key`; None for a row this encoding did not write."""
    start = 0
    while (nul := raw.find(b"\x00", start)) != -1 and nul + 1 < len(raw):
        marker = raw[nul + 1]
        if marker == 0xFF:
            start = nul + 2
            continue
        if marker != 0x01:
            return None
        try:
            key = raw[nul + 2 :].decode("utf-8")
        except UnicodeDecodeError:
            return None
        return raw[:nul].replace(b"\x00\xff", b"\x00"), key
    return None


def _seq_bytes(seq: int) -> bytes:
    return seq.to_bytes(8, "big")


def _latest(column: bytes) -> rf.RowFilter:
    """Only the newest cell of m:<column>, whatever versions linger."""
    return rf.RowFilterChain(
        [
            rf.FamilyNameRegexFilter(FAMILY),
            rf.ColumnQualifierRegexFilter(column),
            rf.CellsColumnLimitFilter(1),
        ]
    )


def _newer_stored_seq(seq: int) -> rf.RowFilter:
    """Matches iff the latest stored seq is above `seq`: the guard's reject case."""
    return rf.RowFilterChain(
        [
            _latest(SEQ_COLUMN),
            rf.ValueRangeFilter(start_value=_seq_bytes(seq), inclusive_start=False),
        ]
    )


class BigtableMemoryStore(MemoryStore):
    """Long-term store on a Bigtable table (`bigtable://project/instance/table`).

    The data client is created on first use, on the caller's event loop (it
    starts background tasks there). `BIGTABLE_EMULATOR_HOST` is honoured at
    that moment, as by every Google client.
    """

    def __init__(
        self,
        *,
        project: str,
        instance: str,
        table: str,
        app_profile_id: str | None = None,
        timeout_s: float = 10.0,
    ) -> None:
        for name, value in (("project", project), ("instance", instance), ("table", table)):
            if not value or "/" in value:
                raise InvalidStoreURIError(
                    f"bigtable {name} must be a non-empty name, got {value!r}"
                )
        if timeout_s <= 0:
            raise InvalidStoreURIError(f"bigtable timeout_s must be positive, got {timeout_s}")
        self.project = project
        self.instance = instance
        self.table_id = table
        self._app_profile_id = app_profile_id
        self._timeout_s = timeout_s
        self._client: BigtableDataClientAsync | None = None
        self._table: TableAsync | None = None

    @classmethod
    def from_uri(cls, uri: StoreURI) -> Self:
        """Build from a parsed `bigtable://project/instance/table` URI (no I/O)."""
        return cls(project=uri.project, instance=uri.instance, table=uri.table)

    def __repr__(self) -> str:
        return f"BigtableMemoryStore({self.project}/{self.instance}/{self.table_id})"

    @property
    def table_name(self) -> str:
        """The table's full resource name."""
        return f"projects/{self.project}/instances/{self.instance}/tables/{self.table_id}"

    def data_table(self) -> TableAsync:
        """The data client's table, created on first use; shared with the tool ledger."""
        return self._data_table()

    def _data_table(self) -> TableAsync:
        if self._table is None:
            with warnings.catch_warnings():
                # The client warns on every construction against an emulator.
                warnings.simplefilter("ignore", RuntimeWarning)
                self._client = BigtableDataClientAsync(project=self.project)
            t = self._timeout_s
            self._table = self._client.get_table(
                self.instance,
                self.table_id,
                app_profile_id=self._app_profile_id,
                default_operation_timeout=t,
                default_attempt_timeout=t,
                default_read_rows_operation_timeout=t,
                default_read_rows_attempt_timeout=t,
                default_mutate_rows_operation_timeout=t,
                default_mutate_rows_attempt_timeout=t,
            )
        return self._table

    async def _load(self, entity_key: bytes, key: str) -> MemoryRecord | None:
        """The entity's record under `key`, or None (latest `rec` cell only)."""
        raw = await self.read_raw(entity_key, key)
        return None if raw is None else decode_record(raw)

    async def read_raw(self, entity_key: bytes, key: str) -> bytes | None:
        """The envelope bytes in the latest `rec` cell of (entity_key, key).

        Checks nothing: `load` has checked the keys, and a test passes valid ones.
        """
        with self._translate("load"):
            row = await self._data_table().read_row(
                row_key(entity_key, key), row_filter=_latest(REC_COLUMN)
            )
        cells = [] if row is None else row.get_cells(FAMILY, REC_COLUMN)
        return cells[0].value if cells else None

    async def _search(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        """Up to `limit` records whose key starts with `prefix`: one bounded row range."""
        return await self._range("search", entity_key, prefix, limit)

    async def _candidates(self, entity_key: bytes, prefix: str, limit: int) -> list[MemoryRecord]:
        """Up to `limit` records under `prefix`: the same row range, one streamed ReadRows.

        ReadRows streams its rows in chunks, so a large bound needs no paging;
        the read gets the longer operation timeout `scan` uses.
        """
        return await self._range("candidates", entity_key, prefix, limit)

    async def _range(
        self, what: str, entity_key: bytes, prefix: str, limit: int
    ) -> list[MemoryRecord]:
        start = row_key(entity_key, prefix)
        query = ReadRowsQuery(
            row_ranges=RowRange(start_key=start, end_key=start + b"\xff"),
            limit=limit,
            row_filter=_latest(REC_COLUMN),
        )
        with self._translate(what):
            rows = await self._data_table().read_rows(
                query,
                operation_timeout=self._timeout_s * max(1, limit // 1000),
                attempt_timeout=self._timeout_s * max(1, limit // 1000),
            )
        return [record for row in rows if (record := _record_of(row)) is not None]

    cross_entity_index = None
    """The emulator has no ExecuteQuery, so Bigtable's SQL vector functions go unused."""

    async def _upsert_many(self, entity_key: bytes, records: list[MemoryRecord]) -> list[bool]:
        """Guard and apply each record in its own CheckAndMutateRow (atomic per row only).

        Rows are independent on Bigtable, so distinct keys go concurrently,
        up to `FLUSH_CONCURRENCY` at once (all of a typical flush: measured
        best, see docs/stores.md); repeats of one key stay in order, as the
        contract requires.
        """
        table = self._data_table()
        by_key: dict[str, list[int]] = {}
        for index, record in enumerate(records):
            by_key.setdefault(record.key, []).append(index)
        applied = [False] * len(records)
        lanes = asyncio.Semaphore(FLUSH_CONCURRENCY)

        async def apply_key(indexes: list[int]) -> None:
            async with lanes:
                for index in indexes:
                    applied[index] = await self._guarded_write(table, entity_key, records[index])

        outcomes = await asyncio.gather(
            *(apply_key(indexes) for indexes in by_key.values()), return_exceptions=True
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return applied

    async def _guarded_write(
        self, table: TableAsync, entity_key: bytes, record: MemoryRecord
    ) -> bool:
        timestamp = min(record.updated_at_ms, _MAX_CELL_MS) * 1000
        write = [
            DeleteRangeFromColumn(FAMILY, SEQ_COLUMN),
            DeleteRangeFromColumn(FAMILY, REC_COLUMN),
            SetCell(FAMILY, SEQ_COLUMN, _seq_bytes(record.seq), timestamp),
            SetCell(FAMILY, REC_COLUMN, encode_record(record), timestamp),
        ]
        with self._translate("upsert"):
            rejected = await table.check_and_mutate_row(
                row_key(entity_key, record.key),
                _newer_stored_seq(record.seq),
                false_case_mutations=write,
            )
        return not rejected

    async def scan(self) -> AsyncIterator[tuple[bytes, MemoryRecord]]:
        """Every row of the table that this encoding wrote, in row-key order."""
        query = ReadRowsQuery(row_filter=_latest(REC_COLUMN))
        with self._translate("scan"):
            stream = await self._data_table().read_rows_stream(
                query, operation_timeout=max(self._timeout_s, 600.0)
            )
            async for row in stream:
                parsed = split_row_key(row.row_key)
                record = _record_of(row)
                if parsed is not None and record is not None:
                    yield parsed[0], record

    async def provision(self) -> None:
        """Create the table with family `m` (max one version), or add `m` to it; idempotent.

        Works against the emulator too (its table admin is implemented).
        Existing GC rules are left alone: they may carry an operator's
        retention (`max_age`), and the store reads only the latest cell anyway.
        """
        from google.cloud.bigtable_admin_v2 import types as admin

        admin_client = _admin_client()
        family = admin.ColumnFamily(gc_rule=admin.GcRule(max_num_versions=1))  # type: ignore[no-untyped-call]
        parent = f"projects/{self.project}/instances/{self.instance}"
        try:
            with self._translate("provision"):
                try:
                    await admin_client.create_table(
                        parent=parent,
                        table_id=self.table_id,
                        table=admin.Table(column_families={FAMILY: family}),
                        timeout=self._timeout_s,
                    )
                    return
                except api_errors.AlreadyExists:
                    pass
                existing = await admin_client.get_table(
                    name=self.table_name, timeout=self._timeout_s
                )
                if FAMILY in existing.column_families:
                    return
                modification = admin.ModifyColumnFamiliesRequest.Modification(
                    id=FAMILY, create=family
                )
                await admin_client.modify_column_families(
                    name=self.table_name, modifications=[modification], timeout=self._timeout_s
                )
        finally:
            await admin_client.transport.close()  # type: ignore[no-untyped-call]

    async def check_provisioned(self) -> None:
        """The table exists with family `m` (a table read, which `roles/bigtable.user` allows)."""
        admin_client = _admin_client()
        try:
            with self._translate("check_provisioned"):
                existing = await admin_client.get_table(
                    name=self.table_name, timeout=self._timeout_s
                )
        finally:
            await admin_client.transport.close()  # type: ignore[no-untyped-call]
        if FAMILY not in existing.column_families:
            raise StoreNotProvisionedError(
                f"bigtable {self.table_name}: the column family {FAMILY!r} does not exist; "
                "run `beam-agents provision`"
            )

    async def close(self) -> None:
        """Close the data client (and its channel)."""
        client, self._client, self._table = self._client, None, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

    @contextlib.contextmanager
    def _translate(self, what: str) -> Iterator[None]:
        """Map Google API errors onto store errors: retryable, not provisioned, or neither."""
        try:
            yield
        except api_errors.NotFound as exc:
            raise StoreNotProvisionedError(
                f"bigtable {self.table_name}: {what} failed, the table or family {FAMILY!r} "
                f"does not exist ({exc.message}); run `beam-agents provision`"
            ) from None
        except _RETRYABLE as exc:
            raise StoreUnavailableError(
                f"bigtable {self.table_name} unavailable during {what}: {type(exc).__name__}"
            ) from exc
        except api_errors.GoogleAPIError as exc:
            raise StoreError(
                f"bigtable {self.table_name}: {what} failed: {type(exc).__name__}: {exc}"
            ) from exc


def _record_of(row: Row) -> MemoryRecord | None:
    cells = row.get_cells(FAMILY, REC_COLUMN)
    return decode_record(cells[0].value) if cells else None


def admin_client() -> BigtableTableAdminAsyncClient:
    """A table-admin client as `provision` builds it (emulator-aware); the caller closes it."""
    return _admin_client()


def _admin_client() -> BigtableTableAdminAsyncClient:
    """A table-admin client; against the emulator, an insecure loopback channel."""
    from google.cloud.bigtable_admin_v2 import BigtableTableAdminAsyncClient

    host = os.environ.get(_EMULATOR_ENV)
    if not host:
        return BigtableTableAdminAsyncClient()
    import grpc  # type: ignore[import-untyped]
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.bigtable_admin_v2.services.bigtable_table_admin.transports import (
        BigtableTableAdminGrpcAsyncIOTransport,
    )

    transport = BigtableTableAdminGrpcAsyncIOTransport(
        channel=grpc.aio.insecure_channel(host),
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
    )
    return BigtableTableAdminAsyncClient(transport=transport)
