"""A provision check that passed is not repeated in the same process.

Workers check that the store's tables (and the tool ledger's) exist in
`DoFn.setup()`, so a missing `beam-agents provision` stops the pipeline
once, by name. Dataflow sets a DoFn up once per instance; the DirectRunner
sets it up for every bundle, about a thousand times in the triage demo, where
the repeated checks (a connection and a schema inspection each) cost seconds.
A check that failed is not remembered: the next setup asks again.
"""

from __future__ import annotations

import threading
from typing import Final, Protocol

__all__ = ["check_provisioned_once"]


class _Checkable(Protocol):
    async def check_provisioned(self) -> None: ...


_passed: Final[set[tuple[str, str]]] = set()
_lock: Final = threading.Lock()


async def check_provisioned_once(resource: _Checkable, uri: str) -> None:
    """`resource.check_provisioned()`, unless it passed for this kind and `uri` already."""
    entry = (type(resource).__qualname__, uri)
    with _lock:
        if entry in _passed:
            return
    await resource.check_provisioned()
    with _lock:
        _passed.add(entry)
