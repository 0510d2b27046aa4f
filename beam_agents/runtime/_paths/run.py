"""One activation's inputs: what runs, at which seq, on which clock."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from beam_agents.proto.beam_agents_pb2 import BufferedEvent, Continuation, WakeMarker
from beam_agents.telemetry import ActivationSpan

__all__ = ["Run"]


@dataclass(slots=True)
class Run:
    """One activation's inputs.

    `now_ms` is the agent's frozen clock (the event's time); `element_time_ms`
    is the event time of the element or timer that triggered the run, which
    is what its dead letters carry and what its TTL re-arms from.
    """

    entity_key: bytes
    event: bytes
    event_id: str | None
    seq: int
    now_ms: int
    element_time_ms: int
    answer: bytes | None = None
    approver: str | None = None
    """Who a verified answer was signed for; the `resumed` record names them."""
    resumed: Continuation | None = None
    backlog: Sequence[BufferedEvent] = ()
    """Events buffered behind this run, to run after it in order (or to keep, if it suspends)."""
    drained: bool = False
    """Whether this event waited in a suspension's buffer before running."""
    answered: int = 0
    """How many backlog events, from the front, an answer drains: their records
    carry `element_time_ms`; the rest carry their own event time."""
    parked: Continuation | None = None
    """The parked continuation this run re-runs (the cells hold it), or None."""
    in_place: bool = False
    """Make every model call in place, never parking (a re-run that asked anew)."""
    span: ActivationSpan | None = None
    """This attempt's span (`beam_agents.telemetry`), set when it starts."""
    wake: WakeMarker | None = None
    """The follow-up this run is (`event` its payload, `now_ms` its due time), or None."""
    coalesced: Sequence[BufferedEvent] = ()
    """Events after `event` this run decides for (`AgentConfig.coalesce_max`), in order."""
    held_ttl_ms: int | None = None
    """The TTL time SEQ held when the run began, where the caller had SEQ decoded
    already (a fresh event); None: its commit reads SEQ."""
    memory_digest: bytes | None = None
    """The committed memory's digest as SEQ or the park recorded it
    (`SeqState.memory_digest`); None: unknown, the open reads MEMORY."""

    @property
    def events(self) -> int:
        """How many events this run decides for: its outputs and records go to each."""
        return 1 + len(self.coalesced)

    @property
    def latest_ms(self) -> int:
        """The latest event time this run decides for: its TTL runs from there."""
        if not self.coalesced:
            return self.now_ms
        return max(self.now_ms, *(held.event_time_ms for held in self.coalesced))
