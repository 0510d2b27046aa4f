"""The Bigtable ledger: family `l` of the store's table, one CheckAndMutateRow per step.

Row key: `0x00 0x02` + the intent id. A store row key never starts with
that pair (an escaped entity's first 0x00 is followed by 0xFF, and the
terminator is `0x00 0x01`), so ledger rows and store rows never meet, and
the store's scans (which read family `m` only) never see ledger rows.

Columns of `l`: `token` (the claim holding the id), `until` (the lease's end,
8-byte big-endian milliseconds, so byte order is numeric order) and `result`.
A claim's predicate matches "recorded, or leased past now"; the claim's
cells are written in the false case, so exactly one of racing claimers
writes. `record` matches "the token is mine", writes the result and drops
the token in the true case. Every write deletes a column's older cells in
the same mutation; reads take the latest cell only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Final

from google.api_core import exceptions as api_errors
from google.cloud.bigtable.data import DeleteAllFromRow, DeleteRangeFromColumn, SetCell
from google.cloud.bigtable.data import row_filters as rf

from beam_agents.memory.stores.bigtable import BigtableMemoryStore, admin_client
from beam_agents.memory.stores.errors import (
    StoreError,
    StoreNotProvisionedError,
    StoreUnavailableError,
)
from beam_agents.memory.stores.google_errors import RETRYABLE_GOOGLE_ERRORS
from beam_agents.tools.ledger.base import (
    Busy,
    Claimed,
    ClaimOutcome,
    Clock,
    Recorded,
    ToolLedger,
    wall_clock_ms,
)

__all__ = ["LEDGER_FAMILY", "BigtableToolLedger", "ledger_row_key"]

LEDGER_FAMILY: Final = "l"
_TOKEN: Final = b"token"
_UNTIL: Final = b"until"
_RESULT: Final = b"result"
_ROW_PREFIX: Final = b"\x00\x02"
_CLAIM_ROUNDS: Final = 8


def ledger_row_key(intent_id: str) -> bytes:
    """The row of one intent (ids are validated canonical UUIDs: plain ASCII)."""
    return _ROW_PREFIX + intent_id.encode("ascii")


_LATEST_CELLS: Final = rf.RowFilterChain(
    [rf.FamilyNameRegexFilter(LEDGER_FAMILY), rf.CellsColumnLimitFilter(1)]
)


def _latest(column: bytes) -> rf.RowFilter:
    return rf.RowFilterChain(
        [
            rf.FamilyNameRegexFilter(LEDGER_FAMILY),
            rf.ColumnQualifierRegexFilter(column),
            rf.CellsColumnLimitFilter(1),
        ]
    )


def _taken(now_ms: int) -> rf.RowFilter:
    """Matches iff the row holds a result or a lease that ends after `now_ms`."""
    live_lease = rf.RowFilterChain(
        [
            _latest(_UNTIL),
            rf.ValueRangeFilter(start_value=now_ms.to_bytes(8, "big"), inclusive_start=False),
        ]
    )
    return rf.RowFilterUnion([_latest(_RESULT), live_lease])


def _holds(token: str) -> rf.RowFilter:
    """Matches iff the latest token is `token` (hex: no regex metacharacters)."""
    return rf.RowFilterChain([_latest(_TOKEN), rf.ValueRegexFilter(token.encode("ascii"))])


def _replace(column: bytes, value: bytes) -> list[DeleteRangeFromColumn | SetCell]:
    return [
        DeleteRangeFromColumn(LEDGER_FAMILY, column),
        SetCell(LEDGER_FAMILY, column, value),
    ]


class BigtableToolLedger(ToolLedger):
    """A `ToolLedger` in family `l` of the store's Bigtable table."""

    def __init__(self, store: BigtableMemoryStore, *, clock: Clock = wall_clock_ms) -> None:
        super().__init__(clock=clock)
        self._store = store

    def __repr__(self) -> str:
        return f"BigtableToolLedger({self._store.table_name})"

    async def _claim(self, intent_id: str, token: str, lease_ms: int) -> ClaimOutcome:
        table = self._store.data_table()
        row = ledger_row_key(intent_id)
        for _ in range(_CLAIM_ROUNDS):
            now = self.now_ms()
            writes = [*_replace(_TOKEN, token.encode()), *_replace(_UNTIL, _ms(now + lease_ms))]
            with self._errors("claim"):
                taken = await table.check_and_mutate_row(
                    row, _taken(now), false_case_mutations=writes
                )
                if not taken:
                    return Claimed(intent_id, token)
                found = await table.read_row(row, row_filter=_LATEST_CELLS)
            if found is None:
                continue
            cells = {cell.qualifier: cell.value for cell in found.get_cells(LEDGER_FAMILY)}
            if _RESULT in cells:
                return Recorded(intent_id, cells[_RESULT])
            until = int.from_bytes(cells.get(_UNTIL, b""), "big")
            if until > now:
                return Busy(intent_id, until - now)
        raise StoreUnavailableError(f"{self!r}: claim of {intent_id} kept racing; try again")

    async def _record(self, claim: Claimed, result: bytes) -> bool:
        writes = [*_replace(_RESULT, result), DeleteRangeFromColumn(LEDGER_FAMILY, _TOKEN)]
        with self._errors("record"):
            held: bool = await self._store.data_table().check_and_mutate_row(
                ledger_row_key(claim.intent_id), _holds(claim.token), true_case_mutations=writes
            )
        return held

    async def _release(self, claim: Claimed) -> None:
        with self._errors("release"):
            await self._store.data_table().check_and_mutate_row(
                ledger_row_key(claim.intent_id),
                _holds(claim.token),
                true_case_mutations=[DeleteAllFromRow()],
            )

    async def provision(self) -> None:
        """The store's table and family `m` (its provision), then family `l`; idempotent."""
        from google.cloud.bigtable_admin_v2 import types as admin

        await self._store.provision()
        client = admin_client()
        name = self._store.table_name
        try:
            with self._errors("provision"):
                existing = await client.get_table(name=name)
                if LEDGER_FAMILY in existing.column_families:
                    return
                family = admin.ColumnFamily(gc_rule=admin.GcRule(max_num_versions=1))  # type: ignore[no-untyped-call]
                change = admin.ModifyColumnFamiliesRequest.Modification(
                    id=LEDGER_FAMILY, create=family
                )
                await client.modify_column_families(name=name, modifications=[change])
        finally:
            await client.transport.close()  # type: ignore[no-untyped-call]

    async def check_provisioned(self) -> None:
        client = admin_client()
        try:
            with self._errors("check_provisioned"):
                existing = await client.get_table(name=self._store.table_name)
        finally:
            await client.transport.close()  # type: ignore[no-untyped-call]
        if LEDGER_FAMILY not in existing.column_families:
            raise StoreNotProvisionedError(
                f"{self!r}: the column family {LEDGER_FAMILY!r} does not exist; "
                "run `beam-agents provision`"
            )

    async def close(self) -> None:
        await self._store.close()

    @contextlib.contextmanager
    def _errors(self, operation: str) -> Iterator[None]:
        try:
            yield
        except api_errors.NotFound:
            raise StoreNotProvisionedError(
                f"{self!r}: {operation} failed, the table or family {LEDGER_FAMILY!r} does "
                "not exist; run `beam-agents provision`"
            ) from None
        except RETRYABLE_GOOGLE_ERRORS as exc:
            raise StoreUnavailableError(
                f"{self!r} unavailable during {operation}: {type(exc).__name__}"
            ) from None
        except api_errors.GoogleAPIError as exc:
            raise StoreError(f"{self!r}: {operation} failed: {type(exc).__name__}") from None


def _ms(value: int) -> bytes:
    return value.to_bytes(8, "big")
