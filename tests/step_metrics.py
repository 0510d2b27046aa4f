"""The metrics container a runner makes current while a step runs, for tests outside one."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from apache_beam.metrics.execution import MetricsContainer
from apache_beam.runners.common import NameContext
from apache_beam.runners.worker import statesampler
from apache_beam.utils.counters import CounterFactory

__all__ = ["step_metrics"]


@contextlib.contextmanager
def step_metrics() -> Iterator[MetricsContainer]:
    """Make a step's metrics container current on this thread, as a runner does."""
    sampler = statesampler.StateSampler("test", CounterFactory())
    statesampler.set_current_tracker(sampler)
    container = MetricsContainer("Agent")
    try:
        with sampler.scoped_state(NameContext("Agent"), "process", metrics_container=container):
            yield container
    finally:
        statesampler.set_current_tracker(None)
