"""ADK sessions in working memory: one scalar entry per session, in deterministic bytes.

The session of an entity key is what ADK remembers of its conversation:
its events and its state. It lives under `adk/session/<session id>` in the
key's working memory, so it is committed with the activation, wiped by the
TTL, demoted by `on_expire=FlushToLongterm()`, and read back from the
long-term tier when working memory has none.

Bounds: a session keeps at most `max_events` events and `max_bytes` encoded
bytes. Past either, whole invocations (a user turn and everything the agent
did for it) are dropped, oldest first, never the current event's; what is
left is still a conversation ADK can continue. The working-memory caps
still apply to the entry: a single turn too large for them fails the
activation as `memory_overflow`.

Trust: the entry is read back only as canonical JSON validated against
ADK's `Session` schema, which constructs nothing but its own models (no
name in the bytes selects a class). Under the job's signing key it is
also sealed when written and verified before it is parsed
(`beam_agents.state_signing`): a session someone wrote to the long-term
store (a forged conversation, a pending confirmation the next "approve"
would execute) is refused with `StateSignatureError`.
"""

from __future__ import annotations

import json
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session

from beam_agents._beam_metrics import counter
from beam_agents.adapters.adk._binding import AdkAdapterError, bound
from beam_agents.errors import StateDecodeError
from beam_agents.memory.expire import read_expired_memory
from beam_agents.memory.ring import SCALAR
from beam_agents.runtime.context import ActivationContext
from beam_agents.state_signing import open_sealed, seal

__all__ = [
    "SESSION_PREFIX",
    "WorkingMemorySessions",
    "decode_session",
    "encode_session",
    "load_session",
    "session_bytes",
    "trim_session",
]

SESSION_PREFIX = "adk/session/"
_dropped = counter("beam_agents.adapters", "adk_session_events_dropped")


def session_key(session_id: str) -> str:
    return SESSION_PREFIX + session_id


def encode_session(session: Session) -> bytes:
    """The session as canonical JSON: sorted keys, compact, UTF-8."""
    body = session.model_dump(mode="json", exclude_none=True)
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def session_bytes(ctx: ActivationContext, session_id: str, session: Session) -> bytes:
    """The session as its working-memory entry holds it: signed under the job's key."""
    return seal(session_key(session_id), ctx.entity_key, encode_session(session))


def decode_session(data: bytes, where: str) -> Session:
    try:
        return Session.model_validate_json(data)
    except ValueError as exc:
        raise StateDecodeError(f"{where} is not an ADK session: {exc}") from exc


async def load_session(ctx: ActivationContext, session_id: str) -> Session | None:
    """The session from working memory, else from the long-term tier's expired memory."""
    key = session_key(session_id)
    data = ctx.memory.get(key)
    if data is not None:
        return decode_session(open_sealed(key, ctx.entity_key, data), f"working memory {key!r}")
    longterm = ctx.memory.longterm_or_none
    if longterm is None:
        return None
    blob = await read_expired_memory(longterm)
    if blob is None:
        return None
    for entry in blob.entries:
        if entry.key == key and entry.value[:1] == bytes((SCALAR,)):
            payload = open_sealed(key, ctx.entity_key, entry.value[1:])
            return decode_session(payload, f"long-term working_memory {key!r}")
    return None


def trim_session(session: Session, keep_from: int, max_events: int, max_bytes: int) -> int:
    """Drop whole invocations before event `keep_from`, oldest first, until within bounds.

    Returns how many events were dropped.
    """
    dropped = 0
    while len(session.events) > max_events or len(encode_session(session)) > max_bytes:
        if keep_from <= 0:
            break
        first = session.events[0].invocation_id
        count = 1
        while count < keep_from and session.events[count].invocation_id == first:
            count += 1
        del session.events[:count]
        keep_from -= count
        dropped += count
    if dropped:
        _dropped.inc(dropped)
    return dropped


class WorkingMemorySessions(BaseSessionService):
    """ADK's session service over the running activation's working memory.

    The adapter loads the session before the run and writes it after: here
    the run reads and appends to the loaded object, and a session created
    or deleted is staged in working memory like any other write.
    """

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        binding = bound()
        if session_id is None:
            session_id = binding.new_id()
        session = Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=dict(state or {}),
            last_update_time=binding.now_s(),
        )
        binding.sessions[session_id] = session
        return session

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        binding = bound()
        session = binding.sessions.get(session_id)
        if session is None:
            session = await load_session(binding.ctx, session_id)
            if session is None:
                return None
            binding.sessions[session_id] = session
        if session.app_name != app_name or session.user_id != user_id:
            raise AdkAdapterError(
                f"session {session_id!r} belongs to app {session.app_name!r} and user "
                f"{session.user_id!r}, not {app_name!r} and {user_id!r}"
            )
        if config is None:
            return session
        events = session.events
        if config.after_timestamp is not None:
            events = [e for e in events if e.timestamp >= config.after_timestamp]
        if config.num_recent_events is not None:
            events = events[-config.num_recent_events :] if config.num_recent_events else []
        return session.model_copy(update={"events": list(events)})

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        binding = bound()
        ids = {
            key[len(SESSION_PREFIX) :]
            for key in binding.ctx.memory.keys()
            if key.startswith(SESSION_PREFIX)
        } | set(binding.sessions)
        sessions = []
        for session_id in sorted(ids):
            session = binding.sessions.get(session_id) or await load_session(
                binding.ctx, session_id
            )
            if session is None or session.app_name != app_name:
                continue
            if user_id is None or session.user_id == user_id:
                sessions.append(session.model_copy(update={"events": [], "state": {}}))
        sessions.sort(key=lambda s: (s.last_update_time, s.id))
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        binding = bound()
        binding.sessions.pop(session_id, None)
        binding.ctx.memory.delete(session_key(session_id))

    async def append_event(self, session: Session, event: Event) -> Event:
        appended: Event = await super().append_event(session, event)
        if not event.partial:
            session.last_update_time = event.timestamp
        return appended
