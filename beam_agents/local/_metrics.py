"""`bundle_scoped_metrics`: every bundle's counters reach the run's results on the DirectRunner.

The streaming DirectRunner of Beam 2.77 loses the metric updates of every
bundle after a step's first on a worker thread: its long-lived StateSampler
caches each step's execution state together with the first bundle's
MetricsContainer, so later bundles update a container that was already
committed. While active, each bundle's state is rebound to that bundle's
own container. Runners that deploy (Dataflow, Flink) never reach this code.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from apache_beam.runners.worker import statesampler

__all__ = ["bundle_scoped_metrics"]


@contextlib.contextmanager
def bundle_scoped_metrics() -> Iterator[None]:
    """While active, a step's execution state always reports to the current bundle."""
    original = statesampler.StateSampler.scoped_state

    def scoped_state(
        self: Any,
        name_context: Any,
        state_name: str,
        io_target: Any = None,
        metrics_container: Any = None,
    ) -> Any:
        state = original(self, name_context, state_name, io_target, metrics_container)
        if metrics_container is not None and state.metrics_container is not metrics_container:
            for name, cached in list(self._states_by_name.items()):
                if cached is state:
                    del self._states_by_name[name]
            state = original(self, name_context, state_name, io_target, metrics_container)
        return state

    statesampler.StateSampler.scoped_state = scoped_state  # type: ignore[method-assign]
    try:
        yield
    finally:
        statesampler.StateSampler.scoped_state = original  # type: ignore[method-assign]
