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

`StepClock` is the processing-time clock of approval deadlines: the start
of the script step being replayed, which is where the `TestStream`'s own
processing-time clock stands (see `beam_agents.local.stepped_script`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from beam_agents.eval.recording import embed_key, recording_at, request_key
from beam_agents.model.errors import OutputInvalid
from beam_agents.model.messages import LlmRequest, LlmResponse
from beam_agents.model.structured import output_schema
from beam_agents.runtime.errors import ModelCallError
from beam_agents.runtime.results import Complete, Suspend

__all__ = ["Note", "Observed", "StepClock", "notes_of"]

_lock = threading.Lock()
_notes: dict[str, dict[str, Note]] = {}
_clock: dict[str, int] = {}


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

    async def run(self, ctx: Any) -> Complete | Suspend:
        """Run the agent on an observing context (RunAgent takes this bound method)."""
        note = Note()
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
            with _lock:
                _notes.setdefault(self.token, {})[ctx.event_id] = note
        return result

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
