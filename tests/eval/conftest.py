"""Each evaluation test starts with an empty FakeLLM call log and no real tool calls."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.eval import agents


@pytest.fixture(autouse=True)
def fresh_model() -> Iterator[None]:
    agents.MODEL.reset()
    agents.REAL_TOOL_CALLS.clear()
    yield
    agents.MODEL.reset()
