"""The activation lifecycle, independent of Beam's state API.

`Activator` holds what one DoFn instance owns (`Instance`: the agent, its
config, the event loop, the provider, the call loop's parking) and is the
table of contents of what can happen to a key; each path lives in a module of its
own, which a reader can open alone:

- an event (`event`): run the agent once, or hold the event behind a
  suspension;
- an answer, verified here under a signing key, or a suspension's deadline
  (`answer`): resume, or time out;
- a poll (`poll`): a parked activation's call answered, so re-run it;
- the TTL timer (`expiry`): flush on expire, then wipe;
- the drain (`drain`): events that waited behind a suspension, in order;
- a follow-up coming due (`wake`): run it, or hold it behind the key's wait;
- one attempt (`attempt`) and its commit (`commit`): every path that
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

from beam_agents.answer_signing import AnswerVerificationError, open_answer
from beam_agents.proto.beam_agents_pb2 import BufferedEvent
from beam_agents.runtime import errors as reasons
from beam_agents.runtime._cells import Cell, KeyCells, Timer
from beam_agents.runtime._outputs import ERRORS_TAG, INTENTS_TAG, Output
from beam_agents.runtime._paths.answer import on_answer, on_deadline
from beam_agents.runtime._paths.event import on_event
from beam_agents.runtime._paths.expiry import on_ttl
from beam_agents.runtime._paths.instance import Instance, Setup
from beam_agents.runtime._paths.wake import enter, on_wake

__all__ = [
    "ERRORS_TAG",
    "INTENTS_TAG",
    "Activator",
    "Cell",
    "KeyCells",
    "Output",
    "Setup",
    "Timer",
]


class Activator:
    """Runs activations for one DoFn instance; see the module docstring.

    It is also the instance's `Entrance`: a path that hands a buffered
    element in again comes back through `on_event` and `answered` here.
    """

    __slots__ = ("instance",)

    def __init__(self, setup: Setup) -> None:
        self.instance = Instance(setup, entrance=self)

    def on_event(
        self, entity_key: bytes, event: bytes, event_time_ms: int, cells: KeyCells
    ) -> list[Output]:
        """One event for one key: run the agent once (or hold or dead-letter the event)."""
        return on_event(self.instance, entity_key, event, event_time_ms, cells)

    def on_answer(
        self,
        entity_key: bytes,
        intent_id: str,
        payload: bytes,
        element_time_ms: int,
        cells: KeyCells,
    ) -> list[Output]:
        """An answer as it arrives: verified first under a signing key, then `answered`.

        One without a valid signature is dead-lettered (`unsigned_answer`,
        `bad_answer_signature`), one whose signed expiry the processing-time
        clock has passed `expired_answer`, with its payload, touching no
        state; a verified one resumes with the answer text only, and the
        approver it was signed for goes into the `resumed` lifecycle record.
        The expiry is read on the clock HITL deadlines are set by, not the
        answer's event time, which whoever publishes the answer chooses.
        """
        act = self.instance
        if act.answer_key is None:
            return on_answer(act, entity_key, intent_id, payload, element_time_ms, cells)
        try:
            signed = open_answer(
                act.answer_key, entity_key, intent_id, payload, now_ms=act.clock_ms()
            )
        except AnswerVerificationError as refused:
            return act.emit.refusal(
                entity_key, _reason(refused), refused.detail, element_time_ms, payload
            )
        return on_answer(
            act, entity_key, intent_id, signed.answer, element_time_ms, cells, signed.approver
        )

    def answered(
        self,
        entity_key: bytes,
        intent_id: str,
        answer: bytes,
        element_time_ms: int,
        cells: KeyCells,
        approver: str | None = None,
    ) -> list[Output]:
        """An answer verified as it arrived, which waited in a buffer: resume the suspension."""
        return on_answer(
            self.instance, entity_key, intent_id, answer, element_time_ms, cells, approver
        )

    def woke(self, entity_key: bytes, wake: BufferedEvent, cells: KeyCells) -> list[Output]:
        """A follow-up that waited in a buffer: run it now, or hold it behind the key's wait."""
        return enter(self.instance, entity_key, [wake], cells, wake.event_time_ms)

    def on_wake(
        self, entity_key: bytes, fire_ms: int, cells: KeyCells, processing_time: bool
    ) -> list[Output]:
        """A wake timer: the key's follow-ups due by `fire_ms` run, or wait behind its wait."""
        return on_wake(self.instance, entity_key, fire_ms, cells, processing_time)

    def on_invalid(
        self, entity_key: bytes, detail: str, payload: bytes, time_ms: int
    ) -> list[Output]:
        """A malformed input element: dead-lettered, no state read or written."""
        return self.instance.emit.refusal(
            entity_key, reasons.INVALID_EVENT, detail, time_ms, payload
        )

    def on_ttl(self, entity_key: bytes, fire_time_ms: int, cells: KeyCells) -> list[Output]:
        """The key was idle for `ttl_ms`: wipe its working state (SEQ survives)."""
        return on_ttl(self.instance, entity_key, fire_time_ms, cells)

    def on_hitl(self, entity_key: bytes, cells: KeyCells) -> list[Output]:
        """The HITL timer: a suspension's deadline passed, or a parked key's poll is due."""
        return on_deadline(self.instance, entity_key, cells)


def _reason(refused: AnswerVerificationError) -> str:
    """The dead-letter reason of an answer that failed verification."""
    if refused.expired:
        return reasons.EXPIRED_ANSWER
    return reasons.UNSIGNED_ANSWER if refused.unsigned else reasons.BAD_ANSWER_SIGNATURE
