"""`beam-agents migrate-store` copies rows verbatim between every pair of backends.

Rows are written through one backend, migrated with the CLI to every other
one, and read back as the exact envelope bytes (`read_raw`), so no backend
reinterprets, re-encodes or drops anything on the way.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from pathlib import Path

import pytest

from beam_agents.cli import main as cli
from beam_agents.memory.stores import MemoryRecord, MemoryStore, open_store
from beam_agents.memory.stores.base import Embedding
from beam_agents.memory.stores.envelope import encode_record

pytestmark = pytest.mark.filterwarnings("ignore:Connecting to Bigtable emulator:RuntimeWarning")

# memory:// is not here: it lives only inside the CLI process, which refuses it.
BACKENDS = ["sqlite", "postgres", "redis", "bigtable", "firestore"]
ROWS: list[tuple[bytes, MemoryRecord]] = [
    (b"", MemoryRecord("\x01", b"", 0, 0)),
    (b"\x00\xff", MemoryRecord("case/\U0001f600", b"\x00\x01\xff", 2**63 - 1, 2**63 - 1)),
    (b"a/b", MemoryRecord("..", b"dots", 3, 1_700_000_000_000)),
    (b"a", MemoryRecord("__x__", b"reserved", 4, 5)),
    (b"a", MemoryRecord("k%_*[", b"wild", 5, 6)),
    (b"big", MemoryRecord("working_memory", bytes(range(256)) * 800, 9, 9)),
    (
        b"a",
        MemoryRecord("note", b"n", 6, 7, Embedding.of("m", [0.1, -0.0, 1e-38, 3.4e38, 1 / 3])),
    ),
]


def _fresh_uri(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty, provisioned store of `backend` for this test (provisioned by the CLI)."""
    if backend == "sqlite":
        uri = f"sqlite+aiosqlite:///{tmp_path / f'{uuid.uuid4().hex}.db'}"
    elif backend == "postgres":
        uri = request.getfixturevalue("postgres_server").create_database()
    elif backend == "redis":
        return f"{request.getfixturevalue('redis_url')}?namespace=m{uuid.uuid4().hex}"
    elif backend == "bigtable":
        request.getfixturevalue("bigtable_emulator_host")
        uri = f"bigtable://test-project/test-instance/m{uuid.uuid4().hex}"
    else:
        request.getfixturevalue("firestore_emulator_host")
        uri = f"firestore://test-project/m{uuid.uuid4().hex}"
    assert cli(["provision", uri]) == 0
    return uri


async def _raw(store: MemoryStore, entity_key: bytes, key: str) -> bytes | None:
    return await store.read_raw(entity_key, key)  # type: ignore[attr-defined,no-any-return]


async def _write(uri: str) -> None:
    async with open_store(uri) as store:
        for entity_key, record in ROWS:
            assert await store.upsert(entity_key, record) is True


async def _read_back(uri: str) -> tuple[list[bytes | None], list[tuple[bytes, bytes]]]:
    async with open_store(uri) as store:
        raws = [await _raw(store, e, r.key) for e, r in ROWS]
        scanned = sorted([(e, encode_record(r)) async for e, r in store.scan()])
        return raws, scanned


@pytest.mark.parametrize(
    ("source", "target"),
    list(itertools.permutations(BACKENDS, 2)),
    ids=lambda name: str(name),
)
def test_migration_copies_envelopes_byte_for_byte(
    source: str, target: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    source_uri = _fresh_uri(source, request, tmp_path)
    target_uri = _fresh_uri(target, request, tmp_path)
    asyncio.run(_write(source_uri))

    assert cli(["migrate-store", source_uri, target_uri]) == 0
    raws, scanned = asyncio.run(_read_back(target_uri))

    assert raws == [encode_record(r) for _, r in ROWS]
    assert scanned == sorted((e, encode_record(r)) for e, r in ROWS)


@pytest.mark.parametrize("target", ["sqlite", "firestore"])
def test_migrated_vectors_are_recallable_across_entities(
    target: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Rows migrated from a store without a vector index land in the target's index."""
    source_uri = _fresh_uri("redis", request, tmp_path)
    target_uri = _fresh_uri(target, request, tmp_path)
    asyncio.run(_write(source_uri))
    assert cli(["migrate-store", source_uri, target_uri]) == 0
    (_, note) = ROWS[-1]
    assert note.embedding is not None

    async def nearest() -> list[tuple[bytes, str, bytes]]:
        async with open_store(target_uri) as store:
            found = await store.nearest(note.embedding, 5, "")  # type: ignore[arg-type]
            return [(n.entity_key, n.record.key, encode_record(n.record)) for n in found]

    assert asyncio.run(nearest()) == [(b"a", "note", encode_record(note))]
