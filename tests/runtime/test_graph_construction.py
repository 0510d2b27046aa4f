"""Building a pipeline touches nothing a worker owns: no provider, no store, no loop."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from beam_agents import AgentConfig, RunAgent
from tests.runtime import agents

BUILT: list[str] = []


class _CountingProvider:
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
