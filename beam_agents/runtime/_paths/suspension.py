"""The suspension buffer: events that arrive while a key waits on an answer.

A suspended key cannot run its next event (the resumed activation must see
memory exactly as the suspension left it), but dropping the event to
`.errors` loses it to the agent in practice: a pipeline cannot feed its own
dead letters back in. So the event is held, with its event time and
`event_id`, in the live `Continuation` itself (an additive field: no new
state cell, no schema bump), and runs as an ordinary activation once the
suspension resolves. The buffer is bounded in events and payload bytes so a
key's state stays bounded while a human is away; past either bound the
event is dead-lettered as `event_while_suspended`, exactly as before
buffering existed.

This module commits a `Suspend`, decides admission to its buffer and builds
the wipe's records; the activator owns the drain, because each drained
event is a full activation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

from beam_agents import _failpoints as failpoints
from beam_agents.answer_signing import approval_intent_id
from beam_agents.coders import encode_deterministic
from beam_agents.config import AgentConfig
from beam_agents.model.replay import ReplayCache, ReplayLimits
from beam_agents.proto.beam_agents_pb2 import (
    BufferedEvent,
    Continuation,
    PendingIntents,
    SeqState,
    ToolIntent,
)
from beam_agents.runtime._calls.activation_calls import ActivationCalls
from beam_agents.runtime._cells import SCHEMA_VERSION, KeyCells, later_ttl, read_message, write_seq
from beam_agents.runtime._log_cell import known_empty
from beam_agents.runtime._metrics import runtime_metrics
from beam_agents.runtime._paths.parked_answers import split
from beam_agents.runtime._paths.run import Run
from beam_agents.runtime._timestamps import MAX_TIMER_MS, timer_timestamp
from beam_agents.runtime.intents import canonical_json, event_id_for, make_intent
from beam_agents.runtime.results import Suspend

__all__ = ["APPROVAL_TOOL", "commit", "hold", "live", "refusal", "wiped"]

APPROVAL_TOOL: Final = "approval"
"""The tool name of the approval intent a `Suspend` emits."""


def commit(
    run: Run,
    calls: ActivationCalls,
    event_id: str,
    cache: ReplayCache,
    result: Suspend,
    cells: KeyCells,
    *,
    config: AgentConfig,
    clock_ms: Callable[[], int],
    limits: ReplayLimits,
    answer_key: bytes | None,
) -> ToolIntent:
    """Commit `run` as suspended on `result`; the approval intent to emit.

    The run's backlog (events still buffered behind it) moves into the new
    continuation, so they wait behind this suspension in the same order.
    """
    # Memory writes, long-term saves and intents staged before Suspend are
    # discarded: the resumed run re-executes the agent at this seq and
    # recomputes them identically, so committing them now would apply
    # them twice. Only the model answers are kept, so the re-run replays.
    timeout_ms = result.timeout_ms or config.hitl_timeout_ms
    approval = _approval(run, calls, result, timeout_ms, answer_key)
    # Both bounded (at most 100 years): the sum fits the int64 field and the timer.
    deadline_ms = min(clock_ms() + timeout_ms, MAX_TIMER_MS)
    continuation = _continuation(run, event_id, result, approval, deadline_ms)
    # GC must not pre-empt the suspension's own timeout.
    ttl_at_ms = later_ttl(
        cells,
        max(run.element_time_ms, run.latest_ms, run.now_ms + timeout_ms) + config.ttl_ms,
        run.parked,
        run.held_ttl_ms,
    )
    write_seq(
        cells, run.seq, continuation_clear=False, spend=calls.spend_state(), ttl_at_ms=ttl_at_ms
    )
    cells.continuation.write(encode_deterministic(continuation))
    cells.pending.write(
        encode_deterministic(
            PendingIntents(state_schema_version=SCHEMA_VERSION, intents=[approval])
        )
    )
    kept = cache.for_commit(run.seq, run.now_ms, limits)
    if kept.calls:
        cells.cache.write(encode_deterministic(kept))
    elif cache.had_committed:
        cells.cache.clear()
    cells.hitl_timer.set(timer_timestamp(deadline_ms))
    cells.ttl_timer.set(timer_timestamp(ttl_at_ms))
    failpoints.should_fail(failpoints.COMMIT, run.entity_key, run.seq)
    runtime_metrics.suspensions.inc()
    runtime_metrics.intents.inc()
    return approval


def refusal(suspended: Continuation, event: bytes, config: AgentConfig) -> str | None:
    """Why `event` cannot be held behind `suspended`, or None when it fits.

    Behind a park, `event` may be an answer's bytes: an answer counts as an event.
    """
    limit = config.suspended_event_buffer
    if limit == 0:
        return "buffering is off (AgentConfig.suspended_event_buffer=0)"
    held = suspended.buffered
    if len(held) >= limit:
        return f"its buffer is full ({limit} events, AgentConfig.suspended_event_buffer)"
    used = sum(len(item.event) + len(item.answer.answer) for item in held)
    cap = config.suspended_buffer_bytes
    if used + len(event) > cap:
        return (
            f"its buffer holds {used} payload bytes and this event's {len(event)} would pass "
            f"{cap} (AgentConfig.suspended_buffer_bytes)"
        )
    return None


def _approval(
    run: Run, calls: ActivationCalls, result: Suspend, timeout_ms: int, key: bytes | None
) -> ToolIntent:
    """The approval intent a `Suspend` emits: its prompt, awaiting an answer.

    Under an answer signing key its id is keyed (`approval_intent_id`): no one
    without the key can name it ahead, it commits to the decision asked (this
    event, its time, the prompt, the timeout), so an answer to another
    approval at the same seq (one from before a state reset) names another
    id, and a retry still derives the same one from the same inputs.
    """
    approval = make_intent(
        entity_key=run.entity_key,
        seq=run.seq,
        index=calls.approval_index(),
        tool=APPROVAL_TOOL,
        args_json=canonical_json({"timeout_ms": timeout_ms}),
        event_time_ms=run.now_ms,
        awaits_answer=True,
    )
    approval.prompt = result.prompt
    if key is not None:
        approval.intent_id = approval_intent_id(
            key,
            run.entity_key,
            run.seq,
            approval.index,
            event=run.event,
            event_time_ms=run.now_ms,
            prompt=result.prompt,
            timeout_ms=timeout_ms,
        )
    return approval


def _continuation(
    run: Run, event_id: str, result: Suspend, approval: ToolIntent, deadline_ms: int
) -> Continuation:
    """What the key keeps while it waits: enough to re-run this activation on the answer."""
    reserved = sorted({*(run.resumed.reserved_indices if run.resumed else ()), approval.index})
    continuation = Continuation(
        state_schema_version=SCHEMA_VERSION,
        seq=run.seq,
        intent_id=approval.intent_id,
        event=run.event,
        event_id=event_id,
        event_time_ms=run.now_ms,
        prompt=result.prompt,
        deadline_ms=deadline_ms,
        reserved_indices=reserved,
        suspended_at_ms=run.element_time_ms,
        # A park's backlog may hold answers from its first on: the caller hands
        # those in again once the suspension is committed (`parked_answers`).
        buffered=split(run.backlog)[0],
        coalesced=run.coalesced,
    )
    if run.wake is not None:
        continuation.wake.CopyFrom(run.wake)
    return continuation


def hold(suspended: Continuation, entity_key: bytes, event: bytes, event_time_ms: int) -> int:
    """Append `event` to the buffer (the caller writes the cell); the new depth.

    The `event_id` is the one the event would have had running at once, so
    an agent deduplicating on it sees no difference.
    """
    suspended.buffered.append(
        BufferedEvent(
            event=event,
            event_time_ms=event_time_ms,
            event_id=event_id_for(entity_key, event_time_ms, event),
        )
    )
    return len(suspended.buffered)


def wiped(suspended: Continuation) -> Iterator[tuple[str, bytes]]:
    """`(detail, payload)` of the dead letter each buffered event becomes at a TTL wipe."""
    total = len(suspended.buffered)
    for position, item in enumerate(suspended.buffered, start=1):
        yield (
            f"TTL garbage collection reached the key while buffered event {position} of "
            f"{total} (event time {item.event_time_ms}) waited behind the suspension at seq "
            f"{suspended.seq} on intent {suspended.intent_id}; the event was not run",
            item.event,
        )


def live(cells: KeyCells, seq_state: SeqState | None) -> Continuation | None:
    """The key's suspension, read only where SEQ says there may be one.

    A key whose last commit left CONTINUATION empty (`continuation_clear`),
    or that never committed (every commit writing CONTINUATION writes SEQ),
    has none, and is spared the read: on a production runner, a state fetch.
    """
    if seq_state is None or seq_state.continuation_clear:
        known_empty(cells.continuation)
        return None
    return read_message(cells.continuation, Continuation, "CONTINUATION")
