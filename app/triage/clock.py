"""The processing-time clock of a replay, where processing time follows event time.

A deployed pipeline sets approval deadlines from the wall clock (RunAgent's
default). A replay on the DirectRunner compresses twelve hours into a couple
of minutes: the TestStream advances processing time together with event
time, so the clock that sets a deadline must read the replayed time, not
the host's. In a replay "now" is the event time of the alert being triaged:
`triage_agent_replayed` records it on the activation's thread before the
agent runs, and `replay_clock_ms`, which RunAgent calls on that same thread
right after the agent returned `Suspend`, reads it back. Deadlines are then
a pure function of the alert, so a replay is deterministic.
"""

from __future__ import annotations

import threading

from app.triage.agent import RECHECK_AFTER_MS, triage_agent
from beam_agents import ActivationContext, Complete, Suspend

__all__ = ["replay_clock_ms", "triage_agent_replayed"]

_now = threading.local()


async def triage_agent_replayed(
    ctx: ActivationContext, recall: bool = False, recheck_after_ms: int = RECHECK_AFTER_MS
) -> Complete | Suspend:
    """`triage_agent`, recording the alert's event time as the replay's "now"."""
    _now.ms = ctx.now_ms
    return await triage_agent(ctx, recall, recheck_after_ms)


def replay_clock_ms() -> int:
    """The replayed processing time: the event time of this thread's current activation."""
    ms = getattr(_now, "ms", None)
    if ms is None:
        raise RuntimeError("replay_clock_ms() read before any activation on this thread")
    return int(ms)
