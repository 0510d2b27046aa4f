"""A fake's call log, kept per name for the whole process.

Pipelines pickle their DoFns and build providers and embedders on the
workers, so a test cannot hold the instance it wants to inspect. The fakes
therefore log their calls here under their `name`: the test and every DoFn
instance in the same process (the DirectRunner) see one log.

The log also keeps when each call started and ended, relative to the others:
whether calls overlapped is a fact about their order, which a test can read
without timing anything (a clock would tell a loaded machine from a serial
runtime no better than a guess).
"""

from __future__ import annotations

import threading
from typing import Generic, Literal, TypeVar

__all__ = ["CallLog", "Step"]

T = TypeVar("T")

Step = tuple[Literal["start", "end"], int]
"""A call starting or ending, with its 1-based number in its name's log."""


class CallLog(Generic[T]):
    """Calls by name, safe to share between threads; one per kind of fake."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[str, list[T]] = {}
        self._steps: dict[str, list[Step]] = {}

    def record(self, name: str, call: T) -> int:
        """Log `call` under `name` as started; its number, how many calls that name has made."""
        with self._lock:
            log = self._calls.setdefault(name, [])
            log.append(call)
            self._steps.setdefault(name, []).append(("start", len(log)))
            return len(log)

    def end(self, name: str, number: int) -> None:
        """Log that call `number` of `name` ended: answered, failed or cancelled."""
        with self._lock:
            self._steps.setdefault(name, []).append(("end", number))

    def calls(self, name: str) -> list[T]:
        """Every call logged under `name`, in order."""
        with self._lock:
            return list(self._calls.get(name, ()))

    def count(self, name: str) -> int:
        """How many calls are logged under `name`."""
        with self._lock:
            return len(self._calls.get(name, ()))

    def steps(self, name: str) -> list[Step]:
        """The starts and ends of `name`'s calls, in the order they happened."""
        with self._lock:
            return list(self._steps.get(name, ()))

    def peak_in_flight(self, name: str) -> int:
        """The most of `name`'s calls that had started and not yet ended at one moment."""
        in_flight = peak = 0
        for kind, _ in self.steps(name):
            in_flight += 1 if kind == "start" else -1
            peak = max(peak, in_flight)
        return peak

    def reset(self, name: str) -> None:
        """Forget the calls logged under `name`."""
        with self._lock:
            self._calls.pop(name, None)
            self._steps.pop(name, None)
