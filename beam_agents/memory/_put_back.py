"""Putting back the dict of entries a facade borrowed, for an activation that did not commit.

A facade opened over a resident snapshot changes the snapshot's own dict
(`Memory._borrow`); an activation that parks or fails hands it back as it
was committed. Nothing moves in the dict before the facade's order settles
(a write replaces its entry where it stands, a delete leaves `GONE`), so
putting the opened entries back in their slots restores it, in O(changes).
Only a facade whose order settled first (something asked for its blob)
has it rebuilt from the entries' ranks.
"""

from __future__ import annotations

from collections.abc import Iterable

from beam_agents.memory._entry import GONE, Entry

__all__ = ["put_back", "undo_rings"]


def undo_rings(shared: Iterable[tuple[Entry, list[bytes]]]) -> None:
    """Take back what copies did to the deques they share with committed rings.

    Each copy's appended items still held (`act_added`) come off the right
    end, and the committed items it dropped (`found`) go back on the left.
    """
    for clone, found in shared:
        items = clone.items
        assert items is not None  # a shared deque stays on its copy
        for _ in range(clone.act_added):
            items.pop()
        items.extendleft(reversed(found))


def put_back(
    entries: dict[str, Entry], opened: dict[str, Entry | None], *, reordered: bool
) -> None:
    """Every key of `opened` back to the entry it held (removed where it held none)."""
    if not reordered:  # every key where it stood
        for key, before in opened.items():
            if before is None:
                entries.pop(key, None)
            else:
                entries[key] = before
        return
    ranked = [
        (entry.rank, key, entry)
        for key, entry in entries.items()
        if key not in opened and entry is not GONE
    ]
    ranked += [(entry.rank, key, entry) for key, entry in opened.items() if entry is not None]
    ranked.sort(key=_by_rank)
    entries.clear()
    entries.update([(key, entry) for _, key, entry in ranked])


def _by_rank(ranked: tuple[int, str, Entry]) -> int:
    return ranked[0]
