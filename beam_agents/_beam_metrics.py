"""Beam's metric cells, as typed handles.

Beam's `counter` and friends are unannotated, so every `.inc()`
through them is an untyped call to a strict type checker. These three
protocols say what the package uses of a cell, and the constructors hand
back Beam's own cells under those types: no wrapper object sits between an
activation and the metric it updates.
"""

from __future__ import annotations

from typing import Protocol, cast

from apache_beam.metrics.metric import Metrics

__all__ = ["Counter", "Distribution", "Gauge", "counter", "distribution", "gauge"]


class Counter(Protocol):
    """A sum the runner aggregates across workers."""

    def inc(self, n: int = 1) -> None: ...


class Gauge(Protocol):
    """The latest value a worker saw."""

    def set(self, value: int) -> None: ...


class Distribution(Protocol):
    """Count, sum, min and max of the values reported."""

    def update(self, value: int) -> None: ...


def counter(namespace: str, name: str) -> Counter:
    """Beam's counter `namespace:name`."""
    return cast(Counter, Metrics.counter(namespace, name))


def gauge(namespace: str, name: str) -> Gauge:
    """Beam's gauge `namespace:name`."""
    return cast(Gauge, Metrics.gauge(namespace, name))


def distribution(namespace: str, name: str) -> Distribution:
    """Beam's distribution `namespace:name`."""
    return cast(Distribution, Metrics.distribution(namespace, name))
