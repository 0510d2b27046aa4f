"""A fake's call log, kept per name for the whole process.

Pipelines pickle their DoFns and build providers and embedders on the
workers, so a test cannot hold the instance it wants to inspect. The fakes
therefore log their calls here under their `name`: the test and every DoFn
instance in the same process (the DirectRunner) see one log.
"""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

__all__ = ["CallLog"]

T = TypeVar("T")


class CallLog(Generic[T]):
    """Calls by name, safe to share between threads; one per kind of fake."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[str, list[T]] = {}

    def record(self, name: str, call: T) -> int:
        """Log `call` under `name`; how many calls that name has made, this one included."""
        with self._lock:
            log = self._calls.setdefault(name, [])
            log.append(call)
            return len(log)

    def calls(self, name: str) -> list[T]:
        """Every call logged under `name`, in order."""
        with self._lock:
            return list(self._calls.get(name, ()))

    def count(self, name: str) -> int:
        """How many calls are logged under `name`."""
        with self._lock:
            return len(self._calls.get(name, ()))

    def reset(self, name: str) -> None:
        """Forget the calls logged under `name`."""
        with self._lock:
            self._calls.pop(name, None)
