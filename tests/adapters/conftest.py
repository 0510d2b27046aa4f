"""Adapter tests: a framework's extra may be missing, and a provider answers on loopback."""

from __future__ import annotations

import importlib.util

import pytest

from beam_agents.testing.pytest_plugin import service_unavailable
from beam_agents.testing.services import services_required


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


def _import_the_adk_adapter_while_collecting() -> None:
    """The ADK tests import the adapter inside the test, beside the threads a pipeline runs.

    pytest parses every beam_agents module it imports to rewrite its asserts,
    and CPython before 3.11.8 can fail such a parse ("AST constructor
    recursion depth mismatch", python/cpython#106905) when another thread
    builds an AST at the same moment. Collection runs on one thread.
    """
    if _has_adk():
        importlib.import_module("beam_agents.adapters.adk")


_import_the_adk_adapter_while_collecting()


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
