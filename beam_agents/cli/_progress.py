"""`Progress`: how a long copy reports itself on stderr, on a terminal or into a log."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, TextIO

__all__ = ["Progress"]

TTY_INTERVAL_S: Final = 0.2
PLAIN_INTERVAL_S: Final = 5.0
BAR_WIDTH: Final = 30


class Progress:
    """Migration progress on stderr: a bar on a terminal, plain lines otherwise.

    On a terminal the line is redrawn in place (with a bar and a percentage
    when the source could count its rows) a few times a second; into a file
    or pipe it writes a whole line every few seconds, never a carriage
    return. Either way the line is ended before anything else is printed.
    """

    def __init__(
        self,
        stream: TextIO,
        total: int | None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._total = total
        self._clock = clock
        self._tty = stream.isatty()
        self._interval = TTY_INTERVAL_S if self._tty else PLAIN_INTERVAL_S
        # A terminal shows the first row at once; a log gets its first line after an interval.
        self._last = float("-inf") if self._tty else clock()
        self._open_line = False

    def update(self, rows: int) -> None:
        now = self._clock()
        if now - self._last < self._interval:
            return
        self._last = now
        if self._tty:
            self._stream.write(f"\r{self._bar(rows)}\x1b[K")
            self._open_line = True
        else:
            self._stream.write(f"{self._plain(rows)}\n")
        self._stream.flush()

    def done(self, rows: int) -> None:
        lead = "\r" if self._open_line else ""
        tail = "\x1b[K" if self._tty else ""
        self._stream.write(f"{lead}read {rows} rows, done{tail}\n")
        self._open_line = False
        self._stream.flush()

    def abort(self) -> None:
        if self._open_line:
            self._stream.write("\n")
            self._open_line = False
            self._stream.flush()

    def _bar(self, rows: int) -> str:
        if not self._total:
            return f"read {rows} rows ..."
        fraction = min(rows / self._total, 1.0)
        filled = round(fraction * BAR_WIDTH)
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        return f"[{bar}] {fraction:4.0%} {rows}/{self._total} rows"

    def _plain(self, rows: int) -> str:
        if not self._total:
            return f"read {rows} rows ..."
        return f"read {rows} of {self._total} rows ({min(rows / self._total, 1.0):.0%})"
