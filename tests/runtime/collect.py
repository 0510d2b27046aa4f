"""Elements a test pipeline emitted, gathered in the test's own process.

Every runner these tests use (the FnApiRunner, the DirectRunner in batch
and streaming) runs the DoFns in this process, and this module is pickled
by reference, so a `Collect` on a worker appends to the caller's sink.
Each run draws a `run_id`, so concurrent or earlier runs never mix.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import apache_beam as beam

__all__ = ["Collect", "take", "take_run"]

_sinks: dict[tuple[str, str], list[Any]] = {}
_lock = threading.Lock()


class Collect(beam.DoFn):
    """Appends each element to the sink of (`run_id`, `name`)."""

    def __init__(self, run_id: str, name: str) -> None:
        super().__init__()
        self._key = (run_id, name)

    def process(self, element: Any) -> Iterator[None]:
        with _lock:
            _sinks.setdefault(self._key, []).append(element)
        return iter(())


def take(run_id: str, name: str) -> list[Any]:
    """What `Collect(run_id, name)` gathered (empty when nothing arrived), forgotten here."""
    with _lock:
        return _sinks.pop((run_id, name), [])


def take_run(run_id: str) -> dict[str, list[Any]]:
    """Everything the run's collectors gathered, by name, forgotten here."""
    with _lock:
        return {key[1]: _sinks.pop(key) for key in list(_sinks) if key[0] == run_id}
