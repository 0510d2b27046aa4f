"""Reading JSON-lines files as they grow, one complete line at a time.

A pipeline appends its records while the console reads them, so the last
line of a file may be half written: only lines ending in a newline are
taken, and the rest is read again next time. A file that shrank was
rewritten from the start (a new run in the same directory), and is read
again from its first byte.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

__all__ = ["JsonLinesFollower"]

_log = logging.getLogger(__name__)


class JsonLinesFollower:
    """The new JSON objects of one file since the last call to `read_new`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self.skipped = 0
        """Lines that were not JSON objects (counted, never fatal: the console keeps serving)."""

    def read_new(self) -> tuple[list[dict[str, Any]], bool]:
        """The records appended since last time, and whether the file restarted from empty."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return [], False
        restarted = size < self._offset
        if restarted:
            self._offset = 0
        if size == self._offset:
            return [], restarted
        with self.path.open("rb") as handle:
            handle.seek(self._offset)
            data = handle.read(size - self._offset)
        end = data.rfind(b"\n")
        if end < 0:
            return [], restarted
        self._offset += end + 1
        return self._parse(data[: end + 1]), restarted

    def _parse(self, data: bytes) -> list[dict[str, Any]]:
        records = []
        for line in data.splitlines():
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                record = None
            if isinstance(record, dict):
                records.append(record)
            else:
                self.skipped += 1
                _log.warning("%s: skipped a line that is not a JSON object", self.path)
        return records
