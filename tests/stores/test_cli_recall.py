"""`beam-agents recall` against real stores: an entity's records ranked as an activation ranks them.

Rows are written with vectors of the fake embedder (`fake:64`), the same
bytes a pipeline with that embedder flushes; the expected ranking is
recomputed here from those bytes with plain cosine arithmetic.
"""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from beam_agents.cli import main as cli
from beam_agents.memory.stores import Embedding, MemoryRecord, open_store
from beam_agents.model import embedder_from_spec
from beam_agents.testing.services import free_port

SPEC = "fake:64"
ENTITY = b"svc-004"
TEXTS = {
    "case/a": "error rate 9% on public endpoints, denied as a known flap",
    "case/b": "replication lag 410s on shard 2",
    "case/c": "disk usage 91% on the primary",
    "case/d": "replication lag 95s on shard 3, then a full outage",
    "note/e": "replication lag on shard 2, under another prefix",
}
QUERY = "replication lag 300s on shard 2"


def _embed(texts: list[str], spec: str = SPEC) -> list[Embedding]:
    embedder = embedder_from_spec(spec)()
    embedded = asyncio.run(embedder.embed(texts))
    return [Embedding.of(embedder.model_id, vector) for vector in embedded.vectors]


def _records() -> list[MemoryRecord]:
    keys = sorted(TEXTS)
    vectors = _embed([TEXTS[k] for k in keys])
    records = [
        MemoryRecord(k, f"value of {k}".encode(), i + 1, 1_796_025_600_000 + i * 60_000, v)
        for i, (k, v) in enumerate(zip(keys, vectors, strict=True))
    ]
    other = _embed(["replication lag 300s on shard 2"], "fake:8")[0]  # another model: skipped
    records.append(MemoryRecord("case/f", b"\xff\x00 binary", 9, 0, other))
    records.append(MemoryRecord("case/g", b"no vector", 10, 0))
    return records


def _seed(uri: str) -> None:
    records = _records()

    async def write() -> None:
        async with open_store(uri) as store:
            await store.upsert_many(ENTITY, records)
            # The same texts under another entity: never part of svc-004's recall.
            await store.upsert_many(b"svc-005", records)

    asyncio.run(write())


def _expected(prefix: str = "") -> list[tuple[str, float]]:
    """Cosine of the query against each fake:64 record under `prefix`, best first, ties by key."""
    embedded = _embed([QUERY])[0]
    query = embedded.values()
    found = []
    for record in _records():
        if not record.key.startswith(prefix) or record.embedding is None:
            continue
        if record.embedding.model_id != embedded.model_id:
            continue
        values = record.embedding.values()
        dot = math.fsum(a * b for a, b in zip(values, query, strict=True))
        norm = math.sqrt(math.fsum(a * a for a in values)) * math.sqrt(
            math.fsum(b * b for b in query)
        )
        found.append((record.key, dot / norm))
    return sorted(found, key=lambda kv: (-kv[1], kv[0]))


@pytest.fixture(params=["sqlite", "redis"])
def store_uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        uri = f"sqlite+aiosqlite:///{tmp_path / 'recall.sqlite'}"
    else:
        uri = request.getfixturevalue("redis_store_uri")
    assert cli(["provision", uri]) == 0
    _seed(uri)
    return uri


def test_recall_ranks_the_entitys_records_by_cosine_to_the_query(
    store_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()

    assert cli(["recall", store_uri, "svc-004", QUERY, "--k", "3", "--embedder", SPEC]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["rank", "key", "score", "updated_at", "value"]
    rows = [line.split() for line in lines[1:4]]
    expected = _expected()[:3]
    assert [(int(r[0]), json.loads(r[1]), r[2]) for r in rows] == [
        (rank, key, f"{score:.6f}") for rank, (key, score) in enumerate(expected, start=1)
    ]
    assert rows[0][1] == '"case/b"'
    assert rows[0][3] == "2026-11-30T08:01:00Z"
    assert '"value of case/b"' in lines[1]
    assert lines[4].startswith("3 of 5 record(s) embedded by fake-embed-64")
    assert "1 of another embedder skipped, 1 without a vector" in lines[4]


def test_recall_as_json_lines_under_a_prefix(
    store_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()

    argv = ["recall", store_uri, "svc-004", QUERY, "--prefix", "case/", "--json"]
    assert cli([*argv, "--embedder", SPEC]) == 0

    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    expected = _expected("case/")
    assert [(r["rank"], r["key"], r["score"]) for r in rows] == [
        (rank, key, round(score, 6)) for rank, (key, score) in enumerate(expected, start=1)
    ]
    assert rows[0]["value"] == "value of case/b"
    assert rows[0]["updated_at_ms"] == 1_796_025_660_000
    assert "under prefix 'case/'" in captured.err


def test_recall_without_an_embedder_uses_the_one_the_records_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"sqlite+aiosqlite:///{tmp_path / 'one-model.sqlite'}"
    assert cli(["provision", uri]) == 0
    records = [r for r in _records() if r.key != "case/f"]

    async def write() -> None:
        async with open_store(uri) as store:
            await store.upsert_many(ENTITY, records)

    asyncio.run(write())
    capsys.readouterr()

    assert cli(["recall", uri, "svc-004", QUERY, "--k", "1"]) == 0
    assert '"case/b"' in capsys.readouterr().out


def test_recall_asks_for_an_embedder_when_the_records_name_several(
    store_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()

    assert cli(["recall", store_uri, "svc-004", QUERY]) == 2

    err = capsys.readouterr().err
    assert "--embedder SPEC is needed" in err
    assert "fake-embed-64" in err
    assert "fake-embed-8" in err


def test_recall_reads_a_hex_entity_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    uri = f"sqlite+aiosqlite:///{tmp_path / 'hex.sqlite'}"
    assert cli(["provision", uri]) == 0
    records = _records()

    async def write() -> None:
        async with open_store(uri) as store:
            await store.upsert_many(b"\x00\xfe", records)

    asyncio.run(write())
    capsys.readouterr()

    assert cli(["recall", uri, "00fe", QUERY, "--entity-hex", "--embedder", SPEC]) == 0
    assert '"case/b"' in capsys.readouterr().out
    assert cli(["recall", uri, "zz", QUERY, "--entity-hex", "--embedder", SPEC]) == 2
    assert "ENTITY is not hex" in capsys.readouterr().err


def test_recall_shows_a_time_past_year_9999_as_its_last_second(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A save from an event at the end of Beam's global window keeps that time (about year
    294,247) as its `updated_at_ms`; the table and the JSON lines show 9999's last second."""
    uri = f"sqlite+aiosqlite:///{tmp_path / 'late.sqlite'}"
    assert cli(["provision", uri]) == 0
    window_end_ms = 9_223_371_950_454_775
    (vector,) = _embed([TEXTS["case/b"]])
    late = MemoryRecord("case/b", b"late", 1, window_end_ms, vector)

    async def write() -> None:
        async with open_store(uri) as store:
            await store.upsert_many(ENTITY, [late])

    asyncio.run(write())
    capsys.readouterr()

    assert cli(["recall", uri, "svc-004", QUERY, "--embedder", SPEC]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[3] == "9999-12-31T23:59:59Z"
    assert cli(["recall", uri, "svc-004", QUERY, "--embedder", SPEC, "--json"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (row["updated_at_ms"], row["updated_at"]) == (window_end_ms, "9999-12-31T23:59:59Z")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--k", "0"], "--k: k must be an int in [1, 100]"),
        (["--k", "101"], "--k: k must be an int in [1, 100]"),
        (["--min-score", "2"], "--min-score: min_score must be None or a number in [-1, 1]"),
        (["--embedder", "nonsense:model"], "--embedder:"),
    ],
)
def test_recall_refuses_bad_arguments_by_name(
    tmp_path: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"sqlite+aiosqlite:///{tmp_path / 'bad.sqlite'}"
    assert cli(["provision", uri]) == 0
    _seed(uri)
    capsys.readouterr()

    assert cli(["recall", uri, "svc-004", QUERY, "--embedder", SPEC, *argv]) == 2
    assert message in capsys.readouterr().err


def test_recall_of_a_missing_sqlite_file_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "typo.sqlite"

    assert cli(["recall", f"sqlite+aiosqlite:///{path}", "e", QUERY, "--embedder", SPEC]) == 1

    assert "no SQLite database" in capsys.readouterr().err
    assert not path.exists()


def test_recall_of_an_unreachable_redis_never_shows_its_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    uri = f"redis://agent:hunter2-secret@127.0.0.1:{free_port()}/0?timeout_s=0.5"

    assert cli(["recall", uri, "e", QUERY, "--embedder", SPEC]) == 1

    captured = capsys.readouterr()
    assert "hunter2-secret" not in captured.out + captured.err
    assert "beam-agents: error:" in captured.err


def test_recall_help_imports_neither_apache_beam_nor_numpy(tmp_path: Path) -> None:
    """The command is registered in the parser `beam-agents --help` builds: it must stay cheap."""
    code = """
        import sys
        from beam_agents.cli import main
        assert main(["recall", "--help"]) == 0
        heavy = [m for m in sys.modules if m.split(".")[0] in ("apache_beam", "numpy")]
        print(sorted(heavy))
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert "STORE ENTITY QUERY" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_inspect_decodes_working_memory_flushed_under_a_key_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`FlushToLongterm(key="history/working_memory")`, as the triage app flushes for recall."""
    from beam_agents.memory import Memory

    uri = f"sqlite+aiosqlite:///{tmp_path / 'flushed.sqlite'}"
    assert cli(["provision", uri]) == 0
    memory = Memory(now_ms=0)
    memory.set("profile", b"the service's totals")
    value = memory.to_bytes()

    async def write() -> None:
        async with open_store(uri) as store:
            await store.upsert(ENTITY, MemoryRecord("history/working_memory", value, 1, 0))

    asyncio.run(write())
    capsys.readouterr()

    assert cli(["inspect", uri, "--entity", "svc-004"]) == 0
    assert '"profile" scalar: "the service\'s totals"' in capsys.readouterr().out
