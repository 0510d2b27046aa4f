"""`beam-agents provision URI` creates what the tool ledger needs beside the store."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
import sqlalchemy
from sqlalchemy.ext.asyncio import create_async_engine

from beam_agents.cli import main
from beam_agents.memory.stores.errors import StoreNotProvisionedError
from beam_agents.memory.stores.sql import TABLE
from beam_agents.tools import Claimed, open_ledger
from beam_agents.tools.ledger.sql import LEDGER_TABLE


def _tables(url: str) -> set[str]:
    async def read() -> set[str]:
        engine = create_async_engine(url)
        try:
            async with engine.connect() as conn:
                names = await conn.run_sync(lambda sync: sqlalchemy.inspect(sync).get_table_names())
        finally:
            await engine.dispose()
        return set(names)

    return asyncio.run(read())


def test_provision_creates_the_ledger_table_beside_the_store(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'agent.db'}"
    assert main(["provision", url]) == 0
    assert main(["provision", url]) == 0
    assert {TABLE, LEDGER_TABLE} <= _tables(url)


def test_unprovisioned_ledger_is_reported_naming_provision(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'agent.db'}"

    async def check() -> None:
        async with open_ledger(url) as ledger:
            await ledger.check_provisioned()

    with pytest.raises(StoreNotProvisionedError, match="beam-agents provision"):
        asyncio.run(check())


def test_provision_adds_the_ledger_family_to_a_bigtable_table(
    bigtable_emulator_host: str,
) -> None:
    uri = f"bigtable://test-project/test-instance/t{uuid.uuid4().hex}"

    async def unprovisioned() -> None:
        async with open_ledger(uri) as ledger:
            await ledger.check_provisioned()

    with pytest.raises(StoreNotProvisionedError):
        asyncio.run(unprovisioned())
    assert main(["provision", uri]) == 0

    async def claim() -> object:
        async with open_ledger(uri) as ledger:
            await ledger.check_provisioned()
            return await ledger.claim(str(uuid.uuid4()))

    assert isinstance(asyncio.run(claim()), Claimed)
