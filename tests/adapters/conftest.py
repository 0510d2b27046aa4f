"""Adapter tests: a framework's extra may be missing, and a provider answers on loopback."""

from __future__ import annotations

import pytest

from beam_agents.testing.services import services_required


@pytest.fixture(scope="session")
def httpserver_listen_address() -> tuple[str, int]:
    """Loopback only, on a free port."""
    return ("127.0.0.1", 0)


def require_langgraph() -> None:
    """At a test module's top: skip it without the langgraph extra.

    CI installs the extra on the default interpreter, the only one that runs
    these tests, and requires every service there: a missing extra then
    fails instead.
    """
    try:
        import langchain_core  # noqa: F401
        import langgraph  # noqa: F401
    except ImportError as exc:
        message = f"langgraph unavailable ({exc}): pip install -e '.[langgraph]'"
        if services_required():
            pytest.fail(f"{message} (BEAM_AGENTS_REQUIRE_SERVICES=1)", pytrace=False)
        pytest.skip(message, allow_module_level=True)
