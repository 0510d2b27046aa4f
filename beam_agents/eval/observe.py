"""What each event's activation did, seen from inside the agent call.

The runtime's outputs say what committed, by entity key, not by event: an
output carries no event id, a tool call leaves only a ledger row. So the
candidate's agent runs inside `Observed`, which hands it a context that
passes every call through to the real one and notes, per event id, the
model calls (tokens, whether the recording answered), the tool calls, the
intents and the result (for a typed candidate, the value the runtime
emits: the result validated as its output type). A re-run of the same
activation (a resume, a parked call's poll, a retried bundle) starts its
note afresh, so the note that remains is the one of the run that decided. Notes live in a
process-wide registry under the run's token, as FakeLLM's call log does.

A note also says what the activation did to the key's follow-ups (the
wakes it scheduled and cancelled) and, for a wake's own activation, which
wake it ran, in the order the activations ran: `beam_agents.eval.follow_ups`
reads that back to give every wake to the event that started it. A wake due
after the replay's `horizon_ms` is not run at all (`FollowUpAfterReplay`):
the replay's stream ends by moving event time to infinity, where every wake
left would fire out of order with other keys, and a wake that schedules
another would never end.

`StepClock` is the processing-time clock of approval deadlines: the start
of the script step being replayed, which is where the `TestStream`'s own
processing-time clock stands (see `beam_agents.local.stepped_script`).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final

from beam_agents.errors import BeamAgentsError
from beam_agents.eval.recording import embed_key, recording_at, request_key
from beam_agents.model.errors import OutputInvalid
from beam_agents.model.messages import LlmRequest, LlmResponse
from beam_agents.model.structured import output_schema
from beam_agents.runtime.errors import ModelCallError
from beam_agents.runtime.results import Complete, Suspend

__all__ = [
    "FOLLOW_UP_AFTER_REPLAY",
    "FollowUpAfterReplay",
    "Note",
    "Observed",
    "StepClock",
    "WakeRun",
    "notes_of",
]

_lock = threading.Lock()
_notes: dict[str, dict[str, Note]] = {}
_clock: dict[str, int] = {}
_order = itertools.count()

FOLLOW_UP_AFTER_REPLAY: Final = "FollowUpAfterReplay"
"""How the dead letter of a wake the replay did not run begins (its exception's name)."""


class FollowUpAfterReplay(BeamAgentsError):
    """A wake due after the replay's event time ends: the evaluation does not run it.

    Raised from the agent's place, so its activation commits nothing (no
    memory, no new wake) and the wake leaves the key's set; the evaluation
    reports it as not run instead of as a dead letter.
    """


@dataclass(frozen=True)
class WakeRun:
    """The wake an activation ran for: its name, payload and due time."""

    name: str
    payload: bytes
    due_ms: int


@dataclass
class Note:
    """One event's last activation, as the agent saw it."""

    output: Any = None
    """The result: bytes, or an instance of a typed candidate's output type."""
    suspended: bool = False
    intents: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    model_calls: int = 0
    recorded: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    model_time_ms: float = 0.0
    cost_usd: float = 0.0
    key: bytes = b""
    now_ms: int = 0
    order: int = 0
    """When the activation was noted, among all of the run's: per key, the order they ran in."""
    wake: WakeRun | None = None
    """The wake this activation ran for; None for an event's."""
    after_replay: bool = False
    """A wake due after the replay's end: not run (see `FollowUpAfterReplay`)."""
    schedules: dict[str, int | None] = field(default_factory=dict)
    """Wakes it scheduled, by name, with their due time (None: dated by the processing clock)."""
    cancels: set[str] = field(default_factory=set)


def notes_of(token: str) -> dict[str, Note]:
    """Take the notes of run `token` (by runtime event id) out of the registry."""
    with _lock:
        _clock.pop(token, None)
        return _notes.pop(token, {})


@dataclass(frozen=True)
class StepClock:
    """Processing time as the replay's `TestStream` has it: the current step's start."""

    token: str
    step_ms: int

    def __call__(self) -> int:
        with _lock:
            latest = _clock.get(self.token, 0)
        return (latest // self.step_ms) * self.step_ms


@dataclass(frozen=True)
class Observed:
    """The candidate's agent, run with an observing context; picklable as its parts."""

    agent: Callable[[Any], Coroutine[Any, Any, Complete | Suspend]]
    token: str
    recording: str
    prices: tuple[tuple[str, float, float], ...] = ()
    output_type: type | None = None
    horizon_ms: int | None = None
    """The replay's last event time: a wake due later is not run (None: every wake runs)."""

    async def run(self, ctx: Any) -> Complete | Suspend:
        """Run the agent on an observing context (RunAgent takes this bound method)."""
        wake = ctx.wake
        note = Note(key=ctx.entity_key, now_ms=ctx.now_ms)
        if wake is not None:
            note.wake = WakeRun(wake.name, wake.payload, wake.due_ms)
            if self.horizon_ms is not None and wake.due_ms > self.horizon_ms:
                note.after_replay = True
                self._keep(ctx.event_id, note)
                raise FollowUpAfterReplay(
                    f"wake {wake.name!r} is due at {wake.due_ms} ms, after the replay ends at "
                    f"{self.horizon_ms} ms: not run"
                )
        with _lock:
            if ctx.now_ms > _clock.get(self.token, 0):
                _clock[self.token] = ctx.now_ms
        watched = _Watching(ctx, note, self)
        try:
            result = await self.agent(watched)
            if isinstance(result, Complete):
                note.output = self._result(result.output)
            elif isinstance(result, Suspend):
                note.suspended = True
        finally:  # a failed run is noted too: its tool calls are part of what it decided
            self._keep(ctx.event_id, note)
        return result

    def _keep(self, event_id: str, note: Note) -> None:
        with _lock:
            note.order = next(_order)
            _notes.setdefault(self.token, {})[event_id] = note

    def _result(self, output: Any) -> Any:
        """What the runtime emits for `output`: a typed candidate's result validated as its type.

        A result that is not one is noted as None: the runtime dead-letters
        it (`output_invalid`), and the event's row shows that instead.
        """
        if self.output_type is None:
            return output
        try:
            return output_schema(self.output_type).check(output)
        except OutputInvalid:
            return None

    def cost(self, response: LlmResponse) -> float:
        for model_id, per_input, per_output in self.prices:
            if model_id == response.model_id:
                return (
                    response.input_tokens * per_input + response.output_tokens * per_output
                ) / 1_000_000
        return 0.0


class _Watching:
    """The activation's context, with its model, tool and intent calls noted on the way."""

    __slots__ = ("_ctx", "_note", "_observed")

    def __init__(self, ctx: Any, note: Note, observed: Observed) -> None:
        self._ctx = ctx
        self._note = note
        self._observed = observed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    async def call_model(self, request: LlmRequest) -> LlmResponse:
        try:
            response: LlmResponse = await self._ctx.call_model(request)
        except ModelCallError:
            self._count(request_key(request), None)
            raise
        self._count(request_key(request), response)
        return response

    async def embed_texts(self, texts: Sequence[str]) -> Any:
        embedded = await self._ctx.embed_texts(texts)
        embedder = getattr(self._ctx, "_embedder", None)
        model_id = embedder.model_id if embedder is not None else ""
        self._count(embed_key(model_id, list(texts)), None)
        return embedded

    def _count(self, key: str, response: LlmResponse | None) -> None:
        note = self._note
        recording = recording_at(self._observed.recording)
        note.model_calls += 1
        if not recording.claim_live(self._observed.token, key):
            note.recorded += 1
        if response is None:
            return
        note.input_tokens += response.input_tokens
        note.output_tokens += response.output_tokens
        entry = recording.model_answer(key)
        if entry is not None:
            note.model_time_ms += float(entry.get("latency_ms", 0.0))
        note.cost_usd += self._observed.cost(response)

    async def call_tool(self, name: str, args: Mapping[str, Any]) -> bytes:
        self._note.tool_calls.append({"name": name, "args": dict(args)})
        result: bytes = await self._ctx.call_tool(name, args)
        return result

    def emit_intent(self, tool: str, args: Mapping[str, Any]) -> str:
        intent_id: str = self._ctx.emit_intent(tool, args)
        self._note.intents.append({"tool": tool, "args": dict(args)})
        return intent_id

    def schedule(
        self,
        name: str,
        *,
        after: timedelta | None = None,
        at_ms: int | None = None,
        payload: bytes = b"",
        processing_time: bool = False,
    ) -> None:
        self._ctx.schedule(
            name, after=after, at_ms=at_ms, payload=payload, processing_time=processing_time
        )
        # Accepted, so exactly one of after and at_ms was given.
        due: int | None = at_ms
        if after is not None:
            due = None if processing_time else self._ctx.now_ms + after // timedelta(milliseconds=1)
        self._note.schedules[name] = due
        self._note.cancels.discard(name)

    def cancel(self, name: str) -> None:
        self._ctx.cancel(name)
        self._note.schedules.pop(name, None)
        self._note.cancels.add(name)
