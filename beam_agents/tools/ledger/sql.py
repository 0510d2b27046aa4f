"""The SQL ledger: one table beside the store's, one conditional statement per step.

Verified on PostgreSQL and SQLite, as the store is. A claim is
`INSERT ... ON CONFLICT DO UPDATE ... WHERE result IS NULL AND
lease_until_ms <= now RETURNING token`: the database decides under the
row's own lock, so of racing claimers exactly one gets a row back, and an
expired lease is taken over by the same statement. `record` and `release`
are `UPDATE`/`DELETE ... WHERE token = mine AND result IS NULL`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Final

import sqlalchemy
import sqlalchemy.exc
from sqlalchemy.ext.asyncio import AsyncEngine

from beam_agents.memory.stores.errors import (
    StoreError,
    StoreUnavailableError,
)
from beam_agents.memory.stores.sql import SqlMemoryStore
from beam_agents.tools.ledger.base import (
    Busy,
    Claimed,
    ClaimOutcome,
    Clock,
    Recorded,
    ToolLedger,
    wall_clock_ms,
)

__all__ = ["LEDGER_DDL", "LEDGER_TABLE", "SqlToolLedger"]

LEDGER_TABLE: Final = "beam_agents_tool_ledger"

LEDGER_DDL: Final = f"""\
CREATE TABLE IF NOT EXISTS {LEDGER_TABLE} (
  intent_id TEXT PRIMARY KEY,
  token TEXT NOT NULL,
  lease_until_ms BIGINT NOT NULL,
  result BYTEA
)"""
"""The PostgreSQL table; intent ids are canonical UUID strings, so TEXT needs no collation."""

_SQLITE_DDL: Final = f"""\
CREATE TABLE IF NOT EXISTS {LEDGER_TABLE} (
  intent_id TEXT PRIMARY KEY,
  token TEXT NOT NULL,
  lease_until_ms INTEGER NOT NULL,
  result BLOB
) WITHOUT ROWID"""

_CLAIM: Final = sqlalchemy.text(
    f"INSERT INTO {LEDGER_TABLE} (intent_id, token, lease_until_ms, result) "  # noqa: S608
    "VALUES (:intent_id, :token, :until, NULL) "
    "ON CONFLICT (intent_id) DO UPDATE SET "
    "token = excluded.token, lease_until_ms = excluded.lease_until_ms "
    f"WHERE {LEDGER_TABLE}.result IS NULL AND {LEDGER_TABLE}.lease_until_ms <= :now "
    "RETURNING token"
)
_READ: Final = sqlalchemy.text(
    f"SELECT result, lease_until_ms FROM {LEDGER_TABLE} WHERE intent_id = :intent_id"  # noqa: S608
)
_RECORD: Final = sqlalchemy.text(
    f"UPDATE {LEDGER_TABLE} SET result = :result "  # noqa: S608
    "WHERE intent_id = :intent_id AND token = :token AND result IS NULL "
    "RETURNING intent_id"
)
_RELEASE: Final = sqlalchemy.text(
    f"DELETE FROM {LEDGER_TABLE} "  # noqa: S608
    "WHERE intent_id = :intent_id AND token = :token AND result IS NULL"
)
_CLAIM_ROUNDS: Final = 8
"""A claim that lost the insert then found the row gone (released, or expired) tries again."""


class SqlToolLedger(ToolLedger):
    """A `ToolLedger` in the table `beam_agents_tool_ledger` of the store's database."""

    def __init__(self, store: SqlMemoryStore, *, clock: Clock = wall_clock_ms) -> None:
        super().__init__(clock=clock)
        self._store = store
        self._engine: AsyncEngine = store.engine
        self._dialect = self._engine.dialect.name
        self._where = repr(store).removeprefix("SqlMemoryStore")

    def __repr__(self) -> str:
        return f"SqlToolLedger{self._where}"

    async def _claim(self, intent_id: str, token: str, lease_ms: int) -> ClaimOutcome:
        for _ in range(_CLAIM_ROUNDS):
            now = self.now_ms()
            params = {"intent_id": intent_id, "token": token, "until": now + lease_ms, "now": now}
            with self._errors("claim"):
                async with self._engine.begin() as conn:
                    won = (await conn.execute(_CLAIM, params)).first()
                    row = None if won else (await conn.execute(_READ, params)).first()
            if won is not None:
                return Claimed(intent_id, token)
            if row is not None and row[0] is not None:
                return Recorded(intent_id, bytes(row[0]))
            if row is not None and int(row[1]) > now:
                return Busy(intent_id, int(row[1]) - now)
        raise StoreUnavailableError(f"{self!r}: claim of {intent_id} kept racing; try again")

    async def _record(self, claim: Claimed, result: bytes) -> bool:
        params = {"intent_id": claim.intent_id, "token": claim.token, "result": result}
        with self._errors("record"):
            async with self._engine.begin() as conn:
                return (await conn.execute(_RECORD, params)).first() is not None

    async def _release(self, claim: Claimed) -> None:
        params = {"intent_id": claim.intent_id, "token": claim.token}
        with self._errors("release"):
            async with self._engine.begin() as conn:
                await conn.execute(_RELEASE, params)

    async def provision(self) -> None:
        """Create the ledger table if it does not exist (the store's table is separate)."""
        ddl = LEDGER_DDL if self._dialect == "postgresql" else _SQLITE_DDL
        with self._errors("provision"):
            async with self._engine.begin() as conn:
                await conn.execute(sqlalchemy.text(ddl))

    async def check_provisioned(self) -> None:
        """The ledger table exists; a missing SQLite file is reported, never created."""
        await self._store.check_table(LEDGER_TABLE)

    async def close(self) -> None:
        await self._store.close()

    @contextlib.contextmanager
    def _errors(self, operation: str) -> Iterator[None]:
        """Driver failures as typed store errors, naming the driver's class, never its text.

        A driver's message can quote the connection string; its class is
        enough to tell an outage from a mistake.
        """
        try:
            yield
        except StoreError:
            raise
        except sqlalchemy.exc.DBAPIError as exc:
            cause: Any = exc.orig
            if exc.connection_invalidated or isinstance(cause, OSError):
                raise StoreUnavailableError(
                    f"{self!r} unavailable during {operation}: {type(cause).__name__}"
                ) from None
            raise StoreError(f"{self!r}: {operation} failed: {type(cause).__name__}") from None
        except (OSError, TimeoutError, sqlalchemy.exc.TimeoutError) as exc:
            raise StoreUnavailableError(
                f"{self!r} unavailable during {operation}: {type(exc).__name__}"
            ) from None
