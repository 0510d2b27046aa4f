"""`beam-agents provision` and `inspect` against Redis and the Bigtable and Firestore emulators."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from beam_agents.cli import main as cli
from beam_agents.memory.stores import MemoryRecord, open_store
from beam_agents.testing.services import free_port

pytestmark = pytest.mark.filterwarnings("ignore:Connecting to Bigtable emulator:RuntimeWarning")


def _seed(uri: str, entity_key: bytes, records: list[MemoryRecord]) -> None:
    async def write() -> None:
        async with open_store(uri) as store:
            await store.upsert_many(entity_key, records)

    asyncio.run(write())


def test_provision_creates_the_bigtable_table_and_is_idempotent(
    bigtable_emulator_host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"bigtable://test-project/test-instance/cli{uuid.uuid4().hex}"

    assert cli(["inspect", uri, "--entity", "e"]) == 1
    assert "beam-agents provision" in capsys.readouterr().err
    assert cli(["provision", uri]) == 0
    assert cli(["provision", uri]) == 0
    _seed(uri, b"e", [MemoryRecord("k", b"v", 1, 1)])

    assert cli(["inspect", uri, "--entity", "e"]) == 0
    assert '"k"' in capsys.readouterr().out


def test_provision_on_the_firestore_emulator_succeeds_without_an_index_api(
    firestore_emulator_host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"firestore://test-project/cli{uuid.uuid4().hex}"

    assert cli(["provision", uri]) == 0
    assert cli(["provision", uri]) == 0

    assert "provisioned" in capsys.readouterr().out


def test_provision_of_redis_checks_the_connection(
    redis_store_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    unreachable = f"redis://agent:hunter2-secret@127.0.0.1:{free_port()}/0?timeout_s=0.5"

    assert cli(["provision", redis_store_uri]) == 0
    assert cli(["provision", unreachable]) == 1

    captured = capsys.readouterr()
    assert "hunter2-secret" not in captured.out + captured.err
    assert "unavailable" in captured.err


@pytest.mark.parametrize("backend", ["redis", "bigtable", "firestore"])
def test_inspect_lists_an_entitys_rows_by_prefix(
    backend: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    uri: str = request.getfixturevalue(f"{backend}_store_uri")
    entity = b"\x00entity"
    _seed(
        uri,
        entity,
        [MemoryRecord(k, k.encode(), 3, 4) for k in ["case/1", "case/2", "profile"]],
    )

    assert cli(["inspect", uri, "--entity-hex", entity.hex(), "--prefix", "case/"]) == 0

    out = capsys.readouterr().out
    assert '"case/1"' in out
    assert '"case/2"' in out
    assert "profile" not in out
    assert "2 row(s)" in out
