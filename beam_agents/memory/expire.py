"""`on_expire`: where a key's working memory goes when the TTL reclaims it.

By default TTL garbage collection simply wipes an idle key's working memory.
`AgentConfig(on_expire=FlushToLongterm())` demotes it to the long-term tier
first: the timer callback upserts the committed `MemoryBlob` once, at the
committed seq, under a bounded timeout, and wipes only after the upsert
succeeded. A failed flush fails the timer bundle so the runner retries it
against state that was deliberately not wiped: during a long store outage
the key stays wedged, which is the meaning of configuring on_expire (this
memory must not be lost).
"""

from __future__ import annotations

from dataclasses import dataclass

from beam_agents.errors import ConfigurationError
from beam_agents.memory.stores.base import check_record_key

__all__ = ["FlushToLongterm"]


@dataclass(frozen=True, slots=True)
class FlushToLongterm:
    """Upsert expiring working memory under `key` (default `working_memory`).

    The row's value is the deterministic bytes of the committed `MemoryBlob`,
    its seq the key's committed seq and its `updated_at_ms` the timer's
    firing time (clamped to 0 before the epoch, as every record's is): a
    pure function of committed state, so a retried timer
    bundle writes byte-identical bytes that the seq guard collapses onto one
    row. A key with empty working memory is wiped with no store call.
    """

    key: str = "working_memory"

    def __post_init__(self) -> None:
        try:
            check_record_key(self.key)
        except ValueError as exc:
            raise ConfigurationError("FlushToLongterm.key", str(exc)) from None
