"""The runtime's Beam metrics (namespace `beam_agents.runtime`).

Updated only on the Beam thread (see `driver`), so they land in the
pipeline result on every runner. Error counters are per reason:
`errors_<reason>`.
"""

from __future__ import annotations

from typing import Final

from apache_beam.metrics.metric import Metrics

__all__ = ["NAMESPACE", "count_error", "runtime_metrics"]

NAMESPACE: Final = "beam_agents.runtime"


class _RuntimeMetrics:
    def __init__(self) -> None:
        counter = Metrics.counter
        self.activations = counter(NAMESPACE, "activations")
        self.suspensions = counter(NAMESPACE, "suspensions")
        self.resumptions = counter(NAMESPACE, "resumptions")
        self.errors = counter(NAMESPACE, "errors")
        self.intents = counter(NAMESPACE, "intents")
        self.memory_writes = counter(NAMESPACE, "memory_writes")
        self.ttl_wipes = counter(NAMESPACE, "ttl_wipes")
        self.expire_flushes = counter(NAMESPACE, "expire_flushes")
        self.longterm_upserts = counter(NAMESPACE, "longterm_upserts")
        self.summarizations = counter(NAMESPACE, "summarizations")
        self.suspension_buffered = counter(NAMESPACE, "suspension_buffered")
        self.suspension_drained = counter(NAMESPACE, "suspension_drained")
        self.suspension_buffer_overflows = counter(NAMESPACE, "suspension_buffer_overflows")
        self.activation_micros = Metrics.distribution(NAMESPACE, "activation_micros")
        self.memory_bytes = Metrics.distribution(NAMESPACE, "memory_bytes")


runtime_metrics: Final = _RuntimeMetrics()
_by_reason: dict[str, object] = {}


def count_error(reason: str) -> None:
    """Count one dead letter, in total and under its reason."""
    runtime_metrics.errors.inc()  # type: ignore[no-untyped-call]
    counter = _by_reason.get(reason)
    if counter is None:
        counter = _by_reason[reason] = Metrics.counter(NAMESPACE, f"errors_{reason}")
    counter.inc()  # type: ignore[attr-defined]
