"""Follow-ups: a wake-up an agent schedules for its own key, and the limits on them.

An agent that watches a stream often has to decide later: re-check an
alert that may clear by itself, escalate what nobody acknowledged. It
schedules a wake (`ActivationContext.schedule`); when the wake comes due the
agent runs once more for its key, with `ctx.wake` saying which. The
pending wakes live in the key's state beside its memory, so they are
exactly as durable and replayable as the rest of the activation
(docs/runtime.md, "Follow-ups").

The limits keep a key's state bounded whatever an agent does: a key holds
at most `MAX_PENDING_WAKES` wakes, each with a payload of at most
`MAX_WAKE_PAYLOAD_BYTES` and a name of at most `MAX_WAKE_NAME_BYTES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from beam_agents.errors import BeamAgentsError

__all__ = [
    "MAX_PENDING_WAKES",
    "MAX_WAKE_NAME_BYTES",
    "MAX_WAKE_PAYLOAD_BYTES",
    "WAKE_CANCELLED",
    "WAKE_FIRED",
    "WAKE_KINDS",
    "WAKE_SCHEDULED",
    "Wake",
    "WakeLimitError",
]

WAKE_SCHEDULED: Final = "wake_scheduled"
"""A committed activation scheduled (or re-scheduled) a follow-up (detail: JSON with its
`name`, `due_ms` and `time`, "event" or "processing")."""
WAKE_FIRED: Final = "wake_fired"
"""A follow-up ran and is done: its activation committed, or failed and was dead-lettered
(detail: JSON as `wake_scheduled`)."""
WAKE_CANCELLED: Final = "wake_cancelled"
"""A committed activation cancelled a pending follow-up (detail: JSON with its `name`)."""
WAKE_KINDS: Final = frozenset({WAKE_SCHEDULED, WAKE_FIRED, WAKE_CANCELLED})
"""The lifecycle kinds of follow-ups, defined here, without Beam, for the readers of records
(`beam_agents.runtime.pending_wakes`); `beam_agents.runtime.lifecycle` lists them with the rest."""

MAX_PENDING_WAKES: Final = 64
"""Wakes one key may hold pending at once; scheduling one more is refused."""
MAX_WAKE_PAYLOAD_BYTES: Final = 16 * 1024
"""A wake's payload travels in the key's state and in every buffer it waits in."""
MAX_WAKE_NAME_BYTES: Final = 256
"""A wake's name, in UTF-8 bytes: it names the wake in records, spans and state."""


@dataclass(frozen=True, slots=True)
class Wake:
    """The follow-up this activation runs for (`ActivationContext.wake`).

    `due_ms` is the time it was scheduled for (event time, or processing
    time when `processing_time`), which is also the activation's `now_ms`:
    a wake runs at the time it was due, however late its timer fired.
    """

    name: str
    payload: bytes
    due_ms: int
    processing_time: bool = False


class WakeLimitError(BeamAgentsError, ValueError):
    """A schedule the runtime refuses: a name, payload, time or count beyond the limits.

    Raised by `ActivationContext.schedule` inside the agent, which may catch
    it; uncaught, the activation fails as `activation_error` and commits
    nothing.
    """
