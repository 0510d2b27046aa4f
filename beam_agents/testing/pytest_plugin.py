"""pytest fixtures that start real backing servers, for this repo's tests and users'.

Loaded by pytest itself wherever beam-agents is installed (a `pytest11`
entry point); `pytest_plugins = ("beam_agents.testing.pytest_plugin",)` in a
conftest does the same for a source checkout. Each server fixture is
session-scoped, binds a free loopback port and is stopped at the end. A
missing binary skips the tests that need it, naming the binary, unless
BEAM_AGENTS_REQUIRE_SERVICES=1, where it fails.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NoReturn, TypeVar

import pytest

from beam_agents.testing.services import services_required

if TYPE_CHECKING:
    from beam_agents.testing.services._process import ManagedServer
    from beam_agents.testing.services.bigtable import BigtableEmulator
    from beam_agents.testing.services.firestore import FirestoreEmulator
    from beam_agents.testing.services.postgres import PostgresServer
    from beam_agents.testing.services.pubsub import PubSubEmulator
    from beam_agents.testing.services.redis import RedisServer

__all__ = [
    "bigtable_emulator",
    "bigtable_emulator_host",
    "bigtable_store_uri",
    "firestore_emulator",
    "firestore_emulator_host",
    "firestore_store_uri",
    "postgres_database_url",
    "postgres_server",
    "postgres_url",
    "pubsub_emulator",
    "pubsub_emulator_host",
    "redis_server",
    "redis_store_uri",
    "redis_url",
    "serve",
    "service_unavailable",
]


S = TypeVar("S", bound="ManagedServer")


def service_unavailable(message: str) -> NoReturn:
    """Skip the requesting test, or fail it when every service is required."""
    if services_required():
        pytest.fail(f"{message} (BEAM_AGENTS_REQUIRE_SERVICES=1: required services must run)")
    pytest.skip(message)


def serve(build: Callable[[], S], what: str) -> Iterator[S]:
    """Start a server for a fixture's lifetime; a missing one skips or fails.

    For a test's own server too (one it stops or kills itself):
    `yield from serve(lambda: RedisServer(tmp_path, password=...), "redis-server")`.
    """
    from beam_agents.testing.services import ServiceUnavailableError

    try:
        server = build()
        server.start()
    except ServiceUnavailableError as exc:
        service_unavailable(f"{what} unavailable: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the session (initdb'd in a temp dir, trust auth)."""
    from beam_agents.testing.services import ServiceUnavailableError
    from beam_agents.testing.services.postgres import start_postgres

    try:
        server = start_postgres()
    except ServiceUnavailableError as exc:
        service_unavailable(f"PostgreSQL unavailable: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """`postgresql+asyncpg://` URL of the session server's `postgres` database."""
    return postgres_server.url()


@pytest.fixture
def postgres_database_url(postgres_server: PostgresServer) -> str:
    """URL of a fresh, empty database on the session server, for this test alone.

    A database costs ~0.1 s to create: fine for tests that alter the schema
    or must start from nothing; suites of many small tests are better off
    sharing one database and clearing the table between tests.
    """
    return postgres_server.create_database()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A `redis-server` for the session (no persistence); tests namespace their keys."""
    from beam_agents.testing.services.redis import RedisServer

    yield from serve(lambda: RedisServer(tmp_path_factory.mktemp("redis")), "redis-server")


@pytest.fixture(scope="session")
def redis_url(redis_server: RedisServer) -> str:
    """`redis://127.0.0.1:<port>/0` of the session server."""
    return redis_server.url


@pytest.fixture
def redis_store_uri(redis_url: str) -> str:
    """A Redis store URI with a namespace of its own: this test's rows alone."""
    return f"{redis_url}?namespace=t{uuid.uuid4().hex}"


@pytest.fixture(scope="session")
def bigtable_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BigtableEmulator]:
    """The Bigtable emulator (`cbtemulator`) for the session; use `bigtable_emulator_host`."""
    from beam_agents.testing.services.bigtable import BigtableEmulator

    yield from serve(
        lambda: BigtableEmulator(tmp_path_factory.mktemp("bigtable")), "Bigtable emulator"
    )


@pytest.fixture
def bigtable_emulator_host(
    bigtable_emulator: BigtableEmulator, monkeypatch: pytest.MonkeyPatch
) -> str:
    """Point Bigtable clients at the session emulator for this test only (loopback)."""
    monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", bigtable_emulator.host)
    return bigtable_emulator.host


@pytest.fixture
def bigtable_store_uri(bigtable_emulator_host: str) -> str:
    """A `bigtable://` URI of a fresh, provisioned emulator table for this test alone."""
    from beam_agents.memory.stores.bigtable import BigtableMemoryStore

    store = BigtableMemoryStore(
        project="test-project", instance="test-instance", table=f"t{uuid.uuid4().hex}"
    )

    async def provision() -> None:
        async with store:
            await store.provision()

    asyncio.run(provision())
    return f"bigtable://{store.project}/{store.instance}/{store.table_id}"


@pytest.fixture(scope="session")
def firestore_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FirestoreEmulator]:
    """The Firestore emulator for the session; use `firestore_emulator_host`."""
    from beam_agents.testing.services.firestore import FirestoreEmulator

    yield from serve(
        lambda: FirestoreEmulator(tmp_path_factory.mktemp("firestore")), "Firestore emulator"
    )


@pytest.fixture
def firestore_emulator_host(
    firestore_emulator: FirestoreEmulator, monkeypatch: pytest.MonkeyPatch
) -> str:
    """Point Firestore clients at the session emulator for this test only (loopback)."""
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", firestore_emulator.host)
    return firestore_emulator.host


@pytest.fixture
def firestore_store_uri(firestore_emulator_host: str) -> str:
    """A `firestore://` URI of a fresh emulator collection for this test alone."""
    return f"firestore://test-project/c{uuid.uuid4().hex}"


@pytest.fixture(scope="session")
def pubsub_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PubSubEmulator]:
    """The Pub/Sub emulator for the session; use `pubsub_emulator_host`."""
    from beam_agents.testing.services.pubsub import PubSubEmulator

    yield from serve(lambda: PubSubEmulator(tmp_path_factory.mktemp("pubsub")), "Pub/Sub emulator")


@pytest.fixture
def pubsub_emulator_host(pubsub_emulator: PubSubEmulator, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point Pub/Sub clients (and Beam's Pub/Sub I/O) at the session emulator for this test.

    Tests share the emulator: each creates topics and subscriptions under names of its own.
    """
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", pubsub_emulator.host)
    return pubsub_emulator.host
