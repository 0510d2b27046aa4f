"""Signed approval answers: only a holder of the deployment's key can resume a suspension.

Without a key, whoever can put an element on a pipeline's answers input (a
Pub/Sub publisher on the answers topic, a project Editor) can approve or
deny any page, naming any approver. With `AgentConfig(answer_signing_key=
"env:NAME")` (or a Secret Manager version name) the pipeline accepts only
answers carrying an HMAC-SHA256, under that key, of the intent id, the
entity key, the answer text and the approver. The console signs with the
same key; a publisher without it can forge nothing, and a signed answer
cannot be moved to another intent or entity or have its text changed.

A signed answer travels as the answer bytes of `(key, intent_id, answer)`:
a JSON object with string fields `answer`, `approver` and `signature`
(other fields, such as the rest of the console's line, are ignored). The
agent sees only `answer`, as it would unsigned.

The same key also makes approval intent ids unguessable: an approval's id
is an HMAC of its entity key, seq and index rather than a UUIDv5 anyone can
recompute, yet a function of committed state, so a retried bundle emits
the same id (an activation never draws randomness).

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
_ANSWER_DOMAIN: Final = "beam-agents/answer/v1"
_INTENT_DOMAIN: Final = "beam-agents/approval-intent/v1"
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
    key: bytes, *, intent_id: str, entity_key: bytes, answer: str, approver: str
) -> str:
    """The hex HMAC-SHA256 binding an answer's text and approver to one intent of one entity."""
    return _mac(key, _ANSWER_DOMAIN, intent_id, entity_key.hex(), answer, approver).hex()


def signed_answer_bytes(
    key: bytes, *, intent_id: str, entity_key: bytes, answer: str, approver: str
) -> bytes:
    """The answer bytes of a signed answer, as the pipeline's answers input takes them."""
    signature = answer_signature(
        key, intent_id=intent_id, entity_key=entity_key, answer=answer, approver=approver
    )
    envelope = {"answer": answer, "approver": approver, "signature": signature}
    return json.dumps(envelope, sort_keys=True, separators=(",", ":")).encode("utf-8")


def approval_intent_id(key: bytes, entity_key: bytes, seq: int, index: int) -> str:
    """An approval intent's id under a signing key: unguessable, and the same on every retry."""
    digest = _mac(key, _INTENT_DOMAIN, entity_key.hex(), str(seq), str(index))
    return str(uuid.UUID(bytes=digest[:16], version=4))


@dataclass(frozen=True, slots=True)
class SignedAnswer:
    """A verified answer: the text the agent reads and who gave it."""

    answer: bytes
    approver: str


class AnswerVerificationError(BeamAgentsError):
    """An answer that failed verification; `unsigned` says which dead-letter reason it is."""

    def __init__(self, detail: str, *, unsigned: bool) -> None:
        super().__init__(detail)
        self.detail = detail
        self.unsigned = unsigned


AnswerRefused = AnswerVerificationError
"""The old name of `AnswerVerificationError`, kept importable."""


def open_answer(key: bytes, entity_key: bytes, intent_id: str, payload: bytes) -> SignedAnswer:
    """Verify a signed answer's envelope, or raise `AnswerVerificationError` saying why not."""
    if len(payload) > _MAX_ENVELOPE_BYTES:
        raise AnswerVerificationError(f"answer is over {_MAX_ENVELOPE_BYTES} bytes", unsigned=True)
    try:
        envelope = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError):
        envelope = None
    if not isinstance(envelope, dict):
        raise AnswerVerificationError(
            "answer is not a signed answer (a JSON object with answer, approver, signature)",
            unsigned=True,
        )
    fields = {name: envelope.get(name) for name in ("answer", "approver", "signature")}
    missing = sorted(name for name, value in fields.items() if not isinstance(value, str))
    if missing:
        raise AnswerVerificationError(
            f"signed answer lacks string field(s) {', '.join(missing)}", unsigned=True
        )
    answer, approver, signature = (str(fields[n]) for n in ("answer", "approver", "signature"))
    expected = answer_signature(
        key, intent_id=intent_id, entity_key=entity_key, answer=answer, approver=approver
    )
    if not hmac.compare_digest(expected, signature.lower()):
        raise AnswerVerificationError(
            f"answer signature does not match intent {intent_id} of this key under the "
            "deployment's signing key",
            unsigned=False,
        )
    return SignedAnswer(answer.encode("utf-8"), approver)
