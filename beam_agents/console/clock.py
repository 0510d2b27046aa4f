"""A run's clock, published beside its records so the console counts in the run's time.

A live run replays event time faster than the wall clock (one hour per
minute by default), and its approval deadlines and TTL are set in that
same run time. A countdown on the wall clock would then be wrong by the
speed-up: the console reads `clock.json` in the run directory, which the
run rewrites a few times a second, and turns run time into the reader's
seconds. A run that writes no clock (a deployment, the demo's replay) is
counted on the wall clock, as before.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["CLOCK_FILE", "DRAINING", "ENDED", "RUNNING", "RunClock", "read_clock", "write_clock"]

CLOCK_FILE = "clock.json"
RUNNING, DRAINING, ENDED = "running", "draining", "ended"


@dataclass(frozen=True)
class RunClock:
    """Where a run's clock stood at `wall_ms`, and what it has fed so far."""

    speedup: float
    """Run milliseconds per wall millisecond."""
    run_ms: int
    """The run's clock (event time, and the processing time deadlines use) at `wall_ms`."""
    wall_ms: int
    approval_timeout_ms: int
    """How long an approval waits, in run milliseconds."""
    lag_ms: int = 0
    """How far (run milliseconds) the pipeline is behind the clock: the oldest alert it
    was fed and has not reached yet."""
    alerts_sent: int = 0
    alerts_total: int = 0
    first_ms: int = 0
    """Event time of the first alert (the run's start)."""
    last_ms: int = 0
    """Event time of the last alert."""
    state: str = RUNNING
    """`running`, `draining` (stopping: no new alerts), or `ended`."""

    def now_ms(self, wall_ms: int) -> int:
        """The run's clock at `wall_ms`: it moves on only while the run is running."""
        if self.state != RUNNING:
            return self.run_ms
        return self.run_ms + int(max(wall_ms - self.wall_ms, 0) * self.speedup)

    def wall_s(self, run_ms: float) -> float:
        """A span of run time in the reader's seconds."""
        return run_ms / self.speedup / 1000

    @property
    def lag_s(self) -> float:
        """The lag in the reader's seconds."""
        return self.wall_s(self.lag_ms)


def write_clock(directory: Path, clock: RunClock) -> None:
    """Replace `clock.json` whole (a reader never sees half of it)."""
    target = directory / CLOCK_FILE
    staging = directory / f".{CLOCK_FILE}.tmp"
    staging.write_text(json.dumps(asdict(clock), sort_keys=True) + "\n", encoding="utf-8")
    os.replace(staging, target)


def read_clock(directory: Path) -> RunClock | None:
    """The run's clock, or None when the run writes none (or it cannot be read)."""
    try:
        record: Any = json.loads((directory / CLOCK_FILE).read_text(encoding="utf-8"))
        return RunClock(**record)
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError, TypeError):
        return None
