"""The TTL timer's flush: demoting committed working memory before the wipe.

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

from beam_agents.coders import encode_deterministic
from beam_agents.config import AgentConfig
from beam_agents.errors import describe_briefly
from beam_agents.memory.expire import expire_records
from beam_agents.memory.longterm import record_time_ms
from beam_agents.memory.stores.base import MemoryStore
from beam_agents.memory.stores.errors import InvalidRecordError
from beam_agents.proto.beam_agents_pb2 import MemoryBlob
from beam_agents.runtime._driver import LoopDriver
from beam_agents.runtime._flush import flush
from beam_agents.runtime._metrics import runtime_metrics
from beam_agents.runtime.errors import scrub_secrets

__all__ = ["ExpireFlushError", "ExpireFlushRefused", "flush_on_expire"]


class ExpireFlushError(RuntimeError):
    """The on_expire flush failed: the timer bundle fails and is retried, unwiped."""


class ExpireFlushRefused(Exception):
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
) -> int:
    """Upsert the committed blob if `on_expire` asks for it; the rows written.

    Raises `ExpireFlushError` to have the timer retried, `ExpireFlushRefused`
    when no retry could succeed.
    """
    on_expire = config.on_expire
    if on_expire is None or store is None:
        return 0
    records = expire_records(
        on_expire.key, blob, seq=seq, updated_at_ms=record_time_ms(fire_time_ms)
    )
    try:
        driver.run(flush(store, entity_key, records, config.longterm_timeout_s))
    except InvalidRecordError as exc:
        raise ExpireFlushRefused(
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
    runtime_metrics.expire_flushes.inc()  # type: ignore[no-untyped-call]
    return len(records)
