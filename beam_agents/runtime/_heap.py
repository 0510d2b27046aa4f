"""While a RunAgent is set up in a process, the heap it found there is frozen out of the collector.

A worker process holds a large heap before its first event: the SDK
harness, Beam, gRPC, protobuf and the pipeline's own imports, about 200,000
objects the collector tracks in the benchmarks' process and more on a
Dataflow worker. CPython collects its oldest generation whenever the
objects that survived into it since the last time grow past a quarter of
it, and each such collection walks the whole of it: about 100 ms here,
with the Beam thread stopped, once or twice a second under a parked run's
load. Walking the startup heap finds no garbage; it is the imports.

`gc.freeze()` moves every object tracked at that point into a generation
the collector does not walk, and `gc.unfreeze()` gives them back: both are
constant-time list moves. The first setup of a RunAgent in the process
freezes, and the teardown of the last one set up unfreezes, so a local run
in a notebook or a test process holds nothing frozen once its pipeline
ends, and a worker keeps its heap frozen for as long as it runs agents.
Meanwhile a cycle among the frozen objects that becomes garbage is
reclaimed only at the unfreeze (reference counting still frees everything
else). The interpreter has one frozen generation, so that unfreeze also
gives back what was frozen before the first setup: the local runner's own
freeze (its run is ending too), a caller's, or the few hundred objects
Python 3.12 freezes at startup. Telling another freeze apart by the frozen
count is not possible for that reason (3.12 starts with one in effect).

`BEAM_AGENTS_FREEZE_HEAP=0` in the worker's environment leaves the
collector as Python set it up (a process that manages its collector
itself).
"""

from __future__ import annotations

import gc
import os
import threading

__all__ = ["OPT_OUT_ENV", "HeapHold"]

OPT_OUT_ENV = "BEAM_AGENTS_FREEZE_HEAP"

_lock = threading.Lock()
_holders = 0
"""DoFn instances set up in this process and not torn down yet."""
_froze = False
"""Whether the first holder froze (not told otherwise), so the last one unfreezes."""


class HeapHold:
    """One DoFn instance's share of the freeze: taken at setup, given back at teardown."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held = False

    def take(self) -> None:
        """Hold the freeze (the first holder freezes the heap); at most once."""
        global _holders, _froze
        if self._held:
            return
        self._held = True
        with _lock:
            _holders += 1
            if _holders == 1 and not _opted_out():
                gc.freeze()
                _froze = True

    def give_back(self) -> None:
        """Let go of the freeze; the last holder unfreezes the heap."""
        global _holders, _froze
        if not self._held:
            return
        self._held = False
        with _lock:
            _holders -= 1
            if _holders == 0 and _froze:
                _froze = False
                gc.unfreeze()


def _opted_out() -> bool:
    return os.environ.get(OPT_OUT_ENV, "").strip() == "0"
