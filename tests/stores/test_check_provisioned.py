"""`check_provisioned` tells an unprovisioned store apart on every backend, creating nothing."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from beam_agents.memory.stores import MemoryStore, open_store
from beam_agents.memory.stores.errors import StoreNotProvisionedError


async def _check(uri: str, *, provision_first: bool = False) -> None:
    store: MemoryStore = open_store(uri)
    async with store:
        if provision_first:
            await store.provision()
        await store.check_provisioned()


def test_a_missing_sqlite_file_is_not_provisioned_and_is_not_created(tmp_path: Path) -> None:
    database = tmp_path / "never.sqlite"

    with pytest.raises(StoreNotProvisionedError, match="beam-agents provision"):
        asyncio.run(_check(f"sqlite+aiosqlite:///{database}"))

    assert not database.exists()
    assert list(tmp_path.iterdir()) == []


def test_a_sqlite_file_without_the_table_is_not_provisioned(tmp_path: Path) -> None:
    database = tmp_path / "empty.sqlite"
    database.write_bytes(b"")

    with pytest.raises(StoreNotProvisionedError, match="beam_agents_longterm"):
        asyncio.run(_check(f"sqlite+aiosqlite:///{database}"))


def test_a_provisioned_sqlite_store_passes(tmp_path: Path) -> None:
    asyncio.run(_check(f"sqlite+aiosqlite:///{tmp_path / 'store.sqlite'}", provision_first=True))


def test_a_postgres_database_without_the_table_is_not_provisioned(
    postgres_database_url: str,
) -> None:
    with pytest.raises(StoreNotProvisionedError, match="beam-agents provision"):
        asyncio.run(_check(postgres_database_url))

    asyncio.run(_check(postgres_database_url, provision_first=True))


def test_a_bigtable_table_that_does_not_exist_is_not_provisioned(
    bigtable_emulator_host: str,
) -> None:
    uri = f"bigtable://test-project/test-instance/t{uuid.uuid4().hex}"

    with pytest.raises(StoreNotProvisionedError, match="beam-agents provision"):
        asyncio.run(_check(uri))

    asyncio.run(_check(uri, provision_first=True))


@pytest.mark.parametrize("backend", ["memory", "redis", "firestore"])
def test_a_store_with_nothing_to_provision_passes_unprovisioned(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """Redis and the in-memory store have nothing to create; the Firestore emulator
    enforces no index (in production its missing index surfaces on the first search)."""
    uri = {
        "memory": lambda: f"memory://check-{uuid.uuid4().hex}",
        "redis": lambda: request.getfixturevalue("redis_store_uri"),
        "firestore": lambda: request.getfixturevalue("firestore_store_uri"),
    }[backend]()

    asyncio.run(_check(uri))
