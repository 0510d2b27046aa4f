"""The store URI grammar: every valid form parses, every typo fails at config time."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from beam_agents.errors import ConfigurationError
from beam_agents.memory.stores import InvalidStoreURIError, StoreURI, parse_store_uri, redact_uri
from beam_agents.memory.stores.uri import check_cross_entity_recall

ROOT = Path(__file__).parents[2]
SECRET = "hunter2-Secret"


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("memory://", {"backend": "memory", "namespace": ""}),
        ("memory://case-17", {"backend": "memory", "namespace": "case-17"}),
        ("redis://localhost:6379/0", {"backend": "redis", "scheme": "redis"}),
        ("redis://:pw@10.0.0.3", {"backend": "redis"}),
        ("rediss://user:pw@cache.example.com:6380/2", {"backend": "redis", "scheme": "rediss"}),
        (
            "bigtable://my-project/my-instance/agent-memory",
            {
                "backend": "bigtable",
                "project": "my-project",
                "instance": "my-instance",
                "table": "agent-memory",
            },
        ),
        (
            "firestore://my-project/agent-memory",
            {"backend": "firestore", "project": "my-project", "collection": "agent-memory"},
        ),
        (
            "firestore://my-project/agent-memory?database=memories",
            {"backend": "firestore", "collection": "agent-memory", "database": "memories"},
        ),
        (
            "postgresql+asyncpg://app:pw@db.internal:5432/agents",
            {"backend": "sql", "dialect": "postgresql", "driver": "asyncpg"},
        ),
        ("postgresql+asyncpg:///agents?host=/cloudsql/p:r:i", {"backend": "sql"}),
        ("postgresql+psycopg://app@localhost/agents", {"backend": "sql", "driver": "psycopg"}),
        ("sqlite+aiosqlite:///relative/store.db", {"backend": "sql", "dialect": "sqlite"}),
        ("sqlite+aiosqlite:////abs/store.db", {"backend": "sql", "driver": "aiosqlite"}),
        ("sqlite+aiosqlite://", {"backend": "sql", "dialect": "sqlite"}),
    ],
)
def test_every_documented_form_parses(uri: str, expected: dict[str, str]) -> None:
    parsed = parse_store_uri(uri)

    assert parsed.uri == uri
    for field, value in expected.items():
        assert getattr(parsed, field) == value


def test_firestore_database_defaults_to_the_default_database() -> None:
    assert parse_store_uri("firestore://p/c").database == "(default)"


@pytest.mark.parametrize(
    ("uri", "hint"),
    [
        ("redsi://host:6379", "unknown scheme 'redsi'"),
        ("reddis://host", "unknown scheme"),
        ("postgresql://app@db/agents", "async driver"),
        ("postgresql+psycopg2://app@db/agents", "not an async driver"),
        ("postgres+asyncpg://app@db/agents", "did you mean 'postgresql'"),
        ("sqlite:///store.db", "async driver"),
        ("sqlite+pysqlite:///store.db", "not an async driver"),
        ("mysql+pymysql://app@db/agents", "not an async driver"),
        ("mysql+aiomysql://app:pw@db:3306/agents", "verified on postgresql and sqlite only"),
        ("mysql+asyncmy://app@db/agents", "verified on postgresql and sqlite only"),
        ("sqlite+aiosqlite://host/store.db", "no host"),
        ("postgresql+asyncpg://db:notaport/agents", "invalid port"),
        ("bigtable://p/i", "missing <table>"),
        ("bigtable://p", "missing <instance>"),
        ("bigtable://", "missing <project>"),
        ("bigtable://p//t", "missing <instance>"),
        ("bigtable://p/i/t/extra", "too many"),
        ("bigtable://p/i/t?app_profile=x", "no query"),
        ("bigtable://p/i/t%20x", "characters"),
        ("firestore://p", "missing <collection>"),
        ("firestore://p/c/doc", "too many"),
        ("firestore://p/c?db=x", "only ?database="),
        ("firestore://p/__c__", "reserved"),
        ("firestore://p/c?database=Bad_Name", "characters"),
        ("redis://", "needs a host"),
        ("redis://host:99999", "invalid port"),
        ("redis://host/notanumber", "database number"),
        ("memory://name?x=1", "no query"),
        ("localhost:6379", "not a URI"),
        ("", "not a URI"),
        ("://host", "not a URI"),
    ],
)
def test_typos_fail_at_config_time(uri: str, hint: str) -> None:
    with pytest.raises(InvalidStoreURIError) as caught:
        parse_store_uri(uri)

    assert hint in str(caught.value)


def test_uri_errors_are_configuration_errors_naming_the_config_field() -> None:
    with pytest.raises(InvalidStoreURIError) as caught:
        parse_store_uri("redsi://host")

    assert isinstance(caught.value, ConfigurationError)
    assert isinstance(caught.value, ValueError)
    assert caught.value.field == "AgentConfig.longterm_memory"
    assert str(caught.value).startswith("AgentConfig.longterm_memory: ")


def test_a_non_string_uri_is_a_configuration_error() -> None:
    with pytest.raises(InvalidStoreURIError):
        parse_store_uri(b"memory://")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "uri",
    [
        f"redsi://user:{SECRET}@host",
        f"postgresql://app:{SECRET}@db/agents",
        f"postgresql+psycopg2://app:{SECRET}@db/agents",
        f"postgresql+asyncpg://app:{SECRET}@db:bad/agents",
        f"redis://:{SECRET}@host:99999",
        f"postgresql+psycopg2://app@db/agents?password={SECRET}&ssl=1",
        f"app:{SECRET}@db/agents",
    ],
)
def test_uri_errors_never_contain_the_password(uri: str) -> None:
    with pytest.raises(InvalidStoreURIError) as caught:
        parse_store_uri(uri)

    assert SECRET not in str(caught.value)
    assert SECRET not in repr(caught.value)


@pytest.mark.parametrize(
    ("uri", "redacted"),
    [
        ("redis://:pw@host:6379/0", "redis://:***@host:6379/0"),
        ("rediss://user:pw@host", "rediss://user:***@host"),
        ("postgresql+asyncpg://app:pw@db/x", "postgresql+asyncpg://app:***@db/x"),
        ("postgresql+asyncpg://app:p@ss/w:rd@db/x", "postgresql+asyncpg://app:***@db/x"),
        ("postgresql+asyncpg://app@db/x?password=pw&ssl=1", "postgresql+asyncpg://app@db/x?password=***&ssl=1"),
        ("mysql+aiomysql://db/x?ssl=1&PASSWORD=pw", "mysql+aiomysql://db/x?ssl=1&PASSWORD=***"),
        ("postgresql+asyncpg://app@db/x", "postgresql+asyncpg://app@db/x"),
        ("bigtable://p/i/t", "bigtable://p/i/t"),
        ("memory://", "memory://"),
        ("app:pw@db", "app:***@db"),
    ],
)  # fmt: skip
def test_redact_uri_replaces_every_password(uri: str, redacted: str) -> None:
    assert redact_uri(uri) == redacted


def test_store_uri_repr_and_str_never_show_the_password() -> None:
    parsed = parse_store_uri(f"postgresql+asyncpg://app:{SECRET}@db/agents?password={SECRET}")

    for shown in (repr(parsed), str(parsed), parsed.redacted, f"{parsed}", f"{[parsed]}"):
        assert SECRET not in shown
    assert "app:***@db" in str(parsed)


def test_store_uri_is_a_picklable_value() -> None:
    parsed = parse_store_uri("firestore://p/c?database=db1")

    assert pickle.loads(pickle.dumps(parsed)) == parsed
    assert isinstance(parsed, StoreURI)
    assert hash(parsed) == hash(parse_store_uri("firestore://p/c?database=db1"))


def test_parsing_imports_no_client_library() -> None:
    """Every kind of URI parses in a process where no store client can be imported."""
    script = textwrap.dedent(
        """
        import importlib.abc
        import sys

        BLOCKED = ("redis", "google.cloud.bigtable", "google.cloud.firestore",
                   "sqlalchemy", "asyncpg", "aiosqlite", "aiomysql", "greenlet")

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if any(name == b or name.startswith(b + ".") for b in BLOCKED):
                    raise ImportError(f"blocked: {name}")
                return None

        sys.meta_path.insert(0, Block())
        from beam_agents.memory.stores import parse_store_uri

        for uri in ("memory://", "memory://x", "redis://h:6379/0", "rediss://:pw@h",
                    "bigtable://p/i/t", "firestore://p/c?database=d",
                    "postgresql+asyncpg://u:pw@h/db", "sqlite+aiosqlite:///x.db"):
            parse_store_uri(uri)
        loaded = [m for m in sys.modules if m.split(".")[0] in BLOCKED]
        assert not loaded, loaded
        print("parsed all")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert "parsed all" in done.stdout


@pytest.mark.parametrize(
    "uri",
    [
        "memory://x",
        "sqlite+aiosqlite:///store.db",
        "postgresql+asyncpg://app@localhost/db",
        "firestore://project/collection",
        "secretmanager://projects/p/secrets/s/versions/1",
    ],
)
def test_cross_entity_recall_is_accepted_where_a_vector_index_exists(uri: str) -> None:
    check_cross_entity_recall(uri)


@pytest.mark.parametrize("uri", ["redis://localhost:6379", "bigtable://p/i/t"])
def test_cross_entity_recall_is_refused_without_a_vector_index(uri: str) -> None:
    """The refusal names the field and the backends that can recall across entities."""
    with pytest.raises(ConfigurationError, match=r"AgentConfig\.cross_entity_recall") as caught:
        check_cross_entity_recall(uri)
    assert "Firestore" in str(caught.value)
    assert "pgvector" in str(caught.value)
