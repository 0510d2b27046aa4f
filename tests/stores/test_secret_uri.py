"""`secretmanager://` store URIs: validated offline, read where the store opens, never echoed."""

from __future__ import annotations

import asyncio
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.auth.compute_engine import _metadata

from beam_agents import ActivationContext, AgentConfig, Complete
from beam_agents.memory.stores import (
    InvalidStoreURIError,
    MemoryRecord,
    StoreError,
    open_store,
    parse_store_uri,
)
from beam_agents.model import FakeLLM
from beam_agents.testing.pytest_plugin import serve
from beam_agents.testing.services.redis import RedisServer
from beam_agents.testing.services.secret_manager import SecretManagerServer
from beam_agents.testing.streaming import Script, run_script

ROOT = Path(__file__).parents[2]
PASSWORD = "Rotated-Pw-7c1e"
VERSION = "projects/acme-prod/secrets/triage-longterm/versions/3"
SECRET_URI = f"secretmanager://{VERSION}"
RECORD = MemoryRecord("profile", b"from a secret", 4, 2_000)


def _fake_model() -> FakeLLM:
    return FakeLLM([])


async def remember_event(ctx: ActivationContext) -> Complete:
    """Saves each event under `last`: one long-term row per entity."""
    ctx.memory.longterm.save("last", ctx.event)
    return Complete(output=b"saved")


@pytest.fixture(scope="module")
def auth_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A redis-server that requires AUTH: its URL carries a password, like Memorystore's."""
    directory = tmp_path_factory.mktemp("redis-auth")
    yield from serve(lambda: RedisServer(directory, password=PASSWORD), "redis-server")


@pytest.fixture
def no_google_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ADC anywhere, and the metadata server looked for on a dead loopback port."""
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    monkeypatch.setattr(_metadata, "_NO_GCE_CHECK", True)


def _round_trip(uri: str) -> MemoryRecord | None:
    async def body() -> MemoryRecord | None:
        async with open_store(uri) as store:
            await store.upsert(b"svc", RECORD)
            return await store.load(b"svc", "profile")

    return asyncio.run(asyncio.wait_for(body(), 30))


def _open_failure(uri: str) -> InvalidStoreURIError:
    with pytest.raises(InvalidStoreURIError) as raised:
        open_store(uri)
    return raised.value


# --- the grammar, on the machine that builds the pipeline --------------------------------


@pytest.mark.parametrize("version", ["latest", "1", "42"])
def test_a_secret_uri_parses_to_the_version_it_names(version: str) -> None:
    resource = f"projects/acme-prod/secrets/triage-longterm/versions/{version}"
    parsed = parse_store_uri(f"secretmanager://{resource}")

    assert (parsed.backend, parsed.secret_version) == ("secret", resource)
    assert pickle.loads(pickle.dumps(parsed)) == parsed


@pytest.mark.parametrize(
    "uri",
    [
        "secretmanager://",
        "secretmanager://projects/p/secrets/s",
        "secretmanager://projects/p/secrets/s/versions/",
        "secretmanager://projects/p/secrets/s/versions/0",
        "secretmanager://projects/p/secrets/s/versions/v1",
        "secretmanager://projects/p/secrets/a/b/versions/1",
        "secretmanager://projects/p/secrets/s/versions/1?x=y",
        "secretmanager://:pw@projects/p/secrets/s/versions/1",
    ],
)
def test_a_malformed_secret_uri_fails_when_the_config_is_built(uri: str) -> None:
    with pytest.raises(InvalidStoreURIError, match=r"AgentConfig\.longterm_memory: secretmanager"):
        AgentConfig(provider_factory=_fake_model, longterm_memory=uri)


def test_a_config_holding_a_secret_uri_validates_without_any_client_library() -> None:
    """AgentConfig accepts the form where no store client, nor Secret Manager's, is importable."""
    script = textwrap.dedent(
        f"""
        import importlib.abc
        import sys

        BLOCKED = ("redis", "google.cloud.secretmanager", "google.cloud.secretmanager_v1",
                   "google.cloud.bigtable", "google.cloud.firestore", "sqlalchemy",
                   "asyncpg", "aiosqlite", "grpc")

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if any(name == b or name.startswith(b + ".") for b in BLOCKED):
                    raise ImportError(f"blocked: {{name}}")
                return None

        sys.meta_path.insert(0, Block())
        from beam_agents.memory.stores import parse_store_uri

        assert parse_store_uri({SECRET_URI!r}).backend == "secret"
        loaded = [m for m in sys.modules if any(m == b or m.startswith(b + ".") for b in BLOCKED)]
        assert not loaded, loaded
        print("validated")
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
    assert "validated" in done.stdout


# --- resolution, where the store opens ------------------------------------------------


def test_open_store_reads_the_uri_from_its_version_and_the_store_works(
    secret_manager: SecretManagerServer, auth_redis: RedisServer
) -> None:
    secret_manager.versions[VERSION] = f"{auth_redis.url}?namespace=secret-t1\n".encode()

    assert _round_trip(SECRET_URI) == RECORD
    assert secret_manager.requests == [VERSION]


def test_a_rotated_secret_is_picked_up_by_the_next_open(
    secret_manager: SecretManagerServer, auth_redis: RedisServer
) -> None:
    """Nothing caches the URI: a worker that restarts reads the current value."""
    secret_manager.versions[VERSION] = auth_redis.url_with(password="stale-pw").encode()
    stale = _open_failure_on_use(SECRET_URI)
    secret_manager.versions[VERSION] = f"{auth_redis.url}?namespace=secret-t2".encode()

    assert _round_trip(SECRET_URI) == RECORD
    assert "stale-pw" not in stale


def _open_failure_on_use(uri: str) -> str:
    async def body() -> None:
        async with open_store(uri) as store:
            await store.load(b"svc", "profile")

    with pytest.raises(StoreError) as raised:
        asyncio.run(asyncio.wait_for(body(), 30))
    return f"{raised.value!r} {raised.value}"


def test_a_missing_version_fails_naming_it(secret_manager: SecretManagerServer) -> None:
    error = _open_failure(SECRET_URI)

    assert f"the store URI: cannot read {VERSION}: NotFound" in str(error)
    assert error.field == "AgentConfig.longterm_memory"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (b"  \n", f"{VERSION} is empty"),
        (b"\xff\xfe", f"{VERSION} does not hold UTF-8 text"),
        (SECRET_URI.encode(), "holds another secretmanager:// URI"),
        (f"redsi://:{PASSWORD}@10.0.0.3:6378/0".encode(), f"the URI in {VERSION}: unknown scheme"),
    ],
)
def test_an_unusable_value_fails_naming_the_version_never_the_password(
    secret_manager: SecretManagerServer, value: bytes, problem: str
) -> None:
    secret_manager.versions[VERSION] = value
    error = _open_failure(SECRET_URI)

    assert problem in str(error)
    assert PASSWORD not in f"{error!r} {error}"


def test_without_google_credentials_the_read_fails_naming_the_version(
    no_google_credentials: None,
) -> None:
    """The real client, with nothing to authenticate as, fails before any value is seen."""
    error = _open_failure(SECRET_URI)

    assert f"the store URI: cannot read {VERSION}" in str(error)


# --- in a pipeline: the DoFn's setup() reads the secret -----------------------------------


@pytest.mark.pipeline
def test_a_running_agent_flushes_to_the_store_its_secret_names(
    secret_manager: SecretManagerServer, auth_redis: RedisServer
) -> None:
    """The config holds only the version; each DoFn instance reads the URI when it sets up."""
    stored = f"{auth_redis.url}?namespace=secret-pipeline"
    secret_manager.versions[VERSION] = stored.encode()
    config = AgentConfig(provider_factory=_fake_model, longterm_memory=SECRET_URI)
    assert PASSWORD not in repr(config)
    script = Script().events(("svc", b"disk full", 1_000)).watermark(1_001)

    run = run_script(remember_event, config, script)

    assert run.errors == []
    assert run.outputs == [(b"svc", b"saved")]
    assert secret_manager.requests, "no DoFn read the secret"
    assert set(secret_manager.requests) == {VERSION}

    async def read_back() -> MemoryRecord | None:
        async with open_store(stored) as store:
            return await store.load(b"svc", "last")

    saved = asyncio.run(asyncio.wait_for(read_back(), 30))
    assert saved is not None
    assert saved.value == b"disk full"
