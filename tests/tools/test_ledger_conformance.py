"""The shipped ledger contract, run against every backend on a real server.

Adding a backend is one entry in BACKENDS plus one `<name>_ledger` fixture
that gives each test an empty ledger.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from beam_agents.testing.ledger_conformance import LedgerConformance, LedgerTarget
from beam_agents.testing.services.postgres import PostgresServer
from beam_agents.tools import InMemoryToolLedger, ToolLedger, open_ledger

BACKENDS = ["memory", "sqlite", "postgres", "redis", "bigtable", "firestore"]


def _provisioned(uri: str) -> LedgerTarget:
    async def provision() -> None:
        async with open_ledger(uri) as ledger:
            await ledger.provision()

    asyncio.run(provision())

    async def opener() -> ToolLedger:
        return open_ledger(uri)

    return LedgerTarget(open_ledger=opener)


@pytest.fixture
def memory_ledger() -> Iterator[LedgerTarget]:
    namespace = f"ledger-{uuid.uuid4().hex}"

    async def opener() -> ToolLedger:
        return open_ledger(f"memory://{namespace}")

    yield LedgerTarget(open_ledger=opener)
    InMemoryToolLedger.drop_namespace(namespace)


@pytest.fixture
def sqlite_ledger(tmp_path: Path) -> LedgerTarget:
    return _provisioned(f"sqlite+aiosqlite:///{tmp_path / 'ledger.db'}")


@pytest.fixture
def postgres_ledger(postgres_server: PostgresServer) -> LedgerTarget:
    return _provisioned(postgres_server.create_database())


@pytest.fixture
def redis_ledger(redis_store_uri: str) -> LedgerTarget:
    return _provisioned(redis_store_uri)


@pytest.fixture
def bigtable_ledger(bigtable_store_uri: str) -> LedgerTarget:
    return _provisioned(bigtable_store_uri)


@pytest.fixture
def firestore_ledger(firestore_store_uri: str) -> LedgerTarget:
    return _provisioned(firestore_store_uri)


@pytest.fixture(params=BACKENDS)
def ledger_target(request: pytest.FixtureRequest) -> LedgerTarget:
    target: LedgerTarget = request.getfixturevalue(f"{request.param}_ledger")
    return target


class TestLedgerConformance(LedgerConformance):
    """Every backend keeps the whole contract."""
