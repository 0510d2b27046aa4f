"""Named failure points the chaos helpers arm in tests.

Production code asks `should_fail(name, key)` at a few commit-critical
places; with nothing armed that is one dict lookup. `beam_agents.testing.chaos`
arms them, process-wide, because on the DirectRunner the DoFn instances are
deserialized copies the test never holds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["COMMIT", "Failpoint", "InjectedFailure", "arm", "disarm", "should_fail"]

COMMIT = "commit"
"""After an activation's effects are staged, before the bundle commits them."""


class InjectedFailure(RuntimeError):
    """Raised by an armed failpoint: the runner sees a failed bundle and retries it."""


@dataclass
class Failpoint:
    """Fail `times` times for keys matching `match`; counts what fired."""

    match: Callable[[bytes, int], bool]
    times: int = 1
    fired: list[tuple[bytes, int]] = field(default_factory=list)


_lock = threading.Lock()
_armed: dict[str, Failpoint] = {}


def arm(name: str, failpoint: Failpoint) -> None:
    """Arm `name`; replaces what was armed there."""
    with _lock:
        _armed[name] = failpoint


def disarm(name: str) -> None:
    """Disarm `name` (no-op when unarmed)."""
    with _lock:
        _armed.pop(name, None)


def should_fail(name: str, entity_key: bytes, seq: int) -> None:
    """Raise `InjectedFailure` if `name` is armed for this activation and has fires left."""
    if not _armed:
        return
    with _lock:
        point = _armed.get(name)
        if point is None or len(point.fired) >= point.times or not point.match(entity_key, seq):
            return
        point.fired.append((entity_key, seq))
    raise InjectedFailure(f"failpoint {name!r} fired for {entity_key!r} at seq {seq}")
