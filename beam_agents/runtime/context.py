"""ActivationContext: the agent's only gateway to time, memory, models and effects.

Everything nondeterministic an agent might want goes through here, where
the runtime can make it replayable: the clock is the event's time, model
answers come from the replay cache when the activation re-runs, intents get
ids derived from (entity, seq, index), and memory writes only stage.

This is the whole surface an agent sees, and it is read-only: the runtime's
own bookkeeping of the activation (the replay cache, the budgets, the spend
a commit writes, the staged intents) sits in a companion the agent is never
handed (`beam_agents.runtime._calls.activation_calls`), so it can change without
breaking an agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from beam_agents.runtime.intents import event_id_for

if TYPE_CHECKING:
    from beam_agents.memory.facade import Memory
    from beam_agents.memory.stores.base import Embedding
    from beam_agents.model.messages import LlmRequest, LlmResponse
    from beam_agents.runtime._calls.activation_calls import ActivationCalls
    from beam_agents.runtime.wakes import Wake

__all__ = ["ActivationContext"]


class ActivationContext:
    """What one activation sees: its event, its frozen clock, memory, model and intents."""

    __slots__ = (
        "_answer",
        "_calls",
        "_coalesced",
        "_event",
        "_event_id",
        "_event_time_ms",
        "_memory",
        "_wake",
    )

    def __init__(
        self,
        calls: ActivationCalls,
        *,
        event: bytes,
        event_id: str | None,
        event_time_ms: int,
        memory: Memory,
        answer: bytes | None,
        wake: Wake | None = None,
        coalesced: Sequence[bytes] = (),
    ) -> None:
        self._calls = calls
        self._event = event
        self._coalesced = coalesced
        self._event_id = event_id
        self._event_time_ms = event_time_ms
        self._memory = memory
        self._answer = answer
        self._wake = wake

    @property
    def entity_key(self) -> bytes:
        """The key this activation runs for."""
        return self._calls.entity_key

    @property
    def event(self) -> bytes:
        """The event's payload (on a resume, the event that suspended; on a wake, its payload)."""
        return self._event

    @property
    def events(self) -> tuple[bytes, ...]:
        """Every event this activation decides for, in arrival order; `event` is the first.

        One event, unless `AgentConfig.coalesce_max` let the activation take
        the events waiting behind its key at once. Whatever it returns goes
        to each of them: its output is emitted once per event.
        """
        return (self._event, *self._coalesced)

    @property
    def wake(self) -> Wake | None:
        """The follow-up this activation runs for (name, payload, due time); None for an event."""
        return self._wake

    @property
    def seq(self) -> int:
        """The key's activation counter: monotonic, and it survives TTL wipes."""
        return self._calls.seq

    @property
    def now_ms(self) -> int:
        """The event's time, frozen for the activation: never the wall clock."""
        return self._calls.now_ms

    @property
    def memory(self) -> Memory:
        """The key's working memory; writes stage and commit only with the activation."""
        return self._memory

    @property
    def answer(self) -> bytes | None:
        """The approval's answer when this activation resumes a suspension, else None."""
        return self._answer

    @property
    def event_id(self) -> str:
        """Deterministic id of the event: a retried element keeps it, distinct events differ.

        A UUIDv5 of the entity key, the event time and a SHA-256 of the
        payload; computed on first use, since most agents never ask.
        """
        if self._event_id is None:
            self._event_id = event_id_for(self.entity_key, self._event_time_ms, self._event)
        return self._event_id

    async def call_model(self, request: LlmRequest) -> LlmResponse:
        """Ask the model, or replay its recorded answer when this activation re-runs."""
        return await self._calls.call_model(request)

    async def embed_texts(self, texts: Sequence[str]) -> list[Embedding]:
        """Embed `texts` in one call of the configured embedder, or replay its recorded answer.

        The long-term handle's way to embed (`save(text=)`, `recall`): an
        embedding is a model call, so it is replay-cached, parked when slow,
        counted and budgeted like one, and fails the activation as `model_error`.
        """
        return await self._calls.embed_texts(texts)

    async def call_tool(self, name: str, args: Mapping[str, Any]) -> bytes:
        """Run the configured tool `name` once for this call, and return its result.

        A re-run of the activation (a resume, a retried bundle, a parked
        activation's poll) gets the recorded result back without calling the
        handler again; a call that has to wait parks the activation, as a
        model call does. Raises `ToolError` (the activation fails as `tool_error`).
        """
        return await self._calls.call_tool(name, args)

    @property
    def tool_names(self) -> frozenset[str]:
        """The tools `call_tool` can call: an agent may decide without them (a dry run)."""
        return self._calls.tool_names

    def emit_intent(self, tool: str, args: Mapping[str, Any]) -> str:
        """Stage a side-effect request; it is emitted only if the activation commits."""
        return self._calls.emit_intent(tool, args)

    def schedule(
        self,
        name: str,
        *,
        after: timedelta | None = None,
        at_ms: int | None = None,
        payload: bytes = b"",
        processing_time: bool = False,
    ) -> None:
        """Stage a follow-up: this key's agent runs again, once, when it comes due.

        Due `after` this activation's event time, or at `at_ms`; with
        `processing_time`, on the worker's clock instead (`after` counted from
        the commit). A name is one wake per key: scheduling it again replaces
        the pending one. Staged like an intent, so only a committed activation
        schedules. Raises `WakeLimitError` past a limit of
        `beam_agents.runtime.wakes`.
        """
        self._calls.wake_book().schedule(
            name,
            now_ms=self._calls.now_ms,
            after=after,
            at_ms=at_ms,
            payload=payload,
            processing_time=processing_time,
        )

    def cancel(self, name: str) -> None:
        """Stage the cancel of the pending follow-up `name` (none pending: nothing happens)."""
        self._calls.wake_book().cancel(name)

    def __repr__(self) -> str:
        return (
            f"ActivationContext(entity_key={self.entity_key!r}, seq={self.seq}, "
            f"now_ms={self.now_ms})"
        )
