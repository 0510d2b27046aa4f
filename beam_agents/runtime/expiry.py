"""The TTL timer's flush: demoting committed working memory before the wipe.

With `on_expire=FlushToLongterm()` the timer callback upserts the committed
`MemoryBlob` once, at the committed seq, under a bounded timeout, and only
then wipes. A failed upsert raises, so the runner retries the timer bundle
against state that was deliberately left unwiped (`beam_agents.memory.expire`
explains why that is the meaning of configuring it).
"""

from __future__ import annotations

from beam_agents.coders import encode_deterministic
from beam_agents.config import AgentConfig
from beam_agents.memory.longterm import record_time_ms
from beam_agents.memory.stores.base import MemoryRecord, MemoryStore
from beam_agents.proto.beam_agents_pb2 import MemoryBlob
from beam_agents.runtime.driver import LoopDriver
from beam_agents.runtime.errors import scrub_secrets
from beam_agents.runtime.metrics import runtime_metrics

__all__ = ["ExpireFlushError", "flush_on_expire"]


class ExpireFlushError(RuntimeError):
    """The on_expire flush failed: the timer bundle fails and is retried, unwiped."""


def flush_on_expire(
    *,
    config: AgentConfig,
    store: MemoryStore | None,
    driver: LoopDriver,
    entity_key: bytes,
    blob: MemoryBlob,
    seq: int,
    fire_time_ms: int,
) -> int:
    """Upsert the committed blob if `on_expire` asks for it; the rows written (0 or 1)."""
    on_expire = config.on_expire
    if on_expire is None or store is None:
        return 0
    record = MemoryRecord(
        key=on_expire.key,
        value=encode_deterministic(blob),
        seq=seq,
        updated_at_ms=record_time_ms(fire_time_ms),
    )
    try:
        driver.run(store.upsert_many(entity_key, [record]), config.longterm_timeout_s)
    except Exception as exc:
        raise ExpireFlushError(
            f"on_expire flush of {entity_key!r} at seq {seq} failed "
            f"({type(exc).__name__}: {scrub_secrets(str(exc))}); the key is left unwiped "
            "and the timer bundle will be retried"
        ) from exc
    runtime_metrics.expire_flushes.inc()  # type: ignore[no-untyped-call]
    return 1
