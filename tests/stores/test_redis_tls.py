"""`rediss://` against a real TLS redis-server with a CA made in the test, and AUTH failures."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from beam_agents.cli import main
from beam_agents.memory.stores import (
    MemoryRecord,
    StoreError,
    StoreUnavailableError,
    open_store,
    redact_uri,
)
from beam_agents.testing.pytest_plugin import service_unavailable
from beam_agents.testing.services import ServiceUnavailableError
from beam_agents.testing.services.redis import RedisServer
from beam_agents.testing.services.tls import another_ca, make_certificates

PASSWORD = "tls-S3cret-pw"
RECORD = MemoryRecord("profile", b"over tls", 3, 1_000)


def _serve(workdir: Path, *, tls: bool) -> Iterator[RedisServer]:
    certificates = make_certificates(workdir / "certs") if tls else None
    try:
        server = RedisServer(workdir / "redis", password=PASSWORD, tls=certificates)
        server.start()
    except ServiceUnavailableError as exc:
        service_unavailable(f"redis-server (TLS={tls}) unavailable: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    yield from _serve(tmp_path_factory.mktemp("redis-tls"), tls=True)


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    yield from _serve(tmp_path_factory.mktemp("redis-auth"), tls=False)


def _round_trip(url: str) -> tuple[MemoryRecord | None, list[MemoryRecord]]:
    async def body() -> tuple[MemoryRecord | None, list[MemoryRecord]]:
        async with open_store(url) as store:
            await store.upsert(b"e", RECORD)
            return await store.load(b"e", "profile"), await store.search(b"e", "pro", 10)

    return asyncio.run(asyncio.wait_for(body(), 30))


def _failure(url: str) -> StoreError:
    with pytest.raises(StoreError) as caught:
        _round_trip(url)
    return caught.value


def test_rediss_round_trips_against_a_tls_server_verified_by_its_ca(
    tls_server: RedisServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = tls_server.url + "&namespace=tls"
    assert url.startswith(f"rediss://:{PASSWORD}@127.0.0.1:")

    assert _round_trip(url) == (RECORD, [RECORD])
    assert main(["provision", url]) == 0
    assert main(["inspect", url, "--entity", "e"]) == 0
    out = capsys.readouterr().out
    assert "1 row(s) of entity b'e' in rediss://:***@127.0.0.1:" in out
    assert PASSWORD not in out


def test_a_server_certificate_from_another_ca_is_a_clear_non_retryable_error(
    tls_server: RedisServer, tmp_path: Path
) -> None:
    url = tls_server.url_with(password=PASSWORD, ca_file=another_ca(tmp_path))

    error = _failure(url)

    assert not isinstance(error, StoreUnavailableError)  # retrying cannot fix it
    message = str(error)
    assert message.startswith(f"{redact_uri(url)}: TLS certificate verification failed")
    assert "ssl_ca_certs" in message
    assert PASSWORD not in message


@pytest.mark.parametrize("tls", [True, False], ids=["rediss", "redis"])
def test_a_missing_password_is_reported_as_an_authentication_failure(
    tls: bool, request: pytest.FixtureRequest
) -> None:
    server: RedisServer = request.getfixturevalue("tls_server" if tls else "plain_server")
    url = server.url_with(password=None)

    error = _failure(url)

    assert not isinstance(error, StoreUnavailableError)
    assert str(error) == (
        f"{url}: authentication failed during upsert: "
        "the server requires a password and the URI has none"
    )


@pytest.mark.parametrize("tls", [True, False], ids=["rediss", "redis"])
def test_a_wrong_password_is_reported_with_the_uri_redacted(
    tls: bool, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    server: RedisServer = request.getfixturevalue("tls_server" if tls else "plain_server")
    url = server.url_with(password="wrong-pw")

    error = _failure(url)

    assert str(error) == (
        f"{redact_uri(url)}: authentication failed during upsert: "
        "the server refused the user name and password in the URI"
    )
    assert "wrong-pw" not in str(error)
    assert main(["provision", url]) == 1
    err = capsys.readouterr().err
    assert "authentication failed during provision" in err
    assert "wrong-pw" not in err
