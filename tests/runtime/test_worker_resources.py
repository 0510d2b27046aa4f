"""What a worker owns (provider, store, loop) is built in setup() and closed in teardown() only."""

from __future__ import annotations

import asyncio
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from beam_agents import AgentConfig, RunAgent
from beam_agents.memory.stores.errors import StoreNotProvisionedError
from beam_agents.model import ModelProvider
from beam_agents.runtime._dofn import AgentDoFn
from beam_agents.tools import ToolCall, ToolHandler
from tests.runtime import agents

BUILT: list[str] = []


class _CountingProvider(ModelProvider):
    async def complete(self, request: object) -> object:
        raise AssertionError("never called: the pipeline is only built")


def counting_factory() -> _CountingProvider:
    """Module level so it pickles by reference; records every construction."""
    BUILT.append("provider")
    return _CountingProvider()


def test_building_the_graph_never_builds_the_provider_or_opens_the_store() -> None:
    """A launcher (Dataflow, a Flex Template) holds no model key and reaches no store."""
    BUILT.clear()
    config = AgentConfig(
        provider_factory=counting_factory,
        # A server nobody listens on: opening it at build time would hang or fail.
        longterm_memory="redis://127.0.0.1:9/0",
    )
    pipeline = beam.Pipeline(options=PipelineOptions(streaming=True))
    events = pipeline | beam.Create([("k", b"event")])
    result = events | RunAgent(agents.remember, config, lifecycle=True)
    assert result.outputs is not None

    proto = pipeline.to_runner_api()

    assert BUILT == []
    assert any("Agent" in t.unique_name for t in proto.components.transforms.values())


CLOSED: list[str] = []


class _ClosingProvider(ModelProvider):
    async def complete(self, request: object) -> object:
        raise AssertionError("never called")

    async def aclose(self) -> None:
        await asyncio.sleep(0)
        CLOSED.append("provider")


def closing_factory() -> _ClosingProvider:
    return _ClosingProvider()


def test_teardown_closes_a_provider_that_holds_connections() -> None:
    """Providers with `aclose()` (the OpenAI and Gemini clients) close on the DoFn's loop."""
    CLOSED.clear()
    dofn = AgentDoFn(agents.remember, AgentConfig(provider_factory=closing_factory), token="t")
    dofn.setup()

    dofn.teardown()

    assert CLOSED == ["provider"]


def test_a_provider_that_holds_nothing_inherits_an_aclose_that_does_nothing() -> None:
    """Teardown awaits the declared `aclose`; a `ModelProvider` subclass needs none of its own."""
    dofn = AgentDoFn(agents.remember, AgentConfig(provider_factory=counting_factory), token="t")
    dofn.setup()

    dofn.teardown()  # awaits _CountingProvider's inherited aclose() without error

    assert isinstance(counting_factory(), ModelProvider)


class _ClosingTool(ToolHandler):
    def __init__(self, name: str) -> None:
        self.name = name

    async def __call__(self, call: ToolCall) -> bytes:
        raise AssertionError("never called")

    async def aclose(self) -> None:
        await asyncio.sleep(0)
        CLOSED.append(self.name)


def test_teardown_closes_every_tool_handler_and_the_provider() -> None:
    CLOSED.clear()
    tools = {"page": _ClosingTool("page"), "ticket": _ClosingTool("ticket")}
    config = AgentConfig(provider_factory=closing_factory, tools=tools, tool_ledger="memory://w")
    dofn = AgentDoFn(agents.remember, config, token="t")
    dofn.setup()

    dofn.teardown()

    assert CLOSED == ["page", "ticket", "provider"]


def test_an_unprovisioned_tool_ledger_stops_setup_and_closes_what_it_opened(
    tmp_path: Path,
) -> None:
    CLOSED.clear()
    uri = f"sqlite+aiosqlite:///{tmp_path / 'ledger.db'}"
    config = AgentConfig(
        provider_factory=closing_factory, tools={"page": _ClosingTool("page")}, tool_ledger=uri
    )
    dofn = AgentDoFn(agents.remember, config, token="t")

    with pytest.raises(StoreNotProvisionedError, match="provision"):
        dofn.setup()

    assert CLOSED == ["page", "provider"]


class _FailingClose(_ClosingTool):
    async def aclose(self) -> None:
        await super().aclose()
        raise RuntimeError(f"{self.name} would not close")


def test_a_tool_that_fails_to_close_still_lets_the_provider_and_the_loop_close() -> None:
    CLOSED.clear()
    config = AgentConfig(
        provider_factory=closing_factory,
        tools={"page": _FailingClose("page")},
        tool_ledger="memory://w-failing",
    )
    dofn = AgentDoFn(agents.remember, config, token="t")
    dofn.setup()
    assert dofn._driver is not None
    loop = dofn._driver.loop

    with pytest.raises(RuntimeError, match="page would not close"):
        dofn.teardown()

    assert CLOSED == ["page", "provider"]
    assert loop.is_closed()
