"""The activation lifecycle, independent of Beam's state API.

`Activator` holds what one DoFn instance owns (the agent, its config, the
event loop, the provider, the call loop's parking) and is the table of
contents of what can happen to a key; each path lives in a module of its
own, which a reader can open alone:

- an event (`_event`): run the agent once, or hold the event behind a
  suspension;
- an answer, or a suspension's deadline (`_answer`): resume, or time out;
- a poll (`_poll`): a parked activation's call answered, so re-run it;
- the TTL timer (`_expiry`): flush on expire, then wipe;
- the drain (`_drain`): events that waited behind a suspension, in order;
- one attempt (`_attempt`) and its commit (`_commit`): every path that
  runs the agent comes through these.

It reads and writes the key's cells through the `Cell`/`Timer` protocol of
`beam_agents.runtime._cells`, which keeps this logic testable and
benchmarkable without a runner. With lifecycle records on, each entry point
also yields the `LifecycleEvent`s of what it committed
(`beam_agents.runtime.lifecycle`).

The rule everything here follows: compute first, write last. Until the
agent (and everything after it) has succeeded nothing is written, so a
failure anywhere leaves every cell as it was and produces exactly one
`ActivationError`. State is written only when it changed.
"""

from __future__ import annotations

from beam_agents.runtime import errors as reasons
from beam_agents.runtime._answer import on_answer, on_deadline
from beam_agents.runtime._cells import Cell, KeyCells, Timer
from beam_agents.runtime._event import on_event
from beam_agents.runtime._expiry import on_ttl
from beam_agents.runtime._instance import Agent, Instance
from beam_agents.runtime._outputs import ERRORS_TAG, INTENTS_TAG, Output

__all__ = [
    "ERRORS_TAG",
    "INTENTS_TAG",
    "Activator",
    "Agent",
    "Cell",
    "KeyCells",
    "Output",
    "Timer",
]


class Activator(Instance):
    """Runs activations for one DoFn instance; see the module docstring."""

    def on_event(
        self, entity_key: bytes, event: bytes, event_time_ms: int, cells: KeyCells
    ) -> list[Output]:
        """One event for one key: run the agent once (or hold or dead-letter the event)."""
        return on_event(self, entity_key, event, event_time_ms, cells)

    def on_answer(
        self,
        entity_key: bytes,
        intent_id: str,
        answer: bytes,
        element_time_ms: int,
        cells: KeyCells,
        approver: str | None = None,
    ) -> list[Output]:
        """An answer to a pending approval: resume the suspended activation."""
        return on_answer(self, entity_key, intent_id, answer, element_time_ms, cells, approver)

    def on_invalid(
        self, entity_key: bytes, detail: str, payload: bytes, time_ms: int
    ) -> list[Output]:
        """A malformed input element: dead-lettered, no state read or written."""
        return self.emit.refusal(entity_key, reasons.INVALID_EVENT, detail, time_ms, payload)

    def on_ttl(self, entity_key: bytes, fire_time_ms: int, cells: KeyCells) -> list[Output]:
        """The key was idle for `ttl_ms`: wipe its working state (SEQ survives)."""
        return on_ttl(self, entity_key, fire_time_ms, cells)

    def on_hitl(self, entity_key: bytes, cells: KeyCells) -> list[Output]:
        """The HITL timer: a suspension's deadline passed, or a parked key's poll is due."""
        return on_deadline(self, entity_key, cells)
