"""Parking: a key whose activation waits on a model call, without the Beam thread.

A parked activation is a suspension whose answer comes from the provider. It
commits nothing it staged (memory writes, long-term saves, intents): the
poll re-runs it from the start at the same seq with the same event, its
earlier calls replayed from LLM_CACHE and the awaited one taken from the
call loop, exactly as a resumed suspension re-runs. What the key records is
a `Continuation` with its `parked` field set, in the same cells:

- CONTINUATION: the activation's seq, event and clock (or, when it resumed
  a suspension, that suspension, the answer in `parked`), and the events
  that arrive meanwhile, in the suspension buffer;
- LLM_CACHE: the model answers it already had, so the re-run replays them;
- SEQ: unchanged seq, `continuation_clear` unset, so the key's next event
  reads CONTINUATION and waits in the buffer;
- the HITL timer polls: on a runner in this process it is set in the past
  and fires at the next timer check, on a deployed runner when the call is
  expected to have answered; the callback waits on the call if it has not.

A re-run that fails writes nothing, as every failed activation, so the key
is put back exactly as a failure in place would have left it: SEQ and
LLM_CACHE to their bytes before the park, and a resumed suspension live
again with its deadline. `Parked` keeps those bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from beam_agents import _failpoints as failpoints
from beam_agents.coders import encode_deterministic
from beam_agents.model.replay import ReplayCache, ReplayLimits
from beam_agents.proto.beam_agents_pb2 import BufferedEvent, Continuation, Parked
from beam_agents.runtime._calls.activation_calls import ActivationCalls
from beam_agents.runtime._cells import (
    SCHEMA_VERSION,
    KeyCells,
    encode_seq,
    encode_ttl_at,
    later_ttl,
)
from beam_agents.runtime._paths.parked_answers import split
from beam_agents.runtime._paths.run import Run
from beam_agents.runtime._timestamps import timer_timestamp

__all__ = ["POLL_AT_MS", "commit", "is_parked", "mark_expiry", "rerun", "restore"]

POLL_AT_MS: Final = 0
"""The poll's processing time when RunAgent reads the wall clock: in the past,
so it fires at the runner's next timer check on every runner (a time from the
wall clock would never fire on a `TestStream`'s test clock); the callback then
waits on the call."""


def is_parked(continuation: Continuation | None) -> bool:
    return continuation is not None and continuation.HasField("parked")


def commit(
    run: Run,
    calls: ActivationCalls,
    event_id: str,
    cache: ReplayCache,
    call_key: str,
    cells: KeyCells,
    *,
    limits: ReplayLimits,
    poll_at_ms: int,
    memory_digest: bytes | None = None,
) -> None:
    """Record that `run` waits on the call `call_key`; nothing it staged is kept.

    `memory_digest` is the digest of the memory the run opened, which its
    re-run opens by (`Parked.memory_digest`).
    """
    parked = _parked_record(run, call_key, cells, calls.spend_state(committed_only=True))
    if memory_digest:
        parked.memory_digest = memory_digest
    if run.resumed is not None:
        continuation = Continuation()
        continuation.CopyFrom(run.resumed)
        del continuation.buffered[:]
    else:
        continuation = Continuation(
            state_schema_version=SCHEMA_VERSION,
            seq=run.seq,
            event=run.event,
            event_id=event_id,
            event_time_ms=run.now_ms,
        )
        if run.wake is not None:
            continuation.wake.CopyFrom(run.wake)
        continuation.coalesced.extend(run.coalesced)
    parked.spent_tokens = calls.tokens_spent()
    parked.admitted_calls.extend(calls.admitted_calls())
    kept = cache.for_commit(run.seq, run.now_ms, limits)
    # An empty LLM_CACHE is said in CONTINUATION, which the poll reads anyway:
    # the re-run then does not read LLM_CACHE (on a portable runner, a fetch).
    parked.cache_clear = not kept.calls
    continuation.parked.CopyFrom(parked)
    continuation.buffered.extend(run.backlog)
    cells.continuation.write(encode_deterministic(continuation))
    if kept.calls:
        cells.cache.write(encode_deterministic(kept))
    elif cache.had_committed:
        cells.cache.clear()
    cells.hitl_timer.set(timer_timestamp(poll_at_ms))
    failpoints.should_fail(failpoints.PARK, run.entity_key, run.seq)


def mark_expiry(continuation: Continuation, fire_time_ms: int, cells: KeyCells) -> None:
    """Note a TTL firing on a parked key; the poll expires the key once it resolves."""
    if not continuation.parked.HasField("expire_at_ms"):
        continuation.parked.expire_at_ms = fire_time_ms
        cells.continuation.write(encode_deterministic(continuation))


def _parked_record(run: Run, call_key: str, cells: KeyCells, spend: bytes) -> Parked:
    """The `Parked` field: what the poll re-runs from, and what a failure restores."""
    parked = Parked(
        call_key=call_key,
        element_time_ms=run.element_time_ms,
        drained=run.drained,
        answered=min(run.answered, len(run.backlog)),
    )
    if run.answer is not None:
        parked.answer = run.answer
    # The TTL time the key holds now (in a poll, SEQ as its re-run left it).
    parked.ttl_at_ms = later_ttl(cells, 0, run.parked, run.held_ttl_ms)
    before = run.parked.parked if run.parked is not None else None
    if before is not None:  # parked again: the bytes before the first park stand
        if before.HasField("expire_at_ms"):
            parked.expire_at_ms = before.expire_at_ms
        parked.prior_cache = before.prior_cache
        if before.HasField("prior_seq"):
            parked.prior_seq = before.prior_seq
    elif run.resumed is not None:  # SEQ already says "read CONTINUATION"
        parked.prior_cache = cells.cache.read() or b""
    else:
        parked.prior_seq = cells.seq.read() or b""
        # The key's spend stays, and so does its TTL time (the re-run's commit keeps the later).
        kept = encode_ttl_at(parked.ttl_at_ms) if parked.ttl_at_ms else b""
        cells.seq.write(encode_seq(run.seq - 1, False) + spend + kept)
    return parked


def rerun(entity_key: bytes, continuation: Continuation) -> Run:
    """The run the poll re-executes: the parked one, at its seq, with its event and clock."""
    parked = continuation.parked
    answer = parked.answer if parked.HasField("answer") else None
    return Run(
        entity_key=entity_key,
        event=continuation.event,
        event_id=continuation.event_id,
        seq=continuation.seq,
        now_ms=continuation.event_time_ms,
        element_time_ms=parked.element_time_ms,
        answer=answer,
        resumed=continuation if answer is not None else None,
        backlog=list(continuation.buffered),
        drained=parked.drained,
        answered=parked.answered,
        parked=continuation,
        wake=continuation.wake if continuation.HasField("wake") else None,
        coalesced=list(continuation.coalesced),
        memory_digest=parked.memory_digest or None,
    )


def restore(run: Run, cells: KeyCells) -> Sequence[BufferedEvent]:
    """Put the key back as a failure in place leaves it; what waited, now free to run.

    A resumed suspension is live again with the events buffered since, up to
    the first answer that waited: that answer and what followed it are free
    (`parked_answers`); after a fresh event, its whole backlog is.
    """
    assert run.parked is not None
    parked = run.parked.parked
    if parked.HasField("prior_seq"):
        if parked.prior_seq:
            cells.seq.write(parked.prior_seq)
        else:
            cells.seq.clear()
    if parked.prior_cache:
        cells.cache.write(parked.prior_cache)
    else:
        cells.cache.clear()
    if run.resumed is None:
        cells.continuation.clear()
        cells.hitl_timer.clear()
        return run.backlog
    suspension = Continuation()
    suspension.CopyFrom(run.parked)
    suspension.ClearField("parked")
    events, rest = split(run.parked.buffered)
    if rest:
        del suspension.buffered[len(events) :]
    cells.continuation.write(encode_deterministic(suspension))
    cells.hitl_timer.set(timer_timestamp(suspension.deadline_ms))
    return rest
