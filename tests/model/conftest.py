"""Provider tests talk to a real HTTP server on loopback that speaks each wire format.

Every test here also proves the key never reaches a log record: the
`secret_key` fixture captures every record at DEBUG (the SDKs' own loggers
included) and fails the test if the key appears in any of them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

# The shared proofs in exchange.py assert; rewrite them like a test module's.
pytest.register_assert_rewrite("tests.model.exchange")

from tests.model.exchange import KEY_ENV  # noqa: E402


@pytest.fixture(scope="session")
def httpserver_listen_address() -> tuple[str, int]:
    """Loopback only, on a free port."""
    return ("127.0.0.1", 0)


@pytest.fixture
def secret_key(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> Iterator[str]:
    """A key in the environment that must show up in no log record of the test."""
    key = "sk-test-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
    monkeypatch.setenv(KEY_ENV, key)
    caplog.set_level(logging.DEBUG)
    yield key
    leaked = [r.name for r in caplog.records if key in r.getMessage()]
    assert leaked == [], f"the key appeared in log records of {leaked}"
