"""pytest fixtures that start real backing servers, for this repo's tests and users'.

Enable with `pytest_plugins = ("beam_agents.testing.pytest_plugin",)` in a
conftest. Each server fixture is session-scoped, binds a free loopback port
and is stopped at the end. A missing binary skips the tests that need it,
naming the binary, unless BEAM_AGENTS_REQUIRE_SERVICES=1, where it fails.
"""

from __future__ import annotations

from typing import NoReturn

import pytest

from beam_agents.testing.services import services_required

__all__ = ["service_unavailable"]


def service_unavailable(message: str) -> NoReturn:
    """Skip the requesting test, or fail it when every service is required."""
    if services_required():
        pytest.fail(f"{message} (BEAM_AGENTS_REQUIRE_SERVICES=1: required services must run)")
    pytest.skip(message)
