"""State cells and timers that record what the activation core did to them.

They stand in for Beam's state and timers where a test drives the core
without a runner and asserts which cells were written, and when none were.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from beam_agents.runtime._paths.activator import KeyCells


@dataclass
class RecordingCell:
    """A state cell that remembers its writes and clears and counts its reads."""

    value: bytes | None = None
    ops: list[str] = field(default_factory=list)
    reads: int = 0

    def read(self) -> bytes | None:
        self.reads += 1
        return self.value

    def write(self, value: bytes) -> None:
        self.ops.append("write")
        self.value = value

    def clear(self) -> None:
        self.ops.append("clear")
        self.value = None


@dataclass
class RecordingBag:
    """A state bag that remembers its adds and clears and counts its reads."""

    values: list[bytes] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    reads: int = 0

    def read(self) -> list[bytes]:
        self.reads += 1
        return list(self.values)

    def add(self, value: bytes) -> None:
        self.ops.append("add")
        self.values.append(value)

    def clear(self) -> None:
        self.ops.append("clear")
        self.values.clear()


@dataclass
class RecordingTimer:
    """A timer that remembers every set and clear."""

    ops: list[object] = field(default_factory=list)

    def set(self, timestamp: object) -> None:
        self.ops.append(timestamp)

    def clear(self) -> None:
        self.ops.append("clear")


def recording_cells() -> KeyCells:
    """A key's seven cells, its bag and four timers, each recording what the runtime did to it."""
    return KeyCells(
        *(RecordingCell() for _ in range(5)),  # type: ignore[arg-type]
        RecordingTimer(),  # type: ignore[arg-type]
        RecordingTimer(),  # type: ignore[arg-type]
        RecordingCell(),  # type: ignore[arg-type]
        RecordingTimer(),  # type: ignore[arg-type]
        RecordingTimer(),  # type: ignore[arg-type]
        RecordingBag(),  # type: ignore[arg-type]
        RecordingCell(),  # type: ignore[arg-type]
    )
