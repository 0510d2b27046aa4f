"""The errors output: a closed vocabulary of reasons, one record per failure.

`event_time_ms` is the element's event time or the timer's scheduled time,
never the wall clock, so a retried bundle re-emits byte-identical records.
`payload` carries the event (or answer) the failure concerns, so nothing is
lost: a dead letter can be fixed and replayed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from beam_agents._scrub import scrub_secrets
from beam_agents.coders import STATE_SCHEMA_VERSION, ProtoRecordCoder
from beam_agents.model.errors import ModelCallError, ModelRateLimited, OutputInvalid
from beam_agents.proto.beam_agents_pb2 import ErrorRecord

__all__ = [
    "ACTIVATION_ERROR",
    "ACTIVATION_TIMEOUT",
    "BAD_ANSWER_SIGNATURE",
    "BUDGET_EXCEEDED",
    "EVENT_WHILE_SUSPENDED",
    "EXPIRED_ANSWER",
    "EXPIRE_FLUSH_REFUSED",
    "INVALID_EVENT",
    "LONGTERM_FLUSH_FAILED",
    "LONGTERM_READ_FAILED",
    "MEMORY_OVERFLOW",
    "MODEL_ERROR",
    "MODEL_RATE_LIMITED",
    "ORPHANED_ANSWER",
    "OUTPUT_INVALID",
    "REASONS",
    "STATE_DECODE_ERROR",
    "SUMMARIZER_ERROR",
    "SUSPENSION_TIMEOUT",
    "TOOL_ERROR",
    "TTL_WIPED_SUSPENSION",
    "UNSIGNED_ANSWER",
    "ActivationError",
    "ActivationErrorCoder",
    "ModelCallError",
    "ModelRateLimited",
    "OutputInvalid",
    "scrub_secrets",
]

ACTIVATION_ERROR: Final = "activation_error"
"""The agent raised."""
ACTIVATION_TIMEOUT: Final = "activation_timeout"
"""The agent ran longer than `AgentConfig.activation_timeout_s`."""
MEMORY_OVERFLOW: Final = "memory_overflow"
"""A working-memory write exceeded the hard cap even after compaction."""
MODEL_ERROR: Final = "model_error"
"""The provider raised or timed out, and the agent let it propagate."""
MODEL_RATE_LIMITED: Final = "model_rate_limited"
"""The provider refused for rate and waiting would not fit in the activation's time
(or its quota is exhausted for the day); nothing committed."""
SUMMARIZER_ERROR: Final = "summarizer_error"
"""Tier-2 summarization failed; nothing committed."""
LONGTERM_READ_FAILED: Final = "longterm_read_failed"
"""A `ctx.memory.longterm` read failed."""
LONGTERM_FLUSH_FAILED: Final = "longterm_flush_failed"
"""The commit-tail flush of staged long-term saves failed; nothing committed."""
TTL_WIPED_SUSPENSION: Final = "ttl_wiped_suspension"
"""Garbage collection reached a key that was still waiting on an answer."""
SUSPENSION_TIMEOUT: Final = "suspension_timeout"
"""No answer arrived before the suspension's deadline."""
ORPHANED_ANSWER: Final = "orphaned_answer"
"""An answer arrived for an intent no live suspension is waiting on."""
EVENT_WHILE_SUSPENDED: Final = "event_while_suspended"
"""An event arrived for a suspended key; it is dead-lettered with its payload."""
INVALID_EVENT: Final = "invalid_event"
"""The element was not a (bytes | str key, bytes | str value) pair."""
EXPIRE_FLUSH_REFUSED: Final = "expire_flush_refused"
"""The store refused the on_expire rows for good; the payload is the wiped memory."""
STATE_DECODE_ERROR: Final = "state_decode_error"
"""The key's persisted state could not be decoded; it is left untouched."""
BUDGET_EXCEEDED: Final = "budget_exceeded"
"""A model call would have started past the key's token budget; nothing committed."""
TOOL_ERROR: Final = "tool_error"
"""A `ctx.call_tool` failed (its handler after its retries, an unknown tool, the
ledger); nothing committed, and the tool's claim was released."""
UNSIGNED_ANSWER: Final = "unsigned_answer"
"""An answer without a signature reached a pipeline configured with
`AgentConfig.answer_signing_key`; it resumed nothing."""
BAD_ANSWER_SIGNATURE: Final = "bad_answer_signature"
"""An answer's signature did not verify under `AgentConfig.answer_signing_key`
(forged, signed with another key, or moved to another intent or key); it resumed nothing."""
OUTPUT_INVALID: Final = "output_invalid"
"""A structured model answer was still not a value of its output type after its
repairs (or was refused or cut off), or the agent's result was not its RunAgent's
`output_type`; the detail holds every error and the raw answer; nothing committed."""
EXPIRED_ANSWER: Final = "expired_answer"
"""A signed answer arrived after the expiry it was signed with (on the worker's
processing-time clock); it resumed nothing."""

REASONS: Final = frozenset(
    {
        ACTIVATION_ERROR,
        ACTIVATION_TIMEOUT,
        MEMORY_OVERFLOW,
        MODEL_ERROR,
        MODEL_RATE_LIMITED,
        SUMMARIZER_ERROR,
        LONGTERM_READ_FAILED,
        LONGTERM_FLUSH_FAILED,
        TTL_WIPED_SUSPENSION,
        SUSPENSION_TIMEOUT,
        ORPHANED_ANSWER,
        EVENT_WHILE_SUSPENDED,
        INVALID_EVENT,
        EXPIRE_FLUSH_REFUSED,
        STATE_DECODE_ERROR,
        BUDGET_EXCEEDED,
        TOOL_ERROR,
        UNSIGNED_ANSWER,
        BAD_ANSWER_SIGNATURE,
        EXPIRED_ANSWER,
        OUTPUT_INVALID,
    }
)

_MAX_DETAIL_CHARS: Final = 2000


def _printable(text: str) -> str:
    """`text` as valid UTF-8: lone surrogates become `\\udXXX` escapes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


@dataclass(frozen=True, slots=True)
class ActivationError:
    """One dead letter on the errors output."""

    entity_key: bytes
    reason: str
    detail: str
    event_time_ms: int
    payload: bytes = b""

    def __post_init__(self) -> None:
        if self.reason not in REASONS:
            raise ValueError(f"unknown ActivationError reason {self.reason!r}")

    @classmethod
    def of(
        cls, entity_key: bytes, reason: str, detail: str, event_time_ms: int, payload: bytes = b""
    ) -> ActivationError:
        """Build a record with `detail` scrubbed of secrets, bounded in size and valid UTF-8.

        An exception message may hold lone surrogates (text decoded with
        `surrogateescape`, a `json.loads` of `"\\ud800"`): protobuf refuses
        such a string, and a dead letter that cannot be encoded would fail
        the bundle it was meant to spare. They are written as escapes.
        """
        detail = scrub_secrets(_printable(detail))
        if len(detail) > _MAX_DETAIL_CHARS:
            detail = detail[: _MAX_DETAIL_CHARS - 1] + "…"
        return cls(entity_key, reason, detail, event_time_ms, payload)

    def to_proto(self) -> ErrorRecord:
        """The record's wire form."""
        return ErrorRecord(
            state_schema_version=STATE_SCHEMA_VERSION,
            entity_key=self.entity_key,
            reason=self.reason,
            detail=self.detail,
            event_time_ms=self.event_time_ms,
            payload=self.payload,
        )

    @classmethod
    def from_proto(cls, record: ErrorRecord) -> ActivationError:
        """Read a record back from its wire form."""
        return cls(
            record.entity_key, record.reason, record.detail, record.event_time_ms, record.payload
        )


class ActivationErrorCoder(ProtoRecordCoder):
    """Encodes ActivationError as a deterministic `ErrorRecord`, never pickle."""

    value_type = ActivationError
    message_type = ErrorRecord
