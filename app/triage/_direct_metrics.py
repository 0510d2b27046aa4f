"""Beam metrics that survive a long streaming DirectRunner run.

The streaming DirectRunner of Beam 2.77 keeps a StateSampler per worker
thread whose cached per-step execution state holds on to the metrics
container of the first bundle that step ran; every later bundle's metric
updates go to a container that was already committed and are lost. The
summary of a demo run reads the runtime's counters (model calls, cache
hits, activations), so the replay rebinds each bundle's state to that
bundle's own container while it runs. Deployed runners do not use this
code path; the patch is undone when the replay ends.
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
    sampler = statesampler.StateSampler
    cached_lookup = sampler.scoped_state

    def rebinding_lookup(
        self: Any, name_context: Any, state_name: str, io_target: Any = None,
        metrics_container: Any = None,
    ) -> Any:  # fmt: skip
        state = cached_lookup(self, name_context, state_name, io_target, metrics_container)
        if metrics_container is None or state.metrics_container is metrics_container:
            return state
        stale = [name for name, held in self._states_by_name.items() if held is state]
        for name in stale:
            del self._states_by_name[name]
        return cached_lookup(self, name_context, state_name, io_target, metrics_container)

    sampler.scoped_state = rebinding_lookup  # type: ignore[method-assign]
    try:
        yield
    finally:
        sampler.scoped_state = cached_lookup  # type: ignore[method-assign]
