"""The TTL timer: an idle key's working state is wiped, after its on_expire flush.

The wipe clears every cell but SEQ (a key that comes back continues its
seq). A key with a follow-up still to come is not idle: the firing does
nothing, and the follow-up's run re-arms the TTL, so `on_expire` sees memory
as the last follow-up left it. Follow-ups already due and held behind a
suspension the wipe reaches are dead-lettered with it. A suspension the wipe
reaches is dead-lettered with every event held behind it, so nothing is
lost silently; a parked key is not wiped under its running activation: the
expiry is noted and the poll expires the key once the activation resolves,
as it would have expired after it in place.

With `on_expire=FlushToLongterm()` the timer callback upserts the committed
`MemoryBlob` once, at the committed seq, under a bounded timeout, and only
then wipes. A store that is down or slow fails the timer bundle, so the
runner retries it against state that was deliberately left unwiped
(`beam_agents.memory.expire` explains why that is the meaning of configuring
it). A store that *refuses* the rows (`InvalidRecordError`: a row it can
never hold) would refuse every retry too, and wedge the key and its
pipeline: that flush is dead-lettered as `expire_flush_refused`, carrying
the blob's bytes as its payload so nothing is lost, and the key is wiped.

The caps of working memory count value bytes; the blob also carries every
entry's key and framing, so a memory far inside the caps can encode to
more than one row may hold (60,000 one-byte scalars are 120 KB of values in
a 1.4 MB blob). Such a blob is written as several rows, each a valid
`MemoryBlob` (`beam_agents.memory.expire.expire_records`), in one
`upsert_many`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import NamedTuple

from beam_agents._scrub import scrub_secrets
from beam_agents.coders import encode_deterministic
from beam_agents.config import AgentConfig
from beam_agents.errors import BeamAgentsError, StateDecodeError, describe_briefly
from beam_agents.memory.expire import expire_records, expiring_text
from beam_agents.memory.longterm import record_time_ms
from beam_agents.memory.recall import MAX_TEXT_BYTES
from beam_agents.memory.resident import EMPTY_DIGEST
from beam_agents.memory.stores.base import Embedding, MemoryStore
from beam_agents.memory.stores.errors import InvalidRecordError
from beam_agents.model.messages import EmbedRequest, canonical_request_bytes
from beam_agents.model.replay import attempt_memo, call_key
from beam_agents.proto.beam_agents_pb2 import (
    Continuation,
    MemoryBlob,
    PendingIntents,
    PendingWake,
    SeqState,
)
from beam_agents.proto.beam_agents_pb2 import ReplayCache as ReplayCacheBlob
from beam_agents.runtime import errors as reasons
from beam_agents.runtime import lifecycle as trace
from beam_agents.runtime._calls.driver import LoopDriver
from beam_agents.runtime._calls.models import Models, decode_vectors
from beam_agents.runtime._cells import SCHEMA_VERSION, KeyCells, StoredMemory, read_memory
from beam_agents.runtime._cells import read_message as parse
from beam_agents.runtime._metrics import model_counters, runtime_metrics
from beam_agents.runtime._outputs import Output, committed_bytes
from beam_agents.runtime._paths import parking, suspension
from beam_agents.runtime._paths.flush import flush
from beam_agents.runtime._paths.instance import Instance
from beam_agents.runtime._paths.wake_writes import wakes_wiped
from beam_agents.runtime._timestamps import MAX_TIMER_MS
from beam_agents.runtime._wake_book import read_pending

__all__ = ["ExpireFlushError", "ExpireFlushRefusedError", "flush_on_expire", "on_ttl"]


def on_ttl(act: Instance, entity_key: bytes, fire_time_ms: int, cells: KeyCells) -> list[Output]:
    """The key was idle for `ttl_ms`: wipe its working state (SEQ survives).

    SEQ and CONTINUATION decide first whether anything is to be wiped, so a
    firing that finds nothing to do, or a parked key, reads no other cell:
    on a portable runner a read caches a cell, and every later write of it
    is then sized.
    """
    try:
        seq_state = parse(cells.seq, SeqState, "SEQ")
        if seq_state is not None and seq_state.expired:
            return []  # this timer already wiped the key, and nothing ran since
        if seq_state is not None and fire_time_ms < min(seq_state.ttl_at_ms, MAX_TIMER_MS):
            # A firing a later commit replaced, which the runner delivered anyway:
            # the key was not idle for the TTL, and the timer that commit set fires later.
            return []
        suspended = suspension.live(cells, seq_state)
        if parking.is_parked(suspended):
            # The expiry waits for the parked activation, as it waits for a
            # suspension: the poll expires the key, through here, if nothing
            # re-arms the TTL (a follow-up still to come then keeps it).
            assert suspended is not None
            parking.mark_expiry(suspended, fire_time_ms, cells)
            return []
        wakes = read_pending(cells.wakes)
        held = _held_at_expiry(
            cells, seq_state, suspended, flushes=act.config.on_expire is not None
        )
    except StateDecodeError as exc:
        # Unreadable state is never wiped: a deploy mistake must not become data loss.
        return act.emit.refusal(entity_key, reasons.STATE_DECODE_ERROR, str(exc), fire_time_ms)
    if any(not wake.handed for wake in wakes):
        # A follow-up is still to come: the key is not idle. Its run re-arms
        # the TTL (its commit, or its dead letter), as does the commit that
        # cancels or replaces it; re-arming here would fire again at once once
        # the watermark is past every time, for a wake the clock never reaches.
        return []
    return _expire(act, entity_key, fire_time_ms, held, wakes, cells)


class _Held(NamedTuple):
    """What a key holds when its TTL fires."""

    seq: int
    seq_state: SeqState | None
    blob: MemoryBlob | None
    stored: StoredMemory
    """Which memory cells hold `blob` (so need their clear)."""
    suspended: Continuation | None
    cache: ReplayCacheBlob | None
    pending: PendingIntents | None


def _held_at_expiry(
    cells: KeyCells, seq_state: SeqState | None, suspended: Continuation | None, *, flushes: bool
) -> _Held:
    """What the key holds, read only where SEQ says it may hold it.

    The memory's entries only when `on_expire` will flush them: folding a
    large key's log costs as much as the events that wrote it. SEQ's memory
    digest says where the memory is (a suspension's SEQ carries none).
    """
    cache = pending = None
    digest = seq_state.memory_digest if seq_state is not None else b""
    stored = read_memory(cells, entries=flushes, digest=digest)
    blob = stored.blob
    # PENDING and LLM_CACHE are written only beside a CONTINUATION and
    # cleared with it, in one commit, so an idle key skips them too: each
    # read is a state fetch (a sized cache fill on the portable runner). A
    # parked key is not wiped now (its poll settles the expiry), so it
    # skips them as well; its re-run reads LLM_CACHE itself.
    if suspended is not None and not parking.is_parked(suspended):
        cache = parse(cells.cache, ReplayCacheBlob, "LLM_CACHE")
        pending = parse(cells.pending, PendingIntents, "PENDING")
    seq = seq_state.seq if seq_state is not None else 0
    return _Held(seq, seq_state, blob, stored, suspended, cache, pending)


def _expire(
    act: Instance,
    entity_key: bytes,
    fire_time_ms: int,
    held: _Held,
    wakes: list[PendingWake],
    cells: KeyCells,
) -> list[Output]:
    seq, blob, suspended = held.seq, held.blob, held.suspended
    out: list[Output] = []
    if suspended is not None:
        out.extend(_wipe_suspension(act, entity_key, suspended, blob, fire_time_ms, cells))
    rows = 0
    if blob is not None and blob.entries:
        rows = _flush_or_refuse(act, entity_key, blob, seq, fire_time_ms, out)
    act.resident.forget(act.token, entity_key)  # a retried timer bundle just decodes
    cleared = (
        (cells.memory, blob),
        (cells.cache, held.cache),
        (cells.continuation, suspended),
        (cells.pending, held.pending),
    )
    for cell, message in cleared:
        if message is not None:  # an empty cell needs no clear (a state write per cell)
            cell.clear()
    if held.stored.logged:
        cells.memory_log.clear()
    if held.stored.head:
        cells.memory_head.clear()
    _mark_expired(held.seq_state, cells)
    if wakes:  # due, and held behind the suspension just wiped: dead-lettered with it
        out.extend(wakes_wiped(act, entity_key, seq, wakes, fire_time_ms, cells))
    runtime_metrics.ttl_wipes.inc()
    if act.lifecycle:
        if rows:
            size = committed_bytes(blob)
            out.append(
                trace.record(entity_key, trace.EXPIRE_FLUSHED, fire_time_ms, seq, size, f"{rows}")
            )
        out.append(trace.record(entity_key, trace.TTL_EXPIRED, fire_time_ms, seq, 0))
    return out


def _mark_expired(seq_state: SeqState | None, cells: KeyCells) -> None:
    """Note in SEQ that the key is wiped, keeping its seq and its budget's spend.

    A runner may fire one TTL timer twice (the FnApiRunner does, for a timer
    set in two bundles at the same time); the second firing reads this and
    does nothing. The next commit writes SEQ afresh, without the mark.
    """
    marked = SeqState(state_schema_version=SCHEMA_VERSION)
    if seq_state is not None:
        marked.CopyFrom(seq_state)
    marked.continuation_clear = True  # the wipe cleared it
    marked.expired = True
    marked.memory_digest = EMPTY_DIGEST  # and the working memory
    cells.seq.write(encode_deterministic(marked))


def _wipe_suspension(
    act: Instance,
    entity_key: bytes,
    suspended: Continuation,
    blob: MemoryBlob | None,
    fire_time_ms: int,
    cells: KeyCells,
) -> list[Output]:
    """Dead letters for a suspension the wipe reaches, and every event held behind it."""
    detail = (
        f"TTL garbage collection reached the key while suspended at seq "
        f"{suspended.seq} waiting on intent {suspended.intent_id}"
    )
    decided = [suspended.event, *(event.event for event in suspended.coalesced)]
    held = [*((detail, payload) for payload in decided), *suspension.wiped(suspended)]
    out: list[Output] = []
    for text, payload in held:
        error = act.emit.error(
            entity_key, reasons.TTL_WIPED_SUSPENSION, text, fire_time_ms, payload
        )
        out.extend(act.emit.dead_letter(error, suspended.seq, committed_bytes(blob)))
    cells.hitl_timer.clear()
    return out


def _flush_or_refuse(
    act: Instance,
    entity_key: bytes,
    blob: MemoryBlob,
    seq: int,
    fire_time_ms: int,
    out: list[Output],
) -> int:
    """Rows the on_expire flush wrote; a permanent refusal is appended to `out`."""
    try:
        return flush_on_expire(
            config=act.config,
            store=act.store,
            driver=act.driver,
            models=act.provider if isinstance(act.provider, Models) else None,
            token=act.token,
            entity_key=entity_key,
            blob=blob,
            seq=seq,
            fire_time_ms=fire_time_ms,
        )
    except ExpireFlushRefusedError as refused:
        error = act.emit.error(
            entity_key,
            reasons.EXPIRE_FLUSH_REFUSED,
            refused.detail,
            fire_time_ms,
            refused.payload,
        )
        out.extend(act.emit.dead_letter(error, seq, committed_bytes(blob)))
        return 0


class ExpireFlushError(BeamAgentsError, RuntimeError):
    """The on_expire flush failed: the timer bundle fails and is retried, unwiped."""


class ExpireFlushRefusedError(BeamAgentsError):
    """The store refused the on_expire rows for good: dead-letter them, then wipe."""

    def __init__(self, detail: str, payload: bytes) -> None:
        super().__init__(detail)
        self.detail = detail
        self.payload = payload


def flush_on_expire(
    *,
    config: AgentConfig,
    store: MemoryStore | None,
    driver: LoopDriver,
    entity_key: bytes,
    blob: MemoryBlob,
    seq: int,
    fire_time_ms: int,
    models: Models | None = None,
    token: str = "",
) -> int:
    """Upsert the committed blob if `on_expire` asks for it; the rows written.

    Raises `ExpireFlushError` to have the timer retried, `ExpireFlushRefusedError`
    when no retry could succeed.
    """
    on_expire = config.on_expire
    if on_expire is None or store is None:
        return 0
    records = expire_records(
        on_expire.key, blob, seq=seq, updated_at_ms=record_time_ms(fire_time_ms)
    )
    text = None if on_expire.text is None else expiring_text(blob, on_expire.text, MAX_TEXT_BYTES)
    try:
        if text is not None and models is not None:
            embedding = _embed_expiring(models, driver, config, token, entity_key, seq, text)
            # The head row (the last) carries the vector; parts are its continuation.
            records[-1] = dataclasses.replace(records[-1], embedding=embedding)
        driver.run(flush(store, entity_key, records, config.longterm_timeout_s))
    except InvalidRecordError as exc:
        raise ExpireFlushRefusedError(
            f"on_expire flush at seq {seq} refused by the store, which will refuse every "
            f"retry ({scrub_secrets(describe_briefly(exc))}); the payload is the working "
            "memory (a MemoryBlob), and the key was wiped",
            encode_deterministic(blob),
        ) from exc
    except Exception as exc:
        raise ExpireFlushError(
            f"on_expire flush of {entity_key!r} at seq {seq} failed "
            f"({scrub_secrets(describe_briefly(exc))}); the key is left unwiped "
            "and the timer bundle will be retried"
        ) from exc
    runtime_metrics.expire_flushes.inc()
    return len(records)


_EXPIRY_CALL_INDEX = -(2**31)
"""The replay-key index of an expiry's embedding: apart from every activation call's."""


def _embed_expiring(
    models: Models,
    driver: LoopDriver,
    config: AgentConfig,
    token: str,
    entity_key: bytes,
    seq: int,
    text: str,
) -> Embedding:
    """The embedding of what expires, called in place (a timer does not park).

    Kept in the process's attempt memo under the expiry's own replay key, so
    a timer bundle retried in this process (its flush failed) embeds nothing
    again; a retry elsewhere asks once more, and gets the same vector from a
    deterministic embedder.
    """
    embedder = models.embedder
    request = EmbedRequest(model_id=embedder.model_id, messages=[text])
    key = call_key(canonical_request_bytes(request), entity_key, seq, _EXPIRY_CALL_INDEX)
    response = attempt_memo.get(token, key)
    if response is None:
        counters = model_counters(embedder.model_id)
        counters.model_calls.inc()
        response = driver.run(
            asyncio.wait_for(models.complete(request), config.activation_timeout_s)
        )
        counters.spent(response.input_tokens, response.output_tokens)
        attempt_memo.put(token, key, response)
    (embedding,) = decode_vectors(response, embedder.model_id, embedder.dimensions, 1)
    return embedding
