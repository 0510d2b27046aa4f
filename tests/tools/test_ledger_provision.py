"""`beam-agents provision URI` creates what the tool ledger needs beside the store."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy
from sqlalchemy.ext.asyncio import create_async_engine

from beam_agents import AgentConfig
from beam_agents.cli import main
from beam_agents.local import Script, run_locally
from beam_agents.memory.stores import open_store
from beam_agents.memory.stores.errors import StoreNotProvisionedError
from beam_agents.memory.stores.sql import TABLE
from beam_agents.runtime.transform import RunAgent
from beam_agents.tools import Claimed, open_ledger
from beam_agents.tools.execute import ExecuteIntents
from beam_agents.tools.ledger.sql import LEDGER_TABLE
from tests.tools import agents


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
    assert not (tmp_path / "agent.db").exists(), "the check created the database"


def test_a_store_provisioned_before_the_ledger_existed_is_reported(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'agent.db'}"

    async def check() -> None:
        async with open_store(url) as store:
            await store.provision()
        async with open_ledger(url) as ledger:
            await ledger.check_provisioned()

    with pytest.raises(StoreNotProvisionedError, match=LEDGER_TABLE):
        asyncio.run(check())


def test_execute_intents_stops_at_setup_when_the_ledger_is_missing(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'agent.db'}"
    script = Script().events(("case-1", b"db down", 1_000))

    def build(events: Any, answers: Any) -> dict[str, Any]:
        agent = events | "RunAgent" >> RunAgent(agents.file_ticket, AgentConfig())
        executed = agent.intents | "Execute" >> ExecuteIntents({}, url)
        return {"results": executed.results}

    with pytest.raises(Exception, match="beam-agents provision"):
        run_locally(script, build)


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
