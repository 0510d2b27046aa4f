"""The soft-cap counter lands in a real pipeline's metrics (no mocked Beam)."""

from __future__ import annotations

from collections.abc import Iterator

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions

from beam_agents.memory import SOFT_CAP_BYTES, Memory


class _FillMemoryDoFn(beam.DoFn):  # type: ignore[misc]
    """Any DoFn using the facade reports soft-cap crossings itself."""

    def process(self, size: int) -> Iterator[int]:
        memory = Memory(now_ms=0)
        for i in range(3):
            memory.set(f"chunk-{i}", b"x" * size)
        yield memory.size_bytes


@pytest.mark.pipeline
def test_soft_cap_counter_is_reported_in_pipeline_metrics() -> None:
    chunk = SOFT_CAP_BYTES // 3 + 1  # the third write crosses the soft cap
    pipeline = beam.Pipeline(runner="DirectRunner", options=PipelineOptions())
    _ = pipeline | beam.Create([chunk, chunk, 10]) | beam.ParDo(_FillMemoryDoFn())

    result = pipeline.run()
    result.wait_until_finish()

    query = result.metrics().query(
        MetricsFilter().with_namespace("beam_agents.memory").with_name("soft_cap_warnings")
    )
    counters = query["counters"]
    assert counters, "soft_cap_warnings was not reported"
    # One warning per facade instance that crossed: two of the three elements did.
    assert sum(c.committed for c in counters) == 2
