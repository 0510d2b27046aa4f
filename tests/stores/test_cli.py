"""The `beam-agents` command: provision, migrate-store and inspect against real stores."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import select
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

import pytest

import beam_agents
from beam_agents.cli import main
from beam_agents.cli._progress import Progress
from beam_agents.memory import Memory
from beam_agents.memory.stores import (
    InMemoryMemoryStore,
    MemoryRecord,
    MemoryStore,
    StoreError,
    open_store,
)
from beam_agents.memory.stores.envelope import encode_record
from beam_agents.memory.stores.sql import SqlMemoryStore
from beam_agents.testing.services import free_port
from beam_agents.testing.services.postgres import PostgresServer

ROOT = Path(__file__).parents[2]
PASSWORD = "cli-S3cret-pw"

ROWS: dict[bytes, list[MemoryRecord]] = {
    b"user-1": [
        MemoryRecord("profile", b'{"name": "Ada"}', 3, 1_700_000_000_000),
        MemoryRecord("case/2024-11", "résumé \U0001f600".encode(), 7, 1_700_000_000_500),
        MemoryRecord("case/2024-12", bytes(range(200)), 9, 1_700_000_001_000),
    ],
    b"\x00\xffbinary": [MemoryRecord("\x01", b"", 0, 0)],
    b"user-2": [MemoryRecord(f"log/{i:03d}", b"x" * i, i, i) for i in range(40)],
}


def _run(body: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(body(), 60))


def _fill(uri: str, *, provision: bool = False) -> None:
    async def body() -> None:
        store = open_store(uri)
        if provision:
            await store.provision()
        for entity, records in ROWS.items():
            await store.upsert_many(entity, records)
        await store.close()

    _run(body)


def _raw_rows(uri: str) -> dict[tuple[bytes, str], bytes]:
    """Every row's stored envelope bytes, read straight from the backend."""

    async def body() -> dict[tuple[bytes, str], bytes]:
        store = open_store(uri)
        keys = [(entity, record.key) async for entity, record in store.scan()]
        raw: dict[tuple[bytes, str], bytes] = {}
        for entity, key in keys:
            assert isinstance(store, SqlMemoryStore | InMemoryMemoryStore)
            found = await store.read_raw(entity, key)
            assert found is not None
            raw[(entity, key)] = found
        await store.close()
        return raw

    result: dict[tuple[bytes, str], bytes] = _run(body)
    return result


def _expected_raw() -> dict[tuple[bytes, str], bytes]:
    return {(e, r.key): encode_record(r) for e, records in ROWS.items() for r in records}


@pytest.fixture
def memory_uri() -> Iterator[str]:
    namespace = f"cli-{uuid.uuid4().hex}"
    yield f"memory://{namespace}"
    InMemoryMemoryStore.drop_namespace(namespace)


@pytest.fixture
def sqlite_uri(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"


@pytest.fixture
def postgres_uri(postgres_server: PostgresServer) -> str:
    """An unprovisioned database, addressed with a password (trust auth ignores it)."""
    name = f"t_{uuid.uuid4().hex}"
    postgres_server.create_database(name)
    return postgres_server.url(name, password=PASSWORD)


def test_provision_creates_the_table_and_is_idempotent(
    postgres_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["provision", postgres_uri]) == 0
    assert main(["provision", postgres_uri]) == 0
    _fill(postgres_uri)

    out = capsys.readouterr().out
    assert "provisioned postgresql+asyncpg://app:***@" in out
    assert PASSWORD not in out


def test_provision_of_an_unreachable_store_exits_1_with_the_password_redacted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    uri = f"postgresql+asyncpg://app:{PASSWORD}@127.0.0.1:{free_port()}/agents"

    assert main(["provision", uri]) == 1

    captured = capsys.readouterr()
    assert "app:***@127.0.0.1" in captured.err
    assert PASSWORD not in captured.err + captured.out


def test_provision_with_an_unknown_role_exits_1_naming_it(
    postgres_server: PostgresServer, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"postgresql+asyncpg://intruder:{PASSWORD}@127.0.0.1:{postgres_server.port}/postgres"

    assert main(["provision", uri]) == 1

    err = capsys.readouterr().err
    assert "intruder" in err
    assert PASSWORD not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["provision", f"redsi://user:{PASSWORD}@host"],
        ["provision", f"postgresql+psycopg2://app:{PASSWORD}@db/x"],
        ["inspect", "memory://", "--entity-hex", "zz"],
        ["inspect", "memory://", "--entity", "e", "--limit", "0"],
        ["inspect", "memory://"],
        ["migrate-store", "memory://"],
        ["frobnicate"],
    ],
)
def test_usage_and_configuration_errors_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2

    assert PASSWORD not in capsys.readouterr().err


def test_store_error_exits_1_and_points_at_provision(
    sqlite_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", sqlite_uri, "--entity", "user-1"]) == 1

    assert "beam-agents provision" in capsys.readouterr().err


def test_migrate_copies_rows_byte_identically_into_postgres(
    sqlite_uri: str, postgres_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = sqlite_uri
    _fill(source, provision=True)
    assert main(["provision", postgres_uri]) == 0

    assert main(["migrate-store", source, postgres_uri, "--batch-size", "7"]) == 0

    assert _raw_rows(postgres_uri) == _raw_rows(source) == _expected_raw()
    captured = capsys.readouterr()
    total = sum(len(records) for records in ROWS.values())
    assert f"rows read {total}, applied {total}, skipped by seq guard 0" in captured.out
    assert f"read {total} rows, done" in captured.err
    assert PASSWORD not in captured.out + captured.err


def test_migrate_is_resumable_and_never_regresses_newer_rows(
    sqlite_uri: str, postgres_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Re-running re-applies identical rows; a row already newer in the target is skipped."""
    _fill(sqlite_uri, provision=True)
    main(["provision", postgres_uri])
    newer = MemoryRecord("profile", b"newer", 4, 1_800_000_000_000)

    async def write_newer() -> None:
        target = open_store(postgres_uri)
        await target.upsert(b"user-1", newer)
        await target.close()

    _run(write_newer)
    assert main(["migrate-store", sqlite_uri, postgres_uri]) == 0
    assert main(["migrate-store", sqlite_uri, postgres_uri]) == 0

    total = sum(len(records) for records in ROWS.values())
    reports = [line for line in capsys.readouterr().out.splitlines() if "migrated" in line]
    assert len(reports) == 2
    assert all(f"applied {total - 1}, skipped by seq guard 1" in line for line in reports)
    expected = _expected_raw() | {(b"user-1", "profile"): encode_record(newer)}
    assert _raw_rows(postgres_uri) == expected


def test_inspect_lists_an_entitys_rows_in_key_order_with_previews(
    memory_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(memory_uri)

    assert main(["inspect", memory_uri, "--entity", "user-1"]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["key", "seq", "updated_at_ms", "bytes", "value"]
    assert [line.split()[0] for line in lines[1:4]] == [
        '"case/2024-11"',
        '"case/2024-12"',
        '"profile"',
    ]
    assert '"résumé \U0001f600"' in lines[1]
    assert "0x000102030405" in lines[2]
    assert "1700000001000" in lines[2]
    assert '"{\\"name\\": \\"Ada\\"}"' in lines[3]
    assert lines[4].startswith("3 row(s) of entity b'user-1' in memory://")


def test_inspect_takes_hex_entities_prefixes_and_limits(
    memory_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(memory_uri)

    assert main(["inspect", memory_uri, "--entity-hex", "00ff62696e617279"]) == 0
    assert "1 row(s) of entity b'\\x00\\xffbinary'" in capsys.readouterr().out
    assert main(["inspect", memory_uri, "--entity", "user-2", "--prefix", "log/01"]) == 0
    assert "10 row(s)" in capsys.readouterr().out
    assert main(["inspect", memory_uri, "--entity", "user-2", "--limit", "5"]) == 0
    out = capsys.readouterr().out
    assert "5 row(s)" in out
    assert "limit reached" in out


def test_the_command_runs_as_a_module(sqlite_uri: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "beam_agents.cli", "provision", sqlite_uri],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert "provisioned sqlite+aiosqlite://" in done.stdout


def test_migrate_progress_into_a_log_is_whole_lines_without_carriage_returns(
    sqlite_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(sqlite_uri, provision=True)
    target = f"sqlite+aiosqlite:///{tmp_path / 'target.db'}"
    assert main(["provision", target]) == 0

    assert main(["migrate-store", sqlite_uri, target]) == 0

    err = capsys.readouterr().err
    assert "\r" not in err
    assert err.endswith("read 44 rows, done\n")


def test_progress_lines_into_a_log_come_every_few_seconds_with_the_total() -> None:
    stream, now = io.StringIO(), [100.0]
    progress = Progress(stream, 200, clock=lambda: now[0])

    for rows, at in ((1, 100.5), (50, 104.0), (100, 106.0), (150, 108.0), (199, 111.5)):
        now[0] = at
        progress.update(rows)
    progress.done(200)

    assert stream.getvalue().splitlines() == [
        "read 100 of 200 rows (50%)",
        "read 199 of 200 rows (100%)",
        "read 200 rows, done",
    ]


def _terminal() -> tuple[int, TextIO]:
    """A real pseudo-terminal: (the reading end, a text stream whose isatty() is True)."""
    reader, writer = os.openpty()
    stream = open(writer, "w", encoding="utf-8")  # noqa: SIM115 - closed by the caller
    assert stream.isatty()
    return reader, stream


def _drain(reader: int) -> str:
    chunks = []
    while select.select([reader], [], [], 0.2)[0]:
        try:
            chunk = os.read(reader, 65536)
        except OSError:  # EIO: the terminal's other end is closed and all was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(reader)
    return b"".join(chunks).decode()


def test_progress_on_a_terminal_is_a_bar_with_the_total() -> None:
    reader, stream = _terminal()
    now = [0.0]
    progress = Progress(stream, 200, clock=lambda: now[0])

    for rows in (1, 2, 100):
        progress.update(rows)
        now[0] += 1
    progress.done(200)
    stream.close()

    shown = _drain(reader).replace("\x1b[K", "")
    assert f"\r[{'#' * 15}{'-' * 15}]  50% 100/200 rows" in shown
    assert shown.endswith("\rread 200 rows, done\r\n")  # the tty turns \n into \r\n


def test_a_migration_error_on_a_terminal_starts_on_its_own_line(
    sqlite_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(sqlite_uri, provision=True)
    unprovisioned = tmp_path / "unprovisioned.db"
    unprovisioned.touch()
    reader, stream = _terminal()
    monkeypatch.setattr(sys, "stderr", stream)

    code = main(["migrate-store", sqlite_uri, f"sqlite+aiosqlite:///{unprovisioned}"])
    stream.close()

    shown = _drain(reader)
    assert code == 1
    assert "rows ..." in shown or "rows\x1b[K" in shown
    assert "\r\nbeam-agents: error: " in shown
    assert "beam-agents provision" in shown


def test_inspect_of_a_missing_sqlite_file_fails_without_creating_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo.db"

    assert main(["inspect", f"sqlite+aiosqlite:///{missing}", "--entity", "e"]) == 1

    assert not missing.exists()
    err = capsys.readouterr().err
    assert f"URI: no SQLite database at '{missing}' (nothing was created)" in err


@pytest.mark.parametrize(
    ("source", "target", "reason"),
    [
        ("{db}", "{db}", "FROM and TO name the same store"),
        ("{db}", "{db_relative}", "FROM and TO name the same store"),
        ("memory://x", "{db}", "FROM: memory://x lives only inside this beam-agents process"),
        ("{db}", "memory://", "TO: memory:// lives only inside this beam-agents process"),
        ("{db}", "sqlite+aiosqlite://", "TO: sqlite+aiosqlite:// lives only inside"),
    ],
    ids=["same-uri", "same-file", "memory-from", "memory-to", "in-memory-sqlite-to"],
)
def test_migrate_store_refuses_pairs_that_cannot_be_a_migration(
    source: str,
    target: str,
    reason: str,
    sqlite_uri: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fill(sqlite_uri, provision=True)
    db_file = Path(sqlite_uri.removeprefix("sqlite+aiosqlite:///"))
    monkeypatch.chdir(db_file.parent)
    names = {"db": sqlite_uri, "db_relative": f"sqlite+aiosqlite:///{db_file.name}"}

    code = main(["migrate-store", source.format(**names), target.format(**names)])

    assert code == 2
    assert reason in capsys.readouterr().err


@pytest.mark.parametrize(
    "uri",
    ["sqlite+aiosqlite://", "sqlite+aiosqlite:///:memory:", "sqlite+aiosqlite:///x?mode=memory"],
)
def test_provision_refuses_an_in_memory_sqlite_database(
    uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["provision", uri]) == 2

    err = capsys.readouterr().err
    assert "URI: an in-memory SQLite database lives only in the connection pool" in err
    assert "vanishes when it exits" in err


@pytest.mark.parametrize(
    ("argv", "argument"),
    [
        (["provision", f"redsi://user:{PASSWORD}@host"], "URI"),
        (["inspect", "bigtable://p/i", "--entity", "e"], "URI"),
        (["migrate-store", "postgresql://db/x", "memory://"], "FROM"),
        (["migrate-store", "sqlite+aiosqlite:///a.db", "mysql+aiomysql://db/x"], "TO"),
    ],
)
def test_cli_errors_name_the_argument_not_the_config_field(
    argv: list[str], argument: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2

    err = capsys.readouterr().err
    assert err.startswith(f"beam-agents: error: {argument}: ")
    assert "AgentConfig" not in err
    assert PASSWORD not in err


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0

    assert capsys.readouterr().out == f"beam-agents {beam_agents.__version__}\n"


def test_migrate_store_closes_from_when_to_cannot_be_opened(
    sqlite_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FROM is opened first; a TO that cannot be opened must not leave FROM open."""
    from beam_agents.memory.stores import factory

    _fill(sqlite_uri, provision=True)
    opened: list[MemoryStore] = []
    real_open_store = factory.open_store

    def recording_open_store(uri: Any) -> MemoryStore:
        store = real_open_store(uri)
        opened.append(store)
        return store

    monkeypatch.setattr(factory, "open_store", recording_open_store)
    missing = f"sqlite+aiosqlite:///{tmp_path / 'missing.db'}"

    assert main(["migrate-store", sqlite_uri, missing]) == 1

    (source,) = opened
    with pytest.raises(StoreError, match="is closed"):
        _run(lambda: source.load(b"user-1", "profile"))


def test_inspect_json_prints_one_record_per_line_with_the_values_as_they_are(
    memory_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(memory_uri)

    assert main(["inspect", memory_uri, "--entity", "user-1", "--json"]) == 0

    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert [row["key"] for row in rows] == ["case/2024-11", "case/2024-12", "profile"]
    assert rows[0] == {
        "entity": "user-1",
        "key": "case/2024-11",
        "seq": 7,
        "updated_at_ms": 1_700_000_000_500,
        "bytes": len("résumé \U0001f600".encode()),
        "value": "résumé \U0001f600",
    }
    assert base64.b64decode(rows[1]["value_b64"]) == bytes(range(200))
    assert "value" not in rows[1]
    assert "3 row(s) of entity b'user-1'" in captured.err


def test_inspect_full_shows_a_long_value_whole(
    memory_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(memory_uri)

    assert main(["inspect", memory_uri, "--entity", "user-1", "--prefix", "case/2024-12"]) == 0
    cut = capsys.readouterr().out
    assert (
        main(["inspect", memory_uri, "--entity", "user-1", "--prefix", "case/2024-12", "--full"])
        == 0
    )
    whole = capsys.readouterr().out

    assert bytes(range(200)).hex() not in cut
    assert "…" in cut
    assert "0x" + bytes(range(200)).hex() in whole


def test_inspect_entities_lists_each_entity_once_up_to_the_limit(
    memory_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(memory_uri)

    assert main(["inspect", memory_uri, "--entities"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "--entity-hex 00ff62696e617279",
        '--entity "user-1"',
        '--entity "user-2"',
        f"3 entity key(s) in {memory_uri}",
    ]
    assert main(["inspect", memory_uri, "--entities", "--limit", "2", "--json"]) == 0
    captured = capsys.readouterr()
    assert len([json.loads(line) for line in captured.out.splitlines()]) == 2
    assert "limit reached" in captured.err


def test_inspect_decodes_working_memory_into_its_entries(
    sqlite_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The row `FlushToLongterm` writes: a working-memory blob, shown entry by entry."""
    memory = Memory(now_ms=1_000)
    memory.set("profile", b'{"tier": "gold"}')
    memory.set("raw", b"\xff\x00")
    for item in (b"one", b"two", b"three", b"four"):
        memory.append("recent", item)
    record = MemoryRecord("working_memory", memory.to_bytes(), 5, 1_000)
    _run(lambda: _upsert(sqlite_uri, b"acct-1", record))

    assert main(["inspect", sqlite_uri, "--entity", "acct-1"]) == 0
    table = capsys.readouterr().out
    assert main(["inspect", sqlite_uri, "--entity", "acct-1", "--json"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]

    assert '    "profile" scalar: "{\\"tier\\": \\"gold\\"}"' in table
    assert '    "recent" ring of 4: ["one", "two", "three", … 1 more]' in table
    entries = {entry["key"]: entry for entry in row["entries"]}
    assert entries["profile"]["value"] == '{"tier": "gold"}'
    assert base64.b64decode(entries["raw"]["value_b64"]) == b"\xff\x00"
    assert [item["value"] for item in entries["recent"]["items"]] == ["one", "two", "three", "four"]
    assert {entry["kind"] for entry in row["entries"]} == {"scalar", "ring"}


async def _upsert(uri: str, entity: bytes, record: MemoryRecord) -> None:
    async with open_store(uri) as store:
        await store.provision()
        await store.upsert(entity, record)
