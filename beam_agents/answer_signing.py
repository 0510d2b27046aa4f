"""Signed approval answers: only a holder of the deployment's key can resume a suspension.

Without a key, whoever can put an element on a pipeline's answers input (a
Pub/Sub publisher on the answers topic, a project Editor) can approve or
deny any page, naming any approver. With `AgentConfig(answer_signing_key=
"env:NAME")` (or a Secret Manager version name) the pipeline accepts only
answers carrying an HMAC-SHA256, under that key, of the intent id, the
entity key, the answer text, the approver and the answer's expiry. The
console signs with the same key; a publisher without it can forge nothing,
and a signed answer cannot be moved to another intent or entity, have its
text changed, or be used after it expires.

A signed answer travels as the answer bytes of `(key, intent_id, answer)`:
a JSON object with string fields `answer`, `approver` and `signature` and
the integer `expires_at_ms` (other fields, such as the rest of the
console's line, are ignored). The agent sees only `answer`, as it would
unsigned.

The key also names approvals: an approval's id is an HMAC of its entity
key, seq and index and of the decision itself (the suspended event, its
event time, the prompt and the timeout), so an answer signed for one
approval names no other, even one at the same seq of a deployment that
started again from fresh state. The id is a function of committed state
and of the activation's inputs, so a retried bundle emits the same id (an
activation never draws randomness). These ids are version-8 UUIDs; an id
of any other form was issued before approvals were bound to their decision,
and only an answer to such an id may come in the older form, without an
expiry, so a suspension committed then still resolves.

The key is read where it is used: on the worker in `setup()` (the pipeline
graph carries only where it lives) and by the console at start. Errors name
the source, never the value.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from dataclasses import dataclass
from typing import Final

from beam_agents._connections.secret_sources import check_secret_source, read_secret_now
from beam_agents.errors import BeamAgentsError, ConfigurationError

__all__ = [
    "MIN_KEY_BYTES",
    "AnswerRefused",
    "AnswerVerificationError",
    "SignedAnswer",
    "answer_signature",
    "approval_intent_id",
    "check_key_source",
    "open_answer",
    "read_signing_key",
    "signed_answer_bytes",
]

MIN_KEY_BYTES: Final = 32
"""A key shorter than this is refused: it must not be guessable offline from one signature."""
_LEGACY_ANSWER_DOMAIN: Final = "beam-agents/answer/v1"
_ANSWER_DOMAIN: Final = "beam-agents/answer/v2"
_INTENT_DOMAIN: Final = "beam-agents/approval-intent/v2"
_BOUND_ID_VERSION: Final = 8
"""The UUID version of an approval id bound to its decision; older ids are version 4."""
_MAX_ENVELOPE_BYTES: Final = 64 * 1024


def check_key_source(field: str, source: object) -> str:
    """`env:NAME` or `projects/P/secrets/S/versions/V`; ConfigurationError naming `field` else."""
    return check_secret_source(field, source)


def read_signing_key(field: str, source: str) -> bytes:
    """The key's bytes, read now from the environment or Secret Manager."""
    value = read_secret_now(field, source).encode("utf-8")
    if len(value) < MIN_KEY_BYTES:
        raise ConfigurationError(field, f"the key in {source} is under {MIN_KEY_BYTES} bytes")
    return value


def _mac(key: bytes, domain: str, *parts: str) -> bytes:
    message = json.dumps([domain, *parts], ensure_ascii=False, separators=(",", ":"))
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest()


def answer_signature(
    key: bytes,
    *,
    intent_id: str,
    entity_key: bytes,
    answer: str,
    approver: str,
    expires_at_ms: int,
) -> str:
    """The hex HMAC-SHA256 binding an answer's text, approver and expiry to one intent of a key."""
    return _mac(
        key, _ANSWER_DOMAIN, intent_id, entity_key.hex(), answer, approver, str(expires_at_ms)
    ).hex()


def _legacy_signature(
    key: bytes, *, intent_id: str, entity_key: bytes, answer: str, approver: str
) -> str:
    """The signature answers carried before they had an expiry; verified for older ids only."""
    return _mac(key, _LEGACY_ANSWER_DOMAIN, intent_id, entity_key.hex(), answer, approver).hex()


def signed_answer_bytes(
    key: bytes,
    *,
    intent_id: str,
    entity_key: bytes,
    answer: str,
    approver: str,
    expires_at_ms: int,
) -> bytes:
    """The answer bytes of a signed answer, as the pipeline's answers input takes them.

    `expires_at_ms` is on the pipeline's processing-time clock: the answer is
    refused once that clock passes it, so a copy kept by anyone who saw it
    on the answers topic is useless afterwards.
    """
    signature = answer_signature(
        key,
        intent_id=intent_id,
        entity_key=entity_key,
        answer=answer,
        approver=approver,
        expires_at_ms=expires_at_ms,
    )
    envelope = {
        "answer": answer,
        "approver": approver,
        "expires_at_ms": expires_at_ms,
        "signature": signature,
    }
    return json.dumps(envelope, sort_keys=True, separators=(",", ":")).encode("utf-8")


def approval_intent_id(
    key: bytes,
    entity_key: bytes,
    seq: int,
    index: int,
    *,
    event: bytes,
    event_time_ms: int,
    prompt: bytes,
    timeout_ms: int,
) -> str:
    """An approval intent's id under a signing key: unguessable, and the same on every retry.

    It commits to the decision asked (the suspended event and its event
    time, the prompt, the timeout) as well as to where it is asked (entity,
    seq, index): a key that starts again from fresh state reaches seq 1
    again, but asks a different question there under a different id.
    """
    decision = hashlib.sha256(
        json.dumps(
            [hashlib.sha256(event).hexdigest(), event_time_ms, prompt.hex(), timeout_ms],
            separators=(",", ":"),
        ).encode("utf-8")
    ).hexdigest()
    digest = _mac(key, _INTENT_DOMAIN, entity_key.hex(), str(seq), str(index), decision)
    value = int.from_bytes(digest[:16], "big")
    value &= ~(0xF << 76) & ~(0x3 << 62)  # clear the version nibble and the variant bits
    value |= (_BOUND_ID_VERSION << 76) | (0x2 << 62)  # RFC 9562 version 8, RFC 4122 variant
    return str(uuid.UUID(int=value))


def _bound_to_decision(intent_id: str) -> bool:
    """Whether `intent_id` is one `approval_intent_id` makes now (its answers must expire)."""
    try:
        return uuid.UUID(intent_id).version == _BOUND_ID_VERSION
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class SignedAnswer:
    """A verified answer: the text the agent reads and who gave it."""

    answer: bytes
    approver: str


class AnswerVerificationError(BeamAgentsError):
    """An answer that failed verification; `unsigned` and `expired` say which dead letter it is.

    `expired` is set only for an answer whose signature verified: a forged
    answer is a bad signature whatever expiry it claims.
    """

    def __init__(self, detail: str, *, unsigned: bool, expired: bool = False) -> None:
        super().__init__(detail)
        self.detail = detail
        self.unsigned = unsigned
        self.expired = expired


AnswerRefused = AnswerVerificationError
"""The old name of `AnswerVerificationError`, kept importable."""


@dataclass(frozen=True, slots=True)
class _Envelope:
    answer: str
    approver: str
    signature: str
    expires_at_ms: int | None


def _envelope(payload: bytes) -> _Envelope:
    """The fields of a signed answer's envelope, or `AnswerVerificationError` (unsigned)."""
    if len(payload) > _MAX_ENVELOPE_BYTES:
        raise AnswerVerificationError(f"answer is over {_MAX_ENVELOPE_BYTES} bytes", unsigned=True)
    try:
        envelope = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError):
        envelope = None
    if not isinstance(envelope, dict):
        raise AnswerVerificationError(
            "answer is not a signed answer (a JSON object with answer, approver, "
            "expires_at_ms, signature)",
            unsigned=True,
        )
    fields = {name: envelope.get(name) for name in ("answer", "approver", "signature")}
    missing = sorted(name for name, value in fields.items() if not isinstance(value, str))
    if missing:
        raise AnswerVerificationError(
            f"signed answer lacks string field(s) {', '.join(missing)}", unsigned=True
        )
    expires = envelope.get("expires_at_ms")
    if expires is not None and (not isinstance(expires, int) or isinstance(expires, bool)):
        raise AnswerVerificationError(
            "signed answer's expires_at_ms is not an integer", unsigned=True
        )
    answer, approver, signature = (str(fields[n]) for n in ("answer", "approver", "signature"))
    return _Envelope(answer, approver, signature.lower(), expires)


def open_answer(
    key: bytes, entity_key: bytes, intent_id: str, payload: bytes, *, now_ms: int
) -> SignedAnswer:
    """Verify a signed answer at `now_ms`, or raise `AnswerVerificationError` saying why not.

    `now_ms` is the processing-time clock the pipeline's HITL deadlines use:
    an attacker can set an answer's event time, not the worker's clock.
    """
    opened = _envelope(payload)
    if opened.expires_at_ms is None:
        if _bound_to_decision(intent_id):
            raise AnswerVerificationError(
                f"signed answer lacks expires_at_ms, which every answer to intent {intent_id} "
                "must carry",
                unsigned=True,
            )
        expected = _legacy_signature(
            key,
            intent_id=intent_id,
            entity_key=entity_key,
            answer=opened.answer,
            approver=opened.approver,
        )
    else:
        expected = answer_signature(
            key,
            intent_id=intent_id,
            entity_key=entity_key,
            answer=opened.answer,
            approver=opened.approver,
            expires_at_ms=opened.expires_at_ms,
        )
    if not hmac.compare_digest(expected, opened.signature):
        raise AnswerVerificationError(
            f"answer signature does not match intent {intent_id} of this key under the "
            "deployment's signing key",
            unsigned=False,
        )
    if opened.expires_at_ms is not None and now_ms > opened.expires_at_ms:
        raise AnswerVerificationError(
            f"signed answer to intent {intent_id} expired at {opened.expires_at_ms} ms; the "
            f"worker's clock reads {now_ms} ms",
            unsigned=False,
            expired=True,
        )
    return SignedAnswer(opened.answer.encode("utf-8"), opened.approver)
