"""Lifecycle records: the runtime's trace stream, on `.lifecycle` when asked for.

`RunAgent(..., lifecycle=True)` emits one `LifecycleEvent` per thing that
happened to a key: an activation started and how it ended, a compaction, a
summarization, a TTL expiry, a flush. They are what a dashboard of a running
agent is drawn from (docs/lifecycle.md).

Each record is yielded with the commit it describes, in the same callback
and the same bundle, so it shares that commit's fate: a retried bundle
re-emits the same records, a failed activation emits only `failed`.
Times are event times (the activation's clock, or the timer's), never the
wall clock. With `lifecycle=False` the transform declares no extra output
and the runtime builds no record: every producer is behind one bool test.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from apache_beam.pvalue import TaggedOutput

from beam_agents.coders import STATE_SCHEMA_VERSION, ProtoRecordCoder
from beam_agents.proto.beam_agents_pb2 import LifecycleRecord
from beam_agents.runtime.wakes import WAKE_CANCELLED, WAKE_FIRED, WAKE_KINDS, WAKE_SCHEDULED

if TYPE_CHECKING:
    from beam_agents.memory.compaction import Compactor
    from beam_agents.memory.facade import Memory

__all__ = [
    "ACTIVATED",
    "BUFFERED",
    "COALESCED_DETAIL",
    "COMPACTED",
    "COMPLETED",
    "EXPIRE_FLUSHED",
    "FAILED",
    "KINDS",
    "LIFECYCLE_TAG",
    "LONGTERM_FLUSHED",
    "PARKED",
    "RESUMED",
    "SOFT_CAP",
    "SUMMARIZED",
    "SUSPENDED",
    "TTL_EXPIRED",
    "WAKE_CANCELLED",
    "WAKE_FIRED",
    "WAKE_SCHEDULED",
    "CompactionLog",
    "LifecycleEvent",
    "LifecycleEventCoder",
    "completion",
    "opened",
    "record",
]

LIFECYCLE_TAG: Final = "lifecycle"

ACTIVATED: Final = "activated"
"""An event's activation committed (detail `drained` if it had waited behind a suspension,
`coalesced` if it ran with the events before it, at their seq: `AgentConfig.coalesce_max`)."""
COALESCED_DETAIL: Final = "coalesced"
COMPLETED: Final = "completed"
"""The activation returned `Complete` and committed."""
SUSPENDED: Final = "suspended"
"""The activation returned `Suspend` and committed (detail: the approval intent id)."""
RESUMED: Final = "resumed"
"""An answer resumed a suspension and the resumed run committed (detail: its intent id)."""
BUFFERED: Final = "buffered"
"""An event was held behind a live suspension, or an answer behind a park (detail: buffer
depth, this element included)."""
PARKED: Final = "parked"
"""The activation parked on a model call; nothing it staged was committed (detail: the call key)."""
COMPACTED: Final = "compacted"
"""A tier-1 compaction run evicted keys (detail: JSON list of the evicted keys)."""
SUMMARIZED: Final = "summarized"
"""Tier-2 summarization folded rings (detail: how many)."""
SOFT_CAP: Final = "soft_cap"
"""Working memory reached the soft cap during the activation."""
TTL_EXPIRED: Final = "ttl_expired"
"""The TTL timer wiped the key's working state (SEQ survives)."""
EXPIRE_FLUSHED: Final = "expire_flushed"
"""`on_expire` upserted working memory before the wipe (detail: rows written)."""
LONGTERM_FLUSHED: Final = "longterm_flushed"
"""The commit-tail flush upserted staged long-term saves (detail: rows written)."""
FAILED: Final = "failed"
"""A record went to `.errors` (detail: its reason); nothing else was committed for it."""

KINDS: Final = frozenset(
    {
        ACTIVATED,
        COMPLETED,
        SUSPENDED,
        RESUMED,
        BUFFERED,
        PARKED,
        COMPACTED,
        SUMMARIZED,
        SOFT_CAP,
        TTL_EXPIRED,
        EXPIRE_FLUSHED,
        LONGTERM_FLUSHED,
        FAILED,
        *WAKE_KINDS,
    }
)


@dataclass(frozen=True, slots=True)
class LifecycleEvent:
    """One lifecycle record of one key.

    - `kind`: one of `KINDS` (docs/lifecycle.md says when each is emitted).
    - `event_time_ms`: the activation's event time (`ctx.now_ms`), or the
      firing time of the timer the record comes from; never the wall clock.
    - `seq`: the activation's seq (for timers and dead letters: the key's
      committed seq, or the suspension's).
    - `memory_bytes`: the key's committed working-memory size once the
      step the record belongs to has committed.
    - `detail`: kind-specific, see the kind constants.
    """

    entity_key: bytes
    kind: str
    event_time_ms: int
    seq: int
    memory_bytes: int
    detail: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown LifecycleEvent kind {self.kind!r}")

    def to_proto(self) -> LifecycleRecord:
        """The record's wire form."""
        return LifecycleRecord(
            state_schema_version=STATE_SCHEMA_VERSION,
            entity_key=self.entity_key,
            kind=self.kind,
            event_time_ms=self.event_time_ms,
            seq=self.seq,
            memory_bytes=self.memory_bytes,
            detail=self.detail,
        )

    @classmethod
    def from_proto(cls, message: LifecycleRecord) -> LifecycleEvent:
        """Read a record back from its wire form."""
        return cls(
            message.entity_key,
            message.kind,
            message.event_time_ms,
            message.seq,
            message.memory_bytes,
            message.detail,
        )


class LifecycleEventCoder(ProtoRecordCoder):
    """Encodes LifecycleEvent as a deterministic `LifecycleRecord`, never pickle."""

    value_type = LifecycleEvent
    message_type = LifecycleRecord


# A record on the `.lifecycle` output, typed as Beam reads a tagged output's type.
Record = TaggedOutput[Literal["lifecycle"], LifecycleEvent]


def record(
    entity_key: bytes, kind: str, event_time_ms: int, seq: int, memory_bytes: int, detail: str = ""
) -> Record:
    """One record, tagged for the `.lifecycle` output."""
    return TaggedOutput(
        LIFECYCLE_TAG, LifecycleEvent(entity_key, kind, event_time_ms, seq, memory_bytes, detail)
    )


def opened(
    entity_key: bytes,
    time_ms: int,
    seq: int,
    memory_bytes: int,
    *,
    resumed_intent: str | None = None,
    drained: bool = False,
) -> Record:
    """The record opening a committed activation: `resumed`, or `activated`."""
    if resumed_intent is not None:
        return record(entity_key, RESUMED, time_ms, seq, memory_bytes, resumed_intent)
    return record(entity_key, ACTIVATED, time_ms, seq, memory_bytes, "drained" if drained else "")


def completion(
    entity_key: bytes,
    time_ms: int,
    seq: int,
    memory_bytes: int,
    *,
    compactions: Sequence[tuple[str, ...]],
    soft_cap: bool,
    folded: int,
    flushed: int,
) -> list[Record]:
    """What a completed activation committed, in the order it happened, then `completed`."""
    out = [
        record(entity_key, COMPACTED, time_ms, seq, memory_bytes, json.dumps(list(evicted)))
        for evicted in compactions
    ]
    if soft_cap:
        out.append(record(entity_key, SOFT_CAP, time_ms, seq, memory_bytes))
    if folded:
        out.append(record(entity_key, SUMMARIZED, time_ms, seq, memory_bytes, f"{folded}"))
    if flushed:
        out.append(record(entity_key, LONGTERM_FLUSHED, time_ms, seq, memory_bytes, f"{flushed}"))
    out.append(record(entity_key, COMPLETED, time_ms, seq, memory_bytes))
    return out


class CompactionLog:
    """Wraps the configured tier-1 compactor to learn what each run evicted.

    Used only with lifecycle records on, so the plain path keeps calling the
    user's compactor directly. The facade hands the compactor itself, so
    the keys before and after a run are exactly what that run removed.
    """

    __slots__ = ("_inner", "runs")

    def __init__(self, inner: Compactor) -> None:
        self._inner = inner
        self.runs: list[tuple[str, ...]] = []

    def compact(self, memory: Memory) -> None:
        """Run the wrapped compactor; remember the keys it evicted, if any."""
        before = memory.keys()
        self._inner.compact(memory)
        evicted = tuple(key for key in before if key not in memory)
        if evicted:
            self.runs.append(evicted)
