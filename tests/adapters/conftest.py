"""The adapter tests: the framework's extra, a loopback model server, a loopback pager."""

from __future__ import annotations

import importlib.util

import pytest

from beam_agents.testing.pytest_plugin import service_unavailable


@pytest.fixture(scope="session")
def httpserver_listen_address() -> tuple[str, int]:
    """Loopback only, on a free port."""
    return ("127.0.0.1", 0)


@pytest.fixture(autouse=True)
def _adk_installed(request: pytest.FixtureRequest) -> None:
    """ADK tests need the adk extra: skipped without it, failed when services are required."""
    module = request.node.module.__name__
    if "adk" in module and not module.endswith("_imports") and not _has_adk():
        service_unavailable("google-adk is not installed: pip install -e '.[adk]'")


def _has_adk() -> bool:
    try:
        return importlib.util.find_spec("google.adk") is not None
    except ModuleNotFoundError:
        return False
