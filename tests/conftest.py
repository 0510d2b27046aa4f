"""Shared test configuration: the service fixtures users can reuse too."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from beam_agents._connections import secret_sources as secret_module
from beam_agents.testing.services.secret_manager import SecretManagerServer

pytest_plugins = ("beam_agents.testing.pytest_plugin",)


@pytest.fixture
def secret_manager(monkeypatch: pytest.MonkeyPatch) -> Iterator[SecretManagerServer]:
    """A loopback Secret Manager; every secret reader's default client is pointed at it."""
    with SecretManagerServer({}) as server:
        monkeypatch.setattr(secret_module, "_default_client", lambda _version: server.client())
        yield server
