"""Signed adapter state: an adapter restores only what this pipeline itself wrote.

A framework adapter keeps its framework's state (a LangGraph checkpoint,
an ADK session, ADK memory records) in the key's working memory, which
`on_expire=FlushToLongterm()` copies to the long-term store, where the
adapter reads it back after a TTL wipe. Whoever can write that store (a
Redis client, a SQL user, an IAM principal on the Bigtable table or the
Firestore database) can otherwise hand the adapter any state they like: a
forged conversation, a pending approval the next answer executes.

With `AgentConfig.answer_signing_key` set, the job's one HMAC key signs
adapter state too: the runtime makes it current around each run of the
agent (`signing_state`), an adapter `seal`s what it writes and
`open_sealed`s what it reads, and bytes that fail are refused with
`StateSignatureError` (the activation fails as `state_decode_error` and the
state is left as it was: nothing is silently replaced). Without the key
nothing is signed and sealed bytes read as their payload; the adapters'
allow-lists (what their decoders will construct at all) are then the
only guard, as they are the first guard with a key.

Sealed bytes are `PREFIX`, then an HMAC-SHA256 over a domain, the entry's
name, the entity key and the payload, then the payload. Binding the entry
and the entity key means a row copied from another key or another entry
does not verify; nothing binds the seq, so an older row of the same entry
and key (replayed by someone who kept a copy) still verifies.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Final

from beam_agents._scoped import Scoped
from beam_agents.errors import StateDecodeError

__all__ = [
    "KEY_FIELD",
    "PREFIX",
    "StateSignatureError",
    "StateSigner",
    "current_signer",
    "open_sealed",
    "seal",
    "signing_state",
]

PREFIX: Final = b"beam-agents/signed-state/1\0"
"""What every sealed value starts with; no adapter's unsealed encoding starts so."""
KEY_FIELD: Final = "AgentConfig.answer_signing_key"
"""The setting that holds the key: errors name it, never the key."""
_DOMAIN: Final = "beam-agents/adapter-state/v1"
_MAC_BYTES: Final = hashlib.sha256().digest_size


class StateSignatureError(StateDecodeError):
    """Adapter state that is unsigned, or whose signature fails, under the job's key.

    A `StateDecodeError`, so the runtime fails the activation as
    `state_decode_error` and leaves the stored state untouched for an
    operator to look at.
    """


@dataclass(frozen=True, slots=True)
class StateSigner:
    """HMAC-SHA256 of adapter state under the job's key; the key is never shown."""

    key: bytes = field(repr=False)

    def mac(self, entry: str, entity_key: bytes, payload: bytes) -> bytes:
        """The tag binding `payload` to one entry of one entity key."""
        header = json.dumps([_DOMAIN, entry, entity_key.hex()], separators=(",", ":"))
        return hmac.new(self.key, header.encode("utf-8") + b"\0" + payload, "sha256").digest()


_SIGNER: ContextVar[StateSigner | None] = ContextVar("beam_agents_state_signer", default=None)


@functools.lru_cache(maxsize=8)
def _signer(key: bytes | None) -> StateSigner | None:
    # One object per key: the runtime's activation loop reuses its task while
    # the context it copies compares equal, which a fresh object per run breaks.
    return None if key is None else StateSigner(key)


def signing_state(key: bytes | None) -> Scoped[StateSigner | None]:
    """`with signing_state(key):` seals and verifies adapter state under `key` in the block."""
    return Scoped(_SIGNER, _signer(key))


def current_signer() -> StateSigner | None:
    """The signer of the running activation; None when the job has no signing key."""
    return _SIGNER.get()


def seal(entry: str, entity_key: bytes, payload: bytes) -> bytes:
    """`payload` as working memory or the long-term tier keeps it: signed when there is a key."""
    signer = _SIGNER.get()
    if signer is None:
        return payload
    return PREFIX + signer.mac(entry, entity_key, payload) + payload


def open_sealed(entry: str, entity_key: bytes, data: bytes) -> bytes:
    """The payload `seal` wrote, or `StateSignatureError` saying why it is refused.

    Without a key a sealed value reads as its payload unverified: turning
    the key off must not strand the state it signed.
    """
    signer = _SIGNER.get()
    signed = data.startswith(PREFIX) and len(data) >= len(PREFIX) + _MAC_BYTES
    if signer is None:
        return data[len(PREFIX) + _MAC_BYTES :] if signed else data
    if not signed:
        raise StateSignatureError(
            f"{entry!r} of this entity key is not signed, and {KEY_FIELD} is set: refused, "
            "since only state this pipeline signed is restored (written before the key "
            "was set, or by someone without it)"
        )
    tag = data[len(PREFIX) : len(PREFIX) + _MAC_BYTES]
    payload = data[len(PREFIX) + _MAC_BYTES :]
    if not hmac.compare_digest(tag, signer.mac(entry, entity_key, payload)):
        raise StateSignatureError(
            f"{entry!r} of this entity key fails its signature under {KEY_FIELD}: refused "
            "(changed or written by someone without the key, or copied from another entry "
            "or entity key)"
        )
    return payload
