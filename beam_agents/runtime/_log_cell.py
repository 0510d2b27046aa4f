"""A cell kept as a short log of its values on the portable SDK harness.

The harness Dataflow runs (and the FnApiRunner, Flink and Prism) caches
state per key and sizes every value it caches: about 0.4 ms a sizing on a
worker with Beam's usual modules loaded, whatever the value, because the
sizer first walks the globals of every loaded module. Beam writes a
read-modify-write cell as a clear and an append, two sizings; an append
alone is one. A parked key writes MEMORY and CONTINUATION at every poll, so
these sizings were most of a parked event's CPU.

On that harness a read-modify-write cell is a bag underneath, and Beam's
own writes of it are clear and append requests on that bag. `LogCell`
appends each new value to the same bag and reads the newest, compacting
(clear, then append) once the bag holds `LOG_VALUES` values or
`LOG_BYTES` bytes. A write to a cell the element did not read counts the
log first: a cell its key just used is in the harness's cache, so that is
no fetch, where a blind compaction would be a sizing. A cell another cell
says is empty (`known_empty`) is not counted. The job graph keeps its read-modify-write specs, so a
running job updates in place, and the runner receives the requests it
already serves for these cells. A cell that held one value (every layout
before this one) reads as it did.

What an element does to a cell reaches the bag when the element ends
(`settle_log_cells`): its last write, as one append, or its clear. So a
completion that clears CONTINUATION and the park of the next buffered
event that writes it are one append, and a cell written twice in one
element appends once. Reads see the element's own writes and clears.

One `LogCell` serves a key's cell for the whole bundle (it is kept on the
harness's bag, which lives as long): it remembers the newest value it
read, wrote or cleared, so the key's later elements and timers in the
bundle read it without asking the harness. That matters beyond the read:
the harness caches a cell it is asked for and sizes every later write of
a cached cell, so a cell the bundle only wrote stays out of its cache,
and its write costs no sizing.

Where a cell is not the harness's (the DirectRunner's own state), it is
used as it is, behind a `Counted`.

Every cell counts the bytes it hands the runner, and `settle_cells` returns
their sum for the element: the `state_bytes_written` distribution. These are
the values Beam's BytesCoder encodes as they are, so the count is the bytes
that cross the coder into state (on Dataflow's Streaming Engine, the state
writes the job pays for), measured rather than inferred from sizes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from apache_beam.runners.worker import bundle_processor

from beam_agents.memory.resident import LogState
from beam_agents.runtime._cells import Bag, Cell, KeyCells

__all__ = [
    "LOG_BYTES",
    "LOG_VALUES",
    "Counted",
    "LogCell",
    "known_empty",
    "known_log",
    "log_after_write",
    "log_bag",
    "log_cell",
    "settle_cells",
]

LOG_VALUES: Final = 16
"""Values a cell's bag may hold before a write compacts it to one."""

LOG_BYTES: Final = 16 * 1024
"""Bytes a cell's bag may hold, with the value being written, before a write compacts it.
A value this large or larger is always written alone."""

_UNREAD: Final = -1

_HARNESS_CELL: Final = bundle_processor.ReadModifyWriteRuntimeState


class LogCell:
    """A cell over the harness's bag: appends values, reads the newest (see the module)."""

    __slots__ = ("_bag", "_cleared", "_count", "_known", "_newest", "_size", "_written")

    def __init__(self, bag: Any) -> None:
        self._bag = bag
        self._count = _UNREAD
        self._size = 0
        self._cleared = False
        self._written: bytes | None = None
        self._newest: bytes | None = None
        self._known = False
        """`_newest` is the bag's newest value: it was read, or this cell wrote or cleared it."""

    def read(self) -> bytes | None:
        if self._written is not None:
            return self._written
        if self._cleared:
            return None
        if self._known:
            return self._newest
        newest: bytes | None = None
        count = size = 0
        for value in self._bag.read():
            newest = value
            count += 1
            size += len(value)
        self._count, self._size = count, size
        self._newest, self._known = newest, True
        return newest

    def write(self, value: bytes) -> None:
        self._written = value

    def known_empty(self) -> None:
        """Another cell says this one is empty: its write may append without reading it.

        Were that wrong, reads would still take the newest value; the log
        would only run past its bounds until a read counts it.
        """
        if self._count == _UNREAD:
            self._count = self._size = 0

    def known_log(self, count: int, size: int) -> None:
        """What the bag holds, as the key's last commit in this process left it.

        Like `known_empty`, it spares the write a read of the bag to count
        it; wrong, it only moves where the log is compacted.
        """
        if self._count == _UNREAD:
            self._count, self._size = count, size

    def after_write(self, size: int) -> LogState | None:
        """The bag's values and bytes once this element's write of `size` bytes settles.

        None while the bag is not counted. An element writes the bag once,
        however often it writes the cell, so this holds for its last write.
        """
        if self._count == _UNREAD:
            return None
        if self._compacts(size):
            return 1, size
        return self._count + 1, self._size + size

    def _compacts(self, size: int) -> bool:
        """Whether appending `size` bytes first clears the bag: it is full, or would be."""
        return self._count >= LOG_VALUES or self._size + size > LOG_BYTES

    def clear(self) -> None:
        self._written = None
        self._cleared = self._count != 0  # a cell read empty needs no clear

    def settle(self) -> int:
        """Hand the bag what this element left: one append, or a clear; the bytes appended."""
        value, self._written = self._written, None
        cleared, self._cleared = self._cleared, False
        if value is None:
            if cleared:
                self._bag.clear()
                self._count = self._size = 0
                self._newest, self._known = None, True
            return 0
        if self._count == _UNREAD:
            self.read()
        if self._compacts(len(value)):
            self._bag.clear()
            self._count = self._size = 0
        self._bag.add(value)
        self._count += 1
        self._size += len(value)
        self._newest, self._known = value, True
        return len(value)


class Counted:
    """A cell or bag the runner keeps itself: used as it is, the bytes written counted."""

    __slots__ = ("_state", "written")

    def __init__(self, state: Any) -> None:
        self._state = state
        self.written = 0

    def read(self) -> Any:
        return self._state.read()

    def write(self, value: bytes) -> None:
        self._state.write(value)
        self.written += len(value)

    def add(self, value: bytes) -> None:
        self._state.add(value)
        self.written += len(value)

    def clear(self) -> None:
        self._state.clear()


def log_cell(state: Any) -> Cell:
    """The harness's read-modify-write state as a `LogCell`; any other cell counted as it is.

    One `LogCell` per harness bag, kept on the bag, which the harness makes
    per key and cell for one bundle: the key's next element in the bundle
    (or a timer of the key) reads what this one wrote without asking the
    harness, which would fetch and cache a cell this bundle has only
    written, and then size every later write of it.
    """
    if type(state) is _HARNESS_CELL:
        bag = state._underlying_bag_state
        cell: LogCell | None = getattr(bag, _KEPT, None)
        if cell is None:
            cell = LogCell(bag)
            setattr(bag, _KEPT, cell)
        return cell
    return Counted(state)


_KEPT: Final = "_beam_agents_log_cell"
"""The attribute of the harness's bag that holds its `LogCell` for the bundle."""


def log_bag(state: Any) -> Bag:
    """A runner's bag state, its writes counted."""
    return Counted(state)


def known_empty(cell: Cell) -> None:
    """Tell a log cell that another cell says it is empty (see `LogCell.known_empty`)."""
    if type(cell) is LogCell:
        cell.known_empty()


def known_log(cell: Cell, log: LogState) -> None:
    """Tell a log cell what its bag holds (see `LogCell.known_log`)."""
    if type(cell) is LogCell:
        cell.known_log(*log)


def log_after_write(cell: Cell) -> Callable[[int], LogState | None] | None:
    """What a log cell's bag holds once a write of n bytes settles (`LogCell.after_write`);
    None for any other cell, whose bag nobody counts."""
    return cell.after_write if type(cell) is LogCell else None


def settle_cells(cells: KeyCells) -> int:
    """End an element's use of its cells: held writes and clears are carried out.

    Returns the bytes the element wrote to state.
    """
    written = 0
    for cell in (
        cells.memory,
        cells.seq,
        cells.cache,
        cells.continuation,
        cells.pending,
        cells.wakes,
        cells.memory_head,
        cells.memory_log,
    ):
        if type(cell) is LogCell:
            written += cell.settle()
        elif type(cell) is Counted:
            written += cell.written
    return written
