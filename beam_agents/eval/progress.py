"""How far an evaluation has got: a bar on a terminal, plain lines in a log.

An evaluation of a long log takes minutes per candidate, so the command
shows where it is: on a terminal, one line per candidate redrawn in place
(a bar, events so far of all, the rate and the time left); when stderr is
captured (CI, a test, a file) a plain line every tenth of the way, so logs
stay readable.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["EvalProgress"]

_WIDTH = 28


class EvalProgress:
    """`progress(candidate, events_entered, events_total)` for `run_eval`."""

    def __init__(
        self, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._live = bool(getattr(self._stream, "isatty", lambda: False)())
        self._started: dict[str, float] = {}
        self._tenths: dict[str, int] = {}

    def __call__(self, candidate: str, entered: int, total: int) -> None:
        now = self._clock()
        started = self._started.setdefault(candidate, now)
        done = total > 0 and entered >= total
        if self._live:
            end = "\n" if done else ""
            self._stream.write("\r" + self._bar(candidate, entered, total, now - started) + end)
            self._stream.flush()
            return
        tenth = 10 if done else (10 * entered // total if total else 0)
        if tenth <= self._tenths.get(candidate, -1):
            return
        self._tenths[candidate] = tenth
        print(f"eval: {candidate}: {entered}/{total} events", file=self._stream, flush=True)

    @staticmethod
    def _bar(candidate: str, entered: int, total: int, elapsed_s: float) -> str:
        share = min(1.0, entered / total) if total else 1.0
        filled = round(share * _WIDTH)
        rate = entered / elapsed_s if elapsed_s > 0 else 0.0
        left = f"{(total - entered) / rate:.0f} s left" if rate > 0 and entered < total else ""
        bar = "#" * filled + "." * (_WIDTH - filled)
        return f"{candidate:<14} [{bar}] {entered}/{total} events  {rate:.1f}/s  {left}".rstrip()
